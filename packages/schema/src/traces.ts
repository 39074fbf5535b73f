import type { ColumnDef, TableDef } from './types.ts';

/**
 * The traces table: one row per span. Attributes are typed maps (string, int, double, bool) so
 * regex and numeric comparisons work on any key; the hottest attributes are real columns
 * (service_name, status, kind) because map filters are ~20x slower (reference/storage.md §2).
 * Events and links keep their full OTLP shape as JSON text: they are read whole, per trace.
 */
const columns: ColumnDef[] = [
  { name: 'timestamp', id: 1, type: 'timestamptz', required: true, derived: 'start_time_unix_nano', doc: 'span start, microseconds (source of the hour partition)' },
  { name: 'trace_id', id: 2, type: 'string', required: true, doc: 'trace id, 32 lower-case hex digits' },
  { name: 'span_id', id: 3, type: 'string', required: true, doc: 'span id, 16 lower-case hex digits' },
  { name: 'parent_span_id', id: 4, type: 'string', doc: 'parent span id (hex) or empty for a root span' },
  { name: 'trace_state', id: 5, type: 'string', doc: 'W3C trace state' },
  { name: 'name', id: 6, type: 'string', doc: 'span name' },
  { name: 'kind', id: 7, type: 'string', doc: 'unspecified, internal, server, client, producer or consumer' },
  { name: 'start_time_unix_nano', id: 8, type: 'long', required: true, doc: 'span start, unix nanoseconds' },
  { name: 'end_time_unix_nano', id: 9, type: 'long', doc: 'span end, unix nanoseconds' },
  { name: 'duration_nano', id: 10, type: 'long', doc: 'end minus start, nanoseconds' },
  { name: 'status_code', id: 11, type: 'string', doc: 'unset, ok or error' },
  { name: 'status_message', id: 12, type: 'string', doc: 'status description' },
  { name: 'service_name', id: 13, type: 'string', doc: 'resource attribute service.name' },
  { name: 'scope_name', id: 14, type: 'string', doc: 'instrumentation scope name' },
  { name: 'scope_version', id: 15, type: 'string', doc: 'instrumentation scope version' },
  { name: 'flags', id: 16, type: 'long', doc: 'OTLP span flags' },
  { name: 'span_attr_str', id: 17, type: { map: 'string' }, doc: 'string span attributes (arrays and maps as JSON text)' },
  { name: 'span_attr_int', id: 18, type: { map: 'long' }, doc: 'integer span attributes' },
  { name: 'span_attr_double', id: 19, type: { map: 'double' }, doc: 'floating-point span attributes' },
  { name: 'span_attr_bool', id: 20, type: { map: 'boolean' }, doc: 'boolean span attributes' },
  { name: 'resource_attr_str', id: 21, type: { map: 'string' }, doc: 'string resource attributes' },
  { name: 'resource_attr_int', id: 22, type: { map: 'long' }, doc: 'integer resource attributes' },
  { name: 'resource_attr_double', id: 23, type: { map: 'double' }, doc: 'floating-point resource attributes' },
  { name: 'resource_attr_bool', id: 24, type: { map: 'boolean' }, doc: 'boolean resource attributes' },
  { name: 'events_json', id: 25, type: 'string', doc: 'span events as a JSON array of {timeUnixNano, name, attributes}' },
  { name: 'links_json', id: 26, type: 'string', doc: 'span links as a JSON array of {traceId, spanId, traceState, attributes}' },
  { name: 'dropped_counts', id: 27, type: 'string', doc: 'dropped attributes/events/links counts as JSON, when non-zero' },
];

let nextId = 100;
const mapIds: TableDef['mapIds'] = {};
for (const c of columns) {
  if (typeof c.type === 'object') mapIds[c.name] = { keyId: nextId++, valueId: nextId++ };
}

export const tracesTable: TableDef = {
  name: 'traces',
  version: 1,
  columns,
  mapIds,
  partitionSource: 'timestamp',
  // Materialized labels: the span's attributes, then the resource's.
  labelScopes: ['span', 'resource'],
  // Service then time keeps per-service and time-window scans pruned by row-group stats. It
  // scatters a trace's spans over the row groups of its services; clustering spans by trace
  // instead (measured: a lookup then reads one row group) made service-filtered scans about 3x
  // slower and needs a per-trace sort key that Iceberg sort orders can't express, so it stays.
  sortOrder: ['service_name', 'start_time_unix_nano'],
  // DuckDB decodes a row group whole (one page per column chunk), so a trace lookup decodes in
  // full every row group that holds one of its spans. At 200k spans per hour-file, 16k-row
  // groups cut the lookup's DuckDB CPU by about a third against DuckDB's default 122,880; smaller
  // groups gain nothing more (more groups touched, more per-group overhead). Whole-file scans pay
  // that per-group overhead: a full scan for one id costs 1.4-1.8x, a group-by-service 1.25x.
  rowGroupSize: 16_384,
  idColumn: 'trace_id',
};
