// One small interface over the two metadata databases Floe runs on: PGlite (PostgreSQL 18 in WASM,
// in-process, the embedded default) and PostgreSQL through `pg` (cluster mode). Everything above this
// file is written once against `Db`; only this file knows which one it talks to.
//
// Differences smoothed over here (measured in reference/storage.md §5):
// - int8: PGlite returns a JS number (precision lost above 2^53), pg a string. Iceberg snapshot ids
//   use the full 64 bits, so both adapters return int8 (and int8[] elements) as decimal strings.
// - rowCount: PGlite reports `affectedRows`/`rowCount`, pg `rowCount` (null for some commands);
//   normalised to a number, equal to rows.length for SELECT and to the rows touched for DML.
// - transactions: PGlite's `transaction()` holds an exclusive lock on its single backend; pg needs
//   one pooled client for BEGIN…COMMIT. A COMMIT of an aborted transaction is an error in both
//   (pg silently answers ROLLBACK; we turn that into a throw, as PGlite does).
// - multi-statement scripts: PGlite `exec()`, pg simple-protocol `query()` without params.

import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdir } from 'node:fs/promises';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface Db {
  readonly kind: 'pg' | 'pglite';
  /** One statement, `$1…` parameters. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<R>>;
  /** A multi-statement script without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * Run `fn` in a transaction: COMMIT when it resolves, ROLLBACK when it throws (the error is
   * rethrown). Inside, use only the `tx` handle: on PGlite the root handle waits for the
   * transaction to end, so using it from inside would deadlock; the adapter throws instead.
   * Calling `tx.withTransaction` nests with a SAVEPOINT.
   */
  withTransaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /**
   * Only where this process is the database's one writer (PGlite, held by one process): a number
   * that changes when a statement that may write (anything but a SELECT, a script, a
   * transaction) starts and again when it ends. A read made while it held one value is still
   * current while it holds that value. Absent for PostgreSQL, where other processes write.
   */
  writeGeneration?(): number;
}

export type DbConfig =
  | { kind: 'pglite'; dataDir: string /* a directory, or 'memory://' */ }
  | { kind: 'pg'; url: string; poolMax?: number; onError?: (err: Error) => void };

const INT8_OID = 20;
const INT8_ARRAY_OID = 1016;

export async function openDb(cfg: DbConfig): Promise<Db> {
  if (cfg.kind === 'pglite') return openPglite(cfg.dataDir);
  if (cfg.kind === 'pg') return openPg(cfg.url, cfg.poolMax, cfg.onError);
  throw new Error(`unknown metadata database kind ${JSON.stringify((cfg as { kind: unknown }).kind)}`);
}

// ---------------------------------------------------------------------------------------------
// Shared pieces

// Each handle made here links to the root handle it came from, so process-local state (the API-key
// verification caches) can be shared between the root and its transaction handles.
const ROOT = Symbol('floe.meta.db.root');

/** The root handle of a transaction handle (or the handle itself). Internal to this package. */
export function rootOf(db: Db): Db {
  return (db as Db & { [ROOT]?: Db })[ROOT] ?? db;
}

// Transaction handles collect callbacks to run once the outermost transaction has committed.
const AFTER_COMMIT = Symbol('floe.meta.db.afterCommit');

/**
 * Runs `fn` once what was written through `db` is committed: at once for a root handle (each
 * statement autocommits), after COMMIT for a transaction handle, never if it rolls back. Used to
 * drop process-local caches only when other readers can see the change. Internal to this package.
 */
export function afterCommit(db: Db, fn: () => void): void {
  const hooks = (db as Db & { [AFTER_COMMIT]?: Array<() => void> })[AFTER_COMMIT];
  if (hooks) hooks.push(fn);
  else fn();
}

// Root handles of PostgreSQL carry a LISTEN connection opened on first use (see listen()).
const LISTEN = Symbol('floe.meta.db.listen');

export interface NotificationHandlers {
  /** A NOTIFY on the channel was received. */
  onNotify(): void;
  /**
   * Notifications may have been missed (the listening connection dropped, or it just
   * reconnected): anything cached on their strength must be dropped.
   */
  onReset(): void;
}

type Listen = (channel: string, handlers: NotificationHandlers) => () => void;

/**
 * Subscribes to PostgreSQL notifications on `channel` (a fixed identifier, never user input) for
 * the database behind `db`. Returns undefined for PGlite: one process owns it, so in-process
 * signalling is all there is. Internal to this package.
 */
export function listen(db: Db, channel: string, handlers: NotificationHandlers): (() => void) | undefined {
  const fn = (rootOf(db) as Db & { [LISTEN]?: Listen })[LISTEN];
  return fn?.(channel, handlers);
}

function runHooks(hooks: Array<() => void>): void {
  for (const hook of hooks.splice(0)) hook();
}

type TxScope = { active: boolean };

/**
 * Guards the root handle against use from inside one of its own transactions: on PGlite that waits
 * forever (single backend, exclusive transaction lock), on pg it silently runs outside the
 * transaction. Both are bugs, so both kinds throw.
 */
function makeGuard(): { scope: AsyncLocalStorage<TxScope>; check(): void } {
  const scope = new AsyncLocalStorage<TxScope>();
  return {
    scope,
    check() {
      if (scope.getStore()?.active) {
        throw new Error('Db: root handle used inside its own withTransaction(); use the tx handle');
      }
    },
  };
}

function assertOpen(state: { done: boolean }): void {
  if (state.done) throw new Error('Db: transaction handle used after its transaction ended');
}

/** Nested transactions on a transaction handle: a SAVEPOINT per level. */
function savepoints(tx: Db): <T>(fn: (tx: Db) => Promise<T>) => Promise<T> {
  let counter = 0;
  return async <T>(fn: (tx: Db) => Promise<T>): Promise<T> => {
    const name = `floe_sp_${++counter}`;
    await tx.exec(`SAVEPOINT ${name}`);
    let result: T;
    try {
      result = await fn(tx);
    } catch (err) {
      await tx.exec(`ROLLBACK TO SAVEPOINT ${name}`);
      throw err;
    }
    await tx.exec(`RELEASE SAVEPOINT ${name}`);
    return result;
  };
}

// Parses the text form of an int8[] (e.g. `{1,NULL,{2,3}}`) keeping every element a string.
function parseInt8Array(text: string): unknown {
  let pos = 0;
  const parseLevel = (): unknown[] => {
    const out: unknown[] = [];
    pos++; // '{'
    if (text[pos] === '}') {
      pos++;
      return out;
    }
    for (;;) {
      if (text[pos] === '{') {
        out.push(parseLevel());
      } else {
        let end = pos;
        while (end < text.length && text[end] !== ',' && text[end] !== '}') end++;
        const item = text.slice(pos, end);
        out.push(item === 'NULL' ? null : item);
        pos = end;
      }
      if (text[pos] === ',') {
        pos++;
        continue;
      }
      pos++; // '}'
      return out;
    }
  };
  // A leading dimension decoration such as `[0:1]=` is only emitted for non-default lower bounds.
  const eq = text.indexOf('=');
  if (text[0] === '[' && eq > 0) pos = eq + 1;
  return parseLevel();
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL through pg

async function openPg(url: string, poolMax: number | undefined, onError?: (err: Error) => void): Promise<Db> {
  // Per-pool type parsers: never pg.types.setTypeParser, which would change every pool in the process.
  const types = new pg.TypeOverrides();
  types.setTypeParser(INT8_OID, (v: string) => v);
  types.setTypeParser(INT8_ARRAY_OID, parseInt8Array);
  const pool = new pg.Pool({
    connectionString: url,
    max: poolMax ?? 10,
    types,
    application_name: 'floe', // a URL parameter overrides it
  });
  // An idle client that loses its connection emits 'error' on the pool; without a listener that
  // would crash the process. The pool already discards the client; the next query reconnects.
  pool.on('error', (err) => onError?.(err));

  const guard = makeGuard();
  let closed = false;

  const normalise = <R>(res: { rows: unknown[]; rowCount: number | null }): QueryResult<R> => ({
    rows: res.rows as R[],
    rowCount: res.rowCount ?? res.rows.length,
  });

  const root: Db = {
    kind: 'pg',
    async query<R>(sql: string, params?: unknown[]) {
      guard.check();
      return normalise<R>(await pool.query(sql, params));
    },
    async exec(sql: string) {
      guard.check();
      await pool.query(sql);
    },
    async withTransaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
      guard.check();
      const client = await pool.connect();
      const state = { done: false };
      const scope: TxScope = { active: true };
      const hooks: Array<() => void> = [];
      const tx: Db & { [ROOT]: Db; [AFTER_COMMIT]: Array<() => void> } = {
        kind: 'pg',
        [ROOT]: root,
        [AFTER_COMMIT]: hooks,
        async query<R>(sql: string, params?: unknown[]) {
          assertOpen(state);
          return normalise<R>(await client.query(sql, params));
        },
        async exec(sql: string) {
          assertOpen(state);
          await client.query(sql);
        },
        withTransaction: <U>(inner: (tx: Db) => Promise<U>) => nested(inner),
        async close() {
          throw new Error('Db: close() on a transaction handle');
        },
      };
      const nested = savepoints(tx);
      // Any failure of BEGIN, COMMIT or ROLLBACK themselves discards the client instead of returning
      // a connection in an unknown state to the pool (release(err) destroys it).
      let discard: Error | undefined;
      try {
        try {
          await client.query('BEGIN');
        } catch (err) {
          discard = asError(err);
          throw err;
        }
        let result: T;
        try {
          result = await guard.scope.run(scope, () => fn(tx));
        } catch (err) {
          state.done = true;
          try {
            await client.query('ROLLBACK');
          } catch (rollbackErr) {
            discard = asError(rollbackErr);
          }
          throw err;
        }
        state.done = true;
        let commit: pg.QueryResult;
        try {
          commit = await client.query('COMMIT');
        } catch (err) {
          discard = asError(err);
          throw err;
        }
        // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK instead of an error.
        if (commit.command === 'ROLLBACK') {
          throw new Error('Db: transaction was aborted by an earlier error and has been rolled back');
        }
        runHooks(hooks);
        return result;
      } finally {
        state.done = true;
        scope.active = false;
        client.release(discard);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
    },
  };
  Object.defineProperty(root, ROOT, { value: root });
  const listener = pgListener(url, types, onError);
  Object.defineProperty(root, LISTEN, { value: listener.listen });
  const closePool = root.close;
  root.close = async () => {
    await listener.close();
    await closePool();
  };

  try {
    await pool.query('SELECT 1');
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  return root;
}

/**
 * One dedicated connection per pool that LISTENs for the channels subscribed to, opened on the
 * first subscription. When it drops, every subscriber is reset (notifications may be lost) and it
 * reconnects with backoff from 1 s to 30 s; subscribers are reset again once it is back.
 * Listening is an accelerator, never a dependency: without it caches expire by their TTL.
 */
function pgListener(url: string, types: pg.TypeOverrides, onError?: (err: Error) => void) {
  const channels = new Map<string, Set<NotificationHandlers>>();
  let client: pg.Client | undefined;
  let connecting = false;
  let closed = false;
  let backoffMs = 1000;
  let retry: NodeJS.Timeout | undefined;
  let connectedBefore = false;

  const everyone = () => [...channels.values()].flatMap((set) => [...set]);
  const resetAll = () => {
    for (const h of everyone()) h.onReset();
  };

  const lost = (c: pg.Client, err?: Error) => {
    if (client !== c) return;
    client = undefined;
    if (err) onError?.(err);
    c.end().catch(() => undefined);
    resetAll();
    schedule();
  };

  const schedule = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, backoffMs);
    retry.unref();
    backoffMs = Math.min(backoffMs * 2, 30_000);
  };

  const connect = async () => {
    if (closed || client || connecting) return;
    connecting = true;
    const c = new pg.Client({ connectionString: url, types, application_name: 'floe-listen' });
    c.on('notification', (msg) => {
      for (const h of channels.get(msg.channel) ?? []) h.onNotify();
    });
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c));
    try {
      await c.connect();
      for (const ch of channels.keys()) await c.query(`LISTEN ${ch}`);
      if (closed) {
        await c.end();
        return;
      }
      client = c;
      backoffMs = 1000;
      // After an outage, whatever happened before LISTEN took effect again was not heard. (Before
      // the first connection, caches simply live by their TTL, as without notifications.)
      if (connectedBefore) resetAll();
      connectedBefore = true;
    } catch (err) {
      onError?.(asError(err));
      c.end().catch(() => undefined);
      schedule();
    } finally {
      connecting = false;
    }
  };

  return {
    listen(channel: string, handlers: NotificationHandlers): () => void {
      if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name ${channel}`);
      let set = channels.get(channel);
      if (!set) {
        set = new Set();
        channels.set(channel, set);
        client?.query(`LISTEN ${channel}`).catch((err: unknown) => lost(client!, asError(err)));
      }
      set.add(handlers);
      void connect();
      return () => {
        set.delete(handlers);
      };
    },
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

// ---------------------------------------------------------------------------------------------
// PGlite

/** A statement that only reads (the write generation stays). */
const SELECT = /^\s*SELECT\b/i;

type PgliteLike = {
  query<T>(sql: string, params?: unknown[]): Promise<{ rows: T[]; rowCount?: number; affectedRows?: number }>;
  exec(sql: string): Promise<unknown>;
};

async function openPglite(dataDir: string): Promise<Db> {
  if (!dataDir.includes('://')) await mkdir(dataDir, { recursive: true });
  // PGlite derives array parsers from element parsers, so int8[] follows the int8 parser.
  const lite = await PGlite.create(dataDir, { parsers: { [INT8_OID]: (v: string) => v } });
  const guard = makeGuard();
  let closed = false;

  const run = async <R>(conn: PgliteLike, sql: string, params?: unknown[]): Promise<QueryResult<R>> => {
    const res = await conn.query<R>(sql, params);
    return { rows: res.rows, rowCount: res.rowCount ?? res.affectedRows ?? res.rows.length };
  };

  let generation = 0;
  /** Runs a statement that may write between two changes of the write generation. */
  const writing = async <T>(work: () => Promise<T>): Promise<T> => {
    generation++;
    try {
      return await work();
    } finally {
      generation++;
    }
  };

  const root: Db = {
    kind: 'pglite',
    async query<R>(sql: string, params?: unknown[]) {
      guard.check();
      return SELECT.test(sql) ? run<R>(lite, sql, params) : writing(() => run<R>(lite, sql, params));
    },
    async exec(sql: string) {
      guard.check();
      await writing(() => lite.exec(sql));
    },
    writeGeneration: () => generation,
    async withTransaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
      guard.check();
      const scope: TxScope = { active: true };
      const hooks: Array<() => void> = [];
      generation++;
      try {
        // PGlite's transaction() rolls back when the callback throws and throws
        // TransactionAbortedError when COMMIT finds the transaction aborted.
        const result = await lite.transaction(async (ltx) => {
          const state = { done: false };
          const tx: Db & { [ROOT]: Db; [AFTER_COMMIT]: Array<() => void> } = {
            kind: 'pglite',
            [ROOT]: root,
            [AFTER_COMMIT]: hooks,
            async query<R>(sql: string, params?: unknown[]) {
              assertOpen(state);
              return run<R>(ltx, sql, params);
            },
            async exec(sql: string) {
              assertOpen(state);
              await ltx.exec(sql);
            },
            withTransaction: <U>(inner: (tx: Db) => Promise<U>) => nested(inner),
            async close() {
              throw new Error('Db: close() on a transaction handle');
            },
          };
          const nested = savepoints(tx);
          try {
            return await guard.scope.run(scope, () => fn(tx));
          } finally {
            state.done = true;
          }
        });
        runHooks(hooks);
        return result;
      } finally {
        scope.active = false;
        generation++;
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await lite.close();
    },
  };
  Object.defineProperty(root, ROOT, { value: root });
  return root;
}
