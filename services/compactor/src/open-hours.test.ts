import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rename, rm } from 'node:fs/promises';
import { currentSnapshot, floeTableDef, publishDataFile, type PlannedFile, type SqlCatalog, type TableHandle } from '@floe/iceberg';
import { ColumnBatchBuilder, IdBloom, idBlocksKey, idBloomKey, readParquetFooter } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { COMPACTION_SUMMARY_KEY } from './compact.ts';
import { Compactor } from './compactor.ts';
import { allRows, appendSpanFile, createTracesTable, openFixture, spanRows, withDuck, sqlList, type Fixture } from './test-support.ts';

const HOUR_MS = 3_600_000;
const TARGET = 128 * 1024 * 1024;
const log = silentLogger();

describe('open hours: concatenated between passes, sorted once closed', () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await openFixture('pglite');
  });
  afterAll(async () => {
    await f?.close();
  });

  const live = async (dataset = 'default') => f.catalog.planFiles((await f.catalog.loadTable(`acme.${dataset}`, 'traces'))!);
  const paths = (files: PlannedFile[]) => files.map((p) => f.store.localPath(p.key)!);

  it('concatenates the flush files of the hour being written, then sorts the hour when it closes', async () => {
    const hour = Math.floor(Date.now() / HOUR_MS);
    let handle: TableHandle = await createTracesTable(f.catalog, 'acme', 'default');
    const opts = { ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: HOUR_MS, minFileAgeMs: 60_000, openHourAgeMs: 15_000 };

    // Before any full pass has visited the table, the frequent pass leaves it alone.
    handle = (await appendSpanFile(f, handle, hour, 30, 1)).handle;
    handle = (await appendSpanFile(f, handle, hour, 30, 2)).handle;
    const soon = new Compactor({ ...opts, now: () => Date.now() + 30_000 });
    expect((await soon.concatOpenHours()).groups).toBe(0);
    // A full pass at the real time: every file is seconds old, nothing is merged; the table is now known sound.
    expect((await new Compactor(opts).pass()).compaction.groups).toBe(0);

    for (let i = 3; i <= 6; i++) handle = (await appendSpanFile(f, handle, hour, 20 + i, i)).handle;
    const before = await live();
    expect(before).toHaveLength(6);
    const rowsBefore = await allRows(paths(before));
    const ids = await withDuck(async (q) => (await q(`SELECT DISTINCT trace_id FROM read_parquet(${sqlList(paths(before))})`)).map((r) => String(r[0])));

    const compactor = new Compactor({ ...opts, now: () => Date.now() + 30_000 });
    // Its full pass already concatenates: on its clock every file is 30 s old.
    await compactor.pass();
    const after = await live();
    expect(after).toHaveLength(1);
    const [merged] = after;
    expect(merged!.sortOrderId).toBe(0);
    expect(merged!.recordCount).toBe(before.reduce((a, p) => a + p.recordCount, 0));
    expect(await allRows(paths(after))).toEqual(rowsBefore);
    // Six files' row groups, copied: the file holds as many row groups as its inputs did.
    const inputGroups = (await Promise.all(paths(before).map(readParquetFooter))).reduce((n, x) => n + x.rowGroups, 0);
    expect((await readParquetFooter(paths(after)[0]!)).rowGroups).toBe(inputGroups);
    // Its id filter knows every trace id of the inputs; it has no id blocks until the hour is sorted.
    const bloom = IdBloom.decode((await f.store.get(idBloomKey(merged!.key)))!);
    for (const id of ids) expect(bloom.mayContain(id)).toBe(true);
    expect(await f.store.head(idBlocksKey(merged!.key))).toBeUndefined();
    handle = (await f.catalog.loadTable('acme.default', 'traces'))!;
    expect(JSON.parse(currentSnapshot(handle.metadata)!.summary[COMPACTION_SUMMARY_KEY]!)).toMatchObject({ hour, method: 'concat', removed: 6, added: 1 });

    // More flushes arrive: the frequent pass concatenates them (size-tiered: small beside the merged file, so apart from it).
    for (let i = 7; i <= 9; i++) handle = (await appendSpanFile(f, handle, hour, 25, i)).handle;
    const stats = await compactor.concatOpenHours();
    expect(stats).toMatchObject({ groups: 1, concatenated: 1, filesBefore: 3, filesAfter: 1, failures: 0 });
    const tiered = await live();
    expect(tiered).toHaveLength(2);
    expect(tiered.every((p) => p.sortOrderId === 0)).toBe(true);
    expect(tiered.map((p) => p.key)).toContain(merged!.key);

    // The hour closes: the next full pass sorts everything of it into one file with id blocks.
    const allBefore = await allRows(paths(tiered));
    const closed = new Compactor({ ...opts, now: () => (hour + 1) * HOUR_MS + 11 * 60_000 });
    const p = await closed.pass();
    expect(p.compaction).toMatchObject({ groups: 1, concatenated: 0, filesBefore: 2, filesAfter: 1, failures: 0 });
    const sorted = await live();
    expect(sorted).toHaveLength(1);
    expect(sorted[0]!.sortOrderId).toBe(1);
    expect(await f.store.head(idBlocksKey(sorted[0]!.key))).toBeDefined();
    expect(await allRows(paths(sorted))).toEqual(allBefore);
    // In the table's order: service, then time.
    const order = await withDuck(async (q) =>
      (await q(`SELECT bool_and(ok) FROM (SELECT (service_name, start_time_unix_nano) >= lag((service_name, start_time_unix_nano)) OVER () OR lag(service_name) OVER () IS NULL AS ok FROM read_parquet(${sqlList(paths(sorted))}))`))[0]![0],
    );
    expect(order).toBe(true);
  });

  it('concatenates only files of one Parquet schema: the writer\'s own encoder and DuckDB\'s apart', async () => {
    const hour = Math.floor(Date.now() / HOUR_MS);
    let handle: TableHandle = await createTracesTable(f.catalog, 'acme', 'mixed');
    const def = floeTableDef(handle);
    // Two flushes through the writer's own encoder (column batches) and two through DuckDB (NDJSON).
    for (const seed of [21, 22]) {
      const b = ColumnBatchBuilder.forTable(def);
      for (const line of new TextDecoder().decode(spanRows(hour, 10, seed)).trim().split('\n')) b.addRow(JSON.parse(line) as Record<string, unknown>);
      const written = await f.writer.write(def, [b.finish()]);
      const file = await publishDataFile(f.store, def, written, f.store.keyFromUri(handle.metadata.location), hour);
      await rm(written.path, { force: true });
      handle = (await f.catalog.appendFiles(handle, [file], { summary: { 'floe.writer': 'test' } })).handle;
    }
    for (const seed of [23, 24]) handle = (await appendSpanFile(f, handle, hour, 10, seed)).handle;
    const before = await live('mixed');
    expect(new Set(await Promise.all(paths(before).map(async (p) => (await readParquetFooter(p)).schemaKey))).size).toBe(2);
    const rowsBefore = await allRows(paths(before));

    const c = new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: HOUR_MS, openHourAgeMs: 15_000, now: () => Date.now() + 30_000 });
    const p = await c.pass();
    expect(p.compaction.failures).toBe(0);
    const after = await live('mixed');
    // One concatenation per schema, in one commit.
    expect(after).toHaveLength(2);
    expect(after.every((x) => x.sortOrderId === 0)).toBe(true);
    expect(p.compaction).toMatchObject({ groups: 1, concatenated: 1, filesBefore: 4, filesAfter: 2 });
    expect(await allRows(paths(after))).toEqual(rowsBefore);

    // One more DuckDB flush: it joins its schema's concatenation; the other concatenation, alone
    // with its schema, is left for the sorted tier, not offered to the next pass again.
    handle = (await appendSpanFile(f, (await f.catalog.loadTable('acme.mixed', 'traces'))!, hour, 10, 25)).handle;
    const again = await c.pass();
    expect(again.compaction).toMatchObject({ groups: 1, concatenated: 1, filesBefore: 2, filesAfter: 1, failures: 0 });
    expect(await live('mixed')).toHaveLength(2);
    const planned = (await c.plan({ tenant: 'acme', dataset: 'mixed' }))[0]!;
    expect(planned.groups).toEqual([]);
    expect((await c.pass()).compaction.groups).toBe(0);
  });

  /** The catalog as the compactor sees it, counting its table loads and plans, and failing the next `failLoads` loads. */
  function watched(catalog: SqlCatalog) {
    const counts = { loads: 0, plans: 0, failLoads: 0 };
    const wrapped = new Proxy(catalog, {
      get(target, key) {
        if (key === 'loadTable') {
          return async (namespace: string, name: string) => {
            counts.loads++;
            if (counts.failLoads > 0) {
              counts.failLoads--;
              throw new Error('metadata store unavailable');
            }
            return target.loadTable(namespace, name);
          };
        }
        if (key === 'planFiles') {
          return (handle: TableHandle) => {
            counts.plans++;
            return target.planFiles(handle);
          };
        }
        const v: unknown = Reflect.get(target, key, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    return { catalog: wrapped, counts };
  }

  /**
   * A compactor of one dataset's traces table (its share), whose clock runs `offset.ms` from the
   * real one (the commits' timestamps), with the table filled with `files` flush files of the
   * current hour and already visited by a full pass (found sound, nothing old enough to merge).
   */
  async function oneTable(dataset: string, files: number) {
    const hour = Math.floor(Date.now() / HOUR_MS);
    let handle: TableHandle = await createTracesTable(f.catalog, 'acme', dataset);
    for (let i = 1; i <= files; i++) handle = (await appendSpanFile(f, handle, hour, 30, 200 + i)).handle;
    const { catalog, counts } = watched(f.catalog);
    const offset = { ms: 0 };
    const c = new Compactor({ ...f, catalog, log, targetFileBytes: TARGET, snapshotRetentionMs: HOUR_MS, minFileAgeMs: 60_000, openHourAgeMs: 15_000, owns: (t) => t === `acme.${dataset}.traces`, now: () => Date.now() + offset.ms });
    expect((await c.pass()).compaction.groups).toBe(0);
    return { c, counts, offset, hour };
  }

  it('leaves an idle table unread while its pointer stays, and merges what the writer commits next', async () => {
    const { c, counts, offset, hour } = await oneTable('idle', 6);
    offset.ms = 30_000;
    expect(await c.concatOpenHours()).toMatchObject({ groups: 1, filesBefore: 6, filesAfter: 1, tablesLoaded: 1, tablesIdle: 0 });
    // Its own commit moved the pointer: looked at once more, nothing left.
    expect(await c.concatOpenHours()).toMatchObject({ groups: 0, tablesLoaded: 1, tablesIdle: 0 });
    counts.loads = counts.plans = 0;
    for (let i = 0; i < 3; i++) expect(await c.concatOpenHours()).toMatchObject({ groups: 0, tablesLoaded: 0, tablesIdle: 1, failures: 0 });
    expect(counts).toMatchObject({ loads: 0, plans: 0 });

    // The writer commits three flushes: the next pass reads the table again and concatenates them.
    let handle = (await f.catalog.loadTable('acme.idle', 'traces'))!;
    for (let i = 1; i <= 3; i++) handle = (await appendSpanFile(f, handle, hour, 20, 300 + i)).handle;
    expect(await c.concatOpenHours()).toMatchObject({ groups: 1, filesBefore: 3, filesAfter: 1, tablesLoaded: 1, tablesIdle: 0 });
    expect(await live('idle')).toHaveLength(2);
    expect(counts).toMatchObject({ loads: 1, plans: 1 });
  });

  it('comes back to a table whose files were too young once they are old enough, with no commit in between', async () => {
    const { c, offset } = await oneTable('young', 4);
    // A clock a minute behind the commits: the files are too young for a while yet.
    offset.ms = -60_000;
    expect(await c.concatOpenHours()).toMatchObject({ groups: 0, tablesLoaded: 1 });
    expect(await c.concatOpenHours()).toMatchObject({ groups: 0, tablesLoaded: 0, tablesIdle: 1 });
    const pointer = (await f.catalog.loadTable('acme.young', 'traces'))!.metadataLocation;
    // Time passes, nobody commits: the files come of age and are merged.
    offset.ms = 30_000;
    expect(await c.concatOpenHours()).toMatchObject({ groups: 1, filesBefore: 4, filesAfter: 1, tablesLoaded: 1, tablesIdle: 0 });
    expect((await f.catalog.loadTable('acme.young', 'traces'))!.metadataLocation).not.toBe(pointer);
    expect(await live('young')).toHaveLength(1);
  });

  it('retries a table whose visit failed, at every pass until it succeeds', async () => {
    const { c, counts, offset } = await oneTable('flaky', 4);
    offset.ms = 30_000;
    // The table cannot be loaded: a failure, and no memory of it.
    counts.failLoads = 1;
    expect(await c.concatOpenHours()).toMatchObject({ groups: 0, failures: 1, tablesLoaded: 0, tablesIdle: 0 });
    // A data file is missing: the group fails, and the table is read again next time, unchanged as it is.
    const [first] = await live('flaky');
    const path = f.store.localPath(first!.key)!;
    await rename(path, `${path}.away`);
    for (let i = 0; i < 2; i++) expect(await c.concatOpenHours()).toMatchObject({ groups: 0, failures: 1, tablesLoaded: 1, tablesIdle: 0 });
    await rename(`${path}.away`, path);
    expect(await c.concatOpenHours()).toMatchObject({ groups: 1, filesBefore: 4, filesAfter: 1, failures: 0, tablesLoaded: 1 });
    expect(await live('flaky')).toHaveLength(1);
  });
});
