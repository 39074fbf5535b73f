import type { TenantContext } from '@floe/auth';
import {
  ExportLogsServiceRequestSchema,
  ExportLogsServiceResponseSchema,
  ExportTraceServiceResponseSchema,
  ExportTraceServiceRequestSchema,
  create,
  toBinary,
  toJson,
  type JsonValue,
} from '@floe/proto';
import type { AcceptedTimes } from './accepted-times.ts';
import { decodeMessage, type BodyFormat } from './decode.ts';
import type { Ingest, IngestResult } from './ingest.ts';
import { profilesSignal } from './profiles-signal.ts';
import { metricsSignal } from './metrics-signal.ts';

/**
 * The OTLP signals the acceptor takes, each once for both transports: its OTLP/HTTP path, its
 * gRPC method, how a body becomes rows (ingest) and its export response, whose partial success
 * reports the items rejected (OTLP: `rejected_<items>` and the first reason).
 */
export interface OtlpSignal {
  name: string;
  httpPath: string;
  /** More OTLP/HTTP paths it answers at besides httpPath and `/otlp` + httpPath (another backend's). */
  otherHttpPaths?: readonly string[];
  grpcMethod: string;
  /** `times`: the row times the tenant may write (Admission). */
  ingest(ingest: Ingest, ctx: TenantContext, body: Uint8Array, format: BodyFormat, times: AcceptedTimes): Promise<IngestResult>;
  response(result: IngestResult, format: BodyFormat): Uint8Array | JsonValue;
}

export const tracesSignal: OtlpSignal = {
  name: 'traces',
  httpPath: '/v1/traces',
  grpcMethod: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
  // Protobuf is transcoded from the wire bytes; JSON is decoded, then converted.
  ingest: (ingest, ctx, body, format, times) =>
    format === 'protobuf' ? ingest.tracesProtobuf(ctx, body, times) : ingest.traces(ctx, decodeMessage(ExportTraceServiceRequestSchema, body, format), times),
  response(r, format) {
    const resp = create(ExportTraceServiceResponseSchema, {
      partialSuccess: r.rejected > 0 ? { rejectedSpans: BigInt(r.rejected), errorMessage: r.rejectReason ?? '' } : undefined,
    });
    return format === 'json' ? toJson(ExportTraceServiceResponseSchema, resp) : toBinary(ExportTraceServiceResponseSchema, resp);
  },
};

export const logsSignal: OtlpSignal = {
  name: 'logs',
  httpPath: '/v1/logs',
  grpcMethod: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
  // Protobuf is transcoded from the wire bytes; JSON is decoded, then converted.
  ingest: (ingest, ctx, body, format, times) =>
    format === 'protobuf' ? ingest.logsProtobuf(ctx, body, times) : ingest.logs(ctx, decodeMessage(ExportLogsServiceRequestSchema, body, format), times),
  response(r, format) {
    const resp = create(ExportLogsServiceResponseSchema, {
      partialSuccess: r.rejected > 0 ? { rejectedLogRecords: BigInt(r.rejected), errorMessage: r.rejectReason ?? '' } : undefined,
    });
    return format === 'json' ? toJson(ExportLogsServiceResponseSchema, resp) : toBinary(ExportLogsServiceResponseSchema, resp);
  },
};

export const SIGNALS: readonly OtlpSignal[] = [tracesSignal, logsSignal, profilesSignal, metricsSignal];
