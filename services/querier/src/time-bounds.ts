import { DuckDBDateValue, DuckDBInstance, DuckDBTimestampNanosecondsValue, DuckDBTimestampTZValue, DuckDBTimestampValue } from '@duckdb/node-api';
import type { DuckDBConnection, DuckDBPreparedStatement } from '@duckdb/node-api';
import type { FileOrder } from '@floe/query';
import { ceilDiv, floorDiv } from './bigint-division.ts';

/**
 * Time bounds a query provably puts on the rows it reads from each table, so the querier can skip
 * whole hour partitions. `minNs`/`maxNs` are inclusive unix-nanosecond bounds on a row's span start
 * (`start_time_unix_nano`). A bound may be wider than the truth, never narrower: a missing bound
 * means "scan everything", a wrong narrow bound would silently drop rows.
 *
 * How: a long-lived in-memory DuckDB, used only as a parser, turns the SQL into the
 * `json_serialize_sql` AST (the SQL is bound as a parameter, never executed); the walk below reads
 * WHERE conjuncts of SELECTs over base tables. Every table reference in the statement must be
 * bounded for its name to get an entry; several references to one name give the hull of theirs.
 */
export interface TimeBounds {
  minNs?: bigint;
  maxNs?: bigint;
}

/** What one parse of a query tells the file resolver: time bounds per table, and a file order. */
export interface ScanHints {
  bounds: Map<string, TimeBounds>;
  /**
   * The order to list files in when the statement keeps the first rows by time: `ORDER BY
   * <time column> [ASC|DESC] … LIMIT n` at its top. Undefined otherwise.
   */
  fileOrder?: FileOrder;
}

export interface TimeBoundsExtractor {
  /** Bounds per table name as written in FROM, lower-cased, parts joined with '.'. Never rejects on bad SQL (empty map). */
  extract(sql: string, params?: unknown[]): Promise<Map<string, TimeBounds>>;
  /** The bounds and the file order from one parse. Never rejects on bad SQL (no bounds, no order). */
  scanHints(sql: string, params?: unknown[]): Promise<ScanHints>;
  /** Frees the parser instance (after any extraction in flight); extract() then rejects. */
  close(): void;
}

export interface TimeBoundsOptions {
  /**
   * Whether the session that runs the query has TimeZone UTC. Zone-less timestamps (`TIMESTAMP '…'`,
   * `'2024-01-01 10:00'` strings, DATE, make_timestamp, epoch_ms) compared with the TIMESTAMPTZ
   * `timestamp` column are read in the session zone; when false they are widened by ±24 h.
   * Default true (the brief's rule: naive means UTC).
   */
  sessionTimeZoneIsUtc?: boolean;
}

const SERIALIZE_SQL = 'SELECT json_serialize_sql($1::VARCHAR)';

export async function createTimeBoundsExtractor(options: TimeBoundsOptions = {}): Promise<TimeBoundsExtractor> {
  const instance = await DuckDBInstance.create(':memory:', {
    threads: '1',
    autoload_known_extensions: 'false',
    autoinstall_known_extensions: 'false',
    enable_external_access: 'false',
    lock_configuration: 'true',
  });
  let conn: DuckDBConnection | undefined;
  let stmt: DuckDBPreparedStatement;
  try {
    conn = await instance.connect();
    stmt = await conn.prepare(SERIALIZE_SQL);
  } catch (err) {
    conn?.closeSync();
    instance.closeSync();
    throw err;
  }
  const connection = conn;
  let closed = false;
  // One prepared statement, so one serialization at a time.
  let queue: Promise<unknown> = Promise.resolve();

  const serialize = (sql: string): Promise<unknown> => {
    const run = queue.then(async () => {
      if (closed) throw new Error('TimeBoundsExtractor is closed');
      stmt.clearBindings();
      stmt.bindVarchar(1, sql);
      const reader = await stmt.runAndReadAll();
      return reader.getRows()[0]?.[0];
    });
    queue = run.catch(() => undefined);
    return run;
  };

  const scanHints = async (sql: string, params: unknown[] = []): Promise<ScanHints> => {
    if (closed) throw new Error('TimeBoundsExtractor is closed');
    let text: unknown;
    try {
      text = await serialize(sql);
    } catch {
      return { bounds: new Map() };
    }
    return typeof text === 'string' ? scanHintsFromSerializedSql(text, params, options) : { bounds: new Map() };
  };

  return {
    scanHints,
    async extract(sql: string, params: unknown[] = []): Promise<Map<string, TimeBounds>> {
      return (await scanHints(sql, params)).bounds;
    },
    close(): void {
      if (closed) return;
      closed = true;
      void queue.finally(() => {
        stmt.destroySync();
        connection.closeSync();
        instance.closeSync();
      });
    },
  };
}

/**
 * The same analysis from the text `json_serialize_sql` returned (text, not parsed JSON: integers
 * beyond 2^53 must be read exactly). Any surprise gives an empty map.
 */
export function timeBoundsFromSerializedSql(jsonText: string, params: readonly unknown[] = [], options: TimeBoundsOptions = {}): Map<string, TimeBounds> {
  return scanHintsFromSerializedSql(jsonText, params, options).bounds;
}

/** Bounds and file order from the text `json_serialize_sql` returned. Any surprise gives neither. */
export function scanHintsFromSerializedSql(jsonText: string, params: readonly unknown[] = [], options: TimeBoundsOptions = {}): ScanHints {
  try {
    const root = JSON.parse(jsonText, exactIntegers) as Json;
    const bounds = analyseRoot(root, { params, naiveSlackUs: options.sessionTimeZoneIsUtc === false ? DAY_US : 0n });
    const fileOrder = topLevelFileOrder(root);
    return fileOrder ? { bounds, fileOrder } : { bounds };
  } catch {
    return { bounds: new Map() };
  }
}

/** Columns that order rows as their files' time does (every table's partition source or its twin). */
const TIME_COLUMNS = new Set(['timestamp', 'time_unix_nano', 'start_time_unix_nano']);

/**
 * `SELECT … ORDER BY <time column> [ASC|DESC][, …] LIMIT n` as the statement's top: the rows it
 * keeps are the newest (or oldest), which the files listed in that order give DuckDB's top-N
 * first. Only an ordering hint: it never changes which rows are read or answered.
 */
function topLevelFileOrder(root: Json): FileOrder | undefined {
  if (!isObj(root)) return undefined;
  const statements = arr(root, 'statements');
  const node = statements?.length === 1 && isObj(statements[0]) ? obj(statements[0], 'node') : undefined;
  const modifiers = node ? arr(node, 'modifiers') : undefined;
  if (!modifiers?.some((m) => isObj(m) && str(m, 'type') === 'LIMIT_MODIFIER')) return undefined;
  const orderBy = modifiers.find((m): m is JsonObject => isObj(m) && str(m, 'type') === 'ORDER_MODIFIER');
  const first = orderBy ? arr(orderBy, 'orders')?.[0] : undefined;
  if (!isObj(first)) return undefined;
  const expression = obj(first, 'expression');
  const names = expression && str(expression, 'class') === 'COLUMN_REF' ? arr(expression, 'column_names') : undefined;
  const column = names?.[names.length - 1];
  if (typeof column !== 'string' || !TIME_COLUMNS.has(column.toLowerCase())) return undefined;
  return str(first, 'type') === 'DESCENDING' ? 'newest_first' : 'oldest_first';
}

// ---------------------------------------------------------------------------------------------
// JSON helpers

type Json = null | boolean | number | bigint | string | Json[] | JsonObject;
interface JsonObject {
  [key: string]: Json;
}

/** JSON.parse reviver: integers that a double cannot hold exactly become bigint (from the source text). */
function exactIntegers(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value === 'number' && !Number.isSafeInteger(value) && typeof context?.source === 'string' && /^-?\d+$/.test(context.source)) {
    return BigInt(context.source);
  }
  return value;
}

const isObj = (v: Json | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (o: JsonObject, k: string): JsonObject | undefined => (isObj(o[k]) ? (o[k] as JsonObject) : undefined);
const str = (o: JsonObject, k: string): string | undefined => (typeof o[k] === 'string' ? (o[k] as string) : undefined);
const arr = (o: JsonObject, k: string): Json[] | undefined => (Array.isArray(o[k]) ? (o[k] as Json[]) : undefined);

function toBigInt(v: Json | undefined): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Statement walk

interface Ctx {
  params: readonly unknown[];
  naiveSlackUs: bigint;
}

interface Walk {
  ctx: Ctx;
  /** Bounds of every base-table reference the walk could analyse (by AST node identity). */
  analysed: Map<JsonObject, TimeBounds>;
}

function analyseRoot(root: Json, ctx: Ctx): Map<string, TimeBounds> {
  const out = new Map<string, TimeBounds>();
  if (!isObj(root) || root['error'] !== false) return out;
  const statements = arr(root, 'statements');
  if (!statements) return out;

  const walk: Walk = { ctx, analysed: new Map() };
  for (const s of statements) {
    const node = isObj(s) ? obj(s, 'node') : undefined;
    if (node) visitQuery(node, false, walk);
  }

  // Every base-table reference anywhere counts: an unanalysed one is unbounded.
  const refs: JsonObject[] = [];
  const cteNames = new Set<string>();
  collect(root, refs, cteNames);
  const poisoned = new Set<string>();
  const hull = new Map<string, TimeBounds>();
  for (const ref of refs) {
    const key = tableKey(ref);
    if (key === undefined || cteNames.has(key)) {
      if (key !== undefined) poisoned.add(key);
      continue;
    }
    const b = walk.analysed.get(ref) ?? {};
    const prev = hull.get(key);
    hull.set(key, prev === undefined ? b : unionBounds(prev, b));
  }
  for (const [key, b] of hull) {
    if (poisoned.has(key)) continue;
    if (b.minNs !== undefined || b.maxNs !== undefined) out.set(key, b);
  }
  return out;
}

/** Base-table references and CTE names anywhere in the AST. */
function collect(v: Json, refs: JsonObject[], cteNames: Set<string>): void {
  if (Array.isArray(v)) {
    for (const x of v) collect(x, refs, cteNames);
    return;
  }
  if (!isObj(v)) return;
  if (v['type'] === 'BASE_TABLE') refs.push(v);
  const cteName = str(v, 'cte_name');
  if (cteName) cteNames.add(cteName.toLowerCase());
  const cteMap = obj(v, 'cte_map');
  for (const e of (cteMap && arr(cteMap, 'map')) ?? []) {
    if (isObj(e) && typeof e['key'] === 'string') cteNames.add(e['key'].toLowerCase());
  }
  for (const x of Object.values(v)) collect(x, refs, cteNames);
}

function tableKey(ref: JsonObject): string | undefined {
  const table = str(ref, 'table_name');
  if (!table) return undefined;
  return [str(ref, 'catalog_name') ?? '', str(ref, 'schema_name') ?? '', table]
    .filter((p) => p !== '')
    .join('.')
    .toLowerCase();
}

function unionBounds(a: TimeBounds, b: TimeBounds): TimeBounds {
  const r: TimeBounds = {};
  if (a.minNs !== undefined && b.minNs !== undefined) r.minNs = a.minNs < b.minNs ? a.minNs : b.minNs;
  if (a.maxNs !== undefined && b.maxNs !== undefined) r.maxNs = a.maxNs > b.maxNs ? a.maxNs : b.maxNs;
  return r;
}

/**
 * A query node. `correlated`: whether relations of an enclosing query may be in scope (then
 * unqualified column names could bind outside, and only qualified ones count).
 */
function visitQuery(node: JsonObject, correlated: boolean, walk: Walk): void {
  const type = node['type'];
  if (type === 'SELECT_NODE') {
    analyseSelect(node, correlated, walk);
    for (const [k, v] of Object.entries(node)) {
      if (k === 'cte_map') visitCtes(v, correlated, walk);
      else if (k === 'from_table') {
        if (isObj(v)) visitFrom(v, correlated, true, walk);
      } else visitAny(v, walk);
    }
  } else if (type === 'SET_OPERATION_NODE') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'cte_map') visitCtes(v, correlated, walk);
      else if ((k === 'left' || k === 'right') && isObj(v)) visitQuery(v, correlated, walk);
      else visitAny(v, walk);
    }
  } else {
    // Recursive CTEs and anything newer: only nested queries, treated as possibly correlated.
    for (const v of Object.values(node)) visitAny(v, walk);
  }
}

function visitCtes(cteMap: Json, correlated: boolean, walk: Walk): void {
  const entries = isObj(cteMap) ? arr(cteMap, 'map') : undefined;
  if (!entries) return visitAny(cteMap, walk);
  for (const e of entries) {
    const value = isObj(e) ? obj(e, 'value') : undefined;
    const query = value ? obj(value, 'query') : undefined;
    const node = query ? obj(query, 'node') : undefined;
    if (node) visitQuery(node, correlated, walk);
    else visitAny(e, walk);
  }
}

function visitFrom(ref: JsonObject, correlated: boolean, sole: boolean, walk: Walk): void {
  const type = ref['type'];
  if (type === 'SUBQUERY') {
    const sub = obj(ref, 'subquery');
    const node = sub ? obj(sub, 'node') : undefined;
    // A subquery beside other relations may be LATERAL (DuckDB needs no keyword for it).
    if (node) visitQuery(node, sole ? correlated : true, walk);
  } else if (type === 'JOIN') {
    for (const [k, v] of Object.entries(ref)) {
      if ((k === 'left' || k === 'right') && isObj(v)) visitFrom(v, correlated, false, walk);
      else visitAny(v, walk);
    }
  } else if (type !== 'BASE_TABLE') {
    visitAny(ref, walk);
  }
}

/** Anywhere else (expressions, table-function arguments): nested queries may be correlated. */
function visitAny(v: Json | undefined, walk: Walk): void {
  if (Array.isArray(v)) {
    for (const x of v) visitAny(x, walk);
    return;
  }
  if (!isObj(v)) return;
  if (v['type'] === 'SELECT_NODE' || v['type'] === 'SET_OPERATION_NODE') {
    visitQuery(v, true, walk);
    return;
  }
  for (const x of Object.values(v)) visitAny(x, walk);
}

// ---------------------------------------------------------------------------------------------
// One SELECT: its FROM relations and WHERE conjuncts

interface Relation {
  node: JsonObject;
  /** Base tables we may bound; other relations only matter for name resolution. */
  base: boolean;
  alias: string;
  /** Written name parts (base tables) or the table function's name. */
  parts: string[];
}

const JOIN_TYPES = new Set(['INNER', 'LEFT', 'RIGHT', 'FULL', 'OUTER']);
const JOIN_REFS = new Set(['REGULAR', 'CROSS', 'NATURAL']);

/** The relations of a FROM clause, or undefined when its semantics are not plain (ASOF, POSITIONAL, SEMI, ANTI…). */
function relationsOf(ref: JsonObject, out: Relation[]): boolean {
  const type = ref['type'];
  const alias = (str(ref, 'alias') ?? '').toLowerCase();
  if (type === 'JOIN') {
    if (alias !== '') return false;
    if (!JOIN_TYPES.has(str(ref, 'join_type') ?? '') || !JOIN_REFS.has(str(ref, 'ref_type') ?? '')) return false;
    const l = obj(ref, 'left');
    const r = obj(ref, 'right');
    return l !== undefined && r !== undefined && relationsOf(l, out) && relationsOf(r, out);
  }
  if (type === 'EMPTY') return true;
  if (type === 'BASE_TABLE') {
    const parts = [str(ref, 'catalog_name') ?? '', str(ref, 'schema_name') ?? '', str(ref, 'table_name') ?? ''].filter((p) => p !== '').map((p) => p.toLowerCase());
    // A sample reads rows before WHERE; renamed columns hide the real names.
    const plain = (ref['sample'] ?? null) === null && (arr(ref, 'column_name_alias') ?? []).length === 0;
    out.push({ node: ref, base: plain, alias, parts });
    return true;
  }
  const fn = type === 'TABLE_FUNCTION' ? obj(ref, 'function') : undefined;
  out.push({ node: ref, base: false, alias, parts: fn ? [(str(fn, 'function_name') ?? '').toLowerCase()] : [] });
  return true;
}

function qualifierMatches(rel: Relation, q: string[]): boolean {
  if (rel.alias !== '') return q.length === 1 && q[0] === rel.alias;
  if (q.length === 0 || q.length > rel.parts.length) return false;
  const tail = rel.parts.slice(rel.parts.length - q.length);
  return tail.every((p, i) => p === q[i]);
}

function analyseSelect(node: JsonObject, correlated: boolean, walk: Walk): void {
  // USING SAMPLE samples before WHERE: fewer input rows would change the sample.
  if (node['sample'] !== null && node['sample'] !== undefined) return;
  const from = obj(node, 'from_table');
  if (!from) return;
  const relations: Relation[] = [];
  if (!relationsOf(from, relations)) return;
  const bases = relations.filter((r) => r.base);
  if (bases.length === 0) return;

  const conjuncts: JsonObject[] = [];
  const where = node['where_clause'];
  if (isObj(where)) flattenAnd(where, conjuncts);
  const terms = conjuncts.map((c) => recogniseTerm(c, walk.ctx)).filter((t) => t !== undefined);

  // Names the select list gives its outputs: an unqualified WHERE name may bind to one of them.
  const outputAliases = new Set<string>();
  for (const item of arr(node, 'select_list') ?? []) {
    if (isObj(item) && typeof item['alias'] === 'string' && item['alias'] !== '') outputAliases.add(item['alias'].toLowerCase());
  }
  const unqualifiedOk = !correlated && relations.length === 1;

  for (const rel of bases) {
    let b: TimeBounds = {};
    for (const t of terms) {
      const q = t.names.slice(0, -1).map((n) => n.toLowerCase());
      const column = t.names[t.names.length - 1]!.toLowerCase();
      const binds =
        q.length === 0
          ? unqualifiedOk && !outputAliases.has(column)
          : qualifierMatches(rel, q) && relations.filter((r) => qualifierMatches(r, q)).length === 1;
      if (binds) b = intersectBounds(b, t.bounds);
    }
    walk.analysed.set(rel.node, b);
  }
}

function flattenAnd(e: JsonObject, out: JsonObject[]): void {
  if (e['class'] === 'CONJUNCTION' && e['type'] === 'CONJUNCTION_AND') {
    for (const c of arr(e, 'children') ?? []) if (isObj(c)) flattenAnd(c, out);
  } else {
    out.push(e);
  }
}

function intersectBounds(a: TimeBounds, b: TimeBounds): TimeBounds {
  const r: TimeBounds = { ...a };
  if (b.minNs !== undefined && (r.minNs === undefined || b.minNs > r.minNs)) r.minNs = b.minNs;
  if (b.maxNs !== undefined && (r.maxNs === undefined || b.maxNs < r.maxNs)) r.maxNs = b.maxNs;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Terms: <time column> <op> <constant>

type ColumnKind = 'start' | 'timestamp' | 'end';
const COLUMN_KINDS: Record<string, ColumnKind> = {
  start_time_unix_nano: 'start',
  timestamp: 'timestamp',
  end_time_unix_nano: 'end',
};

type Op = '=' | '<' | '<=' | '>' | '>=';
const COMPARISONS: Record<string, Op> = {
  COMPARE_EQUAL: '=',
  COMPARE_LESSTHAN: '<',
  COMPARE_LESSTHANOREQUALTO: '<=',
  COMPARE_GREATERTHAN: '>',
  COMPARE_GREATERTHANOREQUALTO: '>=',
};
const MIRROR: Record<Op, Op> = { '=': '=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

interface Term {
  /** column_names of the column reference: optional qualifier parts, then the column. */
  names: string[];
  bounds: TimeBounds;
}

/**
 * What a constant means for a row's start time: `col >= c` implies start >= lo, `col <= c`
 * implies start <= hi.
 */
interface NsRange {
  lo: bigint;
  hi: bigint;
}

function columnOf(e: Json | undefined): { names: string[]; kind: ColumnKind } | undefined {
  if (!isObj(e) || e['class'] !== 'COLUMN_REF') return undefined;
  const names = arr(e, 'column_names');
  if (!names || names.length === 0 || !names.every((n) => typeof n === 'string')) return undefined;
  const kind = COLUMN_KINDS[(names[names.length - 1] as string).toLowerCase()];
  return kind ? { names: names as string[], kind } : undefined;
}

function recogniseTerm(e: JsonObject, ctx: Ctx): Term | undefined {
  let col: { names: string[]; kind: ColumnKind } | undefined;
  let lower: NsRange | undefined;
  let upper: NsRange | undefined;
  const cls = e['class'];
  const type = str(e, 'type') ?? '';

  if (cls === 'COMPARISON' && COMPARISONS[type]) {
    let op = COMPARISONS[type]!;
    let value = e['right'];
    col = columnOf(e['left']);
    if (!col) {
      col = columnOf(e['right']);
      value = e['left'];
      op = MIRROR[op];
    }
    if (!col || (isObj(value) && value['class'] === 'COLUMN_REF')) return undefined;
    const c = evalConstant(value, col.kind, ctx);
    if (!c) return undefined;
    if (op !== '<' && op !== '<=') lower = c;
    if (op !== '>' && op !== '>=') upper = c;
  } else if (cls === 'BETWEEN' && type === 'COMPARE_BETWEEN') {
    col = columnOf(e['input']);
    if (!col) return undefined;
    lower = evalConstant(e['lower'], col.kind, ctx);
    upper = evalConstant(e['upper'], col.kind, ctx);
  } else if (cls === 'OPERATOR' && type === 'COMPARE_IN') {
    const children = arr(e, 'children') ?? [];
    col = columnOf(children[0]);
    if (!col || children.length < 2) return undefined;
    const values = children.slice(1).map((v) => evalConstant(v, col!.kind, ctx));
    if (values.some((v) => v === undefined)) return undefined;
    const ok = values as NsRange[];
    lower = ok.reduce((a, v) => (v.lo < a.lo ? v : a));
    upper = ok.reduce((a, v) => (v.hi > a.hi ? v : a));
  } else {
    return undefined;
  }

  const bounds: TimeBounds = {};
  // start <= end: an upper bound on the end bounds the start; a lower bound on it says nothing.
  if (lower && col.kind !== 'end') bounds.minNs = lower.lo;
  if (upper) bounds.maxNs = upper.hi;
  return bounds.minNs === undefined && bounds.maxNs === undefined ? undefined : { names: col.names, bounds };
}

function evalConstant(v: Json | undefined, kind: ColumnKind, ctx: Ctx): NsRange | undefined {
  if (kind === 'timestamp') {
    const us = evalTimestamp(v, ctx);
    if (!us) return undefined;
    const lo = us.naive ? us.lo - ctx.naiveSlackUs : us.lo;
    const hi = us.naive ? us.hi + ctx.naiveSlackUs : us.hi;
    // timestamp = make_timestamptz(start_time_unix_nano // 1000); `//` truncates toward zero, so
    // µs u holds starts [u*1000, u*1000+999] for u > 0 and [u*1000-999, u*1000+999] around 0.
    return { lo: lo > 0n ? lo * 1000n : lo * 1000n - 999n, hi: hi * 1000n + 999n };
  }
  // BIGINT columns: a string literal or VARCHAR parameter is cast to BIGINT (plain integers only here).
  const n = evalInteger(v, ctx, true);
  return n === undefined ? undefined : { lo: n, hi: n };
}

const INTEGER_TYPES = new Set(['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT']);
const INTEGER_TEXT = /^\s*[+-]?\d+\s*$/;

function constantOf(v: Json | undefined): { typeId: string; value: Json; scale: number } | undefined {
  if (!isObj(v) || v['class'] !== 'CONSTANT') return undefined;
  const value = obj(v, 'value');
  const t = value ? obj(value, 'type') : undefined;
  if (!value || !t || value['is_null'] === true) return undefined;
  const info = obj(t, 'type_info');
  const scale = info && typeof info['scale'] === 'number' ? info['scale'] : 0;
  return { typeId: str(t, 'id') ?? '', value: value['value'] ?? null, scale };
}

function paramOf(v: Json | undefined, ctx: Ctx): { value: unknown } | undefined {
  if (!isObj(v) || v['class'] !== 'PARAMETER') return undefined;
  const id = str(v, 'identifier') ?? '';
  if (!/^\d+$/.test(id)) return undefined;
  const i = Number(id) - 1;
  return i >= 0 && i < ctx.params.length ? { value: ctx.params[i] } : undefined;
}

/** An exact integer: integer literals, `$n` integers, casts to integer types, unary minus. */
function evalInteger(v: Json | undefined, ctx: Ctx, allowText: boolean): bigint | undefined {
  const c = constantOf(v);
  if (c) {
    if (INTEGER_TYPES.has(c.typeId)) {
      if (c.typeId === 'HUGEINT' && isObj(c.value)) {
        const upper = toBigInt(c.value['upper']);
        const lower = toBigInt(c.value['lower']);
        return upper === undefined || lower === undefined ? undefined : (upper << 64n) + lower;
      }
      return toBigInt(c.value);
    }
    if (allowText && c.typeId === 'VARCHAR' && typeof c.value === 'string' && INTEGER_TEXT.test(c.value)) return BigInt(c.value.trim());
    return undefined;
  }
  const p = paramOf(v, ctx);
  if (p) {
    const x = p.value;
    if (typeof x === 'bigint') return x;
    if (typeof x === 'number' && Number.isSafeInteger(x)) return BigInt(x);
    if (allowText && typeof x === 'string' && INTEGER_TEXT.test(x)) return BigInt(x.trim());
    return undefined;
  }
  if (!isObj(v)) return undefined;
  if (v['class'] === 'CAST' && v['try_cast'] === false) {
    const t = obj(v, 'cast_type');
    return t && INTEGER_TYPES.has(str(t, 'id') ?? '') ? evalInteger(v['child'], ctx, true) : undefined;
  }
  const fn = functionOf(v);
  if (fn && fn.name === '-' && fn.operator && fn.args.length === 1) {
    const x = evalInteger(fn.args[0], ctx, false);
    return x === undefined ? undefined : -x;
  }
  return undefined;
}

function functionOf(v: JsonObject): { name: string; args: Json[]; operator: boolean } | undefined {
  if (v['class'] !== 'FUNCTION') return undefined;
  if ((str(v, 'schema') ?? '') !== '' || (str(v, 'catalog') ?? '') !== '') return undefined;
  if (v['distinct'] === true || (v['filter'] !== null && v['filter'] !== undefined)) return undefined;
  return { name: (str(v, 'function_name') ?? '').toLowerCase(), args: arr(v, 'children') ?? [], operator: v['is_operator'] === true };
}

// ---------------------------------------------------------------------------------------------
// Timestamps, in µs since the epoch

const DAY_US = 86_400_000_000n;
const MAX_EXACT_SECONDS = 9_000_000_000n; // seconds * 1e6 stays below 2^53: to_timestamp's double math is exact

/**
 * A range [lo, hi] of µs that holds the value DuckDB computes; `naive` when it is a zone-less
 * value that DuckDB reads in the session zone when comparing with a TIMESTAMPTZ.
 */
interface UsRange {
  lo: bigint;
  hi: bigint;
  naive: boolean;
}

function evalTimestamp(v: Json | undefined, ctx: Ctx): UsRange | undefined {
  const c = constantOf(v);
  // A string compared with the TIMESTAMPTZ column is cast to TIMESTAMPTZ.
  if (c) return c.typeId === 'VARCHAR' && typeof c.value === 'string' ? parseTimestamp(c.value, 'timestamptz') : undefined;
  const p = paramOf(v, ctx);
  if (p) return timestampParam(p.value, 'timestamptz');
  if (!isObj(v)) return undefined;

  if (v['class'] === 'CAST') {
    const t = obj(v, 'cast_type');
    const target = t ? str(t, 'id') : undefined;
    if (v['try_cast'] !== false || (target !== 'TIMESTAMP' && target !== 'TIMESTAMP WITH TIME ZONE' && target !== 'DATE')) return undefined;
    const mode = target === 'TIMESTAMP' ? 'timestamp' : target === 'DATE' ? 'date' : 'timestamptz';
    const child = v['child'];
    const cc = constantOf(child);
    if (cc) return cc.typeId === 'VARCHAR' && typeof cc.value === 'string' ? parseTimestamp(cc.value, mode) : undefined;
    const cp = paramOf(child, ctx);
    if (cp) return timestampParam(cp.value, mode);
    if (mode === 'date') return undefined;
    const inner = evalTimestamp(child, ctx);
    // TIMESTAMP → TIMESTAMPTZ reads in the session zone (still naive); TIMESTAMP → TIMESTAMP is a no-op.
    // TIMESTAMPTZ → TIMESTAMP goes through the session zone and back: not handled.
    if (!inner || (mode === 'timestamp' && !inner.naive)) return undefined;
    return inner;
  }

  const fn = functionOf(v);
  if (!fn || fn.operator || fn.args.length !== 1) return undefined;
  const arg = fn.args[0];
  switch (fn.name) {
    case 'to_timestamp': {
      // to_timestamp(DOUBLE seconds) → TIMESTAMPTZ.
      const s = evalInteger(arg, ctx, false);
      if (s !== undefined) return s >= -MAX_EXACT_SECONDS && s <= MAX_EXACT_SECONDS ? { lo: s * 1_000_000n, hi: s * 1_000_000n, naive: false } : undefined;
      const d = constantOf(arg);
      const units = d && d.typeId === 'DECIMAL' ? toBigInt(d.value) : undefined;
      if (!d || units === undefined || d.scale < 0 || d.scale > 18) return undefined;
      const div = 10n ** BigInt(d.scale);
      if (units / div > MAX_EXACT_SECONDS || units / div < -MAX_EXACT_SECONDS) return undefined;
      // The decimal goes through a double: allow one µs of rounding either way.
      return { lo: floorDiv(units * 1_000_000n, div) - 1n, hi: ceilDiv(units * 1_000_000n, div) + 1n, naive: false };
    }
    case 'make_timestamptz':
    case 'make_timestamp': {
      const us = evalInteger(arg, ctx, false);
      return us === undefined ? undefined : { lo: us, hi: us, naive: fn.name === 'make_timestamp' };
    }
    case 'epoch_ms': {
      // epoch_ms(BIGINT ms) → TIMESTAMP (the other overload takes a timestamp and returns ms).
      const ms = evalInteger(arg, ctx, false);
      return ms === undefined ? undefined : { lo: ms * 1000n, hi: ms * 1000n, naive: true };
    }
    default:
      return undefined;
  }
}

type CastMode = 'timestamptz' | 'timestamp' | 'date';

function timestampParam(x: unknown, mode: CastMode): UsRange | undefined {
  if (typeof x === 'string') return parseTimestamp(x, mode);
  // The sandbox binds a Date as TIMESTAMPTZ of its milliseconds.
  if (x instanceof Date && mode === 'timestamptz' && Number.isFinite(x.getTime())) {
    const us = BigInt(x.getTime()) * 1000n;
    return { lo: us, hi: us, naive: false };
  }
  // Flight SQL's bound instants (flight-sql-params.ts), as the sandbox binds them. A TIMESTAMPTZ
  // cast to TIMESTAMP or DATE goes through the session zone: not handled.
  if (x instanceof DuckDBTimestampTZValue) return mode === 'timestamptz' && x.isFinite ? { lo: x.micros, hi: x.micros, naive: false } : undefined;
  if (x instanceof DuckDBTimestampValue) return mode !== 'date' && x.isFinite ? { lo: x.micros, hi: x.micros, naive: true } : undefined;
  if (x instanceof DuckDBTimestampNanosecondsValue) return mode !== 'date' && x.isFinite ? { lo: floorDiv(x.nanos, 1000n), hi: ceilDiv(x.nanos, 1000n), naive: true } : undefined;
  if (x instanceof DuckDBDateValue) return x.isFinite ? { lo: BigInt(x.days) * DAY_US, hi: BigInt(x.days) * DAY_US, naive: true } : undefined;
  return undefined;
}

// YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]][Z|+HH|+HHMM|+HH:MM| UTC]]
const TIMESTAMP_TEXT = /^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:(?:T|\s+)(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2})(?::?(\d{2}))?|\s*(UTC))?)?\s*$/;

/**
 * DuckDB's VARCHAR → TIMESTAMPTZ / TIMESTAMP / DATE cast, for the plain ISO forms only (anything
 * else: undefined). Sub-µs digits give a two-µs range (truncated or rounded, either is covered).
 * A zone-less TIMESTAMPTZ, a TIMESTAMP or a DATE is naive; a TIMESTAMP with a non-zero offset is
 * refused (DuckDB's handling of it is not an offset shift).
 */
function parseTimestamp(text: string, mode: CastMode): UsRange | undefined {
  const m = TIMESTAMP_TEXT.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, z, sign, oh, om, utc] = m;
  if (mode === 'date' && h !== undefined) return undefined;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h ?? 0);
  const minute = Number(mi ?? 0);
  const second = Number(s ?? 0);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (sign !== undefined) {
    const hh = Number(oh);
    const mm = Number(om ?? 0);
    if (hh > 23 || mm > 59) return undefined;
    offsetMinutes = (sign === '-' ? -1 : 1) * (hh * 60 + mm);
  }
  const zoned = z !== undefined || sign !== undefined || utc !== undefined;
  if (mode === 'timestamp' && offsetMinutes !== 0) return undefined;

  const seconds = BigInt(daysFromCivil(year, month, day)) * 86_400n + BigInt(hour * 3600 + minute * 60 + second) - BigInt(offsetMinutes * 60);
  const ns = seconds * 1_000_000_000n + BigInt((frac ?? '').padEnd(9, '0'));
  return { lo: floorDiv(ns, 1000n), hi: ceilDiv(ns, 1000n), naive: mode !== 'timestamptz' || !zoned };
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Days since 1970-01-01 of a proleptic Gregorian date. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

