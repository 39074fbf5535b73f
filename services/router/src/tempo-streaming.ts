import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createHttp2Server, type Http2ServerResponse, type Http2Session } from 'node:http2';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { Server as TlsServer, type TLSSocket } from 'node:tls';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, credentialsFrom, withScopeOrgId, type AuthDeps } from '@floe/auth';
import { FloeError, toGrpc } from '@floe/errors';
import { TempoSearchRequestSchema, TempoSearchResponseSchema, fromBinary, toBinary, type TempoSearchRequest, type TempoSearchResponse } from '@floe/proto';
import { planTraceSearch, tempoSearchOf, tempoSearchResponse, traceSearchResults } from '@floe/query';
import { tracesTable } from '@floe/schema';
import type { Logger } from '@floe/telemetry';
import { rowsOf } from './logquery/results.ts';
import type { QuerierClient } from './querier-client.ts';
import type { QueryBudget } from './query-budget.ts';

/**
 * Tempo's streaming search on the router's own port (reference/api-contracts.md S6): with its
 * streaming option on, Grafana's Tempo data source calls `tempopb.StreamingQuerier/Search` over
 * gRPC at the host and port of its URL, whatever the URL's path. So the router's port also speaks
 * HTTP/2 (servePortOverHttp2), and the call is a route of the HTTP API like any other: gRPC is
 * HTTP/2 requests of content type application/grpc, so requests over HTTP/2 that are not gRPC
 * (Grafana's and curl's own when TLS offers h2) reach the same routes as over HTTP/1.1. Search
 * answers the search of /tracequery/api/search as one complete response, under the same
 * credentials (X-Scope-OrgID may name the tenant), query scope and per-tenant query budget. The
 * other StreamingQuerier methods (tags, and TraceQL metrics, which Floe does not implement)
 * answer UNIMPLEMENTED; Grafana reads tags over HTTP.
 *
 * gRPC's framing is written here by hand (a length-prefixed message each way, the status in the
 * trailers): grpc-js's server takes whole connections, not single HTTP/2 requests.
 */
export interface TempoStreamingOptions {
  auth: AuthDeps;
  querier: QuerierClient;
  queryTimeoutMs: number;
  queryBudget?: QueryBudget;
  log: Logger;
}

const GRPC_CONTENT_TYPE = /^application\/grpc(\+proto)?$/;
const SERVICE_PATH = '/tempopb.StreamingQuerier';

export async function tempoStreamingRoutes(app: FastifyInstance, opts: TempoStreamingOptions): Promise<void> {
  app.addContentTypeParser(GRPC_CONTENT_TYPE, { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  const search = async (get: (name: string) => string | undefined, request: TempoSearchRequest, callerMs: number): Promise<TempoSearchResponse> => {
    // The search of /tracequery/api/search, so the same rule: no tenant named is INVALID_ARGUMENT.
    const ctx = await authenticate(credentialsFrom(get), opts.auth, 'query', { missingTenant: 'bad_data' });
    await opts.queryBudget?.take(ctx.tenant);
    const ir = tempoSearchOf(request, BigInt(Date.now()) * 1_000_000n);
    const plan = planTraceSearch(ir, tracesTable);
    const creds = { authorization: get('authorization') ?? '', tenant: ctx.tenant, dataset: ctx.dataset };
    const table = await opts.querier.query(creds, { sql: plan.sql, params: plan.params, hints: plan.hints }, Math.max(1, Math.min(opts.queryTimeoutMs, callerMs)));
    return tempoSearchResponse(traceSearchResults(ir, rowsOf(table)));
  };
  app.post(`${SERVICE_PATH}/Search`, async (req, reply) => {
    const res = grpcResponseOf(req, reply);
    if (!res) return;
    try {
      const request = fromBinary(TempoSearchRequestSchema, grpcMessage(req.body));
      const get = withScopeOrgId((name) => firstHeader(req.headers[name]));
      const answer = await search(get, request, grpcTimeoutMs(req.headers['grpc-timeout']) ?? Infinity);
      const message = toBinary(TempoSearchResponseSchema, answer);
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      frame.set(message, 5);
      respond(res, 0, '', frame);
    } catch (err) {
      const g = toGrpc(err);
      if (g.unexpected) opts.log.error({ err }, 'StreamingQuerier/Search failed');
      respond(res, g.code, g.details);
    }
  });
  app.post(`${SERVICE_PATH}/:method`, async (req, reply) => {
    const res = grpcResponseOf(req, reply);
    if (res) respond(res, GRPC_UNIMPLEMENTED, `${SERVICE_PATH.slice(1)}/${(req.params as { method: string }).method} is not implemented`);
  });
}

const GRPC_UNIMPLEMENTED = 12;

const firstHeader = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/** The call's HTTP/2 response, the reply left to it; or undefined after answering a call it cannot take. */
function grpcResponseOf(req: FastifyRequest, reply: FastifyReply): Http2ServerResponse | undefined {
  if (req.raw.httpVersionMajor !== 2 || !GRPC_CONTENT_TYPE.test(req.headers['content-type'] ?? '')) {
    throw new FloeError('unsupported_media_type', 'gRPC calls are HTTP/2 requests of content type application/grpc');
  }
  void reply.hijack();
  const res = reply.raw as unknown as Http2ServerResponse;
  if (req.headers['grpc-encoding'] && req.headers['grpc-encoding'] !== 'identity') {
    respond(res, GRPC_UNIMPLEMENTED, `grpc-encoding ${String(req.headers['grpc-encoding'])} is not supported (send identity)`);
    return undefined;
  }
  return res;
}

/** The response: headers, the message if any, the status in the trailers. */
function respond(res: Http2ServerResponse, code: number, details: string, message?: Buffer): void {
  if (res.stream.destroyed) return;
  res.writeHead(200, { 'content-type': 'application/grpc' });
  res.addTrailers(code === 0 ? { 'grpc-status': '0' } : { 'grpc-status': String(code), 'grpc-message': encodeURIComponent(details) });
  if (message) res.end(message);
  else res.end();
}

/** The one message of a unary request body: a 5-byte prefix (compressed flag, length) and the bytes. */
function grpcMessage(body: unknown): Uint8Array {
  const b = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (b.length < 5 || b[0] !== 0 || b.readUInt32BE(1) !== b.length - 5) throw new FloeError('bad_data', 'the request is not one uncompressed length-prefixed gRPC message');
  return b.subarray(5);
}

const TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** The `grpc-timeout` header (`<digits><unit>`, at most 8 digits) in milliseconds. */
export function grpcTimeoutMs(header: string | string[] | undefined): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(firstHeader(header) ?? '');
  return m ? Number(m[1]) * TIMEOUT_UNIT_MS[m[2]!]! : undefined;
}

/** The first bytes of every HTTP/2 connection (RFC 9113 §3.4); no HTTP/1 request starts so. */
const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/** ALPN protocols of a TLS router port that also speaks HTTP/2. */
export const SHARED_PORT_ALPN = ['h2', 'http/1.1'];

/** An HTTP/2 connection idle this long is closed (HTTP/1.1's are by the server's keep-alive timeout). */
const HTTP2_IDLE_MS = 5 * 60_000;

/**
 * Lets the HTTP/1.1 server's port also speak HTTP/2, every request of either going to `route`
 * (fastify's router). Cleartext: each new connection's first bytes decide; one that opens with
 * HTTP/2's preface is handed to an HTTP/2 session, any other to the HTTP/1.1 server as usual, the
 * bytes read to decide put back first. TLS (the server offers SHARED_PORT_ALPN): the protocol the
 * client chose in the handshake decides. Returns what closes the HTTP/2 sessions.
 */
export function servePortOverHttp2(http: HttpServer | HttpsServer, route: (req: IncomingMessage, res: ServerResponse) => void): { stop(): void } {
  // The TLS is the HTTP/1.1 server's; the HTTP/2 one only ever sees plaintext sockets handed to it.
  // Streams per connection bounded as HTTP/2 servers commonly do (Node's own default is 2^32-1).
  const h2 = createHttp2Server({ settings: { maxConcurrentStreams: 128 } }, (req, res) => route(req as unknown as IncomingMessage, res as unknown as ServerResponse));
  const sessions = new Set<Http2Session>();
  h2.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    session.setTimeout(HTTP2_IDLE_MS, () => session.close());
  });
  const handOver = (socket: Socket) => h2.emit('connection', socket);
  const handle = {
    stop: () => {
      for (const session of sessions) session.destroy();
      h2.close();
    },
  };
  if (http instanceof TlsServer) {
    const httpListeners = http.listeners('secureConnection') as Array<(socket: TLSSocket) => void>;
    http.removeAllListeners('secureConnection');
    http.on('secureConnection', (socket: TLSSocket) => {
      if (socket.alpnProtocol === 'h2') handOver(socket);
      else for (const listener of httpListeners) listener.call(http, socket);
    });
    return handle;
  }
  const httpListeners = http.listeners('connection') as Array<(socket: Socket) => void>;
  http.removeAllListeners('connection');
  http.on('connection', (socket: Socket) => {
    let seen = Buffer.alloc(0);
    // Until it has decided, a connection is neither server's: one that sends too little for too
    // long is closed here, as the HTTP server would close one that never finishes its headers.
    socket.setTimeout(http.headersTimeout || 60_000, () => socket.destroy());
    const decide = (chunk: Buffer) => {
      seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, H2_PREFACE.length);
      const isH2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      // Undecided while every byte so far is a prefix of the preface and the preface is not complete.
      if (isH2 && n < H2_PREFACE.length) return;
      socket.off('data', decide);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(seen);
      if (isH2) {
        // The HTTP/2 session takes the bytes put back before reading the socket itself.
        handOver(socket);
        return;
      }
      for (const listener of httpListeners) listener.call(http, socket);
      socket.resume();
    };
    socket.on('data', decide);
  });
  return handle;
}
