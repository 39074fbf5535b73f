import { Metadata } from '@grpc/grpc-js';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { SimpleSpanProcessor, TracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace';

/** Real OpenTelemetry exporters pointed at a running Floe, for end-to-end tests. */

export interface Credentials {
  apiKey: string;
  tenant: string;
  dataset?: string;
}

export function grpcTraceExporter(address: string, creds: Credentials): SpanExporter {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${creds.apiKey}`);
  metadata.set('x-tenant-id', creds.tenant);
  if (creds.dataset) metadata.set('x-dataset-id', creds.dataset);
  return new GrpcExporter({ url: `http://${address}`, metadata });
}

export function protoTraceExporter(baseUrl: string, creds: Credentials): SpanExporter {
  const headers: Record<string, string> = { authorization: `Bearer ${creds.apiKey}`, 'x-tenant-id': creds.tenant };
  if (creds.dataset) headers['x-dataset-id'] = creds.dataset;
  return new ProtoExporter({ url: `${baseUrl}/v1/traces`, headers });
}

export interface SentTrace {
  traceId: string;
  spanIds: string[];
}

/**
 * Emits one three-span trace (server → internal → client with an exception event and error
 * status, typed attributes of every kind) through `exporter`, and waits until it is exported.
 */
export async function sendSampleTrace(exporter: SpanExporter, service = 'checkout'): Promise<SentTrace> {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'deployment.environment': 'e2e', 'host.cpus': 4 }),
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  const tracer = provider.getTracer('floe-e2e', '1.2.3');
  const root = tracer.startSpan('GET /checkout', {
    kind: SpanKind.SERVER,
    attributes: { 'http.method': 'GET', 'http.status_code': 500, 'http.route': '/checkout', ratio: 0.25, 'cache.hit': false, tags: ['a', 'b'] },
  });
  const rootCtx = trace.setSpan(context.active(), root);
  const mid = tracer.startSpan('compute-cart', { kind: SpanKind.INTERNAL, attributes: { items: 3 } }, rootCtx);
  const midCtx = trace.setSpan(rootCtx, mid);
  const leaf = tracer.startSpan('SELECT carts', { kind: SpanKind.CLIENT, attributes: { 'db.system': 'postgresql' } }, midCtx);
  leaf.recordException(new Error('connection reset'));
  leaf.setStatus({ code: SpanStatusCode.ERROR, message: 'db failed' });
  leaf.end();
  mid.end();
  root.setStatus({ code: SpanStatusCode.ERROR });
  root.end();
  await provider.forceFlush();
  await provider.shutdown();
  return { traceId: root.spanContext().traceId, spanIds: [root, mid, leaf].map((s) => s.spanContext().spanId) };
}
