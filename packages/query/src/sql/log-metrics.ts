import { FloeError } from '@floe/errors';
import { SAMPLE_COLUMNS, type LogSample, type SampleWindows } from '../ir/log-metrics.ts';
import { detectedLevelOf, labelNumber, labelText, resolveLogLabel, selectionSql } from './log-labels.ts';
import { checkTable, hintsOf, type PlannedQuery } from './logs.ts';
import { SqlBuilder, quoteIdent, type PlannerTable } from './printer.ts';

/**
 * One leaf of a LogQL metric query (ir/log-metrics.ts) → DuckDB SQL over the `logs` view: the
 * rows of the leaf's streams and filters in the scanned range, grouped by the leaf's series labels
 * and by sub-bucket, one row of partial aggregates per group. The evaluator merges sub-buckets
 * into windows; everything per row (filtering, label resolution, the unwrapped number, bucketing)
 * happens here, so only (series × sub-bucket) rows leave the querier.
 *
 *   SELECT l0, …, j, <partials> FROM (
 *     SELECT <label> AS l0, …, (time − origin − 1) // width AS j, <value> AS v, …
 *     FROM logs WHERE <time range> AND <stream matchers> AND <filters> [AND v IS NOT NULL]
 *   ) GROUP BY l0, …, j
 *
 * Kept cheap per row, since these queries read every row of the range (bench/logql: at most
 * 1.3x the hand-written SQL): a label backed by a column groups by the bare column (NULL and '' are both
 * "absent" and the evaluator merges their rows), and `detected_level`, a CASE over the severity
 * number and text, is derived once per group of (severity_number, severity_text) after grouping,
 * not per row; rows that derive the same level are merged by the evaluator too.
 *
 * Values are parameters, identifiers come from the table definition, like every log plan.
 */

const C = SAMPLE_COLUMNS;
const q = quoteIdent;

/** A series label as the sample SQL groups it: a column bare (NULL when absent), anything else as text. */
function groupLabelSql(b: SqlBuilder, label: string): string {
  const target = resolveLogLabel(label, b.table);
  return target.kind === 'column' ? b.column(target.column) : labelText(b, target);
}

/** The partial aggregates of a sample as [expression, output column]. */
function partialsSql(sample: LogSample): Array<[string, string]> {
  const v = q('v');
  switch (sample.partial) {
    case 'count':
      return [[`count(*)`, C.count]];
    case 'bytes':
      return [[`CAST(coalesce(sum(${q('len')}), 0) AS BIGINT)`, C.bytes]];
    case 'sum':
      return [[`fsum(${v})`, C.sum]];
    case 'avg':
      return [[`fsum(${v})`, C.sum], [`count(${v})`, C.valueCount]];
    case 'min':
      return [[`min(${v})`, C.min]];
    case 'max':
      return [[`max(${v})`, C.max]];
    case 'moments':
      return [
        [`count(${v})`, C.valueCount],
        [`fsum(${v})`, C.sum],
        [`fsum(${v} * ${v})`, C.sumSquares],
        [`avg(${v})`, C.mean],
        [`var_pop(${v}) * count(${v})`, C.m2],
      ];
    case 'first':
      return [[`arg_min(${v}, ${q('t')})`, C.firstValue], [`min(${q('t')})`, C.firstTime]];
    case 'last':
      return [[`arg_max(${v}, ${q('t')})`, C.lastValue], [`max(${q('t')})`, C.lastTime]];
    case 'values':
      return [[`list(${v})`, C.values]];
  }
}

/** Partials that read the row time `t`. */
const NEEDS_TIME = new Set<LogSample['partial']>(['first', 'last']);

export function planLogSample(sample: LogSample, windows: SampleWindows, table: PlannerTable): PlannedQuery {
  checkTable(sample, table);
  if (windows.widthNs <= 0n) throw new FloeError('internal', 'sub-bucket width must be positive');
  const b = new SqlBuilder(table);
  const time = b.column('time_unix_nano');
  const derived = sample.groupBy.includes('detected_level');
  const inner: string[] = [];
  const grouped: string[] = [];
  /** The output column already holding the bare severity_text (`level` in Grafana's volume query), if any. */
  let severityText: string | undefined;
  sample.groupBy.forEach((label, i) => {
    if (label === 'detected_level') return;
    const target = resolveLogLabel(label, table);
    if (target.kind === 'column' && target.column === 'severity_text') severityText ??= q(C.label(i));
    inner.push(`${groupLabelSql(b, label)} AS ${q(C.label(i))}`);
    grouped.push(q(C.label(i)));
  });
  // detected_level's inputs, grouped as they are; the level is derived per group below.
  const derivedKeys: string[] = [];
  if (derived) {
    inner.push(`${b.column('severity_number')} AS ${q('sn')}`);
    derivedKeys.push(q('sn'));
    if (severityText === undefined) {
      inner.push(`${b.column('severity_text')} AS ${q('st')}`);
      derivedKeys.push((severityText = q('st')));
    }
  }
  inner.push(`((${time} - ${b.bigint(windows.originNs)} - 1) // ${b.bigint(windows.widthNs)}) AS ${q(C.bucket)}`);
  if (NEEDS_TIME.has(sample.partial)) inner.push(`${time} AS ${q('t')}`);
  if (sample.partial === 'bytes') inner.push(`strlen(${b.column('body')}) AS ${q('len')}`);
  const value = sample.unwrap === undefined ? undefined : labelNumber(b, resolveLogLabel(sample.unwrap, table));
  if (value !== undefined) inner.push(`${value} AS ${q('v')}`);
  const conditions = selectionSql(b, windows.scan, sample.streams, sample.filters);
  if (value !== undefined) conditions.push(`${value} IS NOT NULL`);
  const partials = partialsSql(sample);
  const keys = [...grouped, ...derivedKeys, q(C.bucket)];
  let sql = [
    `SELECT ${[...keys, ...partials.map(([expr, name]) => `${expr} AS ${q(name)}`)].join(', ')}`,
    `FROM (`,
    `  SELECT ${inner.join(', ')}`,
    `  FROM ${b.tableName()}`,
    `  WHERE ${conditions.join('\n    AND ')}`,
    `)`,
    `GROUP BY ${keys.join(', ')}`,
  ].join('\n');
  if (derived) {
    const level = detectedLevelOf(q('sn'), severityText!);
    const names = partials.map(([, name]) => q(name));
    const out = sample.groupBy.map((label, i) => (label === 'detected_level' ? `${level} AS ${q(C.label(i))}` : q(C.label(i))));
    sql = [`SELECT ${[...out, q(C.bucket), ...names].join(', ')}`, `FROM (`, sql, `)`].join('\n');
  }
  return { sql, params: b.params, hints: hintsOf(windows.scan) };
}
