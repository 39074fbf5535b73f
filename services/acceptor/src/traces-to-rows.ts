import { KeyValueSchema, toJson, type ExportTraceServiceRequest, type KeyValue, type Span } from '@floe/proto';
import { splitAttributes, stringAttribute } from './attributes.ts';

/**
 * Converts an OTLP trace export into rows of the traces table, encoded as NDJSON lines and
 * grouped by the hour of each span's start (the table's partition), so the writer can append a
 * WAL record's payload to its per-hour batch without parsing it.
 */

export interface HourBatch {
  hour: number;
  rows: number;
  lines: string[];
}

export interface ConvertedSpans {
  byHour: Map<number, HourBatch>;
  accepted: number;
  rejected: number;
  /** The first reason a span was rejected (OTLP partial_success.error_message). */
  rejectReason: string | undefined;
}

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const STATUS = ['unset', 'ok', 'error'];
const NS_PER_HOUR = 3_600_000_000_000n;

const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
const isZero = (b: Uint8Array) => b.every((x) => x === 0);
const attrsJson = (attrs: readonly KeyValue[]) => attrs.map((kv) => toJson(KeyValueSchema, kv));

function invalidReason(span: Span): string | undefined {
  if (span.traceId.length !== 16 || isZero(span.traceId)) return 'span has an invalid trace_id (must be 16 non-zero bytes)';
  if (span.spanId.length !== 8 || isZero(span.spanId)) return 'span has an invalid span_id (must be 8 non-zero bytes)';
  if (span.parentSpanId.length !== 0 && span.parentSpanId.length !== 8) return 'span has an invalid parent_span_id (must be empty or 8 bytes)';
  if (span.startTimeUnixNano <= 0n) return 'span has no start_time_unix_nano';
  return undefined;
}

export function spansToRows(req: ExportTraceServiceRequest): ConvertedSpans {
  const byHour = new Map<number, HourBatch>();
  let accepted = 0;
  let rejected = 0;
  let rejectReason: string | undefined;

  for (const rs of req.resourceSpans) {
    const resourceAttrs = rs.resource?.attributes ?? [];
    const res = splitAttributes(resourceAttrs);
    const serviceName = stringAttribute(resourceAttrs, 'service.name') ?? 'unknown_service';
    for (const ss of rs.scopeSpans) {
      const scopeName = ss.scope?.name ?? '';
      const scopeVersion = ss.scope?.version ?? '';
      for (const span of ss.spans) {
        const reason = invalidReason(span);
        if (reason) {
          rejected++;
          rejectReason ??= reason;
          continue;
        }
        const attrs = splitAttributes(span.attributes);
        const end = span.endTimeUnixNano >= span.startTimeUnixNano ? span.endTimeUnixNano : span.startTimeUnixNano;
        const dropped =
          span.droppedAttributesCount || span.droppedEventsCount || span.droppedLinksCount
            ? JSON.stringify({ attributes: span.droppedAttributesCount, events: span.droppedEventsCount, links: span.droppedLinksCount })
            : null;
        const row = {
          trace_id: hex(span.traceId),
          span_id: hex(span.spanId),
          parent_span_id: span.parentSpanId.length ? hex(span.parentSpanId) : '',
          trace_state: span.traceState,
          name: span.name,
          kind: KINDS[span.kind] ?? 'unspecified',
          start_time_unix_nano: span.startTimeUnixNano.toString(),
          end_time_unix_nano: end.toString(),
          duration_nano: (end - span.startTimeUnixNano).toString(),
          status_code: STATUS[span.status?.code ?? 0] ?? 'unset',
          status_message: span.status?.message ?? '',
          service_name: serviceName,
          scope_name: scopeName,
          scope_version: scopeVersion,
          flags: span.flags,
          span_attr_str: attrs.str,
          span_attr_int: attrs.int,
          span_attr_double: attrs.double,
          span_attr_bool: attrs.bool,
          resource_attr_str: res.str,
          resource_attr_int: res.int,
          resource_attr_double: res.double,
          resource_attr_bool: res.bool,
          events_json: span.events.length
            ? JSON.stringify(
                span.events.map((e) => ({
                  timeUnixNano: e.timeUnixNano.toString(),
                  name: e.name,
                  attributes: attrsJson(e.attributes),
                  ...(e.droppedAttributesCount ? { droppedAttributesCount: e.droppedAttributesCount } : {}),
                })),
              )
            : null,
          links_json: span.links.length
            ? JSON.stringify(
                span.links.map((l) => ({
                  traceId: hex(l.traceId),
                  spanId: hex(l.spanId),
                  traceState: l.traceState,
                  attributes: attrsJson(l.attributes),
                  ...(l.flags ? { flags: l.flags } : {}),
                })),
              )
            : null,
          dropped_counts: dropped,
        };
        const hour = Number(span.startTimeUnixNano / NS_PER_HOUR);
        let batch = byHour.get(hour);
        if (!batch) byHour.set(hour, (batch = { hour, rows: 0, lines: [] }));
        batch.lines.push(JSON.stringify(row));
        batch.rows++;
        accepted++;
      }
    }
  }
  return { byHour, accepted, rejected, rejectReason };
}
