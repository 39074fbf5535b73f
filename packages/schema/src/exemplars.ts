import type { ColumnDef, TableDef } from './types.ts';

/**
 * The metric_exemplars table: one row per exemplar of a metric data point (OTLP exemplars, and
 * remote-write exemplars). It carries the series it belongs to (metric name, series_id as in the
 * metrics table, the series' data point and resource attributes) so Prometheus's
 * /query_exemplars answers from this table alone, and the trace it points at (trace_id, span_id:
 * joins the traces table). `filtered_attr_*` are the exemplar's own attributes (the ones the
 * aggregation filtered out of the series).
 */
const columns: ColumnDef[] = [
  { name: 'timestamp', id: 1, type: 'timestamptz', required: true, derived: 'time_unix_nano', doc: 'exemplar time, microseconds (source of the hour partition)' },
  { name: 'metric_name', id: 2, type: 'string', required: true, doc: 'name of the metric the exemplar belongs to' },
  { name: 'metric_type', id: 3, type: 'string', doc: 'kind of that metric: gauge, sum, histogram, exponential_histogram or summary' },
  { name: 'series_id', id: 4, type: 'string', doc: "the series' id, as in the metrics table" },
  { name: 'service_name', id: 5, type: 'string', doc: 'resource attribute service.name (unknown_service when absent)' },
  { name: 'time_unix_nano', id: 6, type: 'long', required: true, doc: 'exemplar time, unix nanoseconds' },
  { name: 'value', id: 7, type: 'double', doc: 'measured value (integer values converted to double)' },
  { name: 'value_int', id: 8, type: 'long', doc: 'the exact value of an integer exemplar; NULL for double ones' },
  { name: 'trace_id', id: 9, type: 'string', doc: 'trace id of the sampled measurement, 32 lower-case hex digits; NULL when none' },
  { name: 'span_id', id: 10, type: 'string', doc: 'span id of the sampled measurement, 16 lower-case hex digits; NULL when none' },
  { name: 'filtered_attr_str', id: 11, type: { map: 'string' }, doc: "string attributes of the exemplar itself (OTLP filtered_attributes; remote write's exemplar labels)" },
  { name: 'filtered_attr_int', id: 12, type: { map: 'long' }, doc: 'integer filtered attributes' },
  { name: 'filtered_attr_double', id: 13, type: { map: 'double' }, doc: 'floating-point filtered attributes' },
  { name: 'filtered_attr_bool', id: 14, type: { map: 'boolean' }, doc: 'boolean filtered attributes' },
  { name: 'point_attr_str', id: 15, type: { map: 'string' }, doc: "string attributes of the series' data points (its labels)" },
  { name: 'point_attr_int', id: 16, type: { map: 'long' }, doc: 'integer data point attributes' },
  { name: 'point_attr_double', id: 17, type: { map: 'double' }, doc: 'floating-point data point attributes' },
  { name: 'point_attr_bool', id: 18, type: { map: 'boolean' }, doc: 'boolean data point attributes' },
  { name: 'resource_attr_str', id: 19, type: { map: 'string' }, doc: 'string resource attributes' },
  { name: 'resource_attr_int', id: 20, type: { map: 'long' }, doc: 'integer resource attributes' },
  { name: 'resource_attr_double', id: 21, type: { map: 'double' }, doc: 'floating-point resource attributes' },
  { name: 'resource_attr_bool', id: 22, type: { map: 'boolean' }, doc: 'boolean resource attributes' },
];

/** Map key/value ids, written out: like column ids they are permanent. */
const mapIds: TableDef['mapIds'] = {
  filtered_attr_str: { keyId: 100, valueId: 101 },
  filtered_attr_int: { keyId: 102, valueId: 103 },
  filtered_attr_double: { keyId: 104, valueId: 105 },
  filtered_attr_bool: { keyId: 106, valueId: 107 },
  point_attr_str: { keyId: 108, valueId: 109 },
  point_attr_int: { keyId: 110, valueId: 111 },
  point_attr_double: { keyId: 112, valueId: 113 },
  point_attr_bool: { keyId: 114, valueId: 115 },
  resource_attr_str: { keyId: 116, valueId: 117 },
  resource_attr_int: { keyId: 118, valueId: 119 },
  resource_attr_double: { keyId: 120, valueId: 121 },
  resource_attr_bool: { keyId: 122, valueId: 123 },
};

export const metricExemplarsTable: TableDef = {
  name: 'metric_exemplars',
  version: 1,
  columns,
  mapIds,
  partitionSource: 'timestamp',
  // Materialized labels: the exemplar's own attributes, then its series' data point attributes, then the resource's.
  labelScopes: ['filtered', 'point', 'resource'],
  // /query_exemplars selects series by metric name and matchers over a time range, as the
  // metrics table is read: the same order.
  sortOrder: ['metric_name', 'series_id', 'time_unix_nano'],
};
