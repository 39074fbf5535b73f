import { StatementType, type DuckDBConnection, type DuckDBExtractedStatements as ExtractedStatements, type DuckDBPreparedStatement } from '@duckdb/node-api';
import { MSG_FILE_ACCESS, MSG_SINGLE_SELECT, SandboxError, duckdbMessage } from './errors.ts';
import type { ParsedViewName } from './views.ts';

/** Table functions user SQL may call: generators only, nothing that touches files, settings or catalogs. */
export const ALLOWED_TABLE_FUNCTIONS: ReadonlySet<string> = new Set([
  'unnest',
  'range',
  'generate_series',
  'repeat',
  'repeat_row',
  'json_each',
  'json_tree',
]);

/**
 * Scalar functions and macros that leak configuration (data paths), environment or view definitions
 * (which name the data files). Names starting with `duckdb_` or `pragma_` are refused as well.
 */
export const DENIED_FUNCTIONS: ReadonlySet<string> = new Set([
  'current_setting',
  'getenv',
  'getvariable',
  'pg_get_viewdef',
  'pg_get_constraintdef',
]);
const DENIED_FUNCTION_PREFIXES = ['duckdb_', 'pragma_'];

/** information_schema views that show names and types only (`views` would show paths). */
const ALLOWED_INFORMATION_SCHEMA = new Set(['tables', 'columns', 'schemata']);
/** System catalog objects (DuckDB 1.5 system.main views, pg_catalog, sqlite_*), found by prefix. */
const SYSTEM_TABLE_PREFIXES = ['duckdb_', 'pragma_', 'sqlite_', 'pg_'];
const SYSTEM_CATALOGS = new Set(['system', 'temp']);
const SYSTEM_SCHEMAS = new Set(['pg_catalog', 'information_schema']);
/** A table reference DuckDB would treat as a file (replacement scan), not as a name. */
const FILE_LIKE = /[./\\:*?~]/;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObject(v: Json | undefined): v is { [k: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: Json | undefined): string {
  return typeof v === 'string' ? v : '';
}

/**
 * Walks the `json_serialize_sql` AST of user SQL and throws `forbidden` on the first table function
 * not in the allow-list, denied scalar function, file-like table reference or system-catalog table.
 */
export function checkSerializedAst(ast: Json, views: readonly ParsedViewName[]): void {
  const cteNames = new Set<string>();
  collectCteNames(ast, cteNames);
  const viewNames = new Set(views.map((v) => v.view.toLowerCase()));
  walk(ast, (node) => {
    const type = str(node['type']);
    if (type === 'TABLE_FUNCTION') {
      const fn = node['function'];
      const name = isObject(fn) ? str(fn['function_name']).toLowerCase() : '';
      if (!ALLOWED_TABLE_FUNCTIONS.has(name)) {
        throw new SandboxError('forbidden', `table function ${name || '(unknown)'} is not allowed`);
      }
    } else if (type === 'BASE_TABLE') {
      checkBaseTable(node, cteNames, viewNames);
    }
    const cls = str(node['class']);
    if (cls === 'FUNCTION' || type === 'FUNCTION') {
      const name = str(node['function_name']).toLowerCase();
      if (DENIED_FUNCTIONS.has(name) || DENIED_FUNCTION_PREFIXES.some((p) => name.startsWith(p))) {
        throw new SandboxError('forbidden', `function ${name} is not allowed`);
      }
    }
  });
}

function checkBaseTable(node: { [k: string]: Json }, cteNames: Set<string>, viewNames: Set<string>): void {
  const table = str(node['table_name']);
  const schema = str(node['schema_name']).toLowerCase();
  const catalog = str(node['catalog_name']).toLowerCase();
  const lower = table.toLowerCase();
  if (FILE_LIKE.test(table) || FILE_LIKE.test(schema) || FILE_LIKE.test(catalog)) {
    throw new SandboxError('forbidden', MSG_FILE_ACCESS);
  }
  if (schema === '' && catalog === '' && cteNames.has(lower)) return;
  if (schema === 'information_schema' && (catalog === '' || catalog === 'system')) {
    if (ALLOWED_INFORMATION_SCHEMA.has(lower)) return;
    throw new SandboxError('forbidden', `access to system catalog table information_schema.${lower} is not allowed`);
  }
  const systemName = SYSTEM_TABLE_PREFIXES.some((p) => lower.startsWith(p)) && !viewNames.has(lower);
  if (SYSTEM_CATALOGS.has(catalog) || SYSTEM_SCHEMAS.has(schema) || systemName) {
    const shown = [catalog, schema, lower].filter((p) => p !== '').join('.');
    throw new SandboxError('forbidden', `access to system catalog table ${shown} is not allowed`);
  }
}

function collectCteNames(ast: Json, out: Set<string>): void {
  walk(ast, (node) => {
    const cteMap = node['cte_map'];
    const entries = isObject(cteMap) ? cteMap['map'] : undefined;
    if (Array.isArray(entries)) {
      for (const e of entries) if (isObject(e)) out.add(str(e['key']).toLowerCase());
    }
  });
}

function walk(node: Json, visit: (obj: { [k: string]: Json }) => void): void {
  // Iterative, so a deeply nested query cannot overflow the JS stack.
  const stack: Json[] = [node];
  while (stack.length > 0) {
    const cur = stack.pop()!;
    if (Array.isArray(cur)) {
      for (const c of cur) stack.push(c);
    } else if (isObject(cur)) {
      visit(cur);
      for (const k of Object.keys(cur)) stack.push(cur[k]!);
    }
  }
}

/**
 * `json_serialize_sql` of the user text (bound as a parameter), then the AST walk. DuckDB refuses to
 * serialize anything but SELECT, so a non-SELECT statement fails here with the single-SELECT message.
 */
export async function checkWithSerializer(
  conn: DuckDBConnection,
  sql: string,
  views: readonly ParsedViewName[],
): Promise<void> {
  const reader = await conn.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', [sql]);
  const text = reader.getRows()[0]?.[0];
  if (typeof text !== 'string') throw new SandboxError('internal', 'statement check returned no result');
  const parsed = JSON.parse(text) as Json;
  if (!isObject(parsed)) throw new SandboxError('internal', 'statement check returned an unexpected result');
  if (parsed['error'] === true) {
    const errorType = str(parsed['error_type']).toLowerCase();
    const message = str(parsed['error_message']);
    if (errorType === 'parser' || /^parser error/i.test(message)) throw new SandboxError('bad_sql', message);
    throw new SandboxError('forbidden', MSG_SINGLE_SELECT);
  }
  const statements = parsed['statements'];
  if (!Array.isArray(statements) || statements.length !== 1) throw new SandboxError('forbidden', MSG_SINGLE_SELECT);
  checkSerializedAst(statements[0]!, views);
}

export interface GateOptions {
  /** Run the json_serialize_sql AST check (user SQL) before preparing. */
  astCheck: boolean;
  views: readonly ParsedViewName[];
}

/**
 * The text parsed, as exactly one statement (no view is needed for that): a text that does not
 * parse fails with kind bad_sql, more than one statement with forbidden.
 */
export async function extractOneStatement(conn: DuckDBConnection, sql: string): Promise<ExtractedStatements> {
  // DuckDB reads the text as a C string: what follows a NUL would be silently dropped.
  if (sql.includes('\u0000')) throw new SandboxError('bad_sql', 'SQL must not contain NUL characters');
  // Parser errors (and an interrupt at the deadline) propagate raw; toSandboxError classifies them.
  let extracted;
  try {
    extracted = await conn.extractStatements(sql);
  } catch (err) {
    // Text without a statement (blank, only `;` or comments) fails in node-api with no message of DuckDB's.
    if (/^Error in native callback$/.test(duckdbMessage(err))) throw new SandboxError('bad_sql', 'no SQL statement given');
    throw err;
  }
  if (extracted.count === 0) throw new SandboxError('bad_sql', 'no SQL statement given');
  if (extracted.count !== 1) throw new SandboxError('forbidden', MSG_SINGLE_SELECT);
  return extracted;
}

/**
 * The statement gate: exactly one statement, (optionally) the AST allow-list, prepared type SELECT.
 * Returns the prepared statement, ready to bind.
 */
export async function gateStatement(conn: DuckDBConnection, sql: string, opts: GateOptions): Promise<DuckDBPreparedStatement> {
  const extracted = await extractOneStatement(conn, sql);
  if (opts.astCheck) await checkWithSerializer(conn, sql, opts.views);
  const prepared = await extracted.prepare(0);
  if (prepared.statementType !== StatementType.SELECT) {
    prepared.destroySync();
    throw new SandboxError('forbidden', MSG_SINGLE_SELECT);
  }
  return prepared;
}
