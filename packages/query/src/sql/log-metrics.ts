import { FloeError } from '@floe/errors';
import { SAMPLE_COLUMNS, type LogSample, type SampleWindows } from '../ir/log-metrics.ts';
import { filterSql, labelNumber, labelText, matchSql, rangeSql, resolveLogLabel } from './log-labels.ts';
import type { PlannedQuery } from './logs.ts';
import { SqlBuilder, literal, quoteIdent, type PlannerTable } from './printer.ts';

/**
 * One leaf of a LogQL metric query (ir/log-metrics.ts) → DuckDB SQL over the `logs` view: the
 * rows of the leaf's streams and filters in the scanned range, grouped by the leaf's series labels
 * and by sub-bucket, one row of partial aggregates per group. The evaluator merges sub-buckets
 * into windows; everything per row (filtering, label resolution, the unwrapped number, bucketing)
 * happens here, so only (series × sub-bucket) rows leave the querier.
 *
 *   SELECT l0, …, j, <partials> FROM (
 *     SELECT <label text> AS l0, …, (time − origin − 1) // width AS j, <value> AS v, …
 *     FROM logs WHERE <time range> AND <stream matchers> AND <filters> [AND v IS NOT NULL]
 *   ) GROUP BY ALL
 *
 * Values are parameters, identifiers come from the table definition, like every log plan.
 */

const C = SAMPLE_COLUMNS;
const q = quoteIdent;

/**
 * Loki's detected_level of a row: from the OTLP severity number when it is set (1–4 trace, 5–8
 * debug, 9–12 info, 13–16 warn, 17–20 error, 21–24 fatal), else from the severity text's usual
 * spellings, else "unknown".
 */
export function detectedLevelSql(b: SqlBuilder): string {
  const num = b.column('severity_number');
  const text = `lower(coalesce(${b.column('severity_text')}, ''))`;
  const byNumber: Array<[number, number, string]> = [
    [1, 4, 'trace'],
    [5, 8, 'debug'],
    [9, 12, 'info'],
    [13, 16, 'warn'],
    [17, 20, 'error'],
    [21, 24, 'fatal'],
  ];
  const byText: Array<[string[], string]> = [
    [['trace', 'trc'], 'trace'],
    [['debug', 'dbg'], 'debug'],
    [['info', 'inf', 'information', 'notice'], 'info'],
    [['warn', 'warning', 'wrn'], 'warn'],
    [['error', 'err', 'eror'], 'error'],
    [['critical', 'crit'], 'critical'],
    [['fatal', 'panic', 'emerg', 'emergency', 'alert'], 'fatal'],
  ];
  const cases = [
    ...byNumber.map(([lo, hi, level]) => `WHEN ${num} BETWEEN ${lo} AND ${hi} THEN ${literal(level)}`),
    ...byText.map(([spellings, level]) => `WHEN ${text} IN (${spellings.map(literal).join(', ')}) THEN ${literal(level)}`),
  ];
  return `CASE ${cases.join(' ')} ELSE 'unknown' END`;
}

/** A series label's value as text ('' when absent); detected_level is derived, every other label resolved as usual. */
export function seriesLabelSql(b: SqlBuilder, label: string): string {
  if (label === 'detected_level') return detectedLevelSql(b);
  return labelText(b, resolveLogLabel(label, b.table));
}

function partialsSql(sample: LogSample): string[] {
  const v = q('v');
  switch (sample.partial) {
    case 'count':
      return [`count(*) AS ${q(C.count)}`];
    case 'bytes':
      return [`CAST(sum(${q('len')}) AS BIGINT) AS ${q(C.bytes)}`];
    case 'sum':
      return [`sum(${v}) AS ${q(C.sum)}`];
    case 'avg':
      return [`sum(${v}) AS ${q(C.sum)}`, `count(${v}) AS ${q(C.valueCount)}`];
    case 'min':
      return [`min(${v}) AS ${q(C.min)}`];
    case 'max':
      return [`max(${v}) AS ${q(C.max)}`];
    case 'moments':
      return [`count(${v}) AS ${q(C.valueCount)}`, `avg(${v}) AS ${q(C.mean)}`, `var_pop(${v}) * count(${v}) AS ${q(C.m2)}`];
    case 'first':
      return [`arg_min(${v}, ${q('t')}) AS ${q(C.firstValue)}`, `min(${q('t')}) AS ${q(C.firstTime)}`];
    case 'last':
      return [`arg_max(${v}, ${q('t')}) AS ${q(C.lastValue)}`, `max(${q('t')}) AS ${q(C.lastTime)}`];
    case 'values':
      return [`list(${v}) AS ${q(C.values)}`];
  }
}

export function planLogSample(sample: LogSample, windows: SampleWindows, table: PlannerTable): PlannedQuery {
  if (sample.table !== table.name) throw new FloeError('internal', `log sample for table ${JSON.stringify(sample.table)} against ${table.name}`);
  if (windows.widthNs <= 0n) throw new FloeError('internal', 'sub-bucket width must be positive');
  const b = new SqlBuilder(table);
  const time = b.column('time_unix_nano');
  const inner: string[] = sample.groupBy.map((label, i) => `${seriesLabelSql(b, label)} AS ${q(C.label(i))}`);
  inner.push(`((${time} - ${b.bigint(windows.originNs)} - 1) // ${b.bigint(windows.widthNs)}) AS ${q(C.bucket)}`);
  inner.push(`${time} AS ${q('t')}`);
  if (sample.partial === 'bytes') inner.push(`strlen(coalesce(${b.column('body')}, '')) AS ${q('len')}`);
  const value = sample.unwrap === undefined ? undefined : labelNumber(b, resolveLogLabel(sample.unwrap, table));
  if (value !== undefined) inner.push(`${value} AS ${q('v')}`);
  const conditions = [
    ...rangeSql(b, windows.scan),
    ...sample.streams.map((m) => matchSql(b, m)),
    ...sample.filters.map((f) => `(${filterSql(b, f)})`),
  ];
  if (value !== undefined) conditions.push(`${value} IS NOT NULL`);
  const outer = [...sample.groupBy.map((_, i) => q(C.label(i))), q(C.bucket), ...partialsSql(sample)];
  const sql = [
    `SELECT ${outer.join(', ')}`,
    `FROM (`,
    `  SELECT ${inner.join(', ')}`,
    `  FROM ${b.tableName()}`,
    `  WHERE ${conditions.join('\n    AND ')}`,
    `)`,
    `GROUP BY ALL`,
  ].join('\n');
  const end = windows.scan.endNs > windows.scan.startNs ? windows.scan.endNs - 1n : windows.scan.endNs;
  return { sql, params: b.params, hints: { start_ns: windows.scan.startNs.toString(), end_ns: end.toString() } };
}
