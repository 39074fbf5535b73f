import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authDepsFromDb, type TenantContext } from '@floe/auth';
import { tableRows } from '@floe/flight';
import { LocalFileCache, type ObjectStore } from '@floe/storage';
import { createLogger, type Logger } from '@floe/telemetry';
import { FileResolver } from './file-resolver.ts';
import { QueryHandler } from './query-handler.ts';
import { openTracesFixture, type TracesFixture } from './test-support.ts';
import { TraceLookup } from './trace-lookup.ts';

/**
 * A data file of the table's current snapshot that cannot be read (deleted behind Floe's back,
 * cut short, bit-flipped in its footer or in a compressed page) refuses that table's queries as
 * unavailable, naming the table, the file's object key and the repair, on the per-query sandbox
 * (user SQL) and on the warm instance (the querier's own SQL) alike; what is wrong with a query
 * itself stays the query's fault. Real DuckDB over real damaged files.
 */
const HOUR = 480_000;
const NS_HOUR = 3_600_000_000_000n;
const TRACE = 'ab'.repeat(16);

/** Enough spans (with varied attributes) for a file of several compressed pages. */
const spans = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      trace_id: TRACE,
      span_id: i.toString(16).padStart(16, '0'),
      name: `${tag}-${i}`,
      kind: 'server',
      start_time_unix_nano: (BigInt(HOUR) * NS_HOUR + BigInt(i) * 1000n).toString(),
      end_time_unix_nano: (BigInt(HOUR) * NS_HOUR + BigInt(i) * 1000n + 10n).toString(),
      service_name: 'svc',
      status_code: 'ok',
      span_attr_str: { k: 'v'.repeat(i % 50) },
    }),
  );

/** Where the column's first data page starts in a Parquet file, as DuckDB reads its footer. */
const dataPageOffset = async (file: string, column: string): Promise<number> => {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    const rows = (await conn.runAndReadAll('SELECT data_page_offset FROM parquet_metadata($1) WHERE path_in_schema = $2', [file, column])).getRowsJS();
    return Number(rows[0]![0]);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
};

const refusal = (key: string, state: 'missing' | 'damaged') =>
  `table traces of dataset default cannot be read: its data file ${key} is ${state}; it needs an operator's repair (floe ops check-tables)`;

let fixture: TracesFixture;
let logDir: string;
let logFd: number;
let log: Logger;
let resolver: FileResolver;
let handler: QueryHandler;
/** The object key of each tenant's damaged file (the other file of its table is sound). */
const damaged: Record<string, string> = {};

const ctx = (tenant: string): TenantContext => ({ tenant, dataset: 'default', principal: 'test', scopes: [], isAdmin: false });
const runSql = (tenant: string, sql: string) => handler.run(ctx(tenant), new TextEncoder().encode(sql));
const failure = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => err);
const logLines = async () => {
  await new Promise<void>((resolve) => log.flush(() => resolve()));
  return readFileSync(join(logDir, 'log.ndjson'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { level: string; msg: string; key?: string; err?: { message?: string } });
};

beforeAll(async () => {
  fixture = await openTracesFixture('unreadable-files');
  logDir = mkdtempSync(join(tmpdir(), 'floe-unreadable-log-'));
  logFd = openSync(join(logDir, 'log.ndjson'), 'w');
  log = createLogger({ level: 'info', fd: logFd });
  resolver = new FileResolver(fixture.catalog, fixture.store, new LocalFileCache({ dir: join(fixture.dir, 'cache-q'), maxBytes: 0 }), log);
  handler = new QueryHandler(authDepsFromDb(fixture.db, { adminApiKey: '', ttlMs: 0 }), resolver, { timeoutMs: 20_000, memoryLimit: '256MB', threads: 1, maxRows: 100_000, maxBytes: 256 * 1024 * 1024, tempDir: fixture.dir }, log);
  const path = (key: string) => fixture.store.localPath(key)!;
  for (const tenant of ['healthy', 'cut', 'gone', 'footer', 'page']) {
    await fixture.append(tenant, spans(100, 'sound'), HOUR);
    damaged[tenant] = await fixture.append(tenant, spans(5000, 'bad'), HOUR);
  }
  truncateSync(path(damaged.cut!), 100);
  unlinkSync(path(damaged.gone!));
  // The footer flipped: DuckDB's thrift decoder fails without naming the file.
  const footer = readFileSync(path(damaged.footer!));
  for (let i = footer.length - 300; i < footer.length - 8; i++) footer[i]! ^= 0xff;
  writeFileSync(path(damaged.footer!), footer);
  // The name column's compressed page flipped past its header: the footer reads, the values do not decompress.
  const page = readFileSync(path(damaged.page!));
  const start = await dataPageOffset(path(damaged.page!), 'name');
  for (let i = start + 64; i < start + 128; i++) page[i]! ^= 0x5a;
  writeFileSync(path(damaged.page!), page);
});

afterAll(async () => {
  handler?.close();
  if (logFd !== undefined) closeSync(logFd);
  if (logDir) rmSync(logDir, { recursive: true, force: true });
  await fixture?.close();
});

describe('a damaged or missing data file', () => {
  it('refuses the table\'s user SQL as unavailable, naming the table, the file\'s object key and the repair', async () => {
    const cases = [
      ['cut', 'damaged'],
      ['gone', 'missing'],
      ['footer', 'damaged'],
      ['page', 'damaged'],
    ] as const;
    for (const [tenant, state] of cases) {
      const err = await failure(runSql(tenant, 'SELECT * FROM traces ORDER BY name'));
      expect(err, tenant).toMatchObject({ name: 'FloeError', kind: 'unavailable', code: 'FLOE_ERR_TABLE_UNREADABLE', message: refusal(damaged[tenant]!, state) });
      expect((err as Error).message).not.toContain(fixture.dir);
    }
    // The sound table beside them reads whole.
    const rows = tableRows<{ n: bigint }>(await runSql('healthy', 'SELECT count(*) AS n FROM traces'));
    expect(rows.map((r) => Number(r.n))).toEqual([5100]);
  });

  it('refuses the querier\'s own SQL on the warm instance the same way (a trace by id scanning files without id blocks)', async () => {
    const traces = new TraceLookup(resolver, fixture.store, (o) => handler.runInternal(o), log);
    const find = (tenant: string) => traces.find({ tenant, dataset: 'default', traceId: TRACE, timeoutMs: 20_000 });
    expect(await failure(find('footer'))).toMatchObject({ kind: 'unavailable', message: refusal(damaged.footer!, 'damaged') });
    expect(await failure(find('gone'))).toMatchObject({ kind: 'unavailable', message: refusal(damaged.gone!, 'missing') });
    expect(await failure(find('page'))).toMatchObject({ kind: 'unavailable', message: refusal(damaged.page!, 'damaged') });
    expect((await find('healthy')).trace?.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))).toHaveLength(5100);
  });

  it('leaves the query\'s own mistakes to the query: a syntax error is bad data, a bad cast too', async () => {
    for (const tenant of ['cut', 'footer', 'healthy']) {
      expect(await failure(runSql(tenant, 'SELEC name FROM traces')), tenant).toMatchObject({ kind: 'bad_data', message: expect.stringMatching(/syntax error/i) });
    }
    expect(await failure(runSql('healthy', 'SELECT CAST(name AS INTEGER) FROM traces'))).toMatchObject({ kind: 'bad_data' });
  });

  it('logs each refusal at error level with DuckDB\'s whole text, and counts it', async () => {
    const before = resolver.unreadableFileQueries;
    await failure(runSql('cut', 'SELECT count(*) FROM traces'));
    expect(resolver.unreadableFileQueries).toBe(before + 1);
    const logged = (await logLines()).filter((l) => l.msg === 'a data file of the table cannot be read');
    expect(logged).toContainEqual(expect.objectContaining({ level: 'error', key: damaged.cut, err: expect.objectContaining({ message: expect.stringContaining(`No magic bytes found at end of file '${fixture.store.localPath(damaged.cut!)!}'`) }) }));
  });
});

describe('a data file fetched from an object store into the local cache (as from S3)', () => {
  /** The fixture's store without its local paths: every data file is fetched into the cache, as from S3. */
  const remote = (): ObjectStore =>
    new Proxy(fixture.store, {
      get: (t, p) => {
        if (p === 'localPath') return () => undefined;
        const v = Reflect.get(t, p, t) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });

  it('refuses the table when the object is gone or shorter than its manifest says, naming it', async () => {
    const cacheDir = join(fixture.dir, 'cache-remote');
    const fetching = new FileResolver(fixture.catalog, remote(), new LocalFileCache({ dir: cacheDir, maxBytes: 1 << 30 }), log);
    const remoteHandler = new QueryHandler(authDepsFromDb(fixture.db, { adminApiKey: '', ttlMs: 0 }), fetching, { timeoutMs: 20_000, memoryLimit: '256MB', threads: 1, maxRows: 100_000, maxBytes: 256 * 1024 * 1024, tempDir: fixture.dir }, log);
    try {
      const run = (tenant: string) => failure(remoteHandler.run(ctx(tenant), new TextEncoder().encode('SELECT count(*) FROM traces')));
      expect(await run('gone')).toMatchObject({ kind: 'unavailable', message: refusal(damaged.gone!, 'missing') });
      expect(await run('cut')).toMatchObject({ kind: 'unavailable', message: refusal(damaged.cut!, 'damaged') });
      // Fetched whole but damaged: DuckDB reads the cached copy and says so.
      expect(await run('footer')).toMatchObject({ kind: 'unavailable', message: refusal(damaged.footer!, 'damaged') });
      expect(((await run('footer')) as Error).message).not.toContain(cacheDir);
      expect(tableRows<{ n: bigint }>(await remoteHandler.run(ctx('healthy'), new TextEncoder().encode('SELECT count(*) AS n FROM traces'))).map((r) => Number(r.n))).toEqual([5100]);
      expect(fetching.unreadableFileQueries).toBe(4);
    } finally {
      remoteHandler.close();
    }
  });
});
