import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AdminServer {
  readonly port: number;
  close(): Promise<void>;
}

export interface AdminServerOptions {
  host: string;
  port: number;
  isReady: () => boolean;
  name: string;
  /** The service's own state as JSON for `GET /status` (absent: 404). */
  status?: () => unknown;
}

/**
 * The small HTTP server every non-HTTP service exposes: `GET /ready` is 200 only while
 * `isReady()` is true (503 otherwise, e.g. while draining), `GET /healthz` is 200 while the
 * process lives, and `GET /status` the service's state where it has one (the compactor's passes).
 */
export async function startAdminServer(opts: AdminServerOptions): Promise<AdminServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/status' && opts.status) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(opts.status()));
      return;
    }
    if (req.method === 'GET' && path === '/ready') {
      const ok = opts.isReady();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ready\n' : 'not ready\n');
      return;
    }
    if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`${opts.name} ok\n`);
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'error', errorType: 'not_found', error: 'no such endpoint' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
