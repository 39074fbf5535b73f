import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { recordsMetrics, type SelfTelemetry } from './self-monitoring.ts';
import { parentFromTraceparent } from './traceparent.ts';

/**
 * Self-monitoring of a gRPC boundary (spec 2, Events): one server span per call, named by the
 * fully qualified method (`arrow.flight.protocol.FlightService/DoGet`), continuing the caller's
 * `traceparent` metadata, with the call's status code. Calls of the self-monitoring tenant get
 * none, as on HTTP: reading Floe's own telemetry must not create more of it.
 *
 * Typed by shape rather than with @grpc/grpc-js, which this package does not depend on: a
 * method of a service definition says its path and whether it streams, and a handler gets the
 * call (whose metadata is read) and, when unary, the callback that ends it.
 */

interface MethodShape {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
}
interface CallShape {
  metadata: { get(key: string): unknown[] };
  on(event: string, listener: (arg?: unknown) => void): unknown;
}
type Handler = (call: CallShape, callback?: (err: unknown, ...rest: unknown[]) => void) => void;

/** The self-monitoring tenant's name (@floe/meta's SYSTEM_TENANT_ID, which this layer cannot import). */
const SYSTEM_TENANT = '_system';
/** gRPC status OK; any other code marks the span an error. */
const OK = 0;

const first = (call: CallShape, key: string): string | undefined => {
  const v = call.metadata.get(key)[0];
  return typeof v === 'string' ? v : v instanceof Uint8Array ? Buffer.from(v).toString() : undefined;
};

/**
 * The implementation of a service with a span around each unary and server-streaming method
 * (client and bidirectional streams pass through untraced) when self-monitoring is on, and the
 * call's `rpc.server.call.duration` (by service, method and status code) whenever metrics are
 * recorded; the implementation itself when neither is.
 */
export function traceGrpcService<I extends Record<string, unknown>>(telemetry: SelfTelemetry, definition: Record<string, MethodShape>, implementation: I): I {
  const tracing = telemetry.enabled;
  if (!tracing && !recordsMetrics(telemetry)) return implementation;
  const duration = telemetry.meter.createHistogram('rpc.server.call.duration', {
    description: 'Duration of gRPC and Arrow Flight calls, by service, method and status code',
    unit: 's',
    advice: { explicitBucketBoundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120] },
  });
  const out: Record<string, unknown> = { ...implementation };
  for (const [name, method] of Object.entries(definition)) {
    const handler = implementation[name];
    if (typeof handler !== 'function' || method.requestStream) continue;
    const fullName = method.path.replace(/^\//, '');
    const [service, rpcMethod] = fullName.split('/');
    const rpcAttributes = { 'rpc.system': 'grpc', 'rpc.service': service!, 'rpc.method': rpcMethod! };
    const start = (call: CallShape): Span | undefined => {
      if (!tracing || first(call, 'x-tenant-id')?.trim() === SYSTEM_TENANT) return undefined;
      return telemetry.tracer.startSpan(fullName, { kind: SpanKind.SERVER, attributes: rpcAttributes }, parentFromTraceparent(first(call, 'traceparent')));
    };
    const end = (span: Span | undefined, began: number, code: number) => {
      duration.record((performance.now() - began) / 1000, { ...rpcAttributes, 'rpc.grpc.status_code': code });
      if (!span) return;
      span.setAttribute('rpc.grpc.status_code', code);
      if (code !== OK) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    const codeOf = (err: unknown) => (typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 2);
    out[name] = method.responseStream
      ? (call: CallShape) => {
          const began = performance.now();
          const span = start(call);
          let code = OK;
          let ended = false;
          const finish = () => {
            if (ended) return;
            ended = true;
            end(span, began, code);
          };
          call.on('error', (err) => (code = codeOf(err)));
          // A call the client gave up on ends as CANCELLED.
          call.on('cancelled', () => (code = 1));
          call.on('finish', finish);
          call.on('close', finish);
          (handler as Handler)(call);
        }
      : (call: CallShape, callback: (err: unknown, ...rest: unknown[]) => void) => {
          const began = performance.now();
          const span = start(call);
          (handler as Handler)(call, (err, ...rest) => {
            end(span, began, err ? codeOf(err) : OK);
            callback(err, ...rest);
          });
        };
  }
  return out as I;
}
