import type { ColumnDef, TableDef } from './types.ts';

/**
 * The profiles table: one row per OTLP profile, self-contained (spec 1, "Profile row"): ingest
 * resolves the request-wide dictionary, so stack traces are stored as function names, not
 * indexes. The spec's columns (service_name, sample_type, sample_unit, duration_nano, trace_id,
 * span_id, samples_json, stacktraces_json, timestamp) plus what a Pyroscope-compatible API reads
 * without opening the JSON: the profile id (profile summaries, profile.id), the Pyroscope profile
 * type id and the period (/profile-types and every selector), the profile's total value (series
 * timelines, SelectSeries), and the profile and resource attributes as typed maps (the label
 * names and values of selectors).
 */
const columns: ColumnDef[] = [
  { name: 'timestamp', id: 1, type: 'timestamptz', required: true, derived: 'time_unix_nano', doc: 'time of the profile, microseconds (source of the hour partition)' },
  { name: 'time_unix_nano', id: 2, type: 'long', required: true, doc: 'time of the profile (start of the collection window), unix nanoseconds' },
  { name: 'service_name', id: 3, type: 'string', doc: 'service that emitted the profile: resource attribute service.name (unknown_service when absent)' },
  { name: 'profile_id', id: 4, type: 'string', doc: 'profile id, 32 lower-case hex digits; NULL when the sender set none' },
  {
    name: 'profile_type',
    id: 5,
    type: 'string',
    doc: 'Pyroscope profile type id <name>:<sample_type>:<sample_unit>:<period_type>:<period_unit>, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds',
  },
  { name: 'sample_type', id: 6, type: 'string', doc: 'what the sample values measure, e.g. cpu, samples, alloc_space, inuse_space' },
  { name: 'sample_unit', id: 7, type: 'string', doc: 'unit of the sample values, e.g. nanoseconds, count, bytes' },
  { name: 'period_type', id: 8, type: 'string', doc: 'what the sampling period measures, e.g. cpu or space' },
  { name: 'period_unit', id: 9, type: 'string', doc: 'unit of the sampling period' },
  { name: 'period', id: 10, type: 'long', doc: 'sampling period, in period_unit' },
  { name: 'duration_nano', id: 11, type: 'long', doc: 'duration of the profile, nanoseconds' },
  { name: 'trace_id', id: 12, type: 'string', doc: 'trace id of the linked span, 32 lower-case hex digits; NULL when not linked (joins the traces table)' },
  { name: 'span_id', id: 13, type: 'string', doc: 'span id of the linked span, 16 lower-case hex digits; NULL when not linked' },
  { name: 'total_value', id: 14, type: 'long', doc: 'sum of every sample value (a sample sent with timestamps only counts each as 1)' },
  {
    name: 'samples_json',
    id: 15,
    type: 'string',
    doc: 'the samples as a JSON array: each with its stack (an index into stacktraces_json), its values and, when sent, timestamps, attributes and linked span',
  },
  { name: 'stacktraces_json', id: 16, type: 'string', doc: 'the stacks the samples use, as a JSON array of arrays of function names, leaf first' },
  { name: 'scope_name', id: 17, type: 'string', doc: 'instrumentation scope name (the profiler)' },
  { name: 'scope_version', id: 18, type: 'string', doc: 'instrumentation scope version' },
  { name: 'profile_attr_str', id: 19, type: { map: 'string' }, doc: 'string profile attributes (arrays, maps and bytes as JSON text)' },
  { name: 'profile_attr_int', id: 20, type: { map: 'long' }, doc: 'integer profile attributes' },
  { name: 'profile_attr_double', id: 21, type: { map: 'double' }, doc: 'floating-point profile attributes' },
  { name: 'profile_attr_bool', id: 22, type: { map: 'boolean' }, doc: 'boolean profile attributes' },
  { name: 'resource_attr_str', id: 23, type: { map: 'string' }, doc: 'string resource attributes' },
  { name: 'resource_attr_int', id: 24, type: { map: 'long' }, doc: 'integer resource attributes' },
  { name: 'resource_attr_double', id: 25, type: { map: 'double' }, doc: 'floating-point resource attributes' },
  { name: 'resource_attr_bool', id: 26, type: { map: 'boolean' }, doc: 'boolean resource attributes' },
];

/** Map key/value ids, written out: like column ids they are permanent. */
const mapIds: TableDef['mapIds'] = {
  profile_attr_str: { keyId: 100, valueId: 101 },
  profile_attr_int: { keyId: 102, valueId: 103 },
  profile_attr_double: { keyId: 104, valueId: 105 },
  profile_attr_bool: { keyId: 106, valueId: 107 },
  resource_attr_str: { keyId: 108, valueId: 109 },
  resource_attr_int: { keyId: 110, valueId: 111 },
  resource_attr_double: { keyId: 112, valueId: 113 },
  resource_attr_bool: { keyId: 114, valueId: 115 },
};

export const profilesTable: TableDef = {
  name: 'profiles',
  version: 1,
  columns,
  mapIds,
  partitionSource: 'timestamp',
  // Materialized labels: the profile's attributes, then the resource's.
  labelScopes: ['profile', 'resource'],
  // Every profile query names one profile type, almost always a service, and a time range
  // (render, SelectSeries, SelectMergeStacktraces): type, service, time prunes on all three.
  sortOrder: ['profile_type', 'service_name', 'time_unix_nano'],
};
