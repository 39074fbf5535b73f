import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { SandboxError, makeScrubber, toSandboxError } from './errors.ts';
import { Deadline, bindParams, readAsArrow, type SandboxResult } from './execute.ts';
import { gateStatement } from './gate.ts';
import { runScript, setupStep } from './setup.ts';
import { parseViewName, quoteIdent, validateView, viewSelectSql, type SandboxView } from './views.ts';

export interface TrustedRunnerOptions {
  /** DuckDB threads for the shared instance. Default 2. */
  threads?: number;
  /** DuckDB memory_limit for the shared instance, e.g. '2GB'. Default '2GB'. */
  memoryLimit?: string;
}

export interface TrustedRunOptions {
  /** Single-identifier names only (`traces`): they become TEMP views private to the call's connection. */
  views: SandboxView[];
  sql: string;
  params?: unknown[];
  timeoutMs: number;
  maxRows?: number;
}

export interface TrustedRunner {
  run(opts: TrustedRunOptions): Promise<SandboxResult>;
  /** Interrupts running calls and closes the instance; later run() calls fail with kind 'internal'. */
  close(): void;
}

/**
 * For SQL printed by Floe's own planner (which already names only the caller's files): one long-lived
 * in-memory instance with `parquet_metadata_cache = true`, a fresh connection per call whose views are
 * TEMP views (private to that connection, so concurrent calls never collide), and the statement gate
 * (one statement, prepared type SELECT) — but no lockdown and no AST allow-list.
 */
export function createTrustedRunner(opts: TrustedRunnerOptions = {}): TrustedRunner {
  const threads = opts.threads ?? 2;
  const memoryLimit = opts.memoryLimit ?? '2GB';
  let instancePromise: Promise<DuckDBInstance> | undefined;
  let closed = false;
  const active = new Set<DuckDBConnection>();

  const createInstance = async (): Promise<DuckDBInstance> => {
    const instance = await DuckDBInstance.create(':memory:', {
      threads: String(threads),
      memory_limit: memoryLimit,
      autoload_known_extensions: 'false',
      autoinstall_known_extensions: 'false',
    });
    try {
      // A parquet-extension option: not accepted at creation, only as a (global) SET.
      const setup = await instance.connect();
      try {
        await setup.run('SET GLOBAL parquet_metadata_cache = true');
      } finally {
        setup.closeSync();
      }
      return instance;
    } catch (err) {
      instance.closeSync();
      throw err;
    }
  };

  const getInstance = (): Promise<DuckDBInstance> => {
    if (!instancePromise) {
      const p = createInstance();
      instancePromise = p;
      // A failed start is not cached: the next call tries again.
      p.catch(() => {
        if (instancePromise === p) instancePromise = undefined;
      });
    }
    return instancePromise;
  };

  const run = async (o: TrustedRunOptions): Promise<SandboxResult> => {
    if (closed) throw new SandboxError('internal', 'trusted runner is closed');
    const deadline = new Deadline(o.timeoutMs);
    const scrub = makeScrubber(o.views.flatMap((v) => v.files));
    const ctx = { scrub, timeoutMs: o.timeoutMs, get timedOut() { return deadline.timedOut; } };
    let conn: DuckDBConnection | undefined;
    try {
      const statements = o.views.map((v) => {
        const p = parseViewName(v.name);
        if (p.given.includes('.')) {
          throw new SandboxError('internal', `trusted runner view names must be single identifiers (got ${JSON.stringify(v.name)})`);
        }
        validateView(v);
        return `CREATE TEMP VIEW ${quoteIdent(p.view)} AS ${viewSelectSql(v)}`;
      });
      const instance = await setupStep(getInstance, deadline, scrub);
      if (closed) throw new SandboxError('internal', 'trusted runner is closed');
      conn = await instance.connect();
      active.add(conn);
      deadline.watch(conn);
      if (statements.length > 0) await setupStep(() => runScript(conn!, statements), deadline, scrub);
      const prepared = await gateStatement(conn, o.sql, { astCheck: false, views: [] });
      bindParams(prepared, o.params ?? []);
      return await readAsArrow(prepared, {
        maxRows: o.maxRows,
        timeoutMs: o.timeoutMs,
        isTimedOut: () => deadline.timedOut,
      });
    } catch (err) {
      if (closed && !(err instanceof SandboxError)) throw new SandboxError('internal', 'trusted runner was closed', { cause: err });
      throw toSandboxError(err, ctx);
    } finally {
      deadline.clear();
      if (conn) {
        active.delete(conn);
        conn.closeSync();
      }
    }
  };

  const close = (): void => {
    if (closed) return;
    closed = true;
    for (const c of active) c.interrupt();
    const p = instancePromise;
    instancePromise = undefined;
    // Close once the calls in flight have let go of their connections.
    void p?.then(async (instance) => {
      while (active.size > 0) await new Promise((r) => setTimeout(r, 5));
      instance.closeSync();
    }).catch(() => undefined);
  };

  return { run, close };
}
