import { SandboxError } from './errors.ts';

/** One table the query may read: its SQL name and the exact Parquet files it resolves to. */
export interface SandboxView {
  /** `traces`, `default.traces` (schema.view) or `acme.default.traces` (catalog.schema.view). */
  name: string;
  /** Absolute local Parquet paths; may be empty. */
  files: string[];
  /** Column list DDL used when `files` is empty, e.g. `trace_id VARCHAR, attrs MAP(VARCHAR, VARCHAR)`. */
  emptySchemaSql: string;
  /**
   * Every file has the same Parquet schema (see file-schemas.ts). Otherwise the scan matches
   * columns by name file by file (`union_by_name`: files written before a column was added read
   * NULL there), which costs about 0.2 ms per file and query.
   */
  sameSchema?: boolean;
  /** Each row also carries its file's path as the column `filename` (DuckDB's; trusted runs only). */
  fileNames?: boolean;
}

export interface ParsedViewName {
  /** The catalog the view lives in (`memory` is the default in-memory database). */
  catalog: string;
  schema: string;
  view: string;
  /** The name exactly as given. */
  given: string;
}

export const DEFAULT_CATALOG = 'memory';
export const DEFAULT_SCHEMA = 'main';
const RESERVED_CATALOGS = new Set(['system', 'temp']);
/** A name part: no whitespace, control characters, quotes, dots, slashes, parentheses or glob characters. */
const NAME_PART = /^[^\u0000-\u0020"'`./\\;()*?[\]]+$/;
/** Characters DuckDB treats as glob syntax inside a file path. */
const GLOB_CHARS = /[*?[\]{}]/;

export function quoteIdent(s: string): string {
  return `"${s.replaceAll('"', '""')}"`;
}

export function quoteLiteral(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

export function parseViewName(name: string): ParsedViewName {
  const parts = name.split('.');
  if (parts.length < 1 || parts.length > 3 || !parts.every((p) => NAME_PART.test(p))) {
    throw new SandboxError('bad_sql', `invalid table name ${JSON.stringify(name)}`);
  }
  const [a, b, c] = parts as [string, string?, string?];
  const parsed: ParsedViewName =
    c !== undefined && b !== undefined
      ? { catalog: a, schema: b, view: c, given: name }
      : b !== undefined
        ? { catalog: DEFAULT_CATALOG, schema: a, view: b, given: name }
        : { catalog: DEFAULT_CATALOG, schema: DEFAULT_SCHEMA, view: a, given: name };
  if (RESERVED_CATALOGS.has(parsed.catalog.toLowerCase())) {
    throw new SandboxError('internal', `invalid view name ${JSON.stringify(name)}: catalog ${parsed.catalog} is reserved`);
  }
  return parsed;
}

export function validateView(view: SandboxView): void {
  if (view.files.length === 0 && /;|--|\/\*/.test(view.emptySchemaSql)) {
    throw new SandboxError('internal', `view ${view.name}: emptySchemaSql must not contain ";", "--" or "/*"`);
  }
  validateFilePaths(`view ${view.name}`, view.files);
}

/** Data files are named exactly: absolute paths, no glob characters, no `..`. `what` names them in the error. */
export function validateFilePaths(what: string, files: readonly string[]): void {
  for (const f of files) {
    if (!f.startsWith('/') || GLOB_CHARS.test(f) || f.split('/').includes('..')) {
      throw new SandboxError('internal', `${what}: data file paths must be absolute, without glob characters or '..'`);
    }
  }
}

/**
 * `SELECT` text of a view: the exact files, or a typed empty relation built from the column DDL.
 * The partitions are Iceberg's, not Hive's: a `timestamp_hour=…` directory adds no column.
 */
export function viewSelectSql(view: SandboxView): string {
  if (view.files.length > 0) {
    const byName = view.sameSchema === true || view.files.length === 1 ? '' : ', union_by_name = true';
    const fileNames = view.fileNames === true ? ', filename = true' : '';
    return `SELECT * FROM read_parquet([${view.files.map(quoteLiteral).join(', ')}], hive_partitioning = false${byName}${fileNames})`;
  }
  // A NULL struct of the column list, expanded into columns, filtered to nothing: an empty, typed relation.
  return `SELECT __floe_empty.* FROM (SELECT NULL::STRUCT(${view.emptySchemaSql}) AS __floe_empty) WHERE false`;
}

export function qualifiedName(p: ParsedViewName): string {
  return `${quoteIdent(p.catalog)}.${quoteIdent(p.schema)}.${quoteIdent(p.view)}`;
}

/**
 * Setup statements for a fresh, private instance: attach one in-memory catalog per tenant-like first
 * part, create schemas, create the views, and put every view schema on the search path (in the order
 * the views were given, then memory.main) so both `acme.default.traces` and plain `traces` resolve.
 * When two views share a last name part, the unqualified name resolves to the first one given.
 */
export function planViews(views: readonly SandboxView[]): { parsed: ParsedViewName[]; statements: string[] } {
  const parsed = views.map((v) => parseViewName(v.name));
  const seen = new Set<string>();
  const catalogs = new Set<string>([DEFAULT_CATALOG]);
  const schemas = new Set<string>([`${DEFAULT_CATALOG}.${DEFAULT_SCHEMA}`]);
  const searchPath: string[] = [];
  const statements: string[] = [];
  views.forEach((v, i) => {
    const p = parsed[i]!;
    validateView(v);
    const key = `${p.catalog}.${p.schema}.${p.view}`.toLowerCase();
    if (seen.has(key)) throw new SandboxError('internal', `duplicate view name ${JSON.stringify(v.name)}`);
    seen.add(key);
    if (!catalogs.has(p.catalog.toLowerCase())) {
      catalogs.add(p.catalog.toLowerCase());
      statements.push(`ATTACH ':memory:' AS ${quoteIdent(p.catalog)}`);
    }
    const schemaKey = `${p.catalog}.${p.schema}`.toLowerCase();
    if (!schemas.has(schemaKey)) {
      schemas.add(schemaKey);
      statements.push(`CREATE SCHEMA ${quoteIdent(p.catalog)}.${quoteIdent(p.schema)}`);
    }
    const pathEntry = `${quoteIdent(p.catalog)}.${quoteIdent(p.schema)}`;
    if (!searchPath.includes(pathEntry)) searchPath.push(pathEntry);
    statements.push(`CREATE VIEW ${qualifiedName(p)} AS ${viewSelectSql(v)}`);
  });
  const mainEntry = `${quoteIdent(DEFAULT_CATALOG)}.${quoteIdent(DEFAULT_SCHEMA)}`;
  if (!searchPath.includes(mainEntry)) searchPath.push(mainEntry);
  statements.push(`SET search_path = ${quoteLiteral(searchPath.join(','))}`);
  return { parsed, statements };
}
