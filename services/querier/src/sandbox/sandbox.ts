import { DUCKDB_SIZE } from '@floe/config';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance, DuckDBTypeId, VARCHAR, type DuckDBConnection, type DuckDBPreparedStatement } from '@duckdb/node-api';
import { Schema } from 'apache-arrow';
import { ArrowResultBuilder } from './arrow.ts';
import { SandboxError, makeScrubber, toSandboxError } from './errors.ts';
import { Deadline, bindParams, readAsArrow, type SandboxResult } from './execute.ts';
import { runScript, setupStep } from './setup.ts';
import { extractOneStatement, gateStatement } from './gate.ts';
import { planViews, quoteLiteral, type SandboxView } from './views.ts';

export interface SandboxOptions {
  views: SandboxView[];
  sql: string;
  /** Values for `$1..$n`, bound on the prepared statement (never spliced into the text). */
  params?: unknown[];
  /** Deadline for the whole call (setup included); the query is interrupted when it passes. */
  timeoutMs: number;
  /** DuckDB memory_limit, e.g. '1GB'. Default '1GB'. */
  memoryLimit?: string;
  /** DuckDB threads. Default 2. */
  threads?: number;
  /** Stop reading after this many rows (result.truncated tells whether more existed). */
  maxRows?: number;
  /** Refuse a result holding more Arrow bytes than this (kind 'too_large'). */
  maxBytes?: number;
  /**
   * Where the query may spill when it exceeds memoryLimit (a private subdirectory is created and
   * removed per call, capped by maxTempDirectorySize). Without it, spilling is disabled and an
   * oversized query fails with a bad_sql "Out of Memory Error".
   */
  tempDir?: string;
  /** Cap on spilled bytes when tempDir is set. Default '4GB'. */
  maxTempDirectorySize?: string;
  /** Aborts when the caller goes away: the query is interrupted (kind 'canceled'). */
  signal?: AbortSignal;
}

/**
 * Runs one SELECT typed by a user in a DuckDB instance made for this call (reference/storage.md §3):
 * 1. fresh `:memory:` instance with threads, memory_limit, temp_directory (or no spill), no extension autoload;
 * 2. views over `read_parquet([exact files])` (by name when their schemas differ), or typed empty views;
 * 3. `allowed_paths` = those files, `enable_external_access = false`, `lock_configuration = true`;
 * 4. the statement gate: one statement, json_serialize_sql AST allow-list, prepared type SELECT;
 * 5. bind `$n`, stream into Arrow, stop at maxRows; `interrupt()` at the deadline.
 * The instance is closed in every case.
 */
export function runSandboxedSelect(opts: SandboxOptions): Promise<SandboxResult> {
  return withSandbox(opts, async (prepared, deadline) => {
    bindParams(prepared, opts.params ?? []);
    return await readAsArrow(prepared, {
      maxRows: opts.maxRows,
      maxBytes: opts.maxBytes,
      timeoutMs: opts.timeoutMs,
      isTimedOut: () => deadline.timedOut,
      isCancelled: () => deadline.cancelled,
    });
  });
}

/** A statement's result columns and parameters, as DuckDB plans them (nothing is run). */
export interface StatementDescription {
  /** No fields when a column's type waits on a parameter's value (`SELECT $1`): known once run. */
  columns: Schema;
  /** One field per `?` / `$n`, named by DuckDB; a type DuckDB cannot infer reads as text. */
  parameters: Schema;
}

/**
 * Plans one SELECT in the same sandbox without running it: its result schema and its parameters'
 * types (Flight SQL's CreatePreparedStatement answers both, which JDBC drivers need to bind).
 */
export function describeSandboxedSelect(opts: Omit<SandboxOptions, 'params' | 'maxRows' | 'maxBytes'>): Promise<StatementDescription> {
  return withSandbox(opts, async (prepared) => {
    const columns = Array.from({ length: prepared.columnCount }, (_, i) => i);
    const parameters = Array.from({ length: prepared.parameterCount }, (_, i) => i + 1);
    return {
      columns: resultSchemaOf(prepared, columns),
      // DuckDB gives no type for a parameter it cannot infer (`typeof($1)`): described as text.
      parameters: new ArrowResultBuilder(parameters.map((i) => prepared.parameterName(i)), parameters.map((i) => (prepared.parameterTypeId(i) === DuckDBTypeId.INVALID ? VARCHAR : prepared.parameterType(i)))).schema,
    };
  });
}

/**
 * The prepared statement's result schema, or none when a column's type waits on a parameter's
 * value (`SELECT $1`, `SELECT {a: $1}`: DuckDB has no type for it, at the top or inside).
 */
function resultSchemaOf(prepared: DuckDBPreparedStatement, columns: number[]): Schema {
  if (columns.some((i) => prepared.columnTypeId(i) === DuckDBTypeId.INVALID)) return new Schema([]);
  try {
    return new ArrowResultBuilder(columns.map((i) => prepared.columnName(i)), columns.map((i) => prepared.columnType(i))).schema;
  } catch (err) {
    if (err instanceof Error && /type id: 0\b/.test(err.message)) return new Schema([]);
    throw err;
  }
}

/** Sets up the locked-down instance, gates the statement and hands the prepared statement to `use`. */
async function withSandbox<T>(opts: Omit<SandboxOptions, 'params' | 'maxRows' | 'maxBytes'>, use: (prepared: DuckDBPreparedStatement, deadline: Deadline) => Promise<T>): Promise<T> {
  const deadline = new Deadline(opts.timeoutMs, opts.signal);
  const allFiles = opts.views.flatMap((v) => v.files);
  const scrub = makeScrubber(opts.tempDir ? [...allFiles, opts.tempDir] : allFiles);
  const ctx = { scrub, timeoutMs: opts.timeoutMs, get timedOut() { return deadline.timedOut; }, get cancelled() { return deadline.cancelled; } };
  let instance: DuckDBInstance | undefined;
  let conn: DuckDBConnection | undefined;
  let spillDir: string | undefined;
  try {
    const { parsed, statements } = planViews(opts.views);
    const memoryLimit = opts.memoryLimit ?? '1GB';
    if (!DUCKDB_SIZE.test(memoryLimit)) throw new SandboxError('internal', `invalid memoryLimit ${JSON.stringify(memoryLimit)}`);
    const threads = opts.threads ?? 2;
    if (!Number.isInteger(threads) || threads < 1) throw new SandboxError('internal', `invalid threads ${threads}`);
    const config: Record<string, string> = {
      threads: String(threads),
      memory_limit: memoryLimit,
      autoload_known_extensions: 'false',
      autoinstall_known_extensions: 'false',
      temp_directory: '',
    };
    if (opts.tempDir) {
      spillDir = await mkdtemp(join(opts.tempDir, 'floe-sql-'));
      config['temp_directory'] = spillDir;
      config['max_temp_directory_size'] = opts.maxTempDirectorySize ?? '4GB';
    }
    instance = await DuckDBInstance.create(':memory:', config);
    conn = await instance.connect();
    deadline.watch(conn);

    // Text that does not parse is the query's own mistake, answered before any file is opened
    // (creating the views reads their files, which may be damaged).
    await extractOneStatement(conn, opts.sql);
    // Views first: they bind while files may still be read. Then the lock, in this order.
    const lock: string[] = [];
    if (allFiles.length > 0) lock.push(`SET allowed_paths = [${[...new Set(allFiles)].map(quoteLiteral).join(', ')}]`);
    lock.push('SET enable_external_access = false', 'SET lock_configuration = true');
    await setupStep(() => runScript(conn!, [...statements, ...lock]), deadline, scrub);

    const prepared = await gateStatement(conn, opts.sql, { astCheck: true, views: parsed });
    return await use(prepared, deadline);
  } catch (err) {
    throw toSandboxError(err, ctx);
  } finally {
    deadline.clear();
    conn?.closeSync();
    instance?.closeSync();
    if (spillDir) await rm(spillDir, { recursive: true, force: true }).catch(() => undefined);
  }
}
