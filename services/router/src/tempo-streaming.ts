import type { Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { Server as TlsServer, type TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { authenticate, credentialsFrom, withScopeOrgId, type AuthDeps } from '@floe/auth';
import { toGrpc } from '@floe/errors';
import { metadataGetter, remainingMs } from '@floe/flight';
import { grpcServiceDefinition, TempoStreamingQuerier, type TempoSearchRequest, type TempoSearchResponse } from '@floe/proto';
import { planTraceSearch, tempoSearchOf, tempoSearchResponse, traceSearchResults } from '@floe/query';
import { tracesTable } from '@floe/schema';
import { traceGrpcService, type Logger, type SelfTelemetry } from '@floe/telemetry';
import { rowsOf } from './logquery/results.ts';
import type { QuerierClient } from './querier-client.ts';
import type { QueryBudget } from './query-budget.ts';

/**
 * Tempo's streaming search on the router's own port (reference/api-contracts.md S6): with its
 * streaming option on, Grafana's Tempo data source calls `tempopb.StreamingQuerier/Search` over
 * gRPC at the host and port of its URL, whatever the URL's path. So the router's port speaks
 * both: a connection that opens with HTTP/2's preface goes to this gRPC service, any other to
 * the HTTP API (sharePortWithGrpc). Search answers the search of /tracequery/api/search as one
 * complete response, under the same credentials (X-Scope-OrgID may name the tenant), query
 * scope and per-tenant query budget. The other StreamingQuerier methods (tags, and TraceQL
 * metrics, which Floe does not implement) answer UNIMPLEMENTED; Grafana reads tags over HTTP.
 */
export interface TempoStreamingOptions {
  auth: AuthDeps;
  querier: QuerierClient;
  queryTimeoutMs: number;
  queryBudget?: QueryBudget;
  telemetry: SelfTelemetry;
  log: Logger;
}

export function tempoStreamingServer(opts: TempoStreamingOptions): grpc.Server {
  const search = async (call: grpc.ServerWritableStream<TempoSearchRequest, TempoSearchResponse>): Promise<TempoSearchResponse> => {
    const get = withScopeOrgId(metadataGetter(call.metadata));
    // The search of /tracequery/api/search, so the same rule: no tenant named is INVALID_ARGUMENT.
    const ctx = await authenticate(credentialsFrom(get), opts.auth, 'query', { missingTenant: 'bad_data' });
    await opts.queryBudget?.take(ctx.tenant);
    const ir = tempoSearchOf(call.request, BigInt(Date.now()) * 1_000_000n);
    const plan = planTraceSearch(ir, tracesTable);
    const callerMs = remainingMs(call) ?? Infinity;
    const creds = { authorization: get('authorization') ?? '', tenant: ctx.tenant, dataset: ctx.dataset };
    const table = await opts.querier.query(creds, { sql: plan.sql, params: plan.params, hints: plan.hints }, Math.max(1, Math.min(opts.queryTimeoutMs, callerMs)));
    return tempoSearchResponse(traceSearchResults(ir, rowsOf(table)));
  };
  const definition = grpcServiceDefinition(TempoStreamingQuerier);
  const implementation: grpc.UntypedServiceImplementation = {
    Search: (call: grpc.ServerWritableStream<TempoSearchRequest, TempoSearchResponse>) => {
      search(call).then(
        (res) => {
          call.write(res);
          call.end();
        },
        (err: unknown) => {
          const g = toGrpc(err);
          if (g.unexpected) opts.log.error({ err }, 'StreamingQuerier/Search failed');
          call.emit('error', { code: g.code, details: g.details });
        },
      );
    },
  };
  const server = new grpc.Server();
  server.addService(definition, traceGrpcService(opts.telemetry, definition, implementation));
  return server;
}

/** The first bytes of every HTTP/2 connection (RFC 9113 §3.4); no HTTP/1 request starts so. */
const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/** ALPN protocols of a TLS router port that also carries Tempo's streaming gRPC. */
export const SHARED_PORT_ALPN = ['h2', 'http/1.1'];

/**
 * Lets the HTTP server's port also carry HTTP/2 gRPC. Cleartext: each new connection's first
 * bytes decide; a prefix of the preface goes to `grpcServer` (through grpc-js's connection
 * injector), anything else to the HTTP server as usual, the bytes read to decide put back first.
 * TLS (the server offers SHARED_PORT_ALPN): the protocol the client chose in the handshake
 * decides, h2 to gRPC (HTTP/1.1 is all the HTTP server speaks). Returns what stops the gRPC side
 * (its open connections included).
 */
export function sharePortWithGrpc(http: HttpServer | HttpsServer, grpcServer: grpc.Server): { stop(): void } {
  // TLS is already terminated by the HTTPS server: the injected connection is plain HTTP/2.
  const injector = grpcServer.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const handle = {
    stop: () => {
      injector.destroy();
      grpcServer.forceShutdown();
    },
  };
  if (http instanceof TlsServer) {
    const httpListeners = http.listeners('secureConnection') as Array<(socket: TLSSocket) => void>;
    http.removeAllListeners('secureConnection');
    http.on('secureConnection', (socket: TLSSocket) => {
      if (socket.alpnProtocol === 'h2') injector.injectConnection(socket);
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
      const h2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      // Undecided while every byte so far is a prefix of the preface and the preface is not complete.
      if (h2 && n < H2_PREFACE.length) return;
      socket.off('data', decide);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(seen);
      if (h2) {
        // The HTTP/2 session takes the bytes put back before reading the socket itself.
        injector.injectConnection(socket);
        return;
      }
      for (const listener of httpListeners) listener.call(http, socket);
      socket.resume();
    };
    socket.on('data', decide);
  });
  return handle;
}
