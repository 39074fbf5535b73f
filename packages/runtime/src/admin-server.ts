import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { MetricsEndpoint } from '@floe/telemetry';
import { listenLoopback } from './loopback-listener.ts';
import type { ServerTls } from './server-tls.ts';

export interface AdminServer {
  readonly port: number;
  /** The cleartext 127.0.0.1 listener beside a TLS port (`loopback`), for this process's own clients. */
  readonly loopbackPort?: number;
  close(): Promise<void>;
}

export interface AdminServerOptions {
  host: string;
  port: number;
  isReady: () => boolean;
  name: string;
  /** The service's own state as JSON for `GET /status` (absent: 404). */
  status?: () => unknown;
  /**
   * Operator actions of the service, keyed `METHOD /path`: JSON body in (at most 64 KiB, `{}` when
   * empty), JSON answer out. The admin port is internal; the router exposes these behind admin
   * auth (the compactor's `POST /compact` behind `/api/v1/ops/compact`). A path segment written
   * `{name}` matches any one non-empty segment, passed to the action decoded as `params.name`
   * (`GET /jobs/{id}`); a path without one wins over a pattern.
   */
  actions?: Record<string, AdminAction>;
  /**
   * When non-empty, `actions` run only for a caller presenting it as a bearer token (401
   * otherwise): anyone who reaches the port could else start work on every tenant's tables. The
   * services pass auth.internal_service_key (in `floe all`, the process's own key), which the
   * router presents. Probes, /status and /metrics stay as they are.
   */
  actionKey?: string;
  /** `GET /metrics` (self_monitoring.metrics_endpoint; absent: 404). */
  metrics?: MetricsEndpoint;
  /**
   * Serve HTTPS with the process's certificate (tls.admin_ports), renewed with it. No client
   * certificate is asked for: probes and scrapers rarely have one, and the actions have their key.
   */
  tls?: ServerTls;
  /** With `tls`, also serve the same on a cleartext 127.0.0.1 port for clients in this process (listenLoopback): `floe all`'s router calling its compactor. */
  loopback?: boolean;
}

export interface AdminAnswer {
  status: number;
  body: unknown;
}

export type AdminAction = (body: unknown, params: Readonly<Record<string, string>>) => Promise<AdminAnswer>;

/** The action `METHOD path` names, with its path parameters: an exact key first, else the first pattern that matches. */
function findAction(actions: Readonly<Record<string, AdminAction>>, method: string, path: string): { action: AdminAction; params: Record<string, string> } | undefined {
  const exact = actions[`${method} ${path}`];
  if (exact) return { action: exact, params: {} };
  const segments = path.split('/');
  for (const [key, action] of Object.entries(actions)) {
    const space = key.indexOf(' ');
    if (key.slice(0, space) !== method || !key.includes('{')) continue;
    const pattern = key.slice(space + 1).split('/');
    if (pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const matches = pattern.every((p, i) => {
      const s = segments[i]!;
      const name = /^\{(\w+)\}$/.exec(p)?.[1];
      if (name === undefined) return p === s;
      if (s === '') return false;
      try {
        params[name] = decodeURIComponent(s);
      } catch {
        return false;
      }
      return true;
    });
    if (matches) return { action, params };
  }
  return undefined;
}

const MAX_ACTION_BODY = 64 * 1024;

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // An oversized body is read to its end and dropped, so the 413 reaches the caller.
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_ACTION_BODY) chunks.push(c);
    });
    req.on('end', () => {
      if (size > MAX_ACTION_BODY) return reject(Object.assign(new Error('request body too large'), { status: 413 }));
      const text = Buffer.concat(chunks).toString('utf8').trim();
      try {
        resolve(text === '' ? {} : JSON.parse(text));
      } catch {
        reject(Object.assign(new Error('body is not valid JSON'), { status: 400 }));
      }
    });
    req.on('error', reject);
  });
}

const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Whether the request's `Authorization: Bearer …` is `key` (compared in constant time). */
function presents(req: IncomingMessage, key: string): boolean {
  const m = /^Bearer[ ]+(\S+)[ ]*$/i.exec(req.headers.authorization ?? '');
  return m !== null && timingSafeEqual(digest(m[1]!), digest(key));
}

/**
 * The small HTTP server every non-HTTP service exposes: `GET /ready` is 200 only while
 * `isReady()` is true (503 otherwise, e.g. while draining), `GET /healthz` is 200 while the
 * process lives, `GET /status` the service's state where it has one (the compactor's passes),
 * `GET /metrics` the process's metrics for Prometheus, and `actions` its operator actions.
 */
export async function startAdminServer(opts: AdminServerOptions): Promise<AdminServer> {
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/status' && opts.status) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(opts.status()));
      return;
    }
    const found = opts.actions ? findAction(opts.actions, req.method ?? '', path ?? '/') : undefined;
    if (found) {
      if (opts.actionKey && !presents(req, opts.actionKey)) {
        // The body is left unread: closing the connection after the answer discards it.
        res.shouldKeepAlive = false;
        sendJson(res, 401, { status: 'error', errorType: 'unauthorized', error: 'this action needs auth.internal_service_key as a bearer token' }, { 'www-authenticate': 'Bearer realm="floe"' });
        return;
      }
      readJson(req)
        .then((body) => found.action(body, found.params))
        .then(
          (answer) => sendJson(res, answer.status, answer.body),
          (err: Error & { status?: number }) => sendJson(res, err.status ?? 500, { status: 'error', errorType: err.status === 413 ? 'too_large' : err.status ? 'bad_data' : 'internal', error: err.status ? err.message : 'action failed' }),
        );
      return;
    }
    if (req.method === 'GET' && path === '/ready') {
      const ok = opts.isReady();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ready\n' : 'not ready\n');
      return;
    }
    if (req.method === 'GET' && path === '/metrics' && opts.metrics) {
      opts.metrics.respond(req.headers.authorization).then(
        (answer) => res.writeHead(answer.status, { 'content-type': answer.contentType }).end(answer.body),
        () => sendJson(res, 500, { status: 'error', errorType: 'internal', error: 'metrics could not be collected' }),
      );
      return;
    }
    if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`${opts.name} ok\n`);
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'error', errorType: 'not_found', error: 'no such endpoint' }));
  };
  let server: Server;
  if (opts.tls) {
    const { cert, key } = opts.tls.current();
    const secure = createHttpsServer({ cert, key }, handle);
    opts.tls.serve(secure);
    server = secure;
  } else {
    server = createServer(handle);
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const loopback = opts.tls && opts.loopback ? await listenLoopback(handle) : undefined;
  return {
    port: (server.address() as AddressInfo).port,
    ...(loopback ? { loopbackPort: loopback.port } : {}),
    close: async () => {
      await loopback?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
