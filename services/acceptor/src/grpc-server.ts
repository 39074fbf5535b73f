import * as grpc from '@grpc/grpc-js';
import { authenticate, credentialsFrom, withScopeOrgId, type AuthDeps } from '@floe/auth';
import { toGrpc } from '@floe/errors';
import { noSelfTelemetry, traceGrpcService, type Logger, type SelfTelemetry } from '@floe/telemetry';
import type { AcceptedTimes } from './accepted-times.ts';
import type { InflightLimit, InflightRequest } from './inflight-limit.ts';
import type { Admission } from './admission.ts';
import type { Ingest } from './ingest.ts';
import { SIGNALS, type OtlpSignal } from './signals.ts';

export interface GrpcServerOptions {
  ingest: Ingest;
  /** Per-tenant rate limits, storage quota, accepted row times and resend dedup. */
  admission: Admission;
  auth: AuthDeps;
  log: Logger;
  maxBodyBytes: number;
  /** Floe's own tracer (self_monitoring); absent or disabled: no spans. */
  telemetry?: SelfTelemetry;
  /** TLS (config `tls`); absent: cleartext. */
  credentials?: grpc.ServerCredentials;
  /** What the acceptor holds at once, shared with the HTTP port. */
  inflight: InflightLimit;
}

/**
 * The request is received as raw bytes and decoded in the handler (not by grpc-js), so a garbage
 * body is INVALID_ARGUMENT with a reason instead of grpc-js's generic INTERNAL.
 */
const rawUnary = (path: string): grpc.MethodDefinition<Buffer, Uint8Array> => ({
  path,
  requestStream: false,
  responseStream: false,
  requestSerialize: (b: Buffer) => b,
  requestDeserialize: (b: Buffer) => b,
  responseSerialize: (m: Uint8Array) => Buffer.from(m),
  responseDeserialize: (b: Buffer) => b,
});

export async function startGrpcServer(opts: GrpcServerOptions, host: string, port: number): Promise<{ port: number; stop(): Promise<void> }> {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': opts.maxBodyBytes,
    'grpc.max_send_message_length': 4 * 1024 * 1024,
  });
  const log = opts.log.child({ surface: 'otlp-grpc' });
  const fail = (cb: grpc.sendUnaryData<Uint8Array>, err: unknown) => {
    const g = toGrpc(err);
    if (g.unexpected) log.error({ err }, 'unexpected error');
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(g.metadata)) md.set(k, v);
    cb({ code: g.code, details: g.details, metadata: md });
  };
  const exportHandler = (signal: OtlpSignal) => (call: grpc.ServerUnaryCall<Buffer, Uint8Array>, cb: grpc.sendUnaryData<Uint8Array>) => {
    const get = (name: string) => {
      const v = call.metadata.get(name)[0];
      return typeof v === 'string' ? v : v?.toString();
    };
    let room: InflightRequest;
    try {
      room = opts.inflight.take(call.request.length);
    } catch (err) {
      fail(cb, err);
      return;
    }
    // X-Scope-OrgID names the tenant too, as at the HTTP port (http-server.ts).
    authenticate(credentialsFrom(withScopeOrgId(get)), opts.auth, 'ingest')
      .then((ctx) => {
        room.ofTenant(ctx.tenant);
        const store = (times: AcceptedTimes) => signal.ingest(opts.ingest, ctx, call.request, 'protobuf', times);
        const identity = { signal: signal.name, contentType: 'protobuf', contentEncoding: '', body: call.request };
        return opts.admission.run(ctx, identity, store, () => ({ accepted: 0, rejected: 0, rejectReason: undefined }));
      })
      .then((r) => cb(null, signal.response(r, 'protobuf') as Uint8Array))
      .catch((err: unknown) => fail(cb, err))
      .finally(() => room.release());
  };
  // TraceService/Export, LogsService/Export: one service definition each.
  for (const signal of SIGNALS) {
    const definition = { Export: rawUnary(signal.grpcMethod) };
    server.addService(definition, traceGrpcService(opts.telemetry ?? noSelfTelemetry, definition, { Export: exportHandler(signal) }));
  }
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, opts.credentials ?? grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port: bound,
    stop: () =>
      new Promise<void>((resolve) => {
        const t = setTimeout(() => server.forceShutdown(), 5000);
        server.tryShutdown(() => {
          clearTimeout(t);
          resolve();
        });
      }),
  };
}
