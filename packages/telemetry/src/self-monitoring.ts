import { ProxyTracerProvider, createNoopMeter, type Meter, type Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';

/**
 * Floe's own spans and metrics (spec 2 "Events"), made with the OpenTelemetry SDK and exported
 * over OTLP/HTTP protobuf to an acceptor as the self-monitoring tenant, so they are stored and
 * queried like any tenant's telemetry. Services receive a `SelfTelemetry` from the composition
 * (never a global provider: tests run several Floe instances in one process) and make their
 * instruments from its meter; without self-monitoring they get `noSelfTelemetry`, whose tracer
 * and meter record nothing.
 */
export interface SelfTelemetry {
  /** False for `noSelfTelemetry`: hooks that only serve self-monitoring are then not installed. */
  readonly enabled: boolean;
  readonly tracer: Tracer;
  readonly meter: Meter;
}

export const noSelfTelemetry: SelfTelemetry = {
  enabled: false,
  // A proxy provider that nothing delegates to hands out the API's non-recording tracer.
  tracer: new ProxyTracerProvider().getTracer('floe'),
  meter: createNoopMeter(),
};

/** Who the telemetry is about (resource attributes) and where it goes. */
export interface SelfMonitoringOptions {
  serviceName: string;
  serviceVersion: string;
  instanceId: string;
  /** deployment.environment.name (self_monitoring.environment). */
  environment: string;
  /**
   * The acceptor's OTLP/HTTP base URL, read at the first export: in `floe all` the process's own
   * acceptor only has its port once it has started, after the services took their meters.
   */
  endpoint: () => string;
  /** Authorization, X-Tenant-ID and X-Dataset-ID of the self-monitoring tenant. */
  headers: Readonly<Record<string, string>>;
  exportIntervalMs: number;
  log: Logger;
}

export interface SelfMonitoring extends SelfTelemetry {
  /** Exports what is buffered, then stops; call while the acceptor still runs. */
  shutdown(): Promise<void>;
}

export const SERVICE_NAMESPACE = 'floe';

/** Starts the SDK. Its modules are loaded here, so processes without self-monitoring never load them. */
export async function startSelfMonitoring(o: SelfMonitoringOptions): Promise<SelfMonitoring> {
  const [{ TracerProvider, BatchSpanProcessor }, { MeterProvider, PeriodicExportingMetricReader }, { resourceFromAttributes }, semconv, { OTLPTraceExporter }, { OTLPMetricExporter }] =
    await Promise.all([
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/sdk-metrics'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/semantic-conventions'),
      import('@opentelemetry/exporter-trace-otlp-proto'),
      import('@opentelemetry/exporter-metrics-otlp-proto'),
    ]);
  const resource = resourceFromAttributes({
    [semconv.ATTR_SERVICE_NAMESPACE]: SERVICE_NAMESPACE,
    [semconv.ATTR_SERVICE_NAME]: o.serviceName,
    [semconv.ATTR_SERVICE_VERSION]: o.serviceVersion,
    [semconv.ATTR_SERVICE_INSTANCE_ID]: o.instanceId,
    [semconv.ATTR_DEPLOYMENT_ENVIRONMENT_NAME]: o.environment,
  });
  const headers = { ...o.headers };
  type TraceExporter = InstanceType<typeof OTLPTraceExporter>;
  type MetricExporter = InstanceType<typeof OTLPMetricExporter>;
  let traces: TraceExporter | undefined;
  let metrics: MetricExporter | undefined;
  const traceExporter = () => (traces ??= new OTLPTraceExporter({ url: `${o.endpoint()}/v1/traces`, headers }));
  const metricExporter = () => (metrics ??= new OTLPMetricExporter({ url: `${o.endpoint()}/v1/metrics`, headers }));

  const tracerProvider = new TracerProvider({
    resource,
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: {
          export: (spans, done) => traceExporter().export(spans, done),
          shutdown: () => traces?.shutdown() ?? Promise.resolve(),
          forceFlush: () => traces?.forceFlush() ?? Promise.resolve(),
        },
        scheduledDelayMillis: o.exportIntervalMs,
      }),
    ],
  });
  const meterProvider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: {
          export: (batch, done) => metricExporter().export(batch, done),
          shutdown: () => metrics?.shutdown() ?? Promise.resolve(),
          forceFlush: () => metrics?.forceFlush() ?? Promise.resolve(),
        },
        exportIntervalMillis: o.exportIntervalMs,
        exportTimeoutMillis: Math.min(o.exportIntervalMs, 30_000),
      }),
    ],
  });
  o.log.info({ service: o.serviceName, intervalMs: o.exportIntervalMs }, 'self-monitoring started');
  return {
    enabled: true,
    tracer: tracerProvider.getTracer('floe', o.serviceVersion),
    meter: meterProvider.getMeter('floe', o.serviceVersion),
    async shutdown() {
      // Telemetry is best effort: a failed last export must not fail the stop.
      const results = await Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
      for (const r of results) if (r.status === 'rejected') o.log.warn({ err: r.reason }, 'self-monitoring: last export failed');
    },
  };
}
