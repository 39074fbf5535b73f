import { FloeError } from '@floe/errors';
import type { MetricCatalog, MetricExemplars, MetricPoints, MetricSeriesList, MetricWindow } from '../ir/metrics.ts';
import { SqlBuilder, literal, type PlannerTable } from './printer.ts';
import type { PlannedQuery } from './logs.ts';

/**
 * Metric IR → DuckDB SQL over the unqualified `metrics` / `metric_exemplars` views, which the
 * querier binds to the caller's own tenant and dataset (as sql/logs.ts). Every value is a `$n`
 * parameter (times as BIGINT casts of decimal text, metric names as VARCHAR), identifiers are
 * quoted and must be columns of the table definition the caller passes (@floe/schema's
 * metricsTable / metricExemplarsTable).
 *
 * Passes: time-range pushdown (the window on `time_unix_nano`, plus the same bounds as `hints` so
 * the querier opens only those hour partitions), metric-name pushdown (`metric_name IN (…)`, the
 * table's first sort key, so row groups of other metrics are skipped by their statistics), and
 * projection pruning (the label maps are read once per series by the series query, never per
 * point; distribution columns only when a histogram or summary is selected).
 */

/** The scope_name that marks remote-written rows (services/acceptor/src/remote-write.ts). */
export const REMOTE_WRITE_SCOPE = 'floe.prometheus.remote_write';

const hintsOf = (w: MetricWindow) => ({ start_ns: (w.startNs + 1n).toString(), end_ns: w.endNs.toString() });

function windowSql(b: SqlBuilder, w: MetricWindow): string {
  if (w.endNs < w.startNs) throw new FloeError('internal', 'metric window ends before it starts');
  const t = b.column('time_unix_nano');
  return `${t} > ${b.bigint(w.startNs)} AND ${t} <= ${b.bigint(w.endNs)}`;
}

function namesSql(b: SqlBuilder, names: readonly string[]): string {
  if (names.length === 0) return 'FALSE';
  return `${b.column('metric_name')} IN (${names.map((n) => `CAST(${b.param(n)} AS VARCHAR)`).join(', ')})`;
}

function checkTable(table: PlannerTable, want: string) {
  if (table.name !== want) throw new FloeError('internal', `metric plan for table ${want} against ${table.name}`);
}

/** `SELECT DISTINCT metric_name, metric_type, unit, description, is_monotonic, temporality, rw`. */
export function planMetricCatalog(ir: MetricCatalog, table: PlannerTable): PlannedQuery {
  checkTable(table, 'metrics');
  const b = new SqlBuilder(table);
  const rw = b.param(REMOTE_WRITE_SCOPE);
  const sql = [
    `SELECT ${b.column('metric_name')} AS "metric_name", ${b.column('metric_type')} AS "metric_type", any_value(coalesce(${b.column('unit')}, '')) AS "unit",`,
    `  any_value(coalesce(${b.column('description')}, '')) AS "description", bool_or(coalesce(${b.column('is_monotonic')}, FALSE)) AS "is_monotonic",`,
    `  any_value(coalesce(${b.column('temporality')}, '')) AS "temporality", (coalesce(${b.column('scope_name')}, '') = ${rw}) AS "rw"`,
    `FROM ${b.tableName()}`,
    `WHERE ${windowSql(b, ir.window)}`,
    `GROUP BY 1, 2, 7`,
    `ORDER BY 1, 2`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.window) };
}

const LABEL_MAPS = ['point_attr_str', 'point_attr_int', 'point_attr_double', 'point_attr_bool'] as const;

/** One row per series: identity, labels (point attribute maps, string resource attributes) and the newest bucket layout. */
export function planMetricSeries(ir: MetricSeriesList, table: PlannerTable): PlannedQuery {
  checkTable(table, 'metrics');
  const b = new SqlBuilder(table);
  const rw = b.param(REMOTE_WRITE_SCOPE);
  const t = b.column('time_unix_nano');
  const latest = (c: string) => `arg_max(${b.column(c)}, ${t}) AS ${literalIdent(c)}`;
  const sql = [
    `SELECT ${b.column('series_id')} AS "series_id", any_value(${b.column('metric_name')}) AS "metric_name", any_value(${b.column('metric_type')}) AS "metric_type",`,
    `  any_value(coalesce(${b.column('unit')}, '')) AS "unit", bool_or(coalesce(${b.column('is_monotonic')}, FALSE)) AS "is_monotonic",`,
    `  any_value(coalesce(${b.column('scope_name')}, '') = ${rw}) AS "rw",`,
    `  ${[...LABEL_MAPS, 'resource_attr_str'].map((c) => `any_value(${b.column(c)}) AS ${literalIdent(c)}`).join(', ')},`,
    `  ${['explicit_bounds', 'quantiles', 'exp_scale', 'exp_zero_threshold', 'exp_positive_offset', 'exp_positive_bucket_counts', 'exp_negative_offset', 'exp_negative_bucket_counts'].map(latest).join(', ')},`,
    `  max(${t}) AS "last_ns"`,
    `FROM ${b.tableName()}`,
    `WHERE ${windowSql(b, ir.window)} AND ${namesSql(b, ir.metricNames)}`,
    `GROUP BY ${b.column('series_id')}`,
    `ORDER BY 1`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.window) };
}

/** Data points by series and time; times as integer milliseconds (Prometheus's resolution). */
export function planMetricPoints(ir: MetricPoints, table: PlannerTable): PlannedQuery {
  checkTable(table, 'metrics');
  const b = new SqlBuilder(table);
  const t = b.column('time_unix_nano');
  const columns = [
    `${b.column('series_id')} AS "series_id"`,
    `CAST(${t} // 1000000 AS DOUBLE) AS "t"`,
    `${b.column('value')} AS "value"`,
    `coalesce(${b.column('flags')}, 0) AS "flags"`,
  ];
  if (ir.distributions) {
    columns.push(
      ...['count', 'sum', 'explicit_bounds', 'bucket_counts', 'quantiles', 'exp_scale', 'exp_zero_count', 'exp_zero_threshold', 'exp_positive_offset', 'exp_positive_bucket_counts', 'exp_negative_offset', 'exp_negative_bucket_counts'].map(
        (c) => `${b.column(c)} AS ${literalIdent(c)}`,
      ),
    );
  }
  const sql = [`SELECT ${columns.join(', ')}`, `FROM ${b.tableName()}`, `WHERE ${windowSql(b, ir.window)} AND ${namesSql(b, ir.metricNames)}`, `ORDER BY 1, ${t}`].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.window) };
}

/** Exemplars with their series' labels and their own. */
export function planMetricExemplars(ir: MetricExemplars, table: PlannerTable): PlannedQuery {
  checkTable(table, 'metric_exemplars');
  const b = new SqlBuilder(table);
  const sql = [
    `SELECT ${b.column('series_id')} AS "series_id", ${b.column('metric_name')} AS "metric_name", CAST(${b.column('time_unix_nano')} // 1000000 AS DOUBLE) AS "t",`,
    `  ${b.column('value')} AS "value", ${b.column('trace_id')} AS "trace_id", ${b.column('span_id')} AS "span_id", ${b.column('filtered_attr_str')} AS "filtered_attr_str"`,
    `FROM ${b.tableName()}`,
    `WHERE ${windowSql(b, ir.window)} AND ${namesSql(b, ir.metricNames)}`,
    `ORDER BY 1, 3`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.window) };
}

/** Output aliases: the planner's own fixed names, never user text. */
function literalIdent(name: string): string {
  literal(name);
  return `"${name}"`;
}
