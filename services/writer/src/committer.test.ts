import { mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlCatalog } from '@floe/iceberg';
import { migrate, openDb, type Db } from '@floe/meta';
import { ColumnBatchBuilder, ParquetWriter, WalAppender, createObjectStore, formatSegmentKey, listSegments, newRecordId, readColumnBatch, type ObjectStore } from '@floe/storage';
import { metricsTable, tracesTable } from '@floe/schema';
import { silentLogger } from '@floe/telemetry';
import { Committer, TablesNotCommittedError } from './committer.ts';
import { CATALOG_NAME, WAREHOUSE_PREFIX } from './tables.ts';

/** The writer's exactly-once rule, on a real PGlite catalog and a real directory store. */
describe('Committer', () => {
  let dir: string;
  let db: Db;
  let store: ObjectStore;
  let catalog: SqlCatalog;
  let writer: ParquetWriter;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'floe-committer-'));
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    store = createObjectStore({ kind: 'fs', root: join(dir, 'store') });
    catalog = new SqlCatalog(db, store, { catalogName: CATALOG_NAME, warehouseKeyPrefix: WAREHOUSE_PREFIX });
    writer = new ParquetWriter(join(dir, 'work'));
  });
  afterAll(async () => {
    writer.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const committer = () => new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100 });
  const hourNs = 3_600_000_000_000n;
  const row = (i: number, hour: number) =>
    JSON.stringify({ trace_id: i.toString(16).padStart(32, '0'), span_id: i.toString(16).padStart(16, '0'), name: `op-${i}`, service_name: 'svc', start_time_unix_nano: (BigInt(hour) * hourNs + BigInt(i)).toString(), span_attr_int: { n: i } });

  async function append(wal: WalAppender, tenant: string, ids: number[], hour: number) {
    await wal.append([{ header: { tenant, dataset: 'default', table: 'traces', hour, rows: ids.length, id: newRecordId() }, payload: Buffer.from(ids.map((i) => row(i, hour)).join('\n') + '\n') }]);
  }

  async function storedIds(tenant: string): Promise<number[]> {
    const handle = await catalog.loadTable(`${tenant}.default`, 'traces');
    if (!handle) return [];
    const files = await catalog.planFiles(handle);
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    const r = await duck.runAndReadAll(`SELECT span_attr_int['n'] AS n FROM read_parquet([${files.map((f) => `'${store.localPath(f.key)}'`).join(',')}]) ORDER BY n`);
    duck.closeSync();
    return r.getRows().map((x) => Number(x[0]));
  }

  it('commits every record once per hour partition and deletes the segments', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-1' });
    await append(wal, 'acme', [1, 2, 3], 490_000);
    await append(wal, 'acme', [4, 5], 490_001);
    await append(wal, 'globex', [6], 490_000);
    const stats = await committer().round();
    expect(stats).toMatchObject({ segments: 3, records: 3, rows: 6, commits: 2, skippedRecords: 0 });
    expect(await listSegments(store)).toHaveLength(0);
    expect(await storedIds('acme')).toEqual([1, 2, 3, 4, 5]);
    expect(await storedIds('globex')).toEqual([6]);
    const handle = (await catalog.loadTable('acme.default', 'traces'))!;
    const parts = (await catalog.planFiles(handle)).map((f) => f.partition.timestamp_hour).sort();
    expect(parts).toEqual([490_000, 490_001]);
    await wal.close();
  });

  it('commits many tables at once (commitConcurrency): each table its rows once, the segments deleted after all of them', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-many' });
    const tenants = Array.from({ length: 12 }, (_, i) => `many-${i}`);
    // Every segment feeds several tables, so a segment goes only once each of them has committed.
    for (let s = 0; s < 3; s++) {
      await Promise.all(tenants.map((t, i) => append(wal, t, [100 * s + i, 100 * s + i + 50], 490_000 + s)));
    }
    // The catalog as the committer sees it, counting the Iceberg appends in progress at once. The
    // first append waits (at most 5 s) for a second to begin, so the count does not hang on how
    // fast each table's encoding happens to be: committed one at a time, none ever begins.
    let appending = 0;
    let mostAtOnce = 0;
    let secondBegun!: () => void;
    const second = new Promise<void>((resolve) => (secondBegun = resolve));
    const counting = new Proxy(catalog, {
      get(target, key) {
        const value = Reflect.get(target, key, target) as unknown;
        if (key !== 'appendFiles') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: Parameters<SqlCatalog['appendFiles']>) => {
          mostAtOnce = Math.max(mostAtOnce, ++appending);
          try {
            if (appending === 1 && mostAtOnce === 1) await Promise.race([second, new Promise((r) => setTimeout(r, 5000))]);
            else secondBegun();
            return await target.appendFiles(...args);
          } finally {
            appending--;
          }
        };
      },
    });
    const stats = await new Committer({ store, catalog: counting, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, commitConcurrency: 4 }).round();
    expect(stats).toMatchObject({ rows: 72, commits: 12, skippedRecords: 0 });
    expect(mostAtOnce).toBeGreaterThan(1);
    expect(mostAtOnce).toBeLessThanOrEqual(4);
    expect(await listSegments(store)).toHaveLength(0);
    for (const [i, t] of tenants.entries()) expect(await storedIds(t)).toEqual([i, i + 50, 100 + i, 150 + i, 200 + i, 250 + i]);
    await wal.close();
  });

  it('drops the records of a deleted tenant or dataset (no table of it is created again) and commits the others', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-gone' });
    await append(wal, 'gone', [1, 2], 490_000);
    await append(wal, 'stays', [3], 490_000);
    const asked: string[][] = [];
    const liveDatasets = async (pairs: ReadonlyArray<{ tenant: string; dataset: string }>) => {
      const keys = pairs.map((p) => `${p.tenant}/${p.dataset}`);
      asked.push(keys.sort());
      return new Map(keys.filter((k) => k !== 'gone/default').map((k) => [k, 0]));
    };
    const stats = await new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, liveDatasets }).round();
    // One question per round, naming every dataset of the round's records once.
    expect(asked).toEqual([['gone/default', 'stays/default']]);
    expect(stats).toMatchObject({ segments: 2, records: 2, commits: 1, skippedRecords: 1 });
    expect(await listSegments(store)).toHaveLength(0);
    expect(await catalog.loadTable('gone.default', 'traces')).toBeUndefined();
    expect(await storedIds('stays')).toEqual([3]);
    await wal.close();
  });

  it('drops the records appended before a dataset was deleted and created again, and commits those appended after', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-again' });
    await append(wal, 'again', [1, 2], 490_000);
    await new Promise((r) => setTimeout(r, 5));
    const deletedAt = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    await append(wal, 'again', [3], 490_000);
    await append(wal, 'never-deleted', [4], 490_000);
    const liveDatasets = async () => new Map([['again/default', deletedAt], ['never-deleted/default', 0]]);
    const stats = await new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, liveDatasets }).round();
    expect(stats).toMatchObject({ records: 3, skippedRecords: 1 });
    expect(await listSegments(store)).toHaveLength(0);
    expect(await storedIds('again')).toEqual([3]);
    expect(await storedIds('never-deleted')).toEqual([4]);
    await wal.close();
  });

  it('keeps its round memory while the WAL has been empty less than 30 s, and lets it go after', async () => {
    const c = committer();
    const wal = new WalAppender(store, { instanceId: 'acc-test-idle' });
    await append(wal, 'idle', [1, 2], 490_000);
    await c.round();
    const kept = c.keptBytes;
    expect(kept).toBeGreaterThan(0);
    const t0 = 1_000_000;
    c.idle(t0);
    c.idle(t0 + 29_000);
    expect(c.keptBytes).toBe(kept);
    // A round in between starts the idle time anew, and reads into the buffer the first one made.
    await append(wal, 'idle', [3], 490_000);
    await c.round();
    expect(c.keptBytes).toBe(kept);
    c.idle(t0 + 40_000);
    expect(c.keptBytes).toBe(kept);
    c.idle(t0 + 70_000);
    expect(c.keptBytes).toBe(0);
    expect(await storedIds('idle')).toEqual([1, 2, 3]);
    await wal.close();
  });

  it('a replay of segments that were committed but not deleted (crash) stores nothing twice', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-2' });
    await append(wal, 'acme', [10, 11], 490_002);
    await append(wal, 'globex', [12], 490_002);
    const segments = await listSegments(store);
    const saved = await Promise.all(segments.map(async (s) => [s.key, (await store.get(s.key))!] as const));
    await committer().round();
    // The crash: the commit landed but the segments survived.
    for (const [key, bytes] of saved) await store.put(key, bytes);
    const replay = await committer().round();
    expect(replay.skippedRecords).toBe(2);
    expect(replay.commits).toBe(0);
    expect(await listSegments(store)).toHaveLength(0);
    expect(await storedIds('acme')).toEqual([1, 2, 3, 4, 5, 10, 11]);
    expect(await storedIds('globex')).toEqual([6, 12]);
    await wal.close();
  });

  it('an appended segment that its acceptor left open (it died) is published and committed', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-died', segmentMaxAgeMs: 3_600_000 });
    await append(wal, 'initech', [30, 31], 490_004);
    await append(wal, 'initech', [32], 490_004);
    // Acknowledged but never sealed: the acceptor "died" (the appender is never closed).
    expect(await listSegments(store)).toHaveLength(0);
    const openDir = join(dir, 'store', '.floe-open');
    const [name] = readdirSync(openDir);
    // Recent: its owner may be alive, so it is left alone.
    expect(await committer().backlog()).toHaveLength(0);
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(openDir, name!), old, old);
    const c = committer();
    expect(await c.backlog()).toHaveLength(1);
    const stats = await c.round();
    expect(stats).toMatchObject({ segments: 1, records: 2, rows: 3, commits: 1 });
    expect(await storedIds('initech')).toEqual([30, 31, 32]);
    expect(readdirSync(openDir)).toEqual([]);
  });

  it('a round reads at most maxBytesPerRound of segments (at least one); the next round takes the rest', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-budget' });
    await append(wal, 'umbrella', [40, 41], 490_005);
    await append(wal, 'umbrella', [42], 490_005);
    await append(wal, 'umbrella', [43], 490_005);
    const sizes = (await listSegments(store)).map((s) => s.size);
    expect(sizes).toHaveLength(3);
    const c = new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, maxBytesPerRound: sizes[0]! + sizes[1]! });
    expect(await c.round()).toMatchObject({ segments: 2, rows: 3 });
    expect(await storedIds('umbrella')).toEqual([40, 41, 42]);
    // A budget below one segment still takes one.
    const tight = new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, maxBytesPerRound: 1 });
    expect(await tight.round()).toMatchObject({ segments: 1, rows: 1 });
    expect(await storedIds('umbrella')).toEqual([40, 41, 42, 43]);
    expect(await listSegments(store)).toHaveLength(0);
    await wal.close();
  });

  it('a segment older than writer.wal_marker_retention is set aside, not committed; within it, it is committed', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-old' });
    await append(wal, 'old', [30], 490_004);
    await wal.close();
    // The same valid segment, named as made eight days ago (a writer down that long, or a stuck segment).
    const [fresh] = await listSegments(store);
    const bytes = (await store.get(fresh!.key))!;
    await store.delete(fresh!.key);
    const eightDaysAgo = formatSegmentKey('wal/', { timestampMs: Date.now() - 8 * 86_400_000, instanceId: 'acc-test-old', seq: 0 });
    await store.put(eightDaysAgo, bytes);
    const before = (await store.list('wal-quarantine/')).length;

    const week = new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, markerRetentionMs: 7 * 86_400_000 });
    const stats = await week.round();
    expect(stats).toMatchObject({ segments: 0, rows: 0, commits: 0 });
    expect(await listSegments(store)).toHaveLength(0);
    expect(await store.list('wal-quarantine/')).toHaveLength(before + 1);
    expect(await storedIds('old')).toEqual([]);

    // With a longer retention the same segment is an ordinary one.
    await store.put(eightDaysAgo, bytes);
    const longer = new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, markerRetentionMs: 30 * 86_400_000 });
    expect(await longer.round()).toMatchObject({ segments: 1, rows: 1, commits: 1 });
    expect(await storedIds('old')).toEqual([30]);
  });

  it('a corrupt segment is quarantined and does not block the log', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-3' });
    await append(wal, 'acme', [20], 490_003);
    await store.put(formatSegmentKey('wal/', { timestampMs: Date.now(), instanceId: 'acc-bad', seq: 1 }), Buffer.from('garbage'));
    const before = (await store.list('wal-quarantine/')).length;
    const stats = await committer().round();
    expect(stats.rows).toBe(1);
    expect(await listSegments(store)).toHaveLength(0);
    expect((await store.list('wal-quarantine/')).length).toBe(before + 1);
    await wal.close();
  });

  it('a malformed column batch is set aside; the rest of its segment and table is committed', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-4' });
    const batch = (ids: number[], hour: number) => {
      const b = ColumnBatchBuilder.forTable(tracesTable);
      for (const i of ids) b.addRow(JSON.parse(row(i, hour)) as Record<string, unknown>);
      return b.finish();
    };
    const bad = batch([31], 490_004);
    new DataView(bad.buffer).setUint32(4, 5, true); // claims 5 rows: its leaves hold 1
    const header = (rows: number) => ({ tenant: 'acme', dataset: 'default', table: 'traces', hour: 490_004, rows, id: newRecordId() });
    await wal.append([
      { header: header(2), payload: batch([30, 32], 490_004) },
      { header: header(5), payload: bad },
    ]);
    const stats = await committer().round();
    expect(stats).toMatchObject({ rows: 2, skippedRecords: 1, commits: 1 });
    expect(await listSegments(store)).toHaveLength(0);
    expect((await store.list('wal-quarantine/')).filter((o) => o.key.endsWith('.batch'))).toHaveLength(1);
    expect((await storedIds('acme')).filter((n) => n >= 30)).toEqual([30, 32]);
    await wal.close();
  });

  it('a batch of series references that fails its check is set aside with the definitions it references', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-refs' });
    const own = new Set(['start_unix_nano', 'time_unix_nano', 'value', 'flags']);
    const maker = ColumnBatchBuilder.forTable(metricsTable);
    const templates = [0, 1, 2].map((i) => maker.template({ metric_name: `m_${i}`, metric_type: 'gauge', series_id: `s${i}`, service_name: 'svc', point_attr_str: { i: String(i) } }, own));
    const samples = (which: number[]) => {
      const b = ColumnBatchBuilder.forTable(metricsTable);
      for (const t of which) {
        b.appendRef(templates[t]!);
        for (const c of own) {
          const col = b.column(c);
          if (col.kind !== 'primitive') throw new Error('primitive expected');
          if (c === 'value') col.leaf.f64(t);
          else col.leaf.long(490_005 * 3_600_000_000_000 + t);
        }
        b.endRow();
      }
      return { payload: b.finish(), series: b.templates.slice() };
    };
    const header = (rows: number) => ({ tenant: 'acme', dataset: 'default', table: 'metrics', hour: 490_005, rows, id: newRecordId() });
    const good = samples([0, 1]);
    // References the appender does not renumber (no `series`): its third template is not defined.
    const bad = samples([2, 0, 1]);
    const before = new Set((await store.list('wal-quarantine/')).map((o) => o.key));
    await wal.append([
      { header: header(2), ...good },
      { header: header(3), payload: bad.payload },
    ]);
    const stats = await committer().round();
    expect(stats).toMatchObject({ rows: 2, skippedRecords: 1, commits: 1 });
    const set = (await store.list('wal-quarantine/')).map((o) => o.key).filter((k) => !before.has(k));
    expect(set.filter((k) => k.endsWith('.batch'))).toHaveLength(1);
    expect(set.filter((k) => k.endsWith('.batch.series-0'))).toHaveLength(1);
    const setAside = (await store.get(set.find((k) => k.endsWith('.batch'))!))!;
    // What was set aside tells an operator the same as the check: two series defined, the third referenced.
    const defs = [readColumnBatch((await store.get(set.find((k) => k.endsWith('.series-0'))!))!)];
    expect(defs[0]!.rows).toBe(2);
    expect(() => readColumnBatch(setAside, { defs })).toThrow(/references series 2, its segment defines 2/);
    await wal.close();
  });

  it('a segment the store fails to read is read again next round, not quarantined', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-5' });
    await append(wal, 'acme', [40, 41], 490_005);
    await wal.close();
    // The real store, but its first read of a WAL segment fails as a network read can.
    let failed = false;
    const failingGet = (key: string, alloc?: (bytes: number) => Uint8Array) => {
      if (!failed && key.startsWith('wal/')) {
        failed = true;
        return Promise.reject(new Error('connection reset'));
      }
      return store.get(key, alloc);
    };
    const flaky = new Proxy(store, {
      get: (target, prop) => {
        if (prop === 'get') return failingGet;
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const quarantined = (await store.list('wal-quarantine/')).length;
    const c = new Committer({ store: flaky, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100 });
    await expect(c.round()).rejects.toThrow('connection reset');
    expect(await listSegments(store)).toHaveLength(1);
    expect(await c.round()).toMatchObject({ rows: 2, commits: 1 });
    expect(await listSegments(store)).toHaveLength(0);
    expect(await store.list('wal-quarantine/')).toHaveLength(quarantined);
    expect((await storedIds('acme')).filter((n) => n >= 40)).toEqual([40, 41]);
  });

  it('with a share of the WAL, commits only its segments, and skips one that stopped being its own after the listing', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-share' });
    await append(wal, 'share', [71], 490_000);
    await append(wal, 'share', [72], 490_000);
    await append(wal, 'share', [73], 490_000);
    const keys = (await listSegments(store)).map((s) => s.key);
    expect(keys).toHaveLength(3);
    // Ours: the first two, until the listing is done; then another writer takes the second.
    let listed = false;
    const owns = (key: string) => key === keys[0] || (key === keys[1] && !listed);
    const c = new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, owns });
    const backlog = await c.backlog();
    expect(backlog.map((s) => s.key)).toEqual(keys.slice(0, 2));
    listed = true;
    expect(await c.round(backlog)).toMatchObject({ segments: 1, rows: 1, commits: 1 });
    expect(await storedIds('share')).toEqual([71]);
    // The other two stay for the writers whose share they are.
    expect((await listSegments(store)).map((s) => s.key)).toEqual(keys.slice(1));
    expect((await committer().round()).segments).toBe(2);
    expect(await storedIds('share')).toEqual([71, 72, 73]);
    await wal.close();
  });

  it('a table whose commits fail waits out its own back-off; the other tables commit every round meanwhile', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-broken' });
    await append(wal, 'brk', [80], 490_000);
    await append(wal, 'okco', [81], 490_000);
    // The real catalog, but commits to one tenant's table fail as with damaged metadata.
    let broken = true;
    let brokenAttempts = 0;
    const flaky = new Proxy(catalog, {
      get: (target, prop) => {
        const v: unknown = Reflect.get(target, prop, target);
        if (prop !== 'appendFiles') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        return (handle: { metadata: { location: string } }, ...rest: unknown[]) => {
          if (broken && handle.metadata.location.includes('/brk/')) {
            brokenAttempts++;
            return Promise.reject(new Error('table metadata is not valid JSON'));
          }
          return (v as (...a: unknown[]) => unknown).call(target, handle, ...rest);
        };
      },
    });
    const c = new Committer({ store, catalog: flaky, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, tableRetryBaseMs: 60_000 });
    await expect(c.round()).rejects.toBeInstanceOf(TablesNotCommittedError);
    expect(await storedIds('okco')).toEqual([81]);
    expect(brokenAttempts).toBe(1);

    await append(wal, 'okco', [82], 490_000);
    // Within the broken table's back-off: not tried again, and the round is not a failure.
    expect(await c.round()).toMatchObject({ commits: 1, rows: 1 });
    expect(brokenAttempts).toBe(1);
    expect(await storedIds('okco')).toEqual([81, 82]);
    expect(await catalog.planFiles((await catalog.loadTable('brk.default', 'traces'))!)).toEqual([]);
    // Its segment stays in the WAL until the table commits.
    expect(await listSegments(store)).toHaveLength(1);

    broken = false;
    expect(await new Committer({ store, catalog: flaky, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100 }).round()).toMatchObject({ commits: 1, rows: 1 });
    expect(await storedIds('brk')).toEqual([80]);
    expect(await storedIds('okco')).toEqual([81, 82]);
    expect(await listSegments(store)).toHaveLength(0);
    await wal.close();
  });

  it('segments held only by a failing table are claimed after newer ones, so a round budget they would fill still reaches the others', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-test-hol' });
    await append(wal, 'brk2', [90], 490_000);
    const flaky = new Proxy(catalog, {
      get: (target, prop) => {
        const v: unknown = Reflect.get(target, prop, target);
        if (prop !== 'appendFiles') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        return (handle: { metadata: { location: string } }, ...rest: unknown[]) =>
          handle.metadata.location.includes('/brk2/') ? Promise.reject(new Error('manifest list missing')) : (v as (...a: unknown[]) => unknown).call(target, handle, ...rest);
      },
    });
    // One segment a round: the broken table's, oldest, would be claimed by every round.
    const c = new Committer({ store, catalog: flaky, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 1, tableRetryBaseMs: 60_000 });
    await expect(c.round()).rejects.toBeInstanceOf(TablesNotCommittedError);
    await append(wal, 'okco2', [91], 490_000);
    expect(await c.round()).toMatchObject({ segments: 1, commits: 1, rows: 1 });
    await append(wal, 'okco2', [92], 490_000);
    expect(await c.round()).toMatchObject({ segments: 1, commits: 1, rows: 1 });
    expect(await storedIds('okco2')).toEqual([91, 92]);
    // The broken table's segment is still there for when it commits.
    expect(await listSegments(store)).toHaveLength(1);
    expect(await new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 1 }).round()).toMatchObject({ commits: 1, rows: 1 });
    expect(await storedIds('brk2')).toEqual([90]);
    await wal.close();
  });
});
