import http from 'node:http';
import https from 'node:https';
import { ProxyTracerProvider, createNoopMeter, type Meter, type Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { prometheusMetricsEndpoint, type MetricsEndpoint } from './metrics-endpoint.ts';
import { recordRuntimeMetrics } from './runtime-metrics.ts';

/**
 * Floe's own spans and metrics (spec 2 "Events"), made with the OpenTelemetry SDK and exported
 * over OTLP/HTTP protobuf to an acceptor as the self-monitoring tenant, so they are stored and
 * queried like any tenant's telemetry. Services receive a `SelfTelemetry` from the composition
 * (never a global provider: tests run several Floe instances in one process) and make their
 * instruments from its meter; without self-monitoring they get `noSelfTelemetry`, whose tracer
 * and meter record nothing.
 */
export interface SelfTelemetry {
  /** Spans are recorded and exported (self_monitoring.enabled): hooks that only serve them are installed. */
  readonly enabled: boolean;
  readonly tracer: Tracer;
  readonly meter: Meter;
  /** `GET /metrics` of the process's services (self_monitoring.metrics_endpoint); absent: not served. */
  readonly metricsEndpoint?: MetricsEndpoint;
}

/** Whether the meter records anything (an OTLP export or the metrics endpoint reads it). */
export const recordsMetrics = (t: SelfTelemetry): boolean => t.enabled || t.metricsEndpoint !== undefined;

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
  /** Spans and metrics exported over OTLP to the self-monitoring tenant (self_monitoring.enabled); absent: none. */
  export?: SelfMonitoringExport;
  /** Metrics served at `GET /metrics` (self_monitoring.metrics_endpoint); absent: not served. */
  metricsEndpoint?: { bearerToken: string };
  log: Logger;
}

export interface SelfMonitoringExport {
  /**
   * The acceptor's OTLP/HTTP base URL, read at each export until known: in `floe all` the
   * process's own acceptor only has its port once it has started, after the services took their
   * meters. Undefined until then: those exports are skipped (metrics are cumulative, so the next
   * one carries what they held; spans ended before it are dropped).
   */
  endpoint: () => string | undefined;
  /** Authorization, X-Tenant-ID and X-Dataset-ID of the self-monitoring tenant. */
  headers: Readonly<Record<string, string>>;
  exportIntervalMs: number;
}

export interface SelfMonitoring extends SelfTelemetry {
  /** Exports what is buffered, then stops; call while the acceptor still runs. */
  shutdown(): Promise<void>;
}

export const SERVICE_NAMESPACE = 'floe';

/**
 * Starts the SDK: a meter provider read by the OTLP export, the metrics endpoint or both (with
 * the process's runtime metrics), and a tracer provider when spans are exported. Its modules are
 * loaded here, so processes with neither never load them.
 */
export async function startSelfMonitoring(o: SelfMonitoringOptions): Promise<SelfMonitoring> {
  const [{ TracerProvider, BatchSpanProcessor }, { MeterProvider, PeriodicExportingMetricReader }, { resourceFromAttributes }, semconv] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/sdk-metrics'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  const resource = resourceFromAttributes({
    [semconv.ATTR_SERVICE_NAMESPACE]: SERVICE_NAMESPACE,
    [semconv.ATTR_SERVICE_NAME]: o.serviceName,
    [semconv.ATTR_SERVICE_VERSION]: o.serviceVersion,
    [semconv.ATTR_SERVICE_INSTANCE_ID]: o.instanceId,
    [semconv.ATTR_DEPLOYMENT_ENVIRONMENT_NAME]: o.environment,
  });
  const readers = [];
  let tracerProvider: InstanceType<typeof TracerProvider> | undefined;
  if (o.export) {
    const ex = o.export;
    const [{ OTLPTraceExporter }, { OTLPMetricExporter }] = await Promise.all([import('@opentelemetry/exporter-trace-otlp-proto'), import('@opentelemetry/exporter-metrics-otlp-proto')]);
    const headers = { ...ex.headers };
    // Node's global agents, not agents of the exporters' own: with mutual TLS the process's
    // certificate is presented through https.globalAgent (runtime's presentProcessCertificate).
    const httpAgentOptions = (protocol: string) => (protocol === 'http:' ? http.globalAgent : https.globalAgent);
    const traces = lazyExporter(ex.endpoint, (url) => new OTLPTraceExporter({ url: `${url}/v1/traces`, headers, httpAgentOptions }));
    const metrics = lazyExporter(ex.endpoint, (url) => new OTLPMetricExporter({ url: `${url}/v1/metrics`, headers, httpAgentOptions }));
    tracerProvider = new TracerProvider({
      resource,
      spanProcessors: [new BatchSpanProcessor({ exporter: traces, scheduledDelayMillis: ex.exportIntervalMs })],
    });
    readers.push(
      new PeriodicExportingMetricReader({
        exporter: metrics,
        exportIntervalMillis: ex.exportIntervalMs,
        exportTimeoutMillis: Math.min(ex.exportIntervalMs, 30_000),
      }),
    );
  }
  const served = o.metricsEndpoint ? await prometheusMetricsEndpoint(o.metricsEndpoint.bearerToken) : undefined;
  if (served) readers.push(served.reader);
  const meterProvider = new MeterProvider({ resource, readers });
  const meter = meterProvider.getMeter('floe', o.serviceVersion);
  const runtime = recordRuntimeMetrics(meter);
  o.log.info({ service: o.serviceName, exportIntervalMs: o.export?.exportIntervalMs, metricsEndpoint: served !== undefined }, 'self-monitoring started');
  return {
    enabled: tracerProvider !== undefined,
    tracer: tracerProvider?.getTracer('floe', o.serviceVersion) ?? noSelfTelemetry.tracer,
    meter,
    ...(served ? { metricsEndpoint: served.endpoint } : {}),
    async shutdown() {
      runtime.stop();
      // Telemetry is best effort: a failed last export must not fail the stop.
      const results = await Promise.allSettled([tracerProvider?.shutdown(), meterProvider.shutdown()]);
      for (const r of results) if (r.status === 'rejected') o.log.warn({ err: r.reason }, 'self-monitoring: last export failed');
    },
  };
}

interface Exporter<T> {
  export(items: T, done: (result: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
  forceFlush?(): Promise<void>;
}

/**
 * An exporter made at the first export whose endpoint is known, then kept (see
 * SelfMonitoringExport.endpoint); exports before that report success (ExportResultCode.SUCCESS):
 * nothing to send to yet is not a failure.
 */
function lazyExporter<T, E extends Exporter<T>>(endpoint: () => string | undefined, make: (url: string) => E): Exporter<T> & { forceFlush(): Promise<void> } {
  let made: E | undefined;
  return {
    export(items, done) {
      if (made === undefined) {
        const url = endpoint();
        if (url !== undefined) made = make(url);
      }
      if (made) made.export(items, done);
      else done({ code: 0 });
    },
    shutdown: () => made?.shutdown() ?? Promise.resolve(),
    forceFlush: () => made?.forceFlush?.() ?? Promise.resolve(),
  };
}
