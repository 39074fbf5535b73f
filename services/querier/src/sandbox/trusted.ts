import { DuckDBInstance, type DuckDBConnection, type DuckDBPreparedStatement } from '@duckdb/node-api';
import { NO_DUCKDB_MEMORY, readDuckDbMemory, type DuckDbMemory } from '@floe/storage';
import { SandboxError, makeScrubber, toSandboxError } from './errors.ts';
import { Deadline, bindParams, readAsArrow, type SandboxResult } from './execute.ts';
import { gateStatement } from './gate.ts';
import { runScript, setupStep } from './setup.ts';
import { parseViewName, quoteIdent, quoteLiteral, validateFilePaths, validateView, viewSelectSql, type SandboxView } from './views.ts';

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
  maxBytes?: number;
  /** Aborts when the caller goes away: the query is interrupted (kind 'canceled'). */
  signal?: AbortSignal;
}

export interface TrustedRunner {
  run(opts: TrustedRunOptions): Promise<SandboxResult>;
  /**
   * A text for each Parquet file that equals another file's exactly when their schemas are the
   * same (every element's name, types, repetition, children and field id), in `paths` order.
   */
  schemaKeys(paths: readonly string[], timeoutMs: number): Promise<string[]>;
  /**
   * Reads every value of one Parquet file and drops them: whether the file can be read whole. A
   * file that cannot fails with kind 'internal' and DuckDB's error as the cause.
   */
  scanFile(path: string, timeoutMs: number): Promise<void>;
  /** What the shared instance holds now (duckdb_memory()), on a connection of its own; nothing before its first call. */
  memoryUsage(): Promise<DuckDbMemory>;
  /** Interrupts running calls and closes the instance; later run() calls fail with kind 'internal'. */
  close(): void;
}

interface Slot {
  /** The view statements the connection was set up with. */
  key: string;
  conn: DuckDBConnection;
  /** Gated statements by SQL text. */
  prepared: Map<string, DuckDBPreparedStatement>;
}

/** Lookups over one hour's file repeat the same views; a few dozen idle connections cover them. */
const MAX_IDLE_CONNECTIONS = 32;
const MAX_PREPARED_PER_CONNECTION = 8;

/**
 * For SQL printed by Floe's own planner (which already names only the caller's files): one long-lived
 * in-memory instance with `parquet_metadata_cache = true`, a connection per call whose views are
 * TEMP views (private to that connection, so concurrent calls never collide), and the statement gate
 * (one statement, prepared type SELECT) — but no lockdown and no AST allow-list.
 *
 * A connection that answered cleanly is kept, with its views and its prepared statements, for the
 * next call over exactly the same views (same names, same files): creating the views and preparing
 * the planner's few SQL shapes cost about 2 ms a call, as much as reading a small trace. A call over
 * other views never sees them; a connection that failed, timed out or stopped early is closed.
 */
export function createTrustedRunner(opts: TrustedRunnerOptions = {}): TrustedRunner {
  const threads = opts.threads ?? 2;
  const memoryLimit = opts.memoryLimit ?? '2GB';
  let instancePromise: Promise<DuckDBInstance> | undefined;
  let closed = false;
  const active = new Set<DuckDBConnection>();
  /** Calls between entry and exit: one may be connecting, with no connection in `active` yet. */
  let inFlight = 0;
  /** Idle connections, least recently used first. */
  const idle: Slot[] = [];

  const discard = (slot: Slot): void => {
    for (const ps of slot.prepared.values()) ps.destroySync();
    slot.prepared.clear();
    slot.conn.closeSync();
  };

  const takeIdle = (key: string): Slot | undefined => {
    for (let i = idle.length - 1; i >= 0; i--) {
      if (idle[i]!.key === key) return idle.splice(i, 1)[0];
    }
    return undefined;
  };

  const putIdle = (slot: Slot): void => {
    idle.push(slot);
    while (idle.length > MAX_IDLE_CONNECTIONS) discard(idle.shift()!);
  };

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

  /** A new connection to the instance, interrupted at the deadline (in `active` until the caller closes or keeps it). */
  const connect = async (deadline: Deadline, scrub: (m: string) => string): Promise<DuckDBConnection> => {
    const instance = await setupStep(getInstance, deadline, scrub);
    if (closed) throw new SandboxError('internal', 'trusted runner is closed');
    const conn = await instance.connect();
    active.add(conn);
    deadline.watch(conn);
    return conn;
  };

  const run = async (o: TrustedRunOptions): Promise<SandboxResult> => {
    if (closed) throw new SandboxError('internal', 'trusted runner is closed');
    inFlight++;
    const deadline = new Deadline(o.timeoutMs, o.signal);
    const scrub = makeScrubber(o.views.flatMap((v) => v.files));
    const ctx = { scrub, timeoutMs: o.timeoutMs, get timedOut() { return deadline.timedOut; }, get cancelled() { return deadline.cancelled; } };
    let slot: Slot | undefined;
    let reusable = false;
    try {
      const statements = o.views.map((v) => {
        const p = parseViewName(v.name);
        if (p.given.includes('.')) {
          throw new SandboxError('internal', `trusted runner view names must be single identifiers (got ${JSON.stringify(v.name)})`);
        }
        validateView(v);
        return `CREATE TEMP VIEW ${quoteIdent(p.view)} AS ${viewSelectSql(v)}`;
      });
      const key = statements.join(';\n');
      slot = takeIdle(key);
      if (!slot) {
        const conn = await connect(deadline, scrub);
        slot = { key, conn, prepared: new Map() };
        if (statements.length > 0) await setupStep(() => runScript(conn, statements), deadline, scrub);
      } else {
        active.add(slot.conn);
        deadline.watch(slot.conn);
      }
      let prepared = slot.prepared.get(o.sql);
      if (!prepared) {
        prepared = await gateStatement(slot.conn, o.sql, { astCheck: false, views: [] });
        if (slot.prepared.size >= MAX_PREPARED_PER_CONNECTION) {
          const [oldestSql, oldest] = slot.prepared.entries().next().value!;
          oldest.destroySync();
          slot.prepared.delete(oldestSql);
        }
        slot.prepared.set(o.sql, prepared);
      }
      bindParams(prepared, o.params ?? []);
      const result = await readAsArrow(prepared, {
        maxRows: o.maxRows,
        maxBytes: o.maxBytes,
        timeoutMs: o.timeoutMs,
        isTimedOut: () => deadline.timedOut,
        isCancelled: () => deadline.cancelled,
      });
      // close() interrupts the connections: an interrupted stream may just end, and its rows so
      // far must not pass for the answer.
      if (closed) throw new SandboxError('internal', 'trusted runner was closed');
      // A result cut short leaves its stream open on the connection.
      reusable = !result.truncated && !deadline.timedOut && !deadline.cancelled;
      return result;
    } catch (err) {
      if (closed && !(err instanceof SandboxError)) throw new SandboxError('internal', 'trusted runner was closed', { cause: err });
      throw toSandboxError(err, ctx);
    } finally {
      deadline.clear();
      if (slot) {
        active.delete(slot.conn);
        if (reusable && !closed) putIdle(slot);
        else discard(slot);
      }
      inFlight--;
    }
  };

  const schemaKeys = async (paths: readonly string[], timeoutMs: number): Promise<string[]> => {
    if (closed) throw new SandboxError('internal', 'trusted runner is closed');
    validateFilePaths('schemaKeys', paths);
    if (paths.length === 0) return [];
    inFlight++;
    const deadline = new Deadline(timeoutMs);
    const scrub = makeScrubber(paths);
    let conn: DuckDBConnection | undefined;
    try {
      const c = (conn = await connect(deadline, scrub));
      // parquet_schema lists each file's elements in schema order (and fills the metadata cache the scan reads next).
      const rows = await setupStep(
        async () =>
          (
            await c.runAndReadAll(
              `SELECT file_name, name, type, converted_type, logical_type, repetition_type, num_children, field_id FROM parquet_schema([${paths.map(quoteLiteral).join(', ')}])`,
            )
          ).getRowsJS(),
        deadline,
        scrub,
      );
      const keys = new Map<string, string[]>();
      for (const [file, ...element] of rows) {
        let parts = keys.get(String(file));
        if (!parts) keys.set(String(file), (parts = []));
        parts.push(JSON.stringify(element, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)));
      }
      return paths.map((p) => {
        const parts = keys.get(p);
        if (!parts) throw new SandboxError('internal', 'parquet_schema named no elements of a file');
        return parts.join('\n');
      });
    } finally {
      deadline.clear();
      if (conn) {
        active.delete(conn);
        conn.closeSync();
      }
      inFlight--;
    }
  };

  const scanFile = async (path: string, timeoutMs: number): Promise<void> => {
    if (closed) throw new SandboxError('internal', 'trusted runner is closed');
    validateFilePaths('scanFile', [path]);
    inFlight++;
    const deadline = new Deadline(timeoutMs);
    const scrub = makeScrubber([path]);
    const ctx = { scrub, timeoutMs, get timedOut() { return deadline.timedOut; }, get cancelled() { return deadline.cancelled; } };
    let conn: DuckDBConnection | undefined;
    try {
      conn = await connect(deadline, scrub);
      const result = await conn.stream(`SELECT * FROM read_parquet([${quoteLiteral(path)}], hive_partitioning = false)`);
      for (let chunk = await result.fetchChunk(); chunk !== null && chunk.rowCount > 0; chunk = await result.fetchChunk()) deadline.throwIfPassed();
      deadline.throwIfPassed();
    } catch (err) {
      throw toSandboxError(err, ctx);
    } finally {
      deadline.clear();
      if (conn) {
        active.delete(conn);
        conn.closeSync();
      }
      inFlight--;
    }
  };

  const memoryUsage = async (): Promise<DuckDbMemory> => {
    const p = instancePromise;
    if (closed || !p) return NO_DUCKDB_MEMORY;
    // Counted in flight: close() keeps the instance until this reading has let go of it.
    inFlight++;
    let conn: DuckDBConnection | undefined;
    try {
      const instance = await p.catch(() => undefined);
      if (!instance || closed) return NO_DUCKDB_MEMORY;
      conn = await instance.connect();
      return await readDuckDbMemory(conn);
    } finally {
      conn?.closeSync();
      inFlight--;
    }
  };

  const close = (): void => {
    if (closed) return;
    closed = true;
    for (const c of active) c.interrupt();
    for (const slot of idle.splice(0)) discard(slot);
    const p = instancePromise;
    instancePromise = undefined;
    // Close once the calls in flight have let go of their connections: closing the instance under
    // a connect or a query still running on DuckDB's threads is a use-after-free, not an error.
    void p?.then(async (instance) => {
      while (inFlight > 0) await new Promise((r) => setTimeout(r, 5));
      instance.closeSync();
    }).catch(() => undefined);
  };

  return { run, schemaKeys, scanFile, memoryUsage, close };
}
