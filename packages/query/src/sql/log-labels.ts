import type { LabelMatch, LabelPredicate, LinePredicate, LogDeletion, NumericOp, RowFilter, TimeRange } from '../ir/logs.ts';
import { literal, type PlannerTable, type SqlBuilder } from './printer.ts';

/**
 * Label resolution for the logs table, exactly as spec 1 "Log label resolution" lays it out:
 *
 * | label                                      | resolves to                      |
 * |--------------------------------------------|----------------------------------|
 * | service_name, service, job, service.name    | column service_name              |
 * | level, severity, detected_level             | column severity_text (detected_level also matches its derived level, detectedLevelMatchSql) |
 * | trace_id, span_id                           | the columns of the same name     |
 * | a materialized label, or its `_` spelling   | its column (ColumnDef.attributeKey) |
 * | any other label, dotted or not              | the typed attribute maps, by exact key |
 *
 * An attribute label is looked up per key in the record's own maps first, then the resource's,
 * then the scope's (the same precedence as the structured metadata of each returned entry, so a
 * value shown there can always be filtered on); within a scope the string, int, double and bool
 * maps are tried in turn (a key's type is pinned at first sight, so at most one holds it).
 * Values compare as text: ints as decimals, doubles as DuckDB prints them, bools as true/false.
 *
 * Prometheus semantics throughout: an absent label has the value "", so `!=`, `!~` and matchers
 * that accept "" also match rows without the label.
 */

/** Without a prototype, so that a label named like an Object method (`valueOf`) is an attribute. */
export const LABEL_COLUMNS: Readonly<Record<string, string>> = Object.assign(Object.create(null) as Record<string, string>, {
  service_name: 'service_name',
  service: 'service_name',
  job: 'service_name',
  'service.name': 'service_name',
  level: 'severity_text',
  severity: 'severity_text',
  detected_level: 'severity_text',
  trace_id: 'trace_id',
  span_id: 'span_id',
});

/** The labels that make up a stream's identity (spec 1, label resolution rule 6), and their columns. */
export const STREAM_LABELS: ReadonlyArray<{ label: string; column: string }> = [
  { label: 'service_name', column: 'service_name' },
  { label: 'level', column: 'severity_text' },
];

/** Attribute scopes in lookup precedence order (highest first), and the typed maps of each. */
export const ATTRIBUTE_SCOPES = ['log', 'resource', 'scope'] as const;
export const ATTRIBUTE_TYPES = ['str', 'int', 'double', 'bool'] as const;
export const attributeMap = (scope: (typeof ATTRIBUTE_SCOPES)[number], type: (typeof ATTRIBUTE_TYPES)[number]) => `${scope}_attr_${type}`;

export type LabelTarget = { kind: 'column'; column: string } | { kind: 'attribute'; key: string };

export function resolveLogLabel(label: string, table: PlannerTable): LabelTarget {
  const column = LABEL_COLUMNS[label];
  if (column) return { kind: 'column', column };
  const materialized = table.labelColumn ? table.labelColumn(label) : materializedColumn(table, label);
  if (materialized) return { kind: 'column', column: materialized };
  return { kind: 'attribute', key: label };
}

/** Loki's label name for an attribute key: every character outside [A-Za-z0-9_] as `_` (`k8s.pod.name` → `k8s_pod_name`). */
const underscoreSpelling = (key: string) => key.replace(/[^A-Za-z0-9_]/gu, '_');

/**
 * The materialized label column of a label name (rule 5), from the columns' own attribute keys
 * (a column's name is sanitised, lower-cased and maybe suffixed, so it cannot tell keys apart):
 * the column whose key is the name exactly, else the one column whose key's underscore spelling
 * the name is, so Grafana's `k8s_pod_name` finds `k8s.pod.name`. When two keys share a spelling
 * (`k8s.pod.name`, `k8s_pod.name`) that spelling names neither and stays an attribute key.
 */
function materializedColumn(table: PlannerTable, label: string): string | undefined {
  let spelled: string | undefined;
  let spellings = 0;
  for (const c of table.columns) {
    if (c.attributeKey === undefined) continue;
    if (c.attributeKey === label) return c.name;
    if (underscoreSpelling(c.attributeKey) === label) {
      spelled = c.name;
      spellings++;
    }
  }
  return spellings === 1 ? spelled : undefined;
}

/** The label's value as text, '' when the row does not carry it (never NULL). */
export function labelText(b: SqlBuilder, target: LabelTarget): string {
  if (target.kind === 'column') return `coalesce(${b.column(target.column)}, '')`;
  return attributeText(b, target.key, ATTRIBUTE_SCOPES);
}

/**
 * An attribute's value as text from the typed maps (`<scope>_attr_<type>`) of every table that
 * keeps them: the scopes in precedence order, within one the string, int, double and bool maps;
 * ints as decimals, doubles as DuckDB prints them, bools as true/false; '' when absent.
 */
export function attributeText(b: SqlBuilder, key: string, scopes: readonly string[]): string {
  const k = b.param(key);
  const parts: string[] = [];
  for (const scope of scopes) {
    for (const type of ATTRIBUTE_TYPES) {
      const map = `${b.column(`${scope}_attr_${type}`)}[${k}]`;
      parts.push(type === 'str' ? map : `CAST(${map} AS VARCHAR)`);
    }
  }
  return `coalesce(${parts.join(', ')}, '')`;
}

/** The label's value as a DOUBLE, NULL when absent or not a number (such rows never compare true). */
export function labelNumber(b: SqlBuilder, target: LabelTarget): string {
  if (target.kind === 'column') return `TRY_CAST(${b.column(target.column)} AS DOUBLE)`;
  const key = b.param(target.key);
  const parts: string[] = [];
  for (const scope of ATTRIBUTE_SCOPES) {
    parts.push(`CAST(${b.column(attributeMap(scope, 'int'))}[${key}] AS DOUBLE)`);
    parts.push(`${b.column(attributeMap(scope, 'double'))}[${key}]`);
    parts.push(`TRY_CAST(${b.column(attributeMap(scope, 'str'))}[${key}] AS DOUBLE)`);
  }
  return `coalesce(${parts.join(', ')})`;
}

/**
 * Loki's detected_level of a row: from the OTLP severity number when it is set (1–4 trace, 5–8
 * debug, 9–12 info, 13–16 warn, 17–20 error, 21–24 fatal), else from the severity text's usual
 * spellings, else "unknown". Over the given severity number and text expressions (planner-printed,
 * never user input).
 */
export function detectedLevelOf(num: string, severityText: string): string {
  const text = `lower(coalesce(${severityText}, ''))`;
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

/**
 * A `detected_level` matcher: the severity text as sent, exactly (rule 1), or the level derived
 * from it and the severity number, which is what `by (detected_level)` reports. Without the
 * second form, a level picked from Grafana's log volume (`info`) would be sent back as
 * `detected_level="info"` and match none of the `INFO` rows it was counted from.
 */
function detectedLevelMatchSql(b: SqlBuilder, m: LabelMatch): string {
  const text = `coalesce(${b.column('severity_text')}, '')`;
  const level = detectedLevelOf(b.column('severity_number'), b.column('severity_text'));
  const value = b.param(m.value);
  const test = (expr: string) => (m.op === '=' || m.op === '!=' ? `${expr} = ${value}` : `regexp_full_match(${expr}, ${value})`);
  const hit = `(${test(text)} OR ${test(level)})`;
  return m.op === '=' || m.op === '=~' ? hit : `NOT ${hit}`;
}

/**
 * One matcher. Column equality keeps the bare column (`"service_name" = $1`) so DuckDB can use
 * Parquet min/max statistics; regexes are `regexp_full_match`, anchored like Loki's, except the
 * shapes regexShortcut recognises, which cost a fraction of a regex per row.
 */
export function matchSql(b: SqlBuilder, m: LabelMatch): string {
  if (m.label === 'detected_level') return detectedLevelMatchSql(b, m);
  const target = resolveLogLabel(m.label, b.table);
  if (target.kind === 'column') {
    const col = b.column(target.column);
    if (m.value !== '' && (m.op === '=' || m.op === '!=')) {
      return m.op === '=' ? `${col} = ${b.param(m.value)}` : `${col} IS DISTINCT FROM ${b.param(m.value)}`;
    }
    // `!= ""` holds for exactly the non-NULL, non-empty values: the bare column keeps the test a
    // filter DuckDB's Parquet scan applies itself (a coalesce around the column costs ~4x the scan).
    if (m.value === '' && m.op === '!=') return `${col} <> ${b.param(m.value)}`;
    const short = m.op === '=~' || m.op === '!~' ? regexShortcut(m.value) : undefined;
    if (short) return columnShortcutSql(b, col, short, m.op === '!~');
  }
  const text = labelText(b, target);
  switch (m.op) {
    case '=':
      return `${text} = ${b.param(m.value)}`;
    case '!=':
      return `${text} <> ${b.param(m.value)}`;
    case '=~':
    case '!~': {
      const short = regexShortcut(m.value);
      const hit = short ? shortcutSql(b, text, short) : `regexp_full_match(${text}, ${b.param(m.value)})`;
      return m.op === '=~' ? hit : `NOT ${hit}`;
    }
  }
}

/**
 * The two match-everything regexes, which have a far cheaper exact equivalent than a regex per
 * row (a label regex is matched against the whole value, and RE2's `.` does not match a
 * newline): `.*` is any value without a newline, `.+` any non-empty one. `{service_name=~".+"}`
 * is how Grafana and users spell "every stream". Only these fixed spellings are rewritten, so the
 * printed SQL never depends on what else a user's regex says (src/sql/security.test.ts).
 */
export type RegexShortcut = { kind: 'any_line'; nonEmpty: boolean };

export function regexShortcut(re: string): RegexShortcut | undefined {
  if (re === '.*') return { kind: 'any_line', nonEmpty: false };
  if (re === '.+') return { kind: 'any_line', nonEmpty: true };
  return undefined;
}

function shortcutSql(b: SqlBuilder, text: string, s: RegexShortcut): string {
  const noNewline = `NOT contains(${text}, ${b.param('\n')})`;
  return s.nonEmpty ? `(${text} <> '' AND ${noNewline})` : noNewline;
}

/**
 * The same tests on a column, written on the bare column (NULL is the absent label, i.e. ''), so
 * that DuckDB pushes them into the Parquet scan. Each is exact under SQL's three-valued logic as
 * a WHERE condition (NULL rejects the row) and never yields NULL where the row must pass:
 *   =~ ".+"  col <> '' AND NOT contains(col, nl)       (NULL: rejected, as '' is)
 *   =~ ".*"  col IS NULL OR NOT contains(col, nl)      ('' and NULL pass)
 *   !~ ".+"  col IS NULL OR col = '' OR contains(col, nl)
 *   !~ ".*"  col IS NOT NULL AND contains(col, nl)
 */
function columnShortcutSql(b: SqlBuilder, col: string, s: RegexShortcut, negated: boolean): string {
  const nl = b.param('\n');
  if (!negated) return s.nonEmpty ? `(${col} <> '' AND NOT contains(${col}, ${nl}))` : `(${col} IS NULL OR NOT contains(${col}, ${nl}))`;
  return s.nonEmpty ? `(${col} IS NULL OR ${col} = '' OR contains(${col}, ${nl}))` : `(${col} IS NOT NULL AND contains(${col}, ${nl}))`;
}

const NUMERIC_SQL: Record<NumericOp, string> = { '>': '>', '>=': '>=', '<': '<', '<=': '<=', '==': '=', '!=': '<>' };

export function predicateSql(b: SqlBuilder, p: LabelPredicate): string {
  switch (p.kind) {
    case 'match':
      return matchSql(b, p.match);
    case 'compare':
      return `${labelNumber(b, resolveLogLabel(p.label, b.table))} ${NUMERIC_SQL[p.op]} ${b.param(p.value)}`;
    case 'and':
    case 'or':
      return `(${predicateSql(b, p.left)} ${p.kind.toUpperCase()} ${predicateSql(b, p.right)})`;
    case 'const':
      return p.value ? 'TRUE' : 'FALSE';
  }
}

/** Line filters test the body: `contains` is a literal substring test (no LIKE wildcards), regexes unanchored. */
export function lineSql(b: SqlBuilder, p: LinePredicate): string {
  const body = b.column('body');
  const any = (f: (v: string) => string) => (p.values.length === 1 ? f(p.values[0]!) : `(${p.values.map(f).join(' OR ')})`);
  switch (p.op) {
    case 'contains':
      return any((v) => `contains(${body}, ${b.param(v)})`);
    case 'not_contains':
      return `NOT ${any((v) => `contains(coalesce(${body}, ''), ${b.param(v)})`)}`;
    case 'match':
      return any((v) => `regexp_matches(${body}, ${b.param(v)})`);
    case 'not_match':
      return `NOT ${any((v) => `regexp_matches(coalesce(${body}, ''), ${b.param(v)})`)}`;
  }
}

export function filterSql(b: SqlBuilder, f: RowFilter): string {
  switch (f.kind) {
    case 'line':
      return lineSql(b, f.line);
    case 'labels':
      return predicateSql(b, f.predicate);
    case 'exclude':
      // A row is deleted when a deletion's condition is TRUE (deletionSql): NULL keeps it, here too.
      if (f.deletions.length === 0) return 'TRUE';
      return `(${f.deletions.map((d) => `(${deletionSql(b, d)})`).join(' OR ')}) IS NOT TRUE`;
  }
}

/** The condition that selects a deletion's rows: its window, stream matchers and filters. */
export function deletionSql(b: SqlBuilder, d: LogDeletion): string {
  return selectionSql(b, d.range, d.streams, d.filters).join(' AND ');
}

/**
 * The conditions of a selection of log rows: time range, then stream matchers, then filters in
 * pipeline order (placeholders number in that order).
 */
export function selectionSql(b: SqlBuilder, range: TimeRange, streams: readonly LabelMatch[], filters: readonly RowFilter[] = []): string[] {
  return [...rangeSql(b, range), ...streams.map((m) => matchSql(b, m)), ...filters.map((f) => `(${filterSql(b, f)})`)];
}

/** Time-range pushdown: the record time column against [start, end). */
export function rangeSql(b: SqlBuilder, range: TimeRange): string[] {
  const t = b.column('time_unix_nano');
  return [`${t} >= ${b.bigint(range.startNs)}`, `${t} < ${b.bigint(range.endNs)}`];
}

