import type { ColumnDef, TableDef } from './types.ts';

/**
 * The logs table: one row per OTLP log record. The labels LogQL resolves to columns are real
 * columns (service_name; level/severity → severity_text; trace_id, span_id: spec 1, "Log label
 * resolution"); every other label is looked up in the typed attribute maps (string, int, double,
 * bool) of the record, its resource and its scope, so regex and ordered comparisons work on any
 * key. The body is text: a string body verbatim, any other body as the text the OpenTelemetry
 * Collector's `Value.AsString` gives (JSON for arrays and maps, base64 for bytes), which is also
 * what Loki stores; body_type keeps the body's OTLP kind so a JSON-looking string body and a map
 * body stay distinguishable.
 *
 * Stored as sent, as in the traces table: proto3 strings without presence ('' when not set).
 * Ids are hex, or NULL when the record carries none (empty or all-zero bytes).
 */
const columns: ColumnDef[] = [
  { name: 'timestamp', id: 1, type: 'timestamptz', required: true, derived: 'time_unix_nano', doc: 'record time, microseconds (source of the hour partition)' },
  {
    name: 'time_unix_nano',
    id: 2,
    type: 'long',
    required: true,
    doc: 'record time, unix nanoseconds: OTLP time_unix_nano, or observed_time_unix_nano when that is 0, or the receive time when both are',
  },
  { name: 'observed_time_unix_nano', id: 3, type: 'long', doc: 'OTLP observed_time_unix_nano (when the record was observed by the collection system); NULL when 0' },
  { name: 'service_name', id: 4, type: 'string', doc: 'resource attribute service.name (unknown_service when absent)' },
  { name: 'severity_text', id: 5, type: 'string', doc: 'severity text as sent (the LogQL labels level, severity and detected_level)' },
  { name: 'severity_number', id: 6, type: 'int', doc: 'OTLP severity number, 0 (unspecified) to 24' },
  { name: 'body', id: 7, type: 'string', doc: 'the body as text: string bodies verbatim, other values as JSON text (bytes as base64); empty when there is none' },
  { name: 'body_type', id: 8, type: 'string', doc: "the body's OTLP kind: string, int, double, bool, bytes, array, kvlist or empty" },
  { name: 'trace_id', id: 9, type: 'string', doc: 'trace id, 32 lower-case hex digits; NULL when the record has none' },
  { name: 'span_id', id: 10, type: 'string', doc: 'span id, 16 lower-case hex digits; NULL when the record has none' },
  { name: 'flags', id: 11, type: 'long', doc: 'OTLP log record flags (W3C trace flags in the low byte)' },
  { name: 'event_name', id: 12, type: 'string', doc: 'OTLP event name (records that are events)' },
  { name: 'scope_name', id: 13, type: 'string', doc: 'instrumentation scope name' },
  { name: 'scope_version', id: 14, type: 'string', doc: 'instrumentation scope version' },
  { name: 'dropped_attributes_count', id: 15, type: 'long', doc: 'attributes the sender dropped from the record' },
  { name: 'log_attr_str', id: 16, type: { map: 'string' }, doc: 'string log record attributes (arrays, maps and bytes as JSON text)' },
  { name: 'log_attr_int', id: 17, type: { map: 'long' }, doc: 'integer log record attributes' },
  { name: 'log_attr_double', id: 18, type: { map: 'double' }, doc: 'floating-point log record attributes' },
  { name: 'log_attr_bool', id: 19, type: { map: 'boolean' }, doc: 'boolean log record attributes' },
  { name: 'resource_attr_str', id: 20, type: { map: 'string' }, doc: 'string resource attributes' },
  { name: 'resource_attr_int', id: 21, type: { map: 'long' }, doc: 'integer resource attributes' },
  { name: 'resource_attr_double', id: 22, type: { map: 'double' }, doc: 'floating-point resource attributes' },
  { name: 'resource_attr_bool', id: 23, type: { map: 'boolean' }, doc: 'boolean resource attributes' },
  { name: 'scope_attr_str', id: 24, type: { map: 'string' }, doc: 'string instrumentation scope attributes' },
  { name: 'scope_attr_int', id: 25, type: { map: 'long' }, doc: 'integer instrumentation scope attributes' },
  { name: 'scope_attr_double', id: 26, type: { map: 'double' }, doc: 'floating-point instrumentation scope attributes' },
  { name: 'scope_attr_bool', id: 27, type: { map: 'boolean' }, doc: 'boolean instrumentation scope attributes' },
];

/** Map key/value ids, written out: like column ids they are permanent. */
const mapIds: TableDef['mapIds'] = {
  log_attr_str: { keyId: 100, valueId: 101 },
  log_attr_int: { keyId: 102, valueId: 103 },
  log_attr_double: { keyId: 104, valueId: 105 },
  log_attr_bool: { keyId: 106, valueId: 107 },
  resource_attr_str: { keyId: 108, valueId: 109 },
  resource_attr_int: { keyId: 110, valueId: 111 },
  resource_attr_double: { keyId: 112, valueId: 113 },
  resource_attr_bool: { keyId: 114, valueId: 115 },
  scope_attr_str: { keyId: 116, valueId: 117 },
  scope_attr_int: { keyId: 118, valueId: 119 },
  scope_attr_double: { keyId: 120, valueId: 121 },
  scope_attr_bool: { keyId: 122, valueId: 123 },
};

export const logsTable: TableDef = {
  name: 'logs',
  version: 1,
  columns,
  mapIds,
  partitionSource: 'timestamp',
  // Materialized labels: the log record's attributes, then the resource's.
  labelScopes: ['log', 'resource'],
  // A LogQL query always names a stream (service_name) and usually a level, then reads a time
  // window: service, then severity, then time keeps each (service, level) run in time order, so
  // row-group min/max stats prune on all three.
  sortOrder: ['service_name', 'severity_text', 'time_unix_nano'],
};
