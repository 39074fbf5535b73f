import { createServer, type Server } from 'node:http';
import { connect as connectHttp2, constants } from 'node:http2';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stallingRelay } from '@floe/flight';
import { servePortOverHttp2 } from './http2-port.ts';

/** One port, two protocols: HTTP/1.1 and cleartext HTTP/2 requests reach the same routes, an idle connection is closed. */
describe('servePortOverHttp2', () => {
  let http: Server;
  let port: number;
  let shared: { stop(): void };

  beforeAll(async () => {
    const route = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => res.end(`http/${req.httpVersion} ${req.method} ${req.url} ${body.length}`));
    };
    http = createServer(route);
    http.headersTimeout = 300;
    shared = servePortOverHttp2(http, route);
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    port = (http.address() as { port: number }).port;
  });
  afterAll(async () => {
    shared.stop();
    await new Promise((r) => http.close(r));
  });

  it('serves HTTP/1.1, keep-alive and bodies included', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/a?b=1`, { method: 'POST', body: 'x'.repeat(100_000) });
    expect(await res.text()).toBe('http/1.1 POST /a?b=1 100000');
    expect(await (await fetch(`http://127.0.0.1:${port}/again`)).text()).toBe('http/1.1 GET /again 0');
  });

  it('serves cleartext HTTP/2 (prior knowledge) on the same port, several requests on one session', async () => {
    const session = connectHttp2(`http://127.0.0.1:${port}`);
    try {
      const request = (path: string, body?: string) =>
        new Promise<string>((resolve, reject) => {
          const req = session.request({ ':method': body === undefined ? 'GET' : 'POST', ':path': path });
          let got = '';
          req.on('data', (c: Buffer) => (got += c.toString()));
          req.on('end', () => resolve(got));
          req.on('error', reject);
          req.end(body);
        });
      expect(await Promise.all([request('/one'), request('/two', 'x'.repeat(70_000))])).toEqual(['http/2.0 GET /one 0', 'http/2.0 POST /two 70000']);
    } finally {
      session.close();
    }
  });

  it('answers a request that only starts like the HTTP/2 preface as HTTP, and closes a connection that never decides', async () => {
    const raw = (data: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(data));
        let got = '';
        socket.on('data', (c) => (got += c.toString()));
        socket.on('close', () => resolve(got));
        socket.on('error', () => resolve(got));
      });
    expect(await raw('PRX / HTTP/1.1\r\nHost: x\r\n\r\n')).toMatch(/^HTTP\/1\.1 400/);
    // Three bytes of the preface, then silence: closed by the server at its headers timeout, with no answer.
    expect(await raw('PRI')).toBe('');
  });
});

describe('servePortOverHttp2 stop', () => {
  it('lets HTTP/2 requests in progress finish, refuses new streams, then closes', async () => {
    const route = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
      setTimeout(() => res.end(`done ${req.url}`), req.url === '/slow' ? 400 : 0);
    };
    const http = createServer(route);
    const shared = servePortOverHttp2(http, route);
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    const session = connectHttp2(`http://127.0.0.1:${(http.address() as { port: number }).port}`);
    session.on('error', () => {});
    const request = (path: string) =>
      new Promise<string>((resolve, reject) => {
        const req = session.request({ ':path': path });
        let got = '';
        req.on('data', (c: Buffer) => (got += c.toString()));
        req.on('end', () => resolve(got));
        req.on('error', reject);
        req.end();
      });
    expect(await request('/warm')).toBe('done /warm');
    const slow = request('/slow');
    await new Promise((r) => setTimeout(r, 100));
    const stopped = shared.stop(5_000);
    expect(await slow).toBe('done /slow');
    await stopped;
    await expect(request('/late')).rejects.toThrow();
    await new Promise((r) => http.close(r));
  });
});

describe('servePortOverHttp2 stop', () => {
  it("closes the port's connections handed to HTTP/2 even when a client stopped reading its answer", async () => {
    const big = Buffer.alloc(32 * 1024 * 1024, 120);
    const route = (_req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => res.end(big);
    const http = createServer(route);
    const shared = servePortOverHttp2(http, route);
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    const relay = await stallingRelay(`127.0.0.1:${(http.address() as { port: number }).port}`, 256 * 1024);
    // A large flow-control window, so the server writes far more than the relay passes on: its
    // socket's buffer fills, as with a client whose process froze mid-answer.
    const session = connectHttp2(`http://${relay.address}`, { settings: { initialWindowSize: 2 ** 31 - 1 } });
    session.on('error', () => undefined);
    session.on('connect', () => session.setLocalWindowSize(2 ** 31 - 1));
    const req = session.request({ ':path': '/big' });
    req.on('error', () => undefined);
    req.end();
    await relay.stalled;
    try {
      await shared.stop(200);
      const closed = new Promise((r) => http.close(() => r('closed')));
      const outcome = await Promise.race([closed, new Promise((r) => setTimeout(() => r('still open after 10 s'), 10_000))]);
      expect(outcome).toBe('closed');
    } finally {
      relay.close();
      session.destroy();
    }
  });

  it('resets at once, at stop, a request whose body is still arriving, and lets a request whose body is in finish', async () => {
    const route = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
      let n = 0;
      req.on('data', (c: Buffer) => (n += c.length));
      req.on('end', () => setTimeout(() => res.end(`got ${n}`), 300));
    };
    const http = createServer(route);
    const shared = servePortOverHttp2(http, route);
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    const session = connectHttp2(`http://127.0.0.1:${(http.address() as { port: number }).port}`);
    session.on('error', () => undefined);
    try {
      const uploading = session.request({ ':method': 'POST', ':path': '/uploading' });
      uploading.on('error', () => undefined);
      uploading.write('x'.repeat(1000));
      const inWhole = session.request({ ':method': 'POST', ':path': '/in' });
      let answer = '';
      inWhole.on('data', (c: Buffer) => (answer += c.toString()));
      const answered = new Promise((r) => inWhole.on('end', r));
      inWhole.end('y'.repeat(500));
      // Both requests have reached the server before it stops.
      await new Promise((r) => setTimeout(r, 100));
      const stopped = shared.stop(60_000).then(() => 'stopped');
      await new Promise((r) => uploading.on('close', r));
      expect(uploading.rstCode).toBe(constants.NGHTTP2_CANCEL);
      await answered;
      expect(answer).toBe('got 500');
      // Nothing else holds the stop for its minute of grace.
      expect(await Promise.race([stopped, new Promise((r) => setTimeout(() => r('still stopping after 10 s'), 10_000))])).toBe('stopped');
    } finally {
      session.destroy();
      await new Promise((r) => http.close(r));
    }
  });
});
