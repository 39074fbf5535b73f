import type { DetectedFieldValues, DetectedFields, DetectedLabels, IndexStats } from '../ir/log-discovery.ts';
import type { TimeRange } from '../ir/logs.ts';
import { ATTRIBUTE_TYPES, attributeMap, labelText, resolveLogLabel, selectionSql } from './log-labels.ts';
import { checkTable, hintsOf, type PlannedQuery } from './logs.ts';
import { SqlBuilder, intLiteral, literal, type PlannerTable } from './printer.ts';

/**
 * Discovery IR (ir/log-discovery.ts) → DuckDB SQL over the `logs` view, with the same rules as
 * every log plan: values are parameters, identifiers come from the table definition, the only
 * literals are the planner's own constants.
 */

const HOUR_NS = 3_600_000_000_000;

const conditions = (b: SqlBuilder, ir: { range: TimeRange; streams: IndexStats['streams']; filters?: DetectedFields['filters'] }) => selectionSql(b, ir.range, ir.streams, ir.filters).join('\n    AND ');

/** One row: streams, chunks, entries, bytes (BIGINT, 0 when nothing matches). */
export function planIndexStats(ir: IndexStats, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const where = conditions(b, ir);
  const sql = [
    `SELECT CAST(count(*) AS BIGINT) AS "streams", CAST(coalesce(sum("chunks"), 0) AS BIGINT) AS "chunks",`,
    `  CAST(coalesce(sum("entries"), 0) AS BIGINT) AS "entries", CAST(coalesce(sum("bytes"), 0) AS BIGINT) AS "bytes"`,
    `FROM (`,
    `  SELECT count(DISTINCT ${b.column('time_unix_nano')} // ${intLiteral(HOUR_NS)}) AS "chunks", count(*) AS "entries", sum(strlen(coalesce(${b.column('body')}, ''))) AS "bytes"`,
    `  FROM ${b.tableName()}`,
    `  WHERE ${where}`,
    `  GROUP BY coalesce(${b.column('service_name')}, ''), coalesce(${b.column('severity_text')}, '')`,
    `)`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.range) };
}

/** A map's entries as a list of {k, v, t} structs (v as text), t naming the map's value type. */
function entries(b: SqlBuilder, map: string, type: string): string {
  const value = type === 'str' ? 'e.value' : 'CAST(e.value AS VARCHAR)';
  return `list_transform(map_entries(${b.column(map)}), lambda e: {'k': e.key, 'v': ${value}, 't': ${literal(type)}})`;
}

/** A column as a one-element list of {k, v, t} when it is set, else an empty list. */
function columnEntry(b: SqlBuilder, column: string, label: string): string {
  const c = b.column(column);
  return `CASE WHEN coalesce(${c}, '') <> '' THEN [{'k': ${literal(label)}, 'v': ${c}, 't': 'str'}] ELSE [] END`;
}

/**
 * Rows of (name, kind, cardinality, all_int, all_float, all_bool) over the sample: `kind` is the
 * attribute map's value type (str, int, double, bool); the all_* flags say whether every sampled
 * value of a string attribute reads as that type. logFieldType turns a key's rows into one type.
 */
export function planDetectedFields(ir: DetectedFields, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const maps = ATTRIBUTE_TYPES.map((t) => attributeMap('log', t));
  const lists = [...ATTRIBUTE_TYPES.map((t) => entries(b, attributeMap('log', t), t)), columnEntry(b, 'trace_id', 'trace_id'), columnEntry(b, 'span_id', 'span_id')];
  const v = `"f"."v"`;
  const sql = [
    `SELECT "f"."k" AS "name", "f"."t" AS "kind", count(DISTINCT ${v}) AS "cardinality",`,
    `  bool_and(TRY_CAST(${v} AS BIGINT) IS NOT NULL) AS "all_int",`,
    `  bool_and(TRY_CAST(${v} AS DOUBLE) IS NOT NULL) AS "all_float",`,
    `  bool_and(lower(${v}) IN ('true', 'false')) AS "all_bool"`,
    `FROM (`,
    `  SELECT unnest(list_concat(${lists.join(', ')})) AS "f"`,
    `  FROM (`,
    `    SELECT ${[...maps, 'trace_id', 'span_id'].map((c) => b.column(c)).join(', ')}`,
    `    FROM ${b.tableName()}`,
    `    WHERE ${conditions(b, ir)}`,
    `    ORDER BY ${b.column('time_unix_nano')} DESC`,
    `    LIMIT ${intLiteral(ir.sampleLimit)}`,
    `  )`,
    `)`,
    `GROUP BY ALL`,
    `ORDER BY "name", "kind"`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.range, 'newest_first') };
}

export type FieldType = 'string' | 'int' | 'float' | 'boolean';

/** One field's type from its planDetectedFields rows (a key can have rows of several kinds). */
export function logFieldType(rows: ReadonlyArray<{ kind: string; all_int: boolean; all_float: boolean; all_bool: boolean }>): FieldType {
  const types = new Set<FieldType>();
  for (const r of rows) {
    if (r.kind === 'int') types.add('int');
    else if (r.kind === 'double') types.add('float');
    else if (r.kind === 'bool') types.add('boolean');
    else if (r.all_bool) types.add('boolean');
    else if (r.all_int) types.add('int');
    else if (r.all_float) types.add('float');
    else types.add('string');
  }
  if (types.size === 1) return [...types][0]!;
  if ([...types].every((t) => t === 'int' || t === 'float')) return 'float';
  return 'string';
}

/** One entry of Loki's detected_fields answer. */
export interface DetectedField {
  label: string;
  type: FieldType;
  cardinality: number;
  /** Always null: the fields are structured metadata, not parsed from the line (Loki lists no parser for those). */
  parsers: null;
}

/** The first `limit` fields of planDetectedFields' rows (ordered by name), each with one type and its distinct count. */
export function detectedFieldsOf(rows: ReadonlyArray<Record<string, unknown>>, limit: number): DetectedField[] {
  const byName = new Map<string, Array<Record<string, unknown>>>();
  for (const r of rows) {
    const name = String(r.name);
    const list = byName.get(name);
    if (list) list.push(r);
    else byName.set(name, [r]);
  }
  return [...byName].slice(0, limit).map(([label, rs]) => ({
    label,
    type: logFieldType(rs.map((r) => ({ kind: String(r.kind), all_int: r.all_int === true, all_float: r.all_float === true, all_bool: r.all_bool === true }))),
    cardinality: Math.max(...rs.map((r) => Number(r.cardinality))),
    parsers: null,
  }));
}

/** Distinct non-empty values ("value") of one field over the newest sampleLimit matching lines. */
export function planDetectedFieldValues(ir: DetectedFieldValues, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const value = labelText(b, resolveLogLabel(ir.field, table));
  const sql = [
    `SELECT DISTINCT "value" FROM (`,
    `  SELECT ${value} AS "value"`,
    `  FROM ${b.tableName()}`,
    `  WHERE ${conditions(b, ir)}`,
    `  ORDER BY ${b.column('time_unix_nano')} DESC`,
    `  LIMIT ${intLiteral(ir.sampleLimit)}`,
    `) WHERE "value" <> ''`,
    `ORDER BY "value"`,
    `LIMIT ${intLiteral(ir.limit)}`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.range, 'newest_first') };
}

/** Rows of (name, cardinality): service_name, level and every resource attribute key, over the window. */
export function planDetectedLabels(ir: DetectedLabels, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const lists = [
    columnEntry(b, 'service_name', 'service_name'),
    columnEntry(b, 'severity_text', 'level'),
    ...ATTRIBUTE_TYPES.map((t) => entries(b, attributeMap('resource', t), t)),
  ];
  const sql = [
    `SELECT "f"."k" AS "name", count(DISTINCT "f"."v") AS "cardinality"`,
    `FROM (`,
    `  SELECT unnest(list_concat(${lists.join(', ')})) AS "f"`,
    `  FROM ${b.tableName()}`,
    `  WHERE ${conditions(b, ir)}`,
    `)`,
    `WHERE "f"."v" <> '' AND "f"."k" <> 'service.name'`,
    `GROUP BY ALL`,
    `ORDER BY "name"`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.range) };
}
