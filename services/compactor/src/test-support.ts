// Test helpers (not exported from the package): a metadata DB on PGlite or PostgreSQL 15, a temp
// directory object store, and a traces table filled the way the writer fills it.

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { ensureFloeTable, openFloeCatalog, publishDataFile, type SqlCatalog, type TableHandle } from '@floe/iceberg';
import { migrate, openDb, type Db } from '@floe/meta';
import { tableDef, type TableName } from '@floe/schema';
import { createObjectStore, LocalFileCache, ParquetWriter, type ObjectStore } from '@floe/storage';

export const PG_ADMIN_URL = process.env.FLOE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface OpenedDb {
  db: Db;
  close(): Promise<void>;
}

export async function openTestDb(kind: 'pglite' | 'pg'): Promise<OpenedDb> {
  if (kind === 'pglite') {
    const db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    return { db, close: () => db.close() };
  }
  const name = `floe_compactor_${randomBytes(6).toString('hex')}`;
  const admin = await openDb({ kind: 'pg', url: PG_ADMIN_URL, poolMax: 1 });
  await admin.query(`CREATE DATABASE ${name}`);
  const db = await openDb({ kind: 'pg', url: PG_ADMIN_URL.replace(/\/[^/]*$/, `/${name}`), poolMax: 4 });
  await migrate(db);
  return {
    db,
    async close() {
      await db.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.close();
    },
  };
}

export interface Fixture {
  dir: string;
  db: Db;
  store: ObjectStore;
  catalog: SqlCatalog;
  writer: ParquetWriter;
  cache: LocalFileCache;
  close(): Promise<void>;
}

export async function openFixture(kind: 'pglite' | 'pg'): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), 'floe-compactor-'));
  const opened = await openTestDb(kind);
  const store = createObjectStore({ kind: 'fs', root: join(dir, 'data') });
  const catalog = openFloeCatalog(opened.db, store);
  const writer = new ParquetWriter(join(dir, 'work'));
  const cache = new LocalFileCache({ dir: join(dir, 'cache'), maxBytes: 0 });
  return {
    dir,
    db: opened.db,
    store,
    catalog,
    writer,
    cache,
    async close() {
      writer.close();
      await cache.close();
      await store.close();
      await opened.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The traces table as the writer creates it. */
export function createTracesTable(catalog: SqlCatalog, tenant: string, dataset: string): Promise<TableHandle> {
  return ensureFloeTable(catalog, tenant, dataset, 'traces');
}

const NS_PER_HOUR = 3_600_000_000_000n;
const SERVICES = ['checkout', 'cart', 'frontend', 'payments'];

/** Deterministic pseudo-random bytes as hex (a small xorshift), so runs are reproducible. */
function hexer(seed: number): (bytes: number) => string {
  let x = seed >>> 0 || 1;
  return (bytes) => {
    let out = '';
    for (let i = 0; i < bytes; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      x >>>= 0;
      out += (x & 0xff).toString(16).padStart(2, '0');
    }
    return out;
  };
}

/**
 * NDJSON rows shaped like the acceptor's traces rows (services/acceptor/src/traces-to-rows.ts):
 * int64 nanoseconds as strings, typed attribute maps, `timestamp` left for the writer to derive.
 */
export function spanRows(hour: number, count: number, seed: number): Uint8Array {
  const hex = hexer(seed);
  const base = BigInt(hour) * NS_PER_HOUR;
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const start = base + BigInt((seed * 7919 + i * 104_729) % 3_500) * 1_000_000_000n + BigInt(i);
    const end = start + BigInt(1000 + i * 37);
    const service = SERVICES[(seed + i) % SERVICES.length]!;
    lines.push(
      JSON.stringify({
        trace_id: hex(16),
        span_id: hex(8),
        parent_span_id: i % 3 === 0 ? '' : hex(8),
        trace_state: '',
        name: `GET /api/${i % 5}`,
        kind: 'server',
        start_time_unix_nano: start.toString(),
        end_time_unix_nano: end.toString(),
        duration_nano: (end - start).toString(),
        status_code: i % 7 === 0 ? 'error' : 'ok',
        status_message: '',
        service_name: service,
        scope_name: 'test',
        scope_version: '1.0',
        flags: 1,
        span_attr_str: { 'http.route': `/api/${i % 5}`, 'user.id': `u-${seed}-${i}` },
        span_attr_int: { 'http.status_code': i % 7 === 0 ? 500 : 200 },
        span_attr_double: { 'request.size': i * 1.5 },
        span_attr_bool: { 'cache.hit': i % 2 === 0 },
        resource_attr_str: { 'service.name': service, 'host.name': `h-${seed % 3}` },
        resource_attr_int: {},
        resource_attr_double: {},
        resource_attr_bool: {},
        events_json: i % 4 === 0 ? JSON.stringify([{ timeUnixNano: start.toString(), name: 'ev', attributes: [] }]) : null,
        links_json: null,
        dropped_counts: null,
      }),
    );
  }
  return new TextEncoder().encode(`${lines.join('\n')}\n`);
}

/** Writes one Parquet file of `rows` spans for `hour` and commits it as its own fast append. */
export function appendSpanFile(f: Fixture, handle: TableHandle, hour: number, rows: number, seed: number): Promise<{ handle: TableHandle; key: string }> {
  return appendRowsFile(f, handle, 'traces', hour, spanRows(hour, rows, seed));
}

/**
 * Writes one Parquet file of a table's rows for `hour` (NDJSON, through DuckDB; or a column batch,
 * through Floe's own encoder, whose pages carry crcs), as the writer would, and commits it as its
 * own fast append.
 */
export async function appendRowsFile(f: Fixture, handle: TableHandle, table: TableName, hour: number, rows: Parameters<ParquetWriter['write']>[1][number]): Promise<{ handle: TableHandle; key: string }> {
  const def = tableDef(table);
  const written = await f.writer.write(def, [rows]);
  try {
    const file = await publishDataFile(f.store, def, written, f.store.keyFromUri(handle.metadata.location), hour);
    const res = await f.catalog.appendFiles(handle, [file], { summary: { 'floe.writer': 'test' } });
    return { handle: res.handle, key: file.key };
  } finally {
    await rm(written.path, { force: true });
  }
}

/** Runs `fn` with a throwaway DuckDB connection. */
export async function withDuck<T>(fn: (query: (sql: string) => Promise<unknown[][]>) => Promise<T>): Promise<T> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    return await fn(async (sql) => (await conn.runAndReadAll(sql)).getRows() as unknown[][]);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

export const sqlList = (paths: readonly string[]) => `[${paths.map((p) => `'${p.replaceAll("'", "''")}'`).join(', ')}]`;

/** Every row of the files as canonical JSON text, sorted: equal arrays mean equal row multisets. */
export function allRows(paths: readonly string[]): Promise<string[]> {
  return withDuck(async (q) => (await q(`SELECT to_json(t)::VARCHAR AS j FROM read_parquet(${sqlList(paths)}) t ORDER BY j`)).map((r) => String(r[0])));
}
