import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { SqlCatalog } from '@floe/iceberg';
import { decodeWalHeld, listSegments, newRecordId, walHeldKey, WalAppender, type ObjectStore } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { Committer, TablesNotCommittedError } from './committer.ts';
import { HeldPublisher } from './held-segments.ts';
import { CATALOG_NAME, WAREHOUSE_PREFIX } from './tables.ts';
import { openWriterFixture, type WriterFixture } from './test-support.ts';

/**
 * A table whose commits fail keeps its segments in the WAL: the writer does not fetch and decode
 * them again every round while the table waits out its back-off, and it publishes them (with the
 * tables they are kept for) for the acceptors' backlog limit.
 */
describe('segments held for a failing table', () => {
  let fx: WriterFixture;
  let catalog: SqlCatalog;

  beforeAll(async () => {
    fx = await openWriterFixture('held');
    catalog = new SqlCatalog(fx.db, fx.store, { catalogName: CATALOG_NAME, warehouseKeyPrefix: WAREHOUSE_PREFIX });
  });
  afterAll(async () => {
    await fx.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const hourNs = 3_600_000_000_000n;
  const row = (i: number) => JSON.stringify({ trace_id: i.toString(16).padStart(32, '0'), span_id: i.toString(16).padStart(16, '0'), name: `op-${i}`, service_name: 'svc', start_time_unix_nano: (490_000n * hourNs + BigInt(i)).toString() });
  const append = (wal: WalAppender, tenant: string, i: number) =>
    wal.append([{ header: { tenant, dataset: 'default', table: 'traces', hour: 490_000, rows: 1, id: newRecordId() }, payload: Buffer.from(row(i) + '\n') }]);
  const storedRows = async (tenant: string) => {
    const handle = await catalog.loadTable(`${tenant}.default`, 'traces');
    return handle ? (await catalog.planFiles(handle)).reduce((n, f) => n + Number(f.recordCount), 0) : 0;
  };

  it('are not read again until the back-off has run out; once the table commits, each is stored once and no longer published', async () => {
    // Reads of WAL segments, counted through the store the committer is given.
    const reads: string[] = [];
    const counting = new Proxy(fx.store, {
      get: (target, prop) => {
        const v: unknown = Reflect.get(target, prop, target);
        if (prop === 'get') {
          return (key: string, alloc?: (bytes: number) => Uint8Array) => {
            if (key.startsWith('wal/')) reads.push(key);
            return target.get(key, alloc);
          };
        }
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as ObjectStore;
    let broken = true;
    let attempts = 0;
    const flaky = new Proxy(catalog, {
      get: (target, prop) => {
        const v: unknown = Reflect.get(target, prop, target);
        if (prop !== 'appendFiles') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        return (handle: { metadata: { location: string } }, ...rest: unknown[]) => {
          if (broken && handle.metadata.location.includes('/heldbrk/')) {
            attempts++;
            return Promise.reject(new Error('table metadata is not valid JSON'));
          }
          return (v as (...a: unknown[]) => unknown).call(target, handle, ...rest);
        };
      },
    });
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const wal = new WalAppender(fx.store, { instanceId: 'acc-test-held' });
    await append(wal, 'heldbrk', 1);
    await append(wal, 'heldok', 2);
    const [brokenSeg] = (await listSegments(fx.store)).map((s) => s.key);
    const c = new Committer({ store: counting, catalog: flaky, writer: fx.writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, tableRetryBaseMs: 60_000, held: new HeldPublisher(fx.store, 'writer-test', silentLogger()) });
    const published = async () => {
      const bytes = await fx.store.get(walHeldKey('writer-test'));
      return bytes && Object.fromEntries(decodeWalHeld(bytes)!.segments);
    };

    await expect(c.round()).rejects.toBeInstanceOf(TablesNotCommittedError);
    expect(reads).toHaveLength(2);
    expect(await published()).toEqual({ [brokenSeg!]: [{ tenant: 'heldbrk', dataset: 'default', table: 'traces' }] });

    // Within the back-off: only the new segment is read, the held one is not fetched again.
    await append(wal, 'heldok', 3);
    expect(await c.round()).toMatchObject({ segments: 1, commits: 1 });
    expect(await c.round()).toMatchObject({ segments: 0 });
    expect(reads.filter((k) => k === brokenSeg)).toHaveLength(1);
    expect(reads).toHaveLength(3);
    expect(attempts).toBe(1);
    expect(await listSegments(fx.store)).toHaveLength(1);

    // The back-off over, the table still broken: read and tried once more, then held again.
    vi.setSystemTime(Date.now() + 61_000);
    await expect(c.round()).rejects.toBeInstanceOf(TablesNotCommittedError);
    expect(await c.round()).toMatchObject({ segments: 0 });
    expect(reads.filter((k) => k === brokenSeg)).toHaveLength(2);
    expect(attempts).toBe(2);

    // Repaired: after its (doubled) back-off, its rows are committed once and nothing is held.
    broken = false;
    vi.setSystemTime(Date.now() + 121_000);
    expect(await c.round()).toMatchObject({ segments: 1, commits: 1, rows: 1 });
    expect(await storedRows('heldbrk')).toBe(1);
    expect(await storedRows('heldok')).toBe(2);
    expect(await listSegments(fx.store)).toHaveLength(0);
    expect(await published()).toBeUndefined();
    await wal.close();
  });

  it('a held segment whose other table committed already is stored once for it when read again', async () => {
    let broken = true;
    const flaky = new Proxy(catalog, {
      get: (target, prop) => {
        const v: unknown = Reflect.get(target, prop, target);
        if (prop !== 'appendFiles') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        return (handle: { metadata: { location: string } }, ...rest: unknown[]) =>
          broken && handle.metadata.location.includes('/mixbrk/') ? Promise.reject(new Error('manifest list missing')) : (v as (...a: unknown[]) => unknown).call(target, handle, ...rest);
      },
    });
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    // One segment with rows of both tenants.
    const wal = new WalAppender(fx.store, { instanceId: 'acc-test-mixed' });
    await wal.append([
      { header: { tenant: 'mixbrk', dataset: 'default', table: 'traces', hour: 490_000, rows: 1, id: newRecordId() }, payload: Buffer.from(row(10) + '\n') },
      { header: { tenant: 'mixok', dataset: 'default', table: 'traces', hour: 490_000, rows: 1, id: newRecordId() }, payload: Buffer.from(row(11) + '\n') },
    ]);
    await wal.close();
    const c = new Committer({ store: fx.store, catalog: flaky, writer: fx.writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, tableRetryBaseMs: 60_000 });
    await expect(c.round()).rejects.toBeInstanceOf(TablesNotCommittedError);
    expect(await storedRows('mixok')).toBe(1);
    broken = false;
    vi.setSystemTime(Date.now() + 61_000);
    expect(await c.round()).toMatchObject({ segments: 1, commits: 1, rows: 1, skippedRecords: 1 });
    expect(await storedRows('mixbrk')).toBe(1);
    expect(await storedRows('mixok')).toBe(1);
    expect(await listSegments(fx.store)).toHaveLength(0);
  });
});
