import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, constants, createServer as createHttp2Server, type Http2Server } from 'node:http2';
import { connect as tcpConnect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { cutOffWhenStalled } from './send-timeout.ts';

/** A client that takes nothing of an answer is cut off; one that reads gets it whole. */
describe('cutOffWhenStalled', () => {
  const BIG = Buffer.alloc(32 * 1024 * 1024, 'x');
  let closeServer: (() => void) | undefined;
  afterEach(() => closeServer?.());

  it('resets a stalled HTTP/2 stream (CANCEL) and leaves the session and its other streams alone', async () => {
    const server: Http2Server = createHttp2Server((req, res) => {
      cutOffWhenStalled(res, 200);
      // 4 MB: more than HTTP/2's flow-control window lets through to a client that reads nothing,
      // less than the client's own session memory (past it, the client resets the stream itself).
      res.end(req.url === '/small' ? 'ok' : BIG.subarray(0, 4 * 1024 * 1024));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closeServer = () => server.close();
    const session = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      const stalled = session.request({ ':path': '/big' });
      stalled.on('error', () => {});
      stalled.pause();
      const rstCode = await new Promise<number>((resolve) => stalled.on('close', () => resolve(stalled.rstCode)));
      expect(rstCode).toBe(constants.NGHTTP2_CANCEL);
      const small = session.request({ ':path': '/small' });
      let text = '';
      small.setEncoding('utf8').on('data', (c: string) => (text += c));
      await new Promise((r) => small.on('end', r));
      expect(text).toBe('ok');
    } finally {
      session.close();
    }
  });

  it('destroys a stalled HTTP/1.1 connection; a client that reads gets the whole answer', async () => {
    const server: Server = createHttpServer((_req, res) => {
      cutOffWhenStalled(res, 200);
      res.end(BIG);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closeServer = () => server.close();
    const port = (server.address() as AddressInfo).port;
    const fetchAll = async () => (await (await fetch(`http://127.0.0.1:${port}/`)).arrayBuffer()).byteLength;
    expect(await fetchAll()).toBe(BIG.length);

    const socket = tcpConnect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.pause();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    // Well past the 200 ms; then what the kernel kept for the client ends short of the answer.
    await new Promise((r) => setTimeout(r, 1500));
    let received = 0;
    socket.on('data', (c: Buffer) => (received += c.length));
    socket.resume();
    await new Promise((r) => socket.on('close', r));
    expect(received).toBeLessThan(BIG.length);
  });
});
