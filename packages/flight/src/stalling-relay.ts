import { connect, createServer, type Socket } from 'node:net';

export interface StallingRelay {
  /** host:port to point a client at. */
  address: string;
  /** Settles once the relay has stopped passing the server's bytes on. */
  stalled: Promise<void>;
  /** Passes the server's bytes on again. */
  resume(): void;
  close(): void;
}

/**
 * For tests of what a server does with a reader that stops (Flight's DoGet, the querier's held
 * answers, their end-to-end suites): a TCP relay to `target` (host:port) that stops reading the server's bytes once it has passed on
 * `after` of them, while the client's own bytes (a cancellation too) still go through: a client
 * whose process froze, or whose network stopped, mid-answer.
 */
export async function stallingRelay(target: string, after: number): Promise<StallingRelay> {
  const at = target.lastIndexOf(':');
  const [host, port] = [target.slice(0, at), Number(target.slice(at + 1))];
  let stall!: () => void;
  const stalled = new Promise<void>((resolve) => (stall = resolve));
  const sockets: Socket[] = [];
  const upstreams: Socket[] = [];
  const server = createServer((client) => {
    const up = connect(port, host);
    sockets.push(client, up);
    upstreams.push(up);
    let passed = 0;
    client.pipe(up);
    up.on('data', (chunk: Buffer) => {
      client.write(chunk);
      passed += chunk.length;
      if (passed >= after && passed - chunk.length < after) {
        up.pause();
        stall();
      }
    });
    for (const s of [client, up]) s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: relayPort } = server.address() as { port: number };
  return {
    address: `127.0.0.1:${relayPort}`,
    stalled,
    resume: () => {
      for (const up of upstreams) up.resume();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
