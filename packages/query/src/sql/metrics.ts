import { FloeError } from '@floe/errors';
import { DERIVED_LABELS, VERBATIM_LABEL_TYPES } from '../ir/metrics.ts';
import type {
  MetricCatalog,
  MetricExemplars,
  MetricLabelMatch,
  MetricPoints,
  MetricSelect,
  MetricSeriesIds,
  MetricSeriesLabels,
  MetricSeriesList,
  MetricSeriesPoints,
  MetricTargetInfo,
  MetricWindow,
} from '../ir/metrics.ts';
import { SqlBuilder, quoteIdent, type PlannerTable, type PrintedSql } from './printer.ts';
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
 * point; distribution columns only when a histogram or summary is selected), and label-matcher
 * pushdown on remote-written rows (`MetricSelect`): `=`, `!=`, `=~`, `!~` on their labels
 * (`point_attr_str[$key]` or the table's materialized label column of the key, absent = '', as Prometheus; `le` and `quantile` only on gauge and sum
 * reads, see selectsSql; `job = "x"` on the `service_name` column,
 * which remote write fills from job), regexes as RE2 full matches with `.` matching newlines (the
 * Prometheus 3 flags; literal alternations `a|b` become `IN`), so only the matching series of those
 * metrics are read. OpenTelemetry rows are never filtered by labels here: their Prometheus labels
 * exist only after translation (promql/series.ts), which the evaluator matches exactly anyway.
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

/** A regex Prometheus anchors, as literal alternatives when it is only that (`a|b|c`). */
function literalAlternatives(pattern: string): string[] | undefined {
  if (!/^[A-Za-z0-9_\-:/ ,@=]*(\|[A-Za-z0-9_\-:/ ,@=]*)*$/.test(pattern)) return undefined;
  return pattern.split('|');
}

/**
 * Resource attributes remote write sets (services/acceptor/src/remote-write.ts): a materialized
 * label column falls back to the resource's attribute when the point has none, so a column of
 * one of these keys is not the label's value on a remote-written row.
 */
const REMOTE_WRITE_RESOURCE_KEYS = new Set(['service.name', 'service.instance.id']);

/**
 * A remote-written row's label as text (absent = ''): the table's materialized label column of
 * that key when it has one (spec 1, rule 5: a text column, where the map lookup decodes the whole
 * label map of every row scanned), else the lookup in `point_attr_str`. On such a row the column
 * holds the same value: every label is a string attribute of the point, and the column takes the
 * point's attribute before the resource's.
 */
function labelText(b: SqlBuilder, label: string): string {
  if (!REMOTE_WRITE_RESOURCE_KEYS.has(label)) {
    const column = b.table.columns.find((c) => c.attributeKey === label);
    if (column) return `coalesce(${b.column(column.name)}, '')`;
  }
  return `coalesce(${b.column('point_attr_str')}[${b.param(label)}], '')`;
}

/** One matcher on remote-written rows, or undefined when it filters nothing. */
function matcherSql(b: SqlBuilder, m: MetricLabelMatch): string | undefined {
  if (m.label === '__name__') return undefined;
  // Remote write sets service_name = job (services/acceptor/src/remote-write.ts).
  if (m.op === '=' && m.label === 'job' && m.value !== '') return `${b.column('service_name')} = ${b.param(m.value)}`;
  if ((m.op === '=~' || m.op === '!~') && m.value === '.*') return m.op === '=~' ? undefined : 'FALSE';
  const text = labelText(b, m.label);
  switch (m.op) {
    case '=':
      return `${text} = ${b.param(m.value)}`;
    case '!=':
      return `${text} <> ${b.param(m.value)}`;
    case '=~':
    case '!~': {
      const not = m.op === '!~' ? 'NOT ' : '';
      if (m.value === '.+') return `${not}(${text} <> '')`;
      const alts = literalAlternatives(m.value);
      if (alts) return `${not}(${text} IN (${alts.map((a) => b.param(a)).join(', ')}))`;
      return `${not}regexp_full_match(${text}, ${b.param(`(?s:${m.value})`)})`;
    }
  }
}

/**
 * Rows of any of the selects: their names, and their matchers on remote-written rows. When the
 * read may hold histograms or summaries (metricTypes not all gauge or sum), matchers on labels
 * those derive from columns (`le`, `quantile`) stay with the evaluator: a native histogram's
 * `le` is no attribute, and `rw_hist_bucket{le="+Inf"}` would lose its series.
 */
function selectsSql(b: SqlBuilder, selects: readonly MetricSelect[], metricTypes: readonly string[] | undefined): string {
  const verbatim = metricTypes !== undefined && metricTypes.every((t) => VERBATIM_LABEL_TYPES.has(t));
  const parts: string[] = [];
  for (const sel of selects) {
    if (sel.metricNames.length === 0) continue;
    const pushed = verbatim ? sel.matchers : sel.matchers.filter((m) => !DERIVED_LABELS.has(m.label));
    const conds = pushed.map((m) => matcherSql(b, m)).filter((x): x is string => x !== undefined);
    const names = namesSql(b, sel.metricNames);
    if (conds.length === 0) parts.push(names);
    else parts.push(`(${names} AND (coalesce(${b.column('scope_name')}, '') <> ${b.param(REMOTE_WRITE_SCOPE)} OR (${conds.join(' AND ')})))`);
  }
  if (parts.length === 0) return 'FALSE';
  return parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`;
}

/**
 * `series_id IN (…)`, each id a parameter, and the ids' range: ids are clustered by target (the
 * acceptor's series-id.ts), so the series of one job or instance sit in a narrow range of the
 * tables' sort order, and DuckDB prunes row groups by a range's statistics more surely than by
 * an IN list's (one instance's counters over a day: 83 against 122 ms, bench/RESULTS.md).
 */
function idsSql(b: SqlBuilder, ids: readonly string[]): string {
  if (ids.length === 0) return 'FALSE';
  let lo = ids[0]!;
  let hi = lo;
  for (const id of ids) {
    if (id < lo) lo = id;
    else if (id > hi) hi = id;
  }
  const col = b.column('series_id');
  return `${col} BETWEEN ${b.param(lo)} AND ${b.param(hi)} AND ${col} IN (${ids.map((id) => b.param(id)).join(', ')})`;
}

/** The rows a metric delete request removes: its series (by id) within [startNs, endNs], both ends included. */
export interface SeriesDeletion {
  seriesIds: readonly string[];
  startNs: bigint;
  endNs: bigint;
}

/**
 * The condition over a metrics or metric_exemplars table's columns that selects a delete
 * request's rows (a row goes when it is TRUE): its series ids and window, every value a parameter.
 */
export function planSeriesDeletion(d: SeriesDeletion, table: PlannerTable): PrintedSql {
  if (table.name !== 'metrics' && table.name !== 'metric_exemplars') throw new FloeError('internal', `series deletion on ${table.name}`);
  const b = new SqlBuilder(table);
  const t = b.column('time_unix_nano');
  const sql = `${idsSql(b, d.seriesIds)} AND ${t} >= ${b.bigint(d.startNs)} AND ${t} <= ${b.bigint(d.endNs)}`;
  return { sql, params: b.params };
}

function typesSql(b: SqlBuilder, types: readonly string[] | undefined): string {
  if (types === undefined) return 'TRUE';
  if (types.length === 0) return 'FALSE';
  return `${b.column('metric_type')} IN (${types.map((t) => b.param(t)).join(', ')})`;
}

/** Name, label and type filters of a series or points read. */
function rowFilterSql(b: SqlBuilder, ir: { metricNames: string[]; selects?: MetricSelect[]; metricTypes?: string[] }): string {
  const names = namesSql(b, ir.metricNames);
  const selects = ir.selects ? ` AND ${selectsSql(b, ir.selects, ir.metricTypes)}` : '';
  const types = ir.metricTypes ? ` AND ${typesSql(b, ir.metricTypes)}` : '';
  return `${names}${selects}${types}`;
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

/** The identity columns of a row per series (promql/series.ts SeriesRow), grouped by series_id. */
function seriesIdentitySql(b: SqlBuilder): string {
  return [
    `${b.column('series_id')} AS "series_id", any_value(${b.column('metric_name')}) AS "metric_name", any_value(${b.column('metric_type')}) AS "metric_type",`,
    `  any_value(coalesce(${b.column('unit')}, '')) AS "unit", bool_or(coalesce(${b.column('is_monotonic')}, FALSE)) AS "is_monotonic",`,
    `  any_value(coalesce(${b.column('scope_name')}, '') = ${b.param(REMOTE_WRITE_SCOPE)}) AS "rw"`,
  ].join('\n');
}

/** A series' label maps: the string point attributes, or with `otel` every point attribute map and the string resource attributes. */
function labelMapsSql(b: SqlBuilder, otel: boolean): string {
  return (otel ? [...LABEL_MAPS, 'resource_attr_str'] : ['point_attr_str']).map((c) => `any_value(${b.column(c)}) AS ${quoteIdent(c)}`).join(', ');
}

/** One row per series: identity, labels (point attribute maps, string resource attributes) and the newest bucket layout. */
export function planMetricSeries(ir: MetricSeriesList, table: PlannerTable): PlannedQuery {
  checkTable(table, 'metrics');
  const b = new SqlBuilder(table);
  const t = b.column('time_unix_nano');
  const latest = (c: string) => `arg_max(${b.column(c)}, ${t}) AS ${quoteIdent(c)}`;
  const sql = [
    `SELECT ${seriesIdentitySql(b)},`,
    `  ${[...LABEL_MAPS, 'resource_attr_str'].map((c) => `any_value(${b.column(c)}) AS ${quoteIdent(c)}`).join(', ')},`,
    `  ${['explicit_bounds', 'quantiles', 'exp_scale', 'exp_zero_threshold', 'exp_positive_offset', 'exp_positive_bucket_counts', 'exp_negative_offset', 'exp_negative_bucket_counts'].map(latest).join(', ')}`,
    `FROM ${b.tableName()}`,
    `WHERE ${windowSql(b, ir.window)} AND ${rowFilterSql(b, ir)}`,
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
        (c) => `${b.column(c)} AS ${quoteIdent(c)}`,
      ),
    );
  }
  const sql = [`SELECT ${columns.join(', ')}`, `FROM ${b.tableName()}`, `WHERE ${windowSql(b, ir.window)} AND ${rowFilterSql(b, ir)}`, `ORDER BY 1, ${t}`].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.window) };
}

/**
 * A series id as the columns `series_hi` and `series_lo` (UINTEGER: its first and last 8 hex
 * digits) and `series_text` (NULL, or the id itself when it is not 16 lowercase hex digits; every
 * id Floe writes is, see services/acceptor/src/series-id.ts). DuckDB keeps strings of more than
 * 12 bytes out of line, and the querier read each one with a native call and a new buffer, then
 * encoded it for Arrow, and the router decoded it again: ~3 % of a 10,000-series query's process
 * time. seriesIdFromHalves puts the text together again.
 */
function seriesIdHalvesSql(id: string): string {
  const hex = `regexp_full_match(${id}, '[0-9a-f]{16}')`;
  return [
    `CASE WHEN ${hex} THEN TRY_CAST('0x' || ${id}[1:8] AS UINTEGER) ELSE 0 END AS "series_hi"`,
    `CASE WHEN ${hex} THEN TRY_CAST('0x' || ${id}[9:16] AS UINTEGER) ELSE 0 END AS "series_lo"`,
    `CASE WHEN ${hex} THEN NULL ELSE ${id} END AS "series_text"`,
  ].join(', ');
}

const HEX_BYTES = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A series id read as seriesIdHalvesSql wrote it: `text` when there is one, else the 16 hex digits of the halves. */
export function seriesIdFromHalves(hi: number, lo: number, text: string | null | undefined): string {
  if (text !== null && text !== undefined) return text;
  const h = HEX_BYTES;
  return h[hi >>> 24]! + h[(hi >>> 16) & 255]! + h[(hi >>> 8) & 255]! + h[hi & 255]! + h[lo >>> 24]! + h[(lo >>> 16) & 255]! + h[(lo >>> 8) & 255]! + h[lo & 255]!;
}

/** The distinct series of the named metrics of the given types in the window, as seriesIdHalvesSql. */
export function planMetricSeriesIds(ir: MetricSeriesIds, table: PlannerTable): PlannedQuery {
  checkTable(table, 'metrics');
  const b = new SqlBuilder(table);
  const sql = [
    `SELECT ${seriesIdHalvesSql('"series_id"')}`,
    `FROM (SELECT DISTINCT ${b.column('series_id')} AS "series_id"`,
    `  FROM ${b.tableName()}`,
    `  WHERE ${windowSql(b, ir.window)} AND ${rowFilterSql(b, ir)})`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.window) };
}

/** One row per series: identity and label maps, no points (promql/series.ts SeriesRow). */
export function planMetricSeriesLabels(ir: MetricSeriesLabels, table: PlannerTable): PlannedQuery {
  checkTable(table, 'metrics');
  const b = new SqlBuilder(table);
  const head = `${seriesIdentitySql(b)}, ${labelMapsSql(b, ir.otelLabels)}`;
  const ids = ir.seriesIds ? ` AND ${idsSql(b, ir.seriesIds)}` : '';
  const sql = [
    `SELECT ${head}`,
    `FROM ${b.tableName()}`,
    `WHERE ${windowSql(b, ir.window)} AND ${rowFilterSql(b, ir)}${ids}`,
    `GROUP BY ${b.column('series_id')}`,
  ].join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.window) };
}

/**
 * Plain (gauge, sum) series with their points: one row per series, labels read once, points as
 * two DOUBLE lists `t` (integer milliseconds) and `v` in matching order (no particular order: an
 * ordered aggregate costs DuckDB a sort, ~3x this query, so the reader sorts the few series that
 * need it) and `stale_t`, the times of staleness markers, or NULL. The rows come in no order
 * either: sorting them cost DuckDB a move of every list (a tenth of a day's read of 500 series),
 * and buildPlainSeries orders the rows, one per series, by id. Lists of doubles travel as Arrow
 * Float64 buffers end to end (the querier copies them without a JS value per point), where text
 * cost DuckDB a shortest-round-trip print of every value and the router a parse.
 */
export function planMetricSeriesPoints(ir: MetricSeriesPoints, table: PlannerTable): PlannedQuery {
  checkTable(table, 'metrics');
  const printed = seriesPointsSql(ir, table, true);
  const hints = hintsOf(ir.window);
  return { ...printed, hints: ir.labels === false ? { ...hints, per_file: seriesPointsSql(ir, table, false) } : hints };
}

/** The querier's name for the file of a row in a per-file read (DuckDB's `filename = true` column). */
export const PER_FILE_COLUMN = 'filename';

/**
 * An hour in nanoseconds: the tables' hour partitions (@floe/schema NS_PER_HOUR, which this layer
 * does not import; the querier's series-lists test holds the two equal).
 */
export const PER_FILE_HOUR_NS = 3_600_000_000_000n;

/**
 * planMetricSeriesPoints' SQL over the window, or (`windowed` false, point lists only) its
 * per-file form: grouped by data file as well, naming each row's file first, and without the
 * window; its times (`t_in_hour`, `stale_in_hour`) are nanoseconds since the start of the row's
 * hour, exact as doubles, so the window can be applied to them exactly afterwards. Data files
 * are immutable, so the querier may keep what that form answers for a file and answer later
 * windows from it (services/querier/src/series-lists.ts).
 */
function seriesPointsSql(ir: MetricSeriesPoints, table: PlannerTable, windowed: boolean) {
  const b = new SqlBuilder(table);
  // (Parameters are numbered as they are made: the identity's only when it is printed.)
  const head = ir.labels === false ? seriesIdHalvesSql(b.column('series_id')) : `${seriesIdentitySql(b)}, ${labelMapsSql(b, ir.otelLabels)}`;
  const t = b.column('time_unix_nano');
  const time = windowed ? `CAST(${t} // 1000000 AS DOUBLE)` : `CAST(${t} % ${PER_FILE_HOUR_NS} AS DOUBLE)`;
  const [tName, staleName] = windowed ? ['t', 'stale_t'] : ['t_in_hour', 'stale_in_hour'];
  const ids = ir.seriesIds ? ` AND ${idsSql(b, ir.seriesIds)}` : '';
  const file = quoteIdent(PER_FILE_COLUMN);
  const sql = [
    `SELECT ${windowed ? '' : `${file}, `}${head},`,
    `  list(${time}) AS "${tName}", list(coalesce(${b.column('value')}, CAST('NaN' AS DOUBLE))) AS "v",`,
    `  list(${time}) FILTER (WHERE coalesce(${b.column('flags')}, 0) & 1 = 1) AS "${staleName}"`,
    `FROM ${b.tableName()}`,
    `WHERE ${windowed ? `${windowSql(b, ir.window)} AND ` : ''}${selectsSql(b, ir.selects, ir.metricTypes)} AND ${typesSql(b, ir.metricTypes)}${ids}`,
    `GROUP BY ${b.column('series_id')}${windowed ? '' : `, ${file}`}`,
  ].join('\n');
  return { sql, params: b.params };
}

const RESOURCE_MAPS = ['resource_attr_str', 'resource_attr_int', 'resource_attr_double', 'resource_attr_bool'] as const;

/** OpenTelemetry resources of the window with the distinct times of their points ("ms,ms,…" as `times`). */
export function planMetricTargetInfo(ir: MetricTargetInfo, table: PlannerTable): PlannedQuery {
  checkTable(table, 'metrics');
  const b = new SqlBuilder(table);
  const rw = b.param(REMOTE_WRITE_SCOPE);
  const sql = [
    `SELECT ${RESOURCE_MAPS.map((c) => `any_value(${b.column(c)}) AS ${quoteIdent(c)}`).join(', ')},`,
    `  list(DISTINCT CAST(${b.column('time_unix_nano')} // 1000000 AS DOUBLE)) AS "times"`,
    `FROM ${b.tableName()}`,
    `WHERE ${windowSql(b, ir.window)} AND coalesce(${b.column('scope_name')}, '') <> ${rw}`,
    `GROUP BY ${RESOURCE_MAPS.map((c) => `CAST(${b.column(c)} AS VARCHAR)`).join(', ')}`,
  ].join('\n');
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
