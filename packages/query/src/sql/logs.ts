import { FloeError } from '@floe/errors';
import type { LabelNames, LabelValues, LogDeletion, LogSelect, SeriesSelect, TimeRange } from '../ir/logs.ts';
import { ATTRIBUTE_SCOPES, ATTRIBUTE_TYPES, LABEL_COLUMNS, STREAM_LABELS, attributeMap, deletionSql, detectedLevelOf, labelText, matchSql, rangeSql, resolveLogLabel, selectionSql } from './log-labels.ts';
import { SqlBuilder, intLiteral, literal, quoteIdent, type PlannerTable, type PrintedSql } from './printer.ts';

/**
 * Log IR → DuckDB SQL over the `logs` view, which the querier binds to the caller's own
 * `<tenant>.<dataset>.logs` files: the printer names that one unqualified table and nothing else,
 * so a printed plan can never reach another tenant's data (there is no tenant column to forget).
 *
 * Passes, in order: time-range pushdown (record time against [start, end), plus the same bounds
 * as `hints` so the querier opens only those hour partitions), label-matcher pushdown (column
 * matchers stay bare so Parquet statistics prune row groups), filters in pipeline order, and
 * projection pruning (the attribute maps are read only when structured metadata is wanted).
 */

export interface PlannedQuery extends PrintedSql {
  /**
   * Partition-pruning hints for the querier (unix ns as decimal text); they never change the
   * result. `per_file`: the same read per data file (without the window, grouped by file too),
   * from which a querier may keep and answer each file's part (sql/metrics.ts planMetricSeriesPoints).
   */
  hints: { start_ns: string; end_ns: string; per_file?: PrintedSql; file_order?: FileOrder };
}

/**
 * The order the querier lists a scan's files in, by their rows' time; it never changes a result.
 * A page of lines newest first over files listed oldest first carries nearly every matching line
 * (with its twelve attribute maps) through DuckDB's top-N; listed newest first, the top-N fills
 * from the newest file and its dynamic filter skips the older files' row groups
 * (bench/RESULTS.md, logql).
 */
export type FileOrder = 'newest_first' | 'oldest_first';

/** Output columns of a planned log select. */
export const LOG_COLUMNS = {
  time: 'ts',
  line: 'line',
  traceId: 'trace_id',
  spanId: 'span_id',
  /**
   * The record's, resource's and scope's attributes as one JSON object of text values (the
   * record's value winning over the resource's, the resource's over the scope's), printed as
   * DuckDB's CAST … AS VARCHAR prints them, which is how a label filter on them reads them.
   */
  attributes: 'attributes_json',
} as const;

export interface LogSelectOptions {
  /** Read trace_id, span_id and every attribute map (the entries' structured metadata). */
  metadata: boolean;
}

/**
 * The hints of a scan of [start, end) (the querier's bounds are inclusive); `fileOrder` when it
 * keeps the first rows by time (ORDER BY time … LIMIT n).
 */
export const hintsOf = (range: TimeRange, fileOrder?: FileOrder): PlannedQuery['hints'] => ({
  start_ns: range.startNs.toString(),
  end_ns: (range.endNs > range.startNs ? range.endNs - 1n : range.endNs).toString(),
  ...(fileOrder ? { file_order: fileOrder } : {}),
});

export function checkTable(ir: { table: string }, table: PlannerTable) {
  if (ir.table !== table.name) throw new FloeError('internal', `log plan for table ${JSON.stringify(ir.table)} against ${table.name}`);
}

/**
 * `SELECT ts, line, <stream labels>[, trace_id, span_id, attributes_json] … ORDER BY time
 * LIMIT n`: the newest (backward) or oldest (forward) `limit` lines over all streams, as Loki's
 * limit works.
 */
export function planLogSelect(ir: LogSelect, table: PlannerTable, opts: LogSelectOptions): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const columns = [
    `${b.column('time_unix_nano')} AS ${quoted(LOG_COLUMNS.time)}`,
    `${b.column('body')} AS ${quoted(LOG_COLUMNS.line)}`,
    ...STREAM_LABELS.map((s) => `${b.column(s.column)} AS ${quoted(s.label)}`),
  ];
  // Lowest precedence first (scope, resource, record), the order map_concat below merges them in.
  const maps = [...ATTRIBUTE_SCOPES].reverse().flatMap((scope) => ATTRIBUTE_TYPES.map((type) => ({ name: attributeMap(scope, type), text: type === 'str' })));
  if (opts.metadata) columns.push(b.column('trace_id'), b.column('span_id'), ...maps.map((m) => b.column(m.name)));
  const { page, order, hints } = pageOf(b, ir, columns);
  if (!opts.metadata) return { sql: page, params: b.params, hints };
  // The twelve maps merged into one text column on the page alone (after the limit): the
  // caller then reads one string per entry instead of twelve nested map values. map_concat keeps
  // the last map's value of a key, so the lowest precedence goes first.
  const merged = maps.map((m) => (m.text ? quoted(m.name) : `CAST(${quoted(m.name)} AS MAP(VARCHAR, VARCHAR))`));
  const kept = [LOG_COLUMNS.time, LOG_COLUMNS.line, ...STREAM_LABELS.map((s) => s.label), LOG_COLUMNS.traceId, LOG_COLUMNS.spanId].map(quoted);
  const sql = [
    `SELECT ${kept.join(', ')}, to_json(map_concat(${merged.join(', ')})) AS ${quoted(LOG_COLUMNS.attributes)}`,
    `FROM (\n${page}\n) AS page`,
    `ORDER BY ${quoted(LOG_COLUMNS.time)} ${order}`,
  ].join('\n');
  return { sql, params: b.params, hints };
}

/**
 * Label names present in the window: the stream labels (service_name; level where a severity is
 * set) and every resource attribute key (Loki's index labels come from resource attributes; a
 * record's own attributes are structured metadata, as in Loki). Alias spellings of the column
 * labels are left out: they name the same data as service_name and level.
 */
export function planLabelNames(ir: LabelNames, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const lists = [
    ...STREAM_LABELS.map((s) => `CASE WHEN coalesce(${b.column(s.column)}, '') <> '' THEN [${literal(s.label)}] ELSE []::VARCHAR[] END`),
    ...ATTRIBUTE_TYPES.map((t) => `map_keys(${b.column(attributeMap('resource', t))})`),
  ];
  const streamNames = new Set(STREAM_LABELS.map((s) => s.label));
  const aliases = Object.keys(LABEL_COLUMNS).filter((l) => !streamNames.has(l));
  const sql = [
    `SELECT DISTINCT "name" FROM (`,
    `  SELECT unnest(list_concat(${lists.join(', ')})) AS "name"`,
    `  FROM ${b.tableName()}`,
    `  WHERE ${selectionSql(b, ir.range, ir.streams).join('\n  AND ')}`,
    `) WHERE "name" <> '' AND "name" NOT IN (${aliases.map(literal).join(', ')})`,
    `ORDER BY "name"`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.range) };
}

/** Distinct non-empty values of one label, resolved like every other use of the label. */
export function planLabelValues(ir: LabelValues, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const target = resolveLogLabel(ir.label, table);
  const value = target.kind === 'column' ? b.column(target.column) : labelText(b, target);
  const sql = [
    `SELECT DISTINCT ${value} AS "value"`,
    `FROM ${b.tableName()}`,
    `WHERE ${[...selectionSql(b, ir.range, ir.streams), `${value} <> ''`].join('\n  AND ')}`,
    `ORDER BY "value"`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.range) };
}

/** Distinct stream identities (service_name, level) of the rows matching any selector. */
export function planSeries(ir: SeriesSelect, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  if (ir.selectors.length === 0) throw new FloeError('bad_data', 'at least one match[] selector is required');
  const b = new SqlBuilder(table);
  const time = rangeSql(b, ir.range);
  const alternatives = ir.selectors.map((sel) => (sel.length === 0 ? 'TRUE' : `(${sel.map((m) => matchSql(b, m)).join(' AND ')})`));
  const any = alternatives.length === 1 ? alternatives[0]! : `(${alternatives.join(' OR ')})`;
  const columns = STREAM_LABELS.map((s) => `coalesce(${b.column(s.column)}, '') AS ${quoted(s.label)}`);
  const sql = [
    `SELECT DISTINCT ${columns.join(', ')}`,
    `FROM ${b.tableName()}`,
    `WHERE ${[...time, any].join('\n  AND ')}`,
    `ORDER BY ${STREAM_LABELS.map((s) => quoted(s.label)).join(', ')}`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.range) };
}

/**
 * The lines a pattern miner reads (logql/patterns.ts): `ts`, `line` and `level` (Loki's
 * detected_level) of the selection's newest (or oldest) `limit` lines.
 */
export function planPatternLines(ir: LogSelect, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const { page, hints } = pageOf(b, ir, [
    `${b.column('time_unix_nano')} AS ${quoted(LOG_COLUMNS.time)}`,
    `${b.column('body')} AS ${quoted(LOG_COLUMNS.line)}`,
    `${detectedLevelOf(b.column('severity_number'), b.column('severity_text'))} AS "level"`,
  ]);
  return { sql: page, params: b.params, hints };
}

/** `SELECT columns … ORDER BY time LIMIT n` of a log select, newest or oldest first, with the hints that list files in that order. */
function pageOf(b: SqlBuilder, ir: LogSelect, columns: readonly string[]) {
  const order = ir.direction === 'forward' ? 'ASC' : 'DESC';
  const page = [
    `SELECT ${columns.join(', ')}`,
    `FROM ${b.tableName()}`,
    `WHERE ${selectionSql(b, ir.range, ir.streams, ir.filters).join('\n  AND ')}`,
    `ORDER BY ${b.column('time_unix_nano')} ${order}`,
    `LIMIT ${intLiteral(ir.limit)}`,
  ].join('\n');
  return { page, order, hints: hintsOf(ir.range, ir.direction === 'forward' ? 'oldest_first' : 'newest_first') };
}

/**
 * The condition over the table's columns that selects a delete request's rows (a row goes when it
 * is TRUE, so NULL keeps it): the compactor rewrites a file `WHERE (condition) IS NOT TRUE`. It
 * names columns only, unqualified, so it applies to any relation with the table's columns.
 */
export function planLogDeletion(d: LogDeletion, table: PlannerTable): PrintedSql {
  const b = new SqlBuilder(table);
  return { sql: deletionSql(b, d), params: b.params };
}

/** Output aliases are the planner's own fixed names. */
const quoted = quoteIdent;
