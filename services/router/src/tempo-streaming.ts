import type { Http2ServerResponse } from 'node:http2';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, credentialsFrom, withScopeOrgId, type AuthDeps, type TenantContext } from '@floe/auth';
import { FloeError, toGrpc } from '@floe/errors';
import { TempoSearchRequestSchema, TempoSearchResponseSchema, fromBinary, toBinary, type TempoSearchRequest, type TempoSearchResponse } from '@floe/proto';
import { planTraceSearch, tempoSearchOf, tempoSearchResponse, traceSearchResults } from '@floe/query';
import { tracesTable } from '@floe/schema';
import type { Logger } from '@floe/telemetry';
import { rowsOf } from './logquery/results.ts';
import type { QuerierClient } from './querier-client.ts';
import type { QueryBudget } from './query-budget.ts';
import { asFloeError, headerValue } from '@floe/runtime';

/**
 * Tempo's streaming search on the router's own port (reference/api-contracts.md S6): with its
 * streaming option on, Grafana's Tempo data source calls `tempopb.StreamingQuerier/Search` over
 * gRPC at the host and port of its URL, whatever the URL's path. So the router's port also speaks
 * HTTP/2 (@floe/runtime's servePortOverHttp2), and the call is a route of the HTTP API like any other: gRPC is
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
  // Callers are known before their body is read: a stranger's message is neither buffered nor decoded.
  const callers = new WeakMap<FastifyRequest, TenantContext>();
  const getterOf = (req: FastifyRequest) => withScopeOrgId((name) => headerValue(req.headers, name));
  const search = async (ctx: TenantContext, get: (name: string) => string | undefined, request: TempoSearchRequest, callerMs: number): Promise<TempoSearchResponse> => {
    await opts.queryBudget?.take(ctx.tenant);
    const ir = tempoSearchOf(request, BigInt(Date.now()) * 1_000_000n);
    const plan = planTraceSearch(ir, tracesTable);
    const creds = { authorization: get('authorization') ?? '', tenant: ctx.tenant, dataset: ctx.dataset };
    const table = await opts.querier.query(creds, { sql: plan.sql, params: plan.params, hints: plan.hints }, Math.max(1, Math.min(opts.queryTimeoutMs, callerMs)));
    return tempoSearchResponse(traceSearchResults(ir, rowsOf(table)));
  };
  // A gRPC client reads the outcome from the grpc-status trailer: an HTTP status (a body over the
  // size limit is refused before the handler runs) would reach it as UNKNOWN.
  app.setErrorHandler((err, req, reply) => {
    if (!isGrpcCall(req)) throw err;
    void reply.hijack();
    const g = toGrpc(asFloeError(err));
    if (g.unexpected) opts.log.error({ err }, 'StreamingQuerier call failed');
    respond(reply.raw as unknown as Http2ServerResponse, g.code, g.details);
  });
  const onRequest = async (req: FastifyRequest) => {
    if (!isGrpcCall(req)) return;
    // The search of /tracequery/api/search, so the same rule: no tenant named is INVALID_ARGUMENT.
    callers.set(req, await authenticate(credentialsFrom(getterOf(req)), opts.auth, 'query', { missingTenant: 'bad_data' }));
  };
  app.post(`${SERVICE_PATH}/Search`, { onRequest }, async (req, reply) => {
    const res = grpcResponseOf(req, reply);
    if (!res) return;
    try {
      const ctx = callers.get(req);
      if (!ctx) throw new Error('StreamingQuerier/Search reached without its caller');
      const request = searchRequestOf(req.body);
      const get = getterOf(req);
      const answer = await search(ctx, get, request, grpcTimeoutMs(headerValue(req.headers, 'grpc-timeout')) ?? Infinity);
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

const isGrpcCall = (req: FastifyRequest) => req.raw.httpVersionMajor === 2 && GRPC_CONTENT_TYPE.test(req.headers['content-type'] ?? '');

/** The call's HTTP/2 response, the reply left to it; or undefined after answering a call it cannot take. */
function grpcResponseOf(req: FastifyRequest, reply: FastifyReply): Http2ServerResponse | undefined {
  if (!isGrpcCall(req)) {
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

/** The request message; bytes that are not a SearchRequest are the caller's mistake, not Floe's. */
export function searchRequestOf(body: unknown): TempoSearchRequest {
  const message = grpcMessage(body);
  try {
    return fromBinary(TempoSearchRequestSchema, message);
  } catch (err) {
    throw new FloeError('bad_data', `the request is not a tempopb.SearchRequest: ${(err as Error).message}`, { cause: err });
  }
}

/** The one message of a unary request body: a 5-byte prefix (compressed flag, length) and the bytes. */
function grpcMessage(body: unknown): Uint8Array {
  const b = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (b.length < 5 || b[0] !== 0 || b.readUInt32BE(1) !== b.length - 5) throw new FloeError('bad_data', 'the request is not one uncompressed length-prefixed gRPC message');
  return b.subarray(5);
}

const TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** The `grpc-timeout` header (`<digits><unit>`, at most 8 digits) in milliseconds. */
export function grpcTimeoutMs(header: string | undefined): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(header ?? '');
  return m ? Number(m[1]) * TIMEOUT_UNIT_MS[m[2]!]! : undefined;
}
