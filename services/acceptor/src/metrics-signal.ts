import { ExportMetricsServiceRequestSchema, ExportMetricsServiceResponseSchema, create, toBinary, toJson } from '@floe/proto';
import { decodeMessage } from './decode.ts';
import type { OtlpSignal } from './signals.ts';

/**
 * OTLP metrics: POST /v1/metrics and MetricsService/Export into `<tenant>.<dataset>.metrics`
 * and `metric_exemplars` (metrics-to-rows.ts). Invalid data points are reported as
 * `rejected_data_points`. Registered in signals.ts's SIGNALS like every other signal.
 */
export const metricsSignal: OtlpSignal = {
  name: 'metrics',
  httpPath: '/v1/metrics',
  // Where Prometheus's OTLP receiver takes them: a collector pointed at Prometheus needs only its host changed.
  otherHttpPaths: ['/api/v1/otlp/v1/metrics'],
  grpcMethod: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
  ingest: (ingest, ctx, body, format, times) => ingest.metrics(ctx, decodeMessage(ExportMetricsServiceRequestSchema, body, format), times),
  response(r, format) {
    const resp = create(ExportMetricsServiceResponseSchema, {
      partialSuccess: r.rejected > 0 ? { rejectedDataPoints: BigInt(r.rejected), errorMessage: r.rejectReason ?? '' } : undefined,
    });
    return format === 'json' ? toJson(ExportMetricsServiceResponseSchema, resp) : toBinary(ExportMetricsServiceResponseSchema, resp);
  },
};
