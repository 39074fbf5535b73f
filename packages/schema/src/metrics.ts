import type { ColumnDef, TableDef } from './types.ts';

/**
 * The metrics table: one row per data point of every OTLP metric kind (and of Prometheus remote
 * write, converted to OpenTelemetry metrics: spec 1, "Ingest" rules 2-3). `metric_type` says
 * which of the kind-specific columns a row fills:
 *
 * | metric_type           | filled                                                                  |
 * |-----------------------|-------------------------------------------------------------------------|
 * | gauge                 | value (value_int too for integer points)                                |
 * | sum                   | value, value_int, temporality, is_monotonic                             |
 * | histogram             | count, sum, min, max, explicit_bounds, bucket_counts, temporality       |
 * | exponential_histogram | count, sum, min, max, exp_* (scale, zero bucket, both bucket ranges), temporality |
 * | summary               | count, sum, quantiles                                                   |
 *
 * Everything a PromQL engine needs later is a column: start time (counter resets, `rate` on
 * delta/cumulative), flags (bit 0, no recorded value, is Prometheus's staleness marker), the full
 * bucket layout of both histogram kinds (exponential ones are downsampled to classic `le` buckets
 * at read time, rule 4). Series identity is `series_id`, so grouping rows into series never
 * touches the attribute maps (about 20x slower than columns, reference/storage.md §2).
 *
 * The OTLP start time is stored as `start_unix_nano`, deliberately not `start_time_unix_nano`:
 * SQL time predicates on that name are read as bounds on the row's own time (the traces table's
 * meaning) to prune hour partitions, and a cumulative point's start is hours or days before it.
 */
const columns: ColumnDef[] = [
  { name: 'timestamp', id: 1, type: 'timestamptz', required: true, derived: 'time_unix_nano', doc: 'data point time, microseconds (source of the hour partition)' },
  { name: 'metric_name', id: 2, type: 'string', required: true, doc: 'metric name' },
  { name: 'metric_type', id: 3, type: 'string', required: true, doc: 'gauge, sum, histogram, exponential_histogram or summary' },
  { name: 'description', id: 4, type: 'string', doc: 'metric description (Prometheus HELP)' },
  { name: 'unit', id: 5, type: 'string', doc: 'metric unit (UCUM, as sent)' },
  { name: 'temporality', id: 6, type: 'string', doc: 'aggregation temporality of sums and histograms: delta, cumulative or unspecified; NULL for gauges and summaries' },
  { name: 'is_monotonic', id: 7, type: 'boolean', doc: 'whether a sum only grows (a Prometheus counter); NULL for other kinds' },
  {
    name: 'series_id',
    id: 8,
    type: 'string',
    doc: 'the series (same for every point of a series): 16 hex digits, 2 of a hash of the Prometheus job, 2 of the resource attributes, 12 of metric name, resource attributes, scope name and version, and data point attributes (so one target\'s series sort together)',
  },
  { name: 'service_name', id: 9, type: 'string', doc: 'resource attribute service.name (unknown_service when absent)' },
  { name: 'scope_name', id: 10, type: 'string', doc: 'instrumentation scope name' },
  { name: 'scope_version', id: 11, type: 'string', doc: 'instrumentation scope version' },
  { name: 'start_unix_nano', id: 12, type: 'long', doc: 'OTLP start_time_unix_nano: start of the delta interval, or when the cumulative series (re)started; NULL when 0' },
  { name: 'time_unix_nano', id: 13, type: 'long', required: true, doc: 'data point time, unix nanoseconds' },
  { name: 'value', id: 14, type: 'double', doc: 'gauge or sum value (integer points converted to double)' },
  { name: 'value_int', id: 15, type: 'long', doc: 'the exact value of an integer gauge or sum point; NULL for double points' },
  { name: 'count', id: 16, type: 'long', doc: 'number of observations (histograms, exponential histograms, summaries)' },
  { name: 'sum', id: 17, type: 'double', doc: 'sum of the observations; NULL when not sent' },
  { name: 'min', id: 18, type: 'double', doc: 'smallest observation (histograms); NULL when not sent' },
  { name: 'max', id: 19, type: 'double', doc: 'largest observation (histograms); NULL when not sent' },
  { name: 'explicit_bounds', id: 20, type: { list: 'double', elementId: 200 }, doc: 'histogram bucket upper bounds, ascending (bucket i covers (bounds[i-1], bounds[i]], the last one up to +Inf)' },
  { name: 'bucket_counts', id: 21, type: { list: 'long', elementId: 201 }, doc: 'histogram bucket counts, one more than explicit_bounds' },
  { name: 'exp_scale', id: 22, type: 'int', doc: 'exponential histogram scale: bucket base is 2^(2^-scale)' },
  { name: 'exp_zero_count', id: 23, type: 'long', doc: 'exponential histogram zero bucket count' },
  { name: 'exp_zero_threshold', id: 24, type: 'double', doc: 'exponential histogram zero bucket width: it covers [-threshold, threshold]' },
  { name: 'exp_positive_offset', id: 25, type: 'int', doc: 'index of the first positive bucket (bucket k covers (base^k, base^(k+1)])' },
  { name: 'exp_positive_bucket_counts', id: 26, type: { list: 'long', elementId: 202 }, doc: 'positive bucket counts from exp_positive_offset on' },
  { name: 'exp_negative_offset', id: 27, type: 'int', doc: 'index of the first negative bucket' },
  { name: 'exp_negative_bucket_counts', id: 28, type: { list: 'long', elementId: 203 }, doc: 'negative bucket counts from exp_negative_offset on' },
  {
    name: 'quantiles',
    id: 29,
    type: {
      list: {
        struct: [
          { name: 'quantile', id: 205, type: 'double', doc: 'quantile, 0 to 1' },
          { name: 'value', id: 206, type: 'double', doc: 'value at the quantile' },
        ],
      },
      elementId: 204,
    },
    doc: 'summary quantiles, in the order sent',
  },
  { name: 'flags', id: 30, type: 'long', doc: 'OTLP data point flags: bit 0 set means no recorded value (a staleness marker)' },
  { name: 'point_attr_str', id: 31, type: { map: 'string' }, doc: 'string data point attributes (the series labels; arrays, maps and bytes as JSON text)' },
  { name: 'point_attr_int', id: 32, type: { map: 'long' }, doc: 'integer data point attributes' },
  { name: 'point_attr_double', id: 33, type: { map: 'double' }, doc: 'floating-point data point attributes' },
  { name: 'point_attr_bool', id: 34, type: { map: 'boolean' }, doc: 'boolean data point attributes' },
  { name: 'resource_attr_str', id: 35, type: { map: 'string' }, doc: 'string resource attributes' },
  { name: 'resource_attr_int', id: 36, type: { map: 'long' }, doc: 'integer resource attributes' },
  { name: 'resource_attr_double', id: 37, type: { map: 'double' }, doc: 'floating-point resource attributes' },
  { name: 'resource_attr_bool', id: 38, type: { map: 'boolean' }, doc: 'boolean resource attributes' },
  { name: 'scope_attr_str', id: 39, type: { map: 'string' }, doc: 'string instrumentation scope attributes' },
  { name: 'scope_attr_int', id: 40, type: { map: 'long' }, doc: 'integer instrumentation scope attributes' },
  { name: 'scope_attr_double', id: 41, type: { map: 'double' }, doc: 'floating-point instrumentation scope attributes' },
  { name: 'scope_attr_bool', id: 42, type: { map: 'boolean' }, doc: 'boolean instrumentation scope attributes' },
];

/** Map key/value ids, written out: like column ids they are permanent. */
const mapIds: TableDef['mapIds'] = {
  point_attr_str: { keyId: 100, valueId: 101 },
  point_attr_int: { keyId: 102, valueId: 103 },
  point_attr_double: { keyId: 104, valueId: 105 },
  point_attr_bool: { keyId: 106, valueId: 107 },
  resource_attr_str: { keyId: 108, valueId: 109 },
  resource_attr_int: { keyId: 110, valueId: 111 },
  resource_attr_double: { keyId: 112, valueId: 113 },
  resource_attr_bool: { keyId: 114, valueId: 115 },
  scope_attr_str: { keyId: 116, valueId: 117 },
  scope_attr_int: { keyId: 118, valueId: 119 },
  scope_attr_double: { keyId: 120, valueId: 121 },
  scope_attr_bool: { keyId: 122, valueId: 123 },
};

export const metricsTable: TableDef = {
  name: 'metrics',
  version: 1,
  columns,
  mapIds,
  partitionSource: 'timestamp',
  // Materialized labels: the data point's attributes, then the resource's.
  labelScopes: ['point', 'resource'],
  // PromQL selects by metric name, then reads whole series over a time range: name, series,
  // time puts each series' points together and in order, so a selector prunes by name and a
  // range function reads each series as one sorted run.
  sortOrder: ['metric_name', 'series_id', 'time_unix_nano'],
  // Series ids cluster by target, so a query for one instance or job reads the few row groups
  // its id range overlaps: 32k rows, where DuckDB's 122,880 made one instance's counters over a
  // day cost 83 ms against 41 (16k: 32 ms, but a scan of every series twice as long).
  rowGroupSize: 32_768,
};
