import { TABLES, isListType, isMapType, isStructType, type ColumnType, type TableDef } from '@floe/schema';
import type { SourceName } from './schema.ts';

/**
 * What GET /api/v1/query/sources lists: each source of the Query IR, the table it reads (its
 * columns straight from @floe/schema, typed attribute maps included, so the list cannot drift
 * from what is stored) and what POST /api/v1/query does with it.
 */

interface SourceInfo {
  name: SourceName;
  table: TableDef;
  description: string;
  operations: string[];
  queryFields: string[];
}

const SOURCE_INFO: readonly SourceInfo[] = [
  {
    name: 'logs',
    table: TABLES.logs,
    description: 'Log records; labels resolve as in LogQL (service_name, level, then the record’s, resource’s and scope’s attributes).',
    operations: ['select: log lines of the matching streams, filtered, newest or oldest first'],
    queryFields: ['streams', 'filters', 'direction', 'limit'],
  },
  {
    name: 'metrics',
    table: TABLES.metrics,
    description: 'OTLP and remote-written metric points, read as Prometheus series.',
    operations: ['promql: a PromQL expression evaluated over the range at each step'],
    queryFields: ['promql', 'step'],
  },
  {
    name: 'traces',
    table: TABLES.traces,
    description: 'Spans; a search finds traces with a span that meets every condition.',
    operations: ['search: traces with a span meeting every condition, newest first'],
    queryFields: ['conditions', 'min_duration', 'max_duration', 'limit', 'spans_per_trace'],
  },
  {
    name: 'profiles',
    table: TABLES.profiles,
    description: 'Profiles; stacks of the selected profile type merged over the range.',
    operations: ['top: functions by self value', 'flamegraph: a flamebearer document', 'profiles: the newest profiles as summaries'],
    queryFields: ['selector', 'view', 'limit', 'max_nodes'],
  },
];

export function typeName(t: ColumnType): string {
  if (typeof t === 'string') return t;
  if (isMapType(t)) return `map<string,${t.map}>`;
  if (isListType(t)) return `list<${isStructType(t.list) ? `struct<${t.list.struct.map((f) => `${f.name}:${f.type}`).join(',')}>` : t.list}>`;
  return 'unknown';
}

export function listSources() {
  return SOURCE_INFO.map((s) => ({
    name: s.name,
    table: s.table.name,
    description: s.description,
    operations: s.operations,
    query_fields: s.queryFields,
    fields: s.table.columns.map((c) => ({ name: c.name, type: typeName(c.type), description: c.doc })),
  }));
}
