import { Metadata, credentials } from '@grpc/grpc-js';
import { SeverityNumber, SpanKind, SpanStatusCode, TraceFlags, context, trace, type Attributes, type HrTime } from '@opentelemetry/api';
import { OTLPLogExporter as GrpcLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as JsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor, type LogRecordExporter } from '@opentelemetry/sdk-logs';
import { SimpleSpanProcessor, TracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace';

/** Real OpenTelemetry exporters pointed at a running Floe, for end-to-end tests. */

export interface Credentials {
  apiKey: string;
  tenant: string;
  dataset?: string;
}

function grpcMetadata(creds: Credentials): Metadata {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${creds.apiKey}`);
  metadata.set('x-tenant-id', creds.tenant);
  if (creds.dataset) metadata.set('x-dataset-id', creds.dataset);
  return metadata;
}

function httpHeaders(creds: Credentials): Record<string, string> {
  const headers: Record<string, string> = { authorization: `Bearer ${creds.apiKey}`, 'x-tenant-id': creds.tenant };
  if (creds.dataset) headers['x-dataset-id'] = creds.dataset;
  return headers;
}

/** `ca`: the port serves TLS with a certificate signed by it (the exporter verifies it). */
/** With `ca`, over TLS trusting it; with `identity` too, presenting that client certificate (mutual TLS). */
export function grpcTraceExporter(address: string, creds: Credentials, ca?: Buffer, identity?: { cert: Buffer; key: Buffer }): SpanExporter {
  return new GrpcExporter({
    url: `${ca ? 'https' : 'http'}://${address}`,
    metadata: grpcMetadata(creds),
    ...(ca ? { credentials: credentials.createSsl(ca, identity?.key ?? null, identity?.cert ?? null) } : {}),
  });
}

export function protoTraceExporter(baseUrl: string, creds: Credentials): SpanExporter {
  return new ProtoExporter({ url: `${baseUrl}/v1/traces`, headers: httpHeaders(creds) });
}

export interface SentTrace {
  traceId: string;
  spanIds: string[];
}

/**
 * Emits one three-span trace (server → internal → client with an exception event and error
 * status, typed attributes of every kind) through `exporter`, and waits until it is exported.
 */
/**
 * Spans in a Tempo trace-by-id JSON body (`/api/traces/{id}`). sendSampleTrace exports each span
 * as it ends (SimpleSpanProcessor), so its spans may be committed apart: a test that reads the
 * trace whole waits for all of them, not for the first.
 */
export function traceSpanCount(body: { batches?: Array<{ scopeSpans?: Array<{ spans?: unknown[] }> }> }): number {
  return (body.batches ?? []).reduce((n, b) => n + (b.scopeSpans ?? []).reduce((m, s) => m + (s.spans?.length ?? 0), 0), 0);
}

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

/** OTLP/gRPC LogsService/Export (@opentelemetry/exporter-logs-otlp-grpc). */
export function grpcLogExporter(address: string, creds: Credentials): LogRecordExporter {
  return new GrpcLogExporter({ url: `http://${address}`, metadata: grpcMetadata(creds) });
}

/** OTLP/HTTP protobuf to /v1/logs (@opentelemetry/exporter-logs-otlp-proto). */
export function protoLogExporter(baseUrl: string, creds: Credentials): LogRecordExporter {
  return new ProtoLogExporter({ url: `${baseUrl}/v1/logs`, headers: httpHeaders(creds) });
}

/** OTLP/HTTP JSON to /v1/logs (@opentelemetry/exporter-logs-otlp-http), gzip-compressed unless told otherwise. */
export function jsonLogExporter(baseUrl: string, creds: Credentials, compression: 'gzip' | 'none' = 'gzip'): LogRecordExporter {
  // CompressionAlgorithm is a string enum of these two values ('gzip', 'none').
  type Compression = NonNullable<ConstructorParameters<typeof JsonLogExporter>[0]>['compression'];
  return new JsonLogExporter({ url: `${baseUrl}/v1/logs`, headers: httpHeaders(creds), compression: compression as Compression });
}

/** Nanoseconds since the epoch as the API's HrTime ([seconds, nanoseconds]): a number of ns loses precision. */
export const hrTimeOfNs = (ns: bigint): HrTime => [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];

/** A log record to emit at a fixed time. */
export interface TimedLogRecord {
  timeUnixNano: bigint;
  severityNumber: SeverityNumber;
  /** Left out when empty, as an SDK user who sets none would. */
  severityText?: string;
  body: string;
  attributes?: Attributes;
  /** The (sampled) span the record is emitted in. */
  span?: { traceId: string; spanId: string };
}

/**
 * Emits `records`, in order, through the real logs SDK and `exporter`, under one resource and one
 * instrumentation scope, each at its own time; waits until they are exported (the exporter is
 * shut down with its provider: pass a fresh one per call).
 */
export async function emitLogRecords(
  exporter: LogRecordExporter,
  resource: Attributes,
  scope: { name: string; version: string; attributes?: Attributes },
  records: readonly TimedLogRecord[],
): Promise<void> {
  const provider = new LoggerProvider({ resource: resourceFromAttributes(resource), processors: [new SimpleLogRecordProcessor({ exporter })] });
  const logger = scope.attributes ? provider.getLogger(scope.name, scope.version, { attributes: scope.attributes }) : provider.getLogger(scope.name, scope.version);
  for (const r of records) {
    logger.emit({
      timestamp: hrTimeOfNs(r.timeUnixNano),
      severityNumber: r.severityNumber,
      ...(r.severityText ? { severityText: r.severityText } : {}),
      body: r.body,
      ...(r.attributes ? { attributes: r.attributes } : {}),
      ...(r.span ? { context: trace.setSpanContext(context.active(), { ...r.span, traceFlags: TraceFlags.SAMPLED }) } : {}),
    });
  }
  await provider.forceFlush();
  await provider.shutdown();
}

/** One log record as the sample sent it, with the value each stored column should hold. */
export interface SentLogRecord {
  timeUnixNano: bigint;
  severityNumber: number;
  severityText: string;
  /** The stored body text and its OTLP kind. */
  body: string;
  bodyType: string;
  eventName: string;
  /** Hex ids of the span the record was emitted in, or null. */
  traceId: string | null;
  spanId: string | null;
  flags: number;
  attributes: { str: Record<string, string>; int: Record<string, bigint>; double: Record<string, number>; bool: Record<string, boolean> };
}

export interface SentLogs {
  service: string;
  scope: { name: string; version: string };
  resource: SentLogRecord['attributes'];
  scopeAttributes: SentLogRecord['attributes'];
  records: SentLogRecord[];
}

/**
 * Emits, through `exporter` and the real logs SDK, one record of every body kind (string, map,
 * int, double, bool, bytes, array, none) with severities, an event name, attributes of every
 * type, and a span context on some, at distinct times one millisecond apart from `startMs`;
 * waits until they are exported and returns what each stored row should hold.
 */
export async function sendSampleLogs(exporter: LogRecordExporter, service: string, startMs = Date.now()): Promise<SentLogs> {
  const resourceAttrs = { 'service.name': service, 'deployment.environment': 'e2e', 'host.cpus': 4, 'sample.ratio': 0.5, 'feature.on': true };
  const scopeAttrs = { 'scope.kind': 'e2e', 'scope.level': 2 };
  const provider = new LoggerProvider({ resource: resourceFromAttributes(resourceAttrs), processors: [new SimpleLogRecordProcessor({ exporter })] });
  const logger = provider.getLogger('floe-e2e-logs', '2.0.1', { attributes: scopeAttrs });
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const spanId = '00f067aa0ba902b7';
  const inSpan = trace.setSpanContext(context.active(), { traceId, spanId, traceFlags: TraceFlags.SAMPLED });
  const nsOf = (i: number) => BigInt(startMs) * 1_000_000n + BigInt(i) * 1_000_000n + 123_456n;
  const none = { str: {}, int: {}, double: {}, bool: {} };
  const records: SentLogRecord[] = [];
  const cases: Array<{ body: unknown; text: string; type: string; sev: SeverityNumber; sevText: string; event?: string; span?: boolean; attrs?: Record<string, unknown>; expect?: SentLogRecord['attributes'] }> = [
    {
      body: 'payment accepted for order 42',
      text: 'payment accepted for order 42',
      type: 'string',
      sev: SeverityNumber.INFO,
      sevText: 'INFO',
      span: true,
      attrs: { 'order.id': 'o-42', 'order.items': 3, 'order.total': 19.99, 'order.gift': false, 'order.big': 9_007_199_254_740_991, tags: ['a', 'b'] },
      expect: {
        str: { 'order.id': 'o-42', tags: '{"arrayValue":{"values":[{"stringValue":"a"},{"stringValue":"b"}]}}' },
        int: { 'order.items': 3n, 'order.big': 9_007_199_254_740_991n },
        double: { 'order.total': 19.99 },
        bool: { 'order.gift': false },
      },
    },
    {
      body: { user: { id: 7, name: 'ann' }, ok: true, ratio: 0.75, tags: ['x', 'y'] },
      text: '{"user":{"id":7,"name":"ann"},"ok":true,"ratio":0.75,"tags":["x","y"]}',
      type: 'kvlist',
      sev: SeverityNumber.ERROR,
      sevText: 'ERROR',
      span: true,
      attrs: { 'http.status_code': 503 },
      expect: { ...none, int: { 'http.status_code': 503n } },
    },
    { body: 42, text: '42', type: 'int', sev: SeverityNumber.WARN, sevText: 'WARN' },
    { body: 2.5, text: '2.5', type: 'double', sev: SeverityNumber.DEBUG, sevText: 'debug' },
    { body: true, text: 'true', type: 'bool', sev: SeverityNumber.TRACE2, sevText: '' },
    { body: Uint8Array.of(0xde, 0xad, 0xbe, 0xef), text: '3q2+7w==', type: 'bytes', sev: SeverityNumber.FATAL, sevText: 'FATAL' },
    { body: ['a', 1, false], text: '["a",1,false]', type: 'array', sev: SeverityNumber.INFO4, sevText: 'INFO4' },
    { body: undefined, text: '', type: 'empty', sev: SeverityNumber.UNSPECIFIED, sevText: '', event: 'checkout.completed', attrs: { 'cart.size': 2 }, expect: { ...none, int: { 'cart.size': 2n } } },
  ];
  cases.forEach((c, i) => {
    const t = nsOf(i);
    logger.emit({
      timestamp: hrTimeOfNs(t),
      severityNumber: c.sev,
      ...(c.sevText ? { severityText: c.sevText } : {}),
      ...(c.body !== undefined ? { body: c.body } : {}),
      ...(c.event ? { eventName: c.event } : {}),
      ...(c.attrs ? { attributes: c.attrs as never } : {}),
      ...(c.span ? { context: inSpan } : {}),
    });
    records.push({
      timeUnixNano: t,
      severityNumber: c.sev,
      severityText: c.sevText,
      body: c.text,
      bodyType: c.type,
      eventName: c.event ?? '',
      traceId: c.span ? traceId : null,
      spanId: c.span ? spanId : null,
      flags: c.span ? TraceFlags.SAMPLED : 0,
      attributes: c.expect ?? none,
    });
  });
  await provider.forceFlush();
  await provider.shutdown();
  return {
    service,
    scope: { name: 'floe-e2e-logs', version: '2.0.1' },
    resource: { str: { 'service.name': service, 'deployment.environment': 'e2e' }, int: { 'host.cpus': 4n }, double: { 'sample.ratio': 0.5 }, bool: { 'feature.on': true } },
    scopeAttributes: { str: { 'scope.kind': 'e2e' }, int: { 'scope.level': 2n }, double: {}, bool: {} },
    records,
  };
}
