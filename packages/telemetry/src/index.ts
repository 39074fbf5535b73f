/**
 * @floe/telemetry: the process logger (pino, JSON lines) and Floe's self-monitoring. Every service
 * takes a child logger named after itself; request-scoped fields (tenant, dataset) are added by
 * the caller.
 *
 * Self-monitoring (spec 2 "Events", spec 1 "Self-profiling") stores Floe's own spans, metrics and
 * CPU (and optionally live-heap) profiles as telemetry of the tenant _system: the composition starts the OpenTelemetry SDK
 * and the profiler, both exporting over OTLP/HTTP to an acceptor, and hands services a
 * `SelfTelemetry` (tracer and meter) explicitly; `noSelfTelemetry` records nothing. The same
 * meter is served in the Prometheus text format at `GET /metrics` of every service's port
 * (self_monitoring.metrics_endpoint), for a Prometheus outside Floe.
 */
export { createLogger, httpFrameworkLogging, silentLogger } from './logger.ts';
export type { Logger, LoggerOptions } from './logger.ts';
export { SERVICE_NAMESPACE, noSelfTelemetry, recordsMetrics, startSelfMonitoring } from './self-monitoring.ts';
export type { SelfMonitoring, SelfMonitoringExport, SelfMonitoringOptions, SelfTelemetry } from './self-monitoring.ts';
export type { MetricsAnswer, MetricsEndpoint } from './metrics-endpoint.ts';
export { httpServerMetrics } from './http-metrics.ts';
export { observeBytesAndLimit } from './bytes-gauges.ts';
// The API types and enums instrumented code needs, so services depend on this package alone.
export { SpanKind, SpanStatusCode } from '@opentelemetry/api';
export { parentFromTraceparent } from './traceparent.ts';
export { traceGrpcService } from './grpc-spans.ts';
export { endHttpServerSpan, serverTiming, startHttpServerSpan, traceparentOf, UNTRACED_PATHS } from './http-spans.ts';
export type { Attributes, Counter, Histogram, Meter, Span, Tracer } from '@opentelemetry/api';
export { OtlpProfileBuilder } from './otlp-profile.ts';
export type { ProfileEntry, ProfileRequestMeta, ProfilesRequestInit, V8CallFrame } from './otlp-profile.ts';
export { addCpuProfile, cpuProfileToOtlp } from './cpu-profile.ts';
export type { CpuProfileMeta, V8CpuProfile } from './cpu-profile.ts';
export { addHeapProfile, heapProfileToOtlp } from './heap-profile.ts';
export type { HeapProfileMeta, V8SamplingHeapNode, V8SamplingHeapProfile } from './heap-profile.ts';
export { HEAP_SAMPLING_INTERVAL_BYTES, startSelfProfiler } from './self-profiler.ts';
export type { SelfProfiler, SelfProfilerOptions } from './self-profiler.ts';
