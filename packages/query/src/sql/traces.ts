import type { TimeRange } from '../ir/logs.ts';
import { ROOT_NOT_RECEIVED, type FoundTrace, type SpanCondition, type SpanField, type SpanValue, type TraceSearch, type TraceTagNames, type TraceTagValues } from '../ir/traces.ts';
import { checkTable, hintsOf, type PlannedQuery } from './logs.ts';
import { SqlBuilder, intLiteral, literal, type PlannerTable } from './printer.ts';

/**
 * Trace IR (ir/traces.ts) → DuckDB SQL over the caller's `traces` view, by the rules of every
 * plan here: values are `$n` parameters, identifiers come from the table definition, the only
 * literals are the planner's own constants. The span start bounds the scan, and the same bounds
 * go out as hints so the querier opens only those hour partitions.
 */

const SCOPES = { span: ['span'], resource: ['resource'], any: ['span', 'resource'] } as const;
const TYPES = ['str', 'int', 'double', 'bool'] as const;
type AttrType = (typeof TYPES)[number];
const map = (scope: 'span' | 'resource', type: AttrType) => `${scope}_attr_${type}`;

/** Output columns of planTraceSearch: one row per returned span, trace columns repeated. */
export const TRACE_SEARCH_COLUMNS = {
  traceId: 'trace_id',
  traceStart: 'trace_start',
  traceEnd: 'trace_end',
  rootService: 'root_service',
  rootName: 'root_name',
  matched: 'matched',
  spanId: 'span_id',
  spanName: 'span_name',
  spanStart: 'span_start',
  spanDuration: 'span_duration',
  /** The resource's service.name, for a query that matched on it. */
  service: 'service',
  /** Attribute i of the query (searchAttributes' order) as `attr<i>_<str|int|double|bool>`. */
  attribute: (i: number, type: AttrType) => `attr${i}_${type}`,
} as const;

function rangeSql(b: SqlBuilder, range: TimeRange): string[] {
  const t = b.column('start_time_unix_nano');
  return [`${t} >= ${b.bigint(range.startNs)}`, `${t} < ${b.bigint(range.endNs)}`];
}

/** `field = value` on one span, exact in SQL's three-valued logic (an absent attribute rejects the row). */
export function conditionSql(b: SqlBuilder, c: SpanCondition): string {
  switch (c.field.kind) {
    case 'name':
      return `${b.column('name')} = ${b.param(textOf(c.value))}`;
    case 'status':
      return `${b.column('status_code')} = ${b.param(textOf(c.value))}`;
    case 'kind':
      return `${b.column('kind')} = ${b.param(textOf(c.value))}`;
    case 'service':
      return `${b.column('service_name')} = ${b.param(textOf(c.value))}`;
    case 'attribute': {
      const key = b.param(c.field.key);
      const tests = SCOPES[c.field.scope].flatMap((scope) => attributeTests(b, scope, key, c.value));
      return tests.length === 1 ? tests[0]! : `(${tests.join(' OR ')})`;
    }
  }
}

const textOf = (v: SpanValue): string => (v.type === 'string' || v.type === 'keyword' ? v.value : String(v.value));

/**
 * Typed equality as Tempo's: a string matches string attributes, a number matches integer and
 * floating-point attributes of the same numeric value, a boolean matches boolean attributes.
 */
function attributeTests(b: SqlBuilder, scope: 'span' | 'resource', key: string, v: SpanValue): string[] {
  const at = (type: AttrType) => `${b.column(map(scope, type))}[${key}]`;
  switch (v.type) {
    case 'string':
    case 'keyword':
      return [`${at('str')} = ${b.param(v.value)}`];
    case 'bool':
      return [`${at('bool')} = ${b.param(v.value)}`];
    case 'int':
      return [`${at('int')} = ${b.bigint(v.value)}`, `${at('double')} = CAST(${b.bigint(v.value)} AS DOUBLE)`];
    case 'float':
      return [`${at('double')} = ${b.param(v.value)}`, `CAST(${at('int')} AS DOUBLE) = ${b.param(v.value)}`];
  }
}

/** The typed maps a value can equal (attributeTests): only these can hold a matched span's value. */
const MAPS_OF: Record<SpanValue['type'], readonly AttrType[]> = { string: ['str'], keyword: ['str'], bool: ['bool'], int: ['int', 'double'], float: ['int', 'double'] };

/**
 * The attribute conditions of a search whose values a result span shows, each key once, in query
 * order, with the typed maps that can hold the matched value: reading only those keeps the
 * search from decoding maps its conditions did not need (a map of long strings costs as much to
 * read as the rest of the span).
 */
export function searchAttributes(conditions: readonly SpanCondition[]): Array<{ key: string; scope: 'span' | 'resource' | 'any'; maps: readonly AttrType[] }> {
  const out: Array<{ key: string; scope: 'span' | 'resource' | 'any'; maps: readonly AttrType[] }> = [];
  for (const c of conditions) {
    if (c.field.kind !== 'attribute') continue;
    const { key, scope } = c.field;
    if (!out.some((a) => a.key === key && a.scope === scope)) out.push({ key, scope, maps: MAPS_OF[c.value.type] });
  }
  return out;
}

/** An attribute's typed value on a span: the span's own first, then the resource's. */
function attributeValue(b: SqlBuilder, key: string, scope: 'span' | 'resource' | 'any', type: AttrType): string {
  const k = b.param(key);
  const parts = SCOPES[scope].map((s) => `${b.column(map(s, type))}[${k}]`);
  return parts.length === 1 ? parts[0]! : `coalesce(${parts.join(', ')})`;
}

const TRACE_END = (b: SqlBuilder) => `coalesce(${b.column('end_time_unix_nano')}, ${b.column('start_time_unix_nano')})`;
const IS_ROOT = (b: SqlBuilder) => `coalesce(${b.column('parent_span_id')}, '') = ''`;

/**
 * Search, in four steps over the window:
 * 1. `matched`: the spans that meet every condition;
 * 2. `candidates`: their traces with the count of matching spans. Without a duration bound only
 *    the `limit` traces whose first matching span is newest go on, so the next step reads few
 *    traces; with one, every matching trace does, since its duration decides;
 * 3. `bounds`: each candidate's first start, last end and root span (the earliest span without
 *    a parent), from all of its spans in the window; the duration bounds apply here, and the
 *    newest `limit` traces by start are kept;
 * 4. the first `spansPerSpanSet` matching spans of each, by start time.
 * Traces and their spans come out newest trace first, spans by start.
 */
export function planTraceSearch(ir: TraceSearch, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const C = TRACE_SEARCH_COLUMNS;
  const window = rangeSql(b, ir.range);
  const where = [...window, ...ir.conditions.map((c) => conditionSql(b, c))].join(' AND ');
  const attrs = searchAttributes(ir.conditions);
  const attrColumns = attrs.flatMap((a, i) => a.maps.map((t) => `${attributeValue(b, a.key, a.scope, t)} AS "${C.attribute(i, t)}"`));
  const showService = ir.conditions.some((c) => c.field.kind === 'service');
  const limit = intLiteral(ir.limit);
  const bounded = ir.minDurationNs !== undefined || ir.maxDurationNs !== undefined;
  const durationTests: string[] = [];
  if (ir.minDurationNs !== undefined) durationTests.push(`"${C.traceEnd}" - "${C.traceStart}" >= ${b.bigint(ir.minDurationNs)}`);
  if (ir.maxDurationNs !== undefined) durationTests.push(`"${C.traceEnd}" - "${C.traceStart}" <= ${b.bigint(ir.maxDurationNs)}`);
  const spanColumns = [
    `${b.column('trace_id')} AS "${C.traceId}"`,
    `${b.column('span_id')} AS "${C.spanId}"`,
    `${b.column('name')} AS "${C.spanName}"`,
    `${b.column('start_time_unix_nano')} AS "${C.spanStart}"`,
    `${b.column('duration_nano')} AS "${C.spanDuration}"`,
    ...(showService ? [`${b.column('service_name')} AS "${C.service}"`] : []),
    ...attrColumns,
  ];
  const perTrace = ir.spansPerSpanSet === undefined ? '' : `WHERE "rn" <= ${intLiteral(ir.spansPerSpanSet)}`;
  const sql = [
    `WITH "matched" AS (`,
    `  SELECT ${spanColumns.join(', ')}`,
    `  FROM ${b.tableName()}`,
    `  WHERE ${where}`,
    `), "candidates" AS (`,
    `  SELECT "${C.traceId}", count(*) AS "${C.matched}", min("${C.spanStart}") AS "first_match"`,
    `  FROM "matched" GROUP BY "${C.traceId}"`,
    ...(bounded ? [] : [`  ORDER BY "first_match" DESC, "${C.traceId}" LIMIT ${limit}`]),
    `), "bounds" AS (`,
    `  SELECT ${b.column('trace_id')} AS "${C.traceId}", min(${b.column('start_time_unix_nano')}) AS "${C.traceStart}", max(${TRACE_END(b)}) AS "${C.traceEnd}",`,
    `    arg_min(${b.column('service_name')}, ${b.column('start_time_unix_nano')}) FILTER (WHERE ${IS_ROOT(b)}) AS "${C.rootService}",`,
    `    arg_min(${b.column('name')}, ${b.column('start_time_unix_nano')}) FILTER (WHERE ${IS_ROOT(b)}) AS "${C.rootName}"`,
    `  FROM ${b.tableName()}`,
    `  WHERE ${window.join(' AND ')} AND ${b.column('trace_id')} IN (SELECT "${C.traceId}" FROM "candidates")`,
    `  GROUP BY ${b.column('trace_id')}`,
    `), "top" AS (`,
    `  SELECT "bounds".*, "candidates"."${C.matched}" FROM "bounds" JOIN "candidates" USING ("${C.traceId}")`,
    ...(durationTests.length ? [`  WHERE ${durationTests.join(' AND ')}`] : []),
    `  ORDER BY "${C.traceStart}" DESC, "${C.traceId}" LIMIT ${limit}`,
    `)`,
    `SELECT "top".*, "spans".* EXCLUDE ("${C.traceId}", "rn")`,
    `FROM "top" JOIN (`,
    `  SELECT *, row_number() OVER (PARTITION BY "${C.traceId}" ORDER BY "${C.spanStart}", "${C.spanId}") AS "rn"`,
    `  FROM "matched" WHERE "${C.traceId}" IN (SELECT "${C.traceId}" FROM "top")`,
    `) AS "spans" USING ("${C.traceId}")`,
    perTrace,
    `ORDER BY "${C.traceStart}" DESC, "${C.traceId}", "rn"`,
  ]
    .filter((l) => l !== '')
    .join('\n');
  return { sql, params: b.params, hints: hintsOf(ir.range) };
}

/**
 * Rows of (scope, name): the distinct attribute keys of the newest `sampleLimit` spans in the
 * window, scope `span` or `resource`, sorted.
 */
export function planTraceTagNames(ir: TraceTagNames, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const keys = (scope: 'span' | 'resource') =>
    `list_distinct(flatten([${TYPES.map((t) => `map_keys(${b.column(map(scope, t))})`).join(', ')}]))`;
  const sql = [
    `SELECT DISTINCT "scope", "name" FROM (`,
    `  SELECT ${literal('span')} AS "scope", unnest(${keys('span')}) AS "name" FROM "sample"`,
    `  UNION ALL`,
    `  SELECT ${literal('resource')} AS "scope", unnest(${keys('resource')}) AS "name" FROM "sample"`,
    `)`,
    `ORDER BY "scope", "name"`,
  ].join('\n');
  return { sql: withSample(b, ir, ir.conditions, sql), params: b.params, hints: hintsOf(ir.range, 'newest_first') };
}

/** `WITH "sample" AS (the newest sampleLimit spans of the window meeting `conditions`, root spans only if asked) <body>`. */
function withSample(b: SqlBuilder, ir: { range: TimeRange; sampleLimit: number; rootOnly?: boolean }, conditions: readonly SpanCondition[], body: string): string {
  const where = [...rangeSql(b, ir.range), ...conditions.map((c) => conditionSql(b, c)), ...(ir.rootOnly ? [IS_ROOT(b)] : [])].join(' AND ');
  return [
    `WITH "sample" AS (`,
    `  SELECT * FROM ${b.tableName()}`,
    `  WHERE ${where}`,
    `  ORDER BY ${b.column('start_time_unix_nano')} DESC`,
    `  LIMIT ${intLiteral(ir.sampleLimit)}`,
    `)`,
    body,
  ].join('\n');
}

/**
 * Rows of (type, value): the distinct values of one field over the sample, at most `limit`,
 * sorted by value. `type` is TraceQL's: string, int, float, bool, or keyword for status and kind.
 */
export function planTraceTagValues(ir: TraceTagValues, table: PlannerTable): PlannedQuery {
  checkTable(ir, table);
  const b = new SqlBuilder(table);
  const selects = tagValueSelects(b, ir.field);
  const sql = [
    `SELECT DISTINCT "type", "value" FROM (`,
    selects.map((s) => `  ${s}`).join('\n  UNION ALL\n'),
    `)`,
    `WHERE "value" IS NOT NULL AND "value" <> ''`,
    `ORDER BY "value", "type"`,
    `LIMIT ${intLiteral(ir.limit)}`,
  ].join('\n');
  return { sql: withSample(b, ir, ir.conditions, sql), params: b.params, hints: hintsOf(ir.range, 'newest_first') };
}

const VALUE_TYPE: Record<AttrType, string> = { str: 'string', int: 'int', double: 'float', bool: 'bool' };

function tagValueSelects(b: SqlBuilder, field: SpanField): string[] {
  const column = (name: string, type: string) => `SELECT ${literal(type)} AS "type", ${b.column(name)} AS "value" FROM "sample"`;
  switch (field.kind) {
    case 'name':
      return [column('name', 'string')];
    case 'status':
      return [column('status_code', 'keyword')];
    case 'kind':
      return [column('kind', 'keyword')];
    case 'service':
      return [column('service_name', 'string')];
    case 'attribute': {
      const key = b.param(field.key);
      return SCOPES[field.scope].flatMap((scope) =>
        TYPES.map((t) => {
          const v = `${b.column(map(scope, t))}[${key}]`;
          return `SELECT ${literal(VALUE_TYPE[t])} AS "type", ${t === 'str' ? v : `CAST(${v} AS VARCHAR)`} AS "value" FROM "sample"`;
        }),
      );
    }
  }
}

/** A column of a row as a bigint (DuckDB's BIGINT arrives as one; NULL as 0). */
const bigintOf = (v: unknown): bigint => (typeof v === 'bigint' ? v : typeof v === 'number' ? BigInt(Math.trunc(v)) : typeof v === 'string' && /^-?\d+$/.test(v) ? BigInt(v) : 0n);

/** planTraceSearch's rows (a trace's spans together, newest trace first) as found traces, in row order. */
export function traceSearchResults(ir: TraceSearch, rows: ReadonlyArray<Record<string, unknown>>): FoundTrace[] {
  const C = TRACE_SEARCH_COLUMNS;
  const attributes = searchAttributes(ir.conditions);
  const out: FoundTrace[] = [];
  for (const row of rows) {
    const traceId = String(row[C.traceId]);
    let trace = out.at(-1);
    if (!trace || trace.traceId !== traceId) {
      const startNs = bigintOf(row[C.traceStart]);
      const rootService = row[C.rootService];
      const rootName = row[C.rootName];
      trace = {
        traceId,
        rootServiceName: typeof rootService === 'string' ? rootService : ROOT_NOT_RECEIVED,
        ...(typeof rootName === 'string' ? { rootTraceName: rootName } : {}),
        startNs,
        durationNs: bigintOf(row[C.traceEnd]) - startNs,
        matched: Number(row[C.matched]),
        spans: [],
      };
      out.push(trace);
    }
    const attrs: FoundTrace['spans'][number]['attributes'] = [];
    if (typeof row[C.service] === 'string') attrs.push({ key: 'service.name', value: { type: 'string', value: row[C.service] as string } });
    attributes.forEach((a, i) => {
      const value = attributeOf(row, i);
      if (value) attrs.push({ key: a.key, value });
    });
    const name = row[C.spanName];
    trace.spans.push({
      spanId: String(row[C.spanId]),
      ...(typeof name === 'string' && name !== '' ? { name } : {}),
      startNs: bigintOf(row[C.spanStart]),
      durationNs: bigintOf(row[C.spanDuration]),
      attributes: attrs,
    });
  }
  return out;
}

/** Query attribute i of a result row, typed; undefined when the span lacks it. */
function attributeOf(row: Record<string, unknown>, i: number): Exclude<SpanValue, { type: 'keyword' }> | undefined {
  for (const t of TYPES) {
    const v = row[TRACE_SEARCH_COLUMNS.attribute(i, t)];
    if (v === null || v === undefined) continue;
    if (t === 'str') return { type: 'string', value: String(v) };
    if (t === 'int') return { type: 'int', value: bigintOf(v) };
    if (t === 'double') return { type: 'float', value: Number(v) };
    return { type: 'bool', value: v === true };
  }
  return undefined;
}
