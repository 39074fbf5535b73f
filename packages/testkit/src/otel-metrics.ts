import { Metadata } from '@grpc/grpc-js';
import { ValueType } from '@opentelemetry/api';
import { OTLPMetricExporter as GrpcMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { AggregationTemporalityPreference, OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationType, MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { Credentials } from './otel.ts';

/**
 * Real OpenTelemetry metric exporters pointed at a running Floe, and a sample that records every
 * metric kind the JS SDK produces (sums monotonic and not, int and double; gauges sync and
 * observable; explicit-bucket and exponential histograms, the latter with negative buckets).
 * What the SDK handed its exporter is kept, so a test can compare the stored rows with exactly
 * what was sent.
 */

export type Temporality = 'cumulative' | 'delta';

const preference = (t: Temporality) => (t === 'delta' ? AggregationTemporalityPreference.DELTA : AggregationTemporalityPreference.CUMULATIVE);

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

/** OTLP/gRPC MetricsService/Export (@opentelemetry/exporter-metrics-otlp-grpc). */
export function grpcMetricExporter(address: string, creds: Credentials, temporality: Temporality = 'cumulative'): PushMetricExporter {
  return new GrpcMetricExporter({ url: `http://${address}`, metadata: grpcMetadata(creds), temporalityPreference: preference(temporality) }) as unknown as PushMetricExporter;
}

/** OTLP/HTTP protobuf to /v1/metrics (@opentelemetry/exporter-metrics-otlp-proto). */
export function protoMetricExporter(baseUrl: string, creds: Credentials, temporality: Temporality = 'cumulative'): PushMetricExporter {
  return new ProtoMetricExporter({ url: `${baseUrl}/v1/metrics`, headers: httpHeaders(creds), temporalityPreference: preference(temporality) }) as unknown as PushMetricExporter;
}

/** OTLP/HTTP JSON to /v1/metrics (@opentelemetry/exporter-metrics-otlp-http), gzip-compressed unless told otherwise. */
export function jsonMetricExporter(baseUrl: string, creds: Credentials, temporality: Temporality = 'cumulative', compression: 'gzip' | 'none' = 'gzip'): PushMetricExporter {
  type Compression = NonNullable<ConstructorParameters<typeof JsonMetricExporter>[0]>['compression'];
  return new JsonMetricExporter({
    url: `${baseUrl}/v1/metrics`,
    headers: httpHeaders(creds),
    temporalityPreference: preference(temporality),
    compression: compression as Compression,
  }) as unknown as PushMetricExporter;
}

/** Passes every export on, keeping what the SDK exported and failing loudly if an export failed. */
class RecordingExporter implements PushMetricExporter {
  readonly exported: ResourceMetrics[] = [];
  readonly failures: unknown[] = [];
  readonly #inner: PushMetricExporter;

  constructor(inner: PushMetricExporter) {
    this.#inner = inner;
    if (inner.selectAggregationTemporality) this.selectAggregationTemporality = inner.selectAggregationTemporality.bind(inner);
    if (inner.selectAggregation) this.selectAggregation = inner.selectAggregation.bind(inner);
  }

  selectAggregationTemporality?: PushMetricExporter['selectAggregationTemporality'];
  selectAggregation?: PushMetricExporter['selectAggregation'];

  export(metrics: ResourceMetrics, done: Parameters<PushMetricExporter['export']>[1]): void {
    this.exported.push(metrics);
    this.#inner.export(metrics, (result) => {
      if (result.code !== 0) this.failures.push(result.error ?? result);
      done(result);
    });
  }

  forceFlush(): Promise<void> {
    return this.#inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }
}

export interface SentMetrics {
  service: string;
  /** Every ResourceMetrics the SDK exported (one per collection: forceFlush, then shutdown). */
  exported: ResourceMetrics[];
}

/**
 * Records one of every instrument kind through the real metrics SDK and `exporter`, exports
 * (forceFlush, then shutdown: two collections, so cumulative series get two points and delta
 * ones their second interval), and returns what was exported. Throws if an export failed.
 */
export async function sendSampleMetrics(exporter: PushMetricExporter, service: string): Promise<SentMetrics> {
  const recording = new RecordingExporter(exporter);
  const provider = new MeterProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'deployment.environment': 'e2e', 'host.cpus': 4, 'sample.ratio': 0.5, 'feature.on': true }),
    readers: [new PeriodicExportingMetricReader({ exporter: recording, exportIntervalMillis: 3_600_000 })],
    views: [
      { instrumentName: 'e2e.payload.size', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM, options: { maxSize: 40 } } },
      // A gauge aggregated as an exponential histogram: the SDK's way to get negative buckets.
      { instrumentName: 'e2e.balance', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } },
    ],
  });
  const meter = provider.getMeter('floe-e2e-metrics', '3.0.1');
  const attrs = { route: '/checkout', code: 200, ok: true, ratio: 0.25, tags: ['a', 'b'] };

  const requests = meter.createCounter('e2e.requests', { description: 'requests served', unit: '{request}' });
  requests.add(3, attrs);
  requests.add(4.5, attrs);
  requests.add(1, { route: '/cart' });
  meter.createCounter('e2e.items', { valueType: ValueType.INT }).add(5, { route: '/checkout' });
  const queue = meter.createUpDownCounter('e2e.queue.depth', { valueType: ValueType.INT, unit: '{item}' });
  queue.add(10);
  queue.add(-13);
  meter.createGauge('e2e.temperature', { unit: 'Cel' }).record(-12.25, { room: 'lab' });
  meter.createObservableGauge('e2e.connections', { valueType: ValueType.INT }).addCallback((r) => r.observe(42, { pool: 'main' }));
  const latency = meter.createHistogram('e2e.latency', { unit: 's', advice: { explicitBucketBoundaries: [0.1, 1, 10] } });
  for (const v of [0.05, 0.5, 5, 50]) latency.record(v, { route: '/checkout' });
  const size = meter.createHistogram('e2e.payload.size', { unit: 'By' });
  for (const v of [0, 1, 2, 1000, 1024]) size.record(v);
  const balance = meter.createGauge('e2e.balance');
  for (const v of [-5, -0.5, 0, 3]) balance.record(v);

  await provider.forceFlush();
  await provider.shutdown();
  if (recording.failures.length > 0) throw new Error(`metric export failed: ${String(recording.failures[0])}`);
  return { service, exported: recording.exported };
}
