import { KeyValueSchema, toJson, type ExportTraceServiceRequest, type KeyValue, type Span } from '@floe/proto';
import { entryCount, serviceName, splitAttributes } from './attributes.ts';
import { MAX_INT64, RowCollector, hex, isZero, type ConvertedRows, type HourBatch, RESOURCE_ENTRIES_BUDGET } from './rows.ts';
import { AcceptedTimes } from './accepted-times.ts';

/**
 * Converts a decoded OTLP trace export (OTLP/JSON bodies) into row objects of the traces table,
 * grouped by the hour of each span's start (the table's partition). It is also the reference the
 * protobuf transcoder (traces-wire.ts) is tested against.
 */

export type { HourBatch };
export type ConvertedSpans = ConvertedRows;

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const STATUS = ['unset', 'ok', 'error'];

const attrsJson = (attrs: readonly KeyValue[]) => attrs.map((kv) => toJson(KeyValueSchema, kv));

export const SPAN_TIME_RANGE = 'span has a time beyond the int64 range of unix nanoseconds';

/**
 * Bytes of events_json and links_json one request may store. An empty event or link is two bytes
 * on the wire and some fifty as JSON: a 60 KB gzip body of them became a 1.5 GB row, 4 GB of
 * memory and 15 s of event loop. Spans past it are rejected (partial success).
 */
export const SPAN_JSON_BUDGET = 256 * 1024 * 1024;
export const SPAN_JSON_OVER_BUDGET = `span's events and links pass the request's ${SPAN_JSON_BUDGET} bytes of them; send fewer per request`;

export const SPAN_RESOURCE_OVER_BUDGET = `span's resource attributes, once per span, pass the request's ${RESOURCE_ENTRIES_BUDGET} entries; send fewer spans per resource or fewer resource attributes`;

function invalidReason(span: Span): string | undefined {
  if (span.traceId.length !== 16 || isZero(span.traceId)) return 'span has an invalid trace_id (must be 16 non-zero bytes)';
  if (span.spanId.length !== 8 || isZero(span.spanId)) return 'span has an invalid span_id (must be 8 non-zero bytes)';
  if (span.parentSpanId.length !== 0 && span.parentSpanId.length !== 8) return 'span has an invalid parent_span_id (must be empty or 8 bytes)';
  if (span.startTimeUnixNano <= 0n) return 'span has no start_time_unix_nano';
  // Stored as Iceberg longs: one such row would fail its whole commit, for every tenant.
  if (span.startTimeUnixNano > MAX_INT64 || span.endTimeUnixNano > MAX_INT64) return SPAN_TIME_RANGE;
  return undefined;
}

export function spansToRows(req: ExportTraceServiceRequest, times: AcceptedTimes = AcceptedTimes.ANY): ConvertedSpans {
  const out = new RowCollector({ times });
  let jsonLeft = SPAN_JSON_BUDGET;
  let entriesLeft = RESOURCE_ENTRIES_BUDGET;
  for (const rs of req.resourceSpans) {
    const resourceAttrs = rs.resource?.attributes ?? [];
    const res = splitAttributes(resourceAttrs);
    const service = serviceName(resourceAttrs);
    const entries = entryCount(res);
    for (const ss of rs.scopeSpans) {
      const scopeName = ss.scope?.name ?? '';
      const scopeVersion = ss.scope?.version ?? '';
      for (const span of ss.spans) {
        const reason = invalidReason(span);
        if (reason) {
          out.reject(reason);
          continue;
        }
        if (!out.admits(span.startTimeUnixNano, 'span start time')) continue;
        const events = eventsJson(span);
        const links = linksJson(span);
        const json = (events === null ? 0 : Buffer.byteLength(events)) + (links === null ? 0 : Buffer.byteLength(links));
        const over = entries > entriesLeft ? SPAN_RESOURCE_OVER_BUDGET : json > jsonLeft ? SPAN_JSON_OVER_BUDGET : undefined;
        if (over) {
          out.reject(over);
          continue;
        }
        jsonLeft -= json;
        entriesLeft -= entries;
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
          service_name: service,
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
          events_json: events,
          links_json: links,
          dropped_counts: dropped,
        };
        out.add(span.startTimeUnixNano, row);
      }
    }
  }
  return out.result();
}

function eventsJson(span: Span): string | null {
  if (!span.events.length) return null;
  return JSON.stringify(
    span.events.map((e) => ({
      timeUnixNano: e.timeUnixNano.toString(),
      name: e.name,
      attributes: attrsJson(e.attributes),
      ...(e.droppedAttributesCount ? { droppedAttributesCount: e.droppedAttributesCount } : {}),
    })),
  );
}

function linksJson(span: Span): string | null {
  if (!span.links.length) return null;
  return JSON.stringify(
    span.links.map((l) => ({
      traceId: hex(l.traceId),
      spanId: hex(l.spanId),
      traceState: l.traceState,
      attributes: attrsJson(l.attributes),
      ...(l.flags ? { flags: l.flags } : {}),
    })),
  );
}
