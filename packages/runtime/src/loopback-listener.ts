import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopbackListener {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * A cleartext listener on 127.0.0.1 serving the same routes as a service's TLS port, for clients
 * inside the same process (`floe all`: the ruler's remote write and self-monitoring to the
 * acceptor, `floe admin bootstrap` to the router). Those would otherwise have to verify the
 * certificate under a name that may not resolve to this host; bytes to 127.0.0.1 never leave it,
 * and every request still authenticates as on the TLS port.
 */
export async function listenLoopback(route: (req: IncomingMessage, res: ServerResponse) => void): Promise<LoopbackListener> {
  const server = createServer(route);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
