import { randomUUID } from 'node:crypto';
import { utimes } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentSnapshot, dataFileSidecars, type PlannedFile, type TableHandle } from '@floe/iceberg';
import { tableDef } from '@floe/schema';
import { IdBlocksIndex, IdBloom, idBlocksKey, idBloomKey, readIdPayload } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { COMPACTION_SUMMARY_KEY, compactTable } from './compact.ts';
import { Compactor } from './compactor.ts';
import type { DeleteRequest } from '@floe/meta';
import { allRows, appendSpanFile, createTracesTable, openFixture, withDuck, type Fixture } from './test-support.ts';

const def = tableDef('traces');
const HOUR_MS = 3_600_000;
const TARGET = 128 * 1024 * 1024;
const byHour = (files: PlannedFile[]) => {
  const m = new Map<number, PlannedFile[]>();
  for (const f of files) {
    const h = f.partition.timestamp_hour as number;
    m.set(h, [...(m.get(h) ?? []), f]);
  }
  return m;
};

/** Sets an object's modification time, as if it had been written `agoMs` before now. */
async function age(f: Fixture, key: string, agoMs: number): Promise<void> {
  const t = new Date(Date.now() - agoMs);
  await utimes(f.store.localPath(key)!, t, t);
}

describe.each(['pglite', 'pg'] as const)('a compaction pass (%s catalog, fs store)', (kind) => {
  let f: Fixture;
  const log = silentLogger();
  // Hours well in the past: any hour works, the partition value is what matters.
  const h1 = Math.floor(Date.now() / HOUR_MS) - 30;
  const h2 = h1 + 1;
  const h3 = h1 + 2;

  beforeAll(async () => {
    f = await openFixture(kind);
  });
  afterAll(async () => {
    await f?.close();
  });

  it('merges each hour into one file with the same rows, expires the old snapshots and sweeps orphans', async () => {
    let handle: TableHandle = await createTracesTable(f.catalog, 'acme', 'default');
    // A short metadata log, so that old metadata files fall out of it; with deletion of dropped
    // versions turned off (as a table of another engine may have it), only the sweep takes them.
    handle = await f.catalog.setProperties(handle, { 'write.metadata.previous-versions-max': '3', 'write.metadata.delete-after-commit.enabled': 'false' });
    const added: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await appendSpanFile(f, handle, h1, 20 + i * 3, 100 + i);
      handle = r.handle;
      added.push(r.key);
    }
    for (let i = 0; i < 3; i++) {
      const r = await appendSpanFile(f, handle, h2, 15 + i, 200 + i);
      handle = r.handle;
      added.push(r.key);
    }
    // One lone file: nothing to merge it with, so it must survive untouched (and its old
    // manifest, still referenced, must survive the sweep).
    const lone = await appendSpanFile(f, handle, h3, 12, 300);
    handle = lone.handle;

    const before = await f.catalog.planFiles(handle);
    expect(before).toHaveLength(14);
    const paths = (files: PlannedFile[]) => files.map((p) => f.store.localPath(p.key)!);
    const rowsBefore = await allRows(paths(before));
    const recordsBefore = before.reduce((a, p) => a + p.recordCount, 0);
    expect(rowsBefore).toHaveLength(recordsBefore);

    // Pass 1 at the real time: every file was committed seconds ago, so nothing is merged yet
    // (the writer is still appending to such partitions).
    const fresh = new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: HOUR_MS });
    const p1 = await fresh.pass();
    expect(p1.tables).toBe(1);
    expect(p1.compaction.groups).toBe(0);
    expect(p1.expiry.snapshots).toBe(0);
    expect(p1.orphans).toEqual({ data: 0, metadata: 0 });
    expect(await f.catalog.planFiles((await f.catalog.loadTable('acme.default', 'traces'))!)).toHaveLength(14);

    // Orphans: an old Parquet file with its id filter (an upload whose commit never happened),
    // a young one (a commit may still be on its way), an old stray manifest (a lost commit
    // attempt). Everything else of the table is made two hours old too, so that only the
    // references, not the ages, keep live files, id filters, manifests and metadata.
    const loc = f.store.keyFromUri(handle.metadata.location);
    const oldOrphan = `${loc}/data/timestamp_hour=${h1}/${randomUUID()}.parquet`;
    const youngOrphan = `${loc}/data/timestamp_hour=${h1}/${randomUUID()}.parquet`;
    const strayManifest = `${loc}/metadata/${randomUUID()}-m0.avro`;
    for (const k of [oldOrphan, ...dataFileSidecars(oldOrphan), strayManifest]) await f.store.put(k, new Uint8Array([1, 2, 3]));
    const oldMetadata = (await f.store.list(`${loc}/metadata/`)).map((o) => o.key);
    for (const o of await f.store.list(`${loc}/`)) await age(f, o.key, 2 * HOUR_MS);
    await f.store.put(youngOrphan, new Uint8Array([1, 2, 3]));

    // Pass 2, two minutes later, with no snapshot retention: files are old enough to merge.
    const later = new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: 0, now: () => Date.now() + 2 * 60_000 });
    const p2 = await later.pass();
    expect(p2.compaction).toMatchObject({ groups: 2, partitions: 2, filesBefore: 13, filesAfter: 2, conflicts: 0, failures: 0 });
    expect(p2.compaction.rows).toBe(recordsBefore - 12);
    expect(p2.failedTables).toBe(0);

    handle = (await f.catalog.loadTable('acme.default', 'traces'))!;
    const after = await f.catalog.planFiles(handle);
    const hours = byHour(after);
    expect(hours.get(h1)).toHaveLength(1);
    expect(hours.get(h2)).toHaveLength(1);
    expect(hours.get(h3)!.map((p) => p.key)).toEqual([lone.key]);
    expect(after.reduce((a, p) => a + p.recordCount, 0)).toBe(recordsBefore);
    // The same rows, column for column.
    expect(await allRows(paths(after))).toEqual(rowsBefore);

    // The compaction commits are Iceberg replaces that say what they did.
    const summaries = f.catalog.snapshotSummaries(handle);
    expect(summaries).toHaveLength(1); // everything older expired (retention 0, retain last 1)
    expect(currentSnapshot(handle.metadata)!.summary.operation).toBe('replace');
    expect(JSON.parse(summaries[0]!.summary[COMPACTION_SUMMARY_KEY]!)).toMatchObject({ removed: 3, added: 1 });
    expect(p2.expiry.snapshots).toBeGreaterThanOrEqual(15);
    expect(p2.expiry.dataFiles).toBe(13);

    const merged = after.filter((p) => p.key !== lone.key);
    for (const file of merged) {
      // Field ids on every column and on map keys and values.
      const schema = await withDuck((q) => q(`SELECT name, field_id FROM parquet_schema('${f.store.localPath(file.key)}') WHERE field_id IS NOT NULL`));
      const ids = new Map(schema.map((r) => [String(r[0]), Number(r[1])]));
      for (const c of def.columns) expect(ids.get(c.name), c.name).toBe(c.id);
      expect(ids.get('key')).toBeDefined();
      // Canonical order inside the file, and time bounds on the manifest entry.
      const ordered = await withDuck((q) =>
        q(
          `SELECT bool_and(coalesce(prev_service < service_name OR (prev_service = service_name AND prev_start <= start_time_unix_nano), true)) FROM (
             SELECT service_name, start_time_unix_nano,
                    lag(service_name) OVER w AS prev_service, lag(start_time_unix_nano) OVER w AS prev_start
               FROM read_parquet('${f.store.localPath(file.key)}', file_row_number = true)
             WINDOW w AS (ORDER BY file_row_number))`,
        ),
      );
      expect(ordered[0]![0]).toBe(true);
      expect(file.lowerBounds[1]).toBeDefined();
      expect(file.upperBounds[8]).toBeDefined();
      // The id filter beside it admits every trace id of the file.
      const bloom = IdBloom.decode((await f.store.get(idBloomKey(file.key)))!);
      const ids2 = await withDuck((q) => q(`SELECT DISTINCT trace_id FROM read_parquet('${f.store.localPath(file.key)}')`));
      expect(ids2.length).toBeGreaterThan(0);
      for (const [id] of ids2) expect(bloom.mayContain(String(id))).toBe(true);
      // Its id blocks hold every row of every trace, under the trace's id.
      const blocks = (await IdBlocksIndex.load(f.store, idBlocksKey(file.key)))!;
      const counts = await withDuck((q) => q(`SELECT trace_id, count(*)::INTEGER, to_json(list(span_id ORDER BY span_id))::VARCHAR FROM read_parquet('${f.store.localPath(file.key)}') GROUP BY 1`));
      const columns = (blocks.meta as { columns: string[] }).columns;
      for (const [id, n, spanIds] of counts) {
        const { payload } = await readIdPayload(f.store, idBlocksKey(file.key), blocks, String(id));
        const rows = JSON.parse(payload!) as unknown[][];
        expect(rows).toHaveLength(Number(n));
        const spanCol = columns.indexOf('span_id');
        expect(rows.map((r) => r[spanCol]).sort()).toEqual(JSON.parse(String(spanIds)));
      }
      expect((await readIdPayload(f.store, idBlocksKey(file.key), blocks, 'f'.repeat(32))).payload).toBeUndefined();
    }
    // Removed files and their id filters went with the expired snapshots.
    for (const k of added) {
      expect(await f.store.head(k)).toBeUndefined();
      for (const sidecar of dataFileSidecars(k)) expect(await f.store.head(sidecar)).toBeUndefined();
    }

    // The sweep: the old orphan and its filter and the stray manifest are gone, the young one
    // stays; the data area holds exactly the live files, their filters and the young orphan.
    expect(p2.orphans).toEqual({ data: 3, metadata: expect.any(Number) });
    expect(await f.store.head(strayManifest)).toBeUndefined();
    const dataKeys = (await f.store.list(`${loc}/data/`)).map((o) => o.key).sort();
    // Merged files carry id blocks; the lone file the writer flushed has only its filter.
    const sidecars = (key: string) => (key === lone.key ? [idBloomKey(key)] : dataFileSidecars(key));
    expect(dataKeys).toEqual([...after.flatMap((p) => [p.key, ...sidecars(p.key)]), youngOrphan].sort());
    // Old metadata files outside the log are gone; what is left is current, in the log, or new.
    const logged = new Set([handle.metadataLocation, ...handle.metadata['metadata-log'].map((e) => e['metadata-file'])].map((u) => f.store.keyFromUri(u)));
    const jsonLeft = (await f.store.list(`${loc}/metadata/`)).map((o) => o.key).filter((k) => k.endsWith('.metadata.json'));
    for (const k of jsonLeft) expect(logged.has(k) || !oldMetadata.includes(k), k).toBe(true);
    for (const k of logged) expect(jsonLeft, k).toContain(k);
    expect([...logged].some((k) => oldMetadata.includes(k))).toBe(true);
    expect(jsonLeft.filter((k) => oldMetadata.includes(k)).length).toBeLessThanOrEqual(3);
    expect(p2.orphans.metadata).toBeGreaterThan(1);

    // The table still reads whole from a fresh catalog (no cached manifests).
    const { SqlCatalog } = await import('@floe/iceberg');
    const cold = new SqlCatalog(f.db, f.store, { catalogName: 'floe', warehouseKeyPrefix: 'warehouse' });
    const coldFiles = await cold.planFiles((await cold.loadTable('acme.default', 'traces'))!);
    expect(await allRows(paths(coldFiles))).toEqual(rowsBefore);

    // A further pass has nothing left to do.
    const p3 = await later.pass();
    expect(p3.compaction.groups).toBe(0);
    expect(p3.orphans).toEqual({ data: 0, metadata: 0 });
  });

  it('sets the table\'s target file size from its own setting, in one commit and only when it differs', async () => {
    let handle = await createTracesTable(f.catalog, 'acme', 'target');
    handle = (await appendSpanFile(f, handle, h1, 5, 800)).handle;
    // Left out at creation (spec 2): compaction owns it.
    expect(handle.metadata.properties['write.target-file-size-bytes']).toBeUndefined();
    // Nothing else to do in these passes (files too young, snapshots within retention), so every
    // commit seen is the property's.
    const compactor = (target: number) => new Compactor({ ...f, log, targetFileBytes: target, snapshotRetentionMs: HOUR_MS, minFileAgeMs: HOUR_MS });
    const load = async () => (await f.catalog.loadTable('acme.target', 'traces'))!;
    const versions = (h: TableHandle) => h.metadata['metadata-log'].length;

    const first = await compactor(TARGET).pass(undefined, { tenant: 'acme', dataset: 'target' });
    const set = await load();
    expect(set.metadata.properties['write.target-file-size-bytes']).toBe(String(TARGET));
    expect(versions(set)).toBe(versions(handle) + 1);
    expect(first.tablesChanged).toBe(1);

    const again = await compactor(TARGET).pass(undefined, { tenant: 'acme', dataset: 'target' });
    expect((await load()).metadataLocation).toBe(set.metadataLocation);
    expect(again.tablesChanged).toBe(0);

    // compactor.target_file_size_mb changed: the next pass says so, once.
    await compactor(64 * 1024 * 1024).pass(undefined, { tenant: 'acme', dataset: 'target' });
    const changed = await load();
    expect(changed.metadata.properties['write.target-file-size-bytes']).toBe(String(64 * 1024 * 1024));
    expect(versions(changed)).toBe(versions(set) + 1);
    // The rest of the table is untouched.
    expect(f.catalog.snapshotSummaries(changed)).toHaveLength(1);
  });

  it('deletes the metadata versions the log dropped when the table asks for it, young or not', async () => {
    const jsonFiles = async (loc: string) => (await f.store.list(`${loc}/metadata/`)).map((o) => o.key).filter((k) => k.endsWith('.metadata.json')).sort();
    const logged = (h: TableHandle) => [h.metadataLocation, ...h.metadata['metadata-log'].map((e) => e['metadata-file'])].map((u) => f.store.keyFromUri(u)).sort();
    const run = () => new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: HOUR_MS, minFileAgeMs: HOUR_MS }).pass(undefined, { tenant: 'prune' });

    // Created as ingest creates it: deletion asked for, 20 versions kept.
    let asks = await createTracesTable(f.catalog, 'prune', 'asks');
    expect(asks.metadata.properties).toMatchObject({ 'write.metadata.delete-after-commit.enabled': 'true', 'write.metadata.previous-versions-max': '20' });
    asks = await f.catalog.setProperties(asks, { 'write.metadata.previous-versions-max': '3' });
    let keeps = await createTracesTable(f.catalog, 'prune', 'keeps');
    keeps = await f.catalog.setProperties(keeps, { 'write.metadata.previous-versions-max': '3', 'write.metadata.delete-after-commit.enabled': 'false' });
    for (let i = 0; i < 6; i++) {
      asks = (await appendSpanFile(f, asks, h1, 3, 900 + i)).handle;
      keeps = (await appendSpanFile(f, keeps, h1, 3, 950 + i)).handle;
    }
    const asksLoc = f.store.keyFromUri(asks.metadata.location);
    const keepsLoc = f.store.keyFromUri(keeps.metadata.location);
    expect((await jsonFiles(asksLoc)).length).toBeGreaterThan(logged(asks).length);

    const s = await run();
    // Everything is seconds old, so the orphan sweep takes none of it.
    expect(s.orphans.metadata).toBe(0);
    const asksNow = (await f.catalog.loadTable('prune.asks', 'traces'))!;
    expect(await jsonFiles(asksLoc)).toEqual(logged(asksNow));
    expect(s.expiry.metadataFiles).toBeGreaterThanOrEqual(5);
    const keepsNow = (await f.catalog.loadTable('prune.keeps', 'traces'))!;
    expect((await jsonFiles(keepsLoc)).length).toBeGreaterThan(logged(keepsNow).length);
    // The table still reads.
    expect(await f.catalog.planFiles(asksNow)).toHaveLength(6);
  });

  it('abandons a group whose input is no longer live and deletes its upload', async () => {
    let handle = await createTracesTable(f.catalog, 'acme', 'conflict');
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await appendSpanFile(f, handle, h1, 10, 400 + i);
      handle = r.handle;
      keys.push(r.key);
    }
    const loc = f.store.keyFromUri(handle.metadata.location);
    const stale = handle;
    // Someone else (retention, another compactor) removes one of the inputs first.
    await f.catalog.replaceFiles(handle, { remove: [keys[0]!], add: [], operation: 'delete' });
    const listed = (await f.store.list(`${loc}/data/`)).map((o) => o.key);

    const res = await compactTable({ ...f, log }, stale, { targetFileBytes: TARGET, minFileAgeMs: 0, nowMs: Date.now() + 1000 });
    expect(res.stats).toMatchObject({ groups: 0, conflicts: 1, failures: 0 });
    expect((await f.store.list(`${loc}/data/`)).map((o) => o.key)).toEqual(listed);
    const live = await f.catalog.planFiles((await f.catalog.loadTable('acme.conflict', 'traces'))!);
    expect(live.map((p) => p.key).sort()).toEqual(keys.slice(1).sort());
  });

  it('keeps snapshots that consumed WAL segments the writer has not deleted yet', async () => {
    let handle = await createTracesTable(f.catalog, 'acme', 'wal');
    for (let i = 0; i < 2; i++) handle = (await appendSpanFile(f, handle, h1, 5, 500 + i)).handle;
    // A segment older than both commits is still in the WAL: a replay would consult these
    // snapshots' ledgers, so they must not expire, whatever the retention says.
    const segment = `wal/${String(Date.now() - 60_000).padStart(15, '0')}-acc-1-${'1'.padStart(10, '0')}.wal`;
    await f.store.put(segment, new Uint8Array([0]));
    try {
      const c = new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: 0, minFileAgeMs: HOUR_MS });
      await c.pass();
      expect(f.catalog.snapshotSummaries((await f.catalog.loadTable('acme.wal', 'traces'))!)).toHaveLength(2);
    } finally {
      await f.store.delete(segment);
    }
    const c = new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: 0, minFileAgeMs: HOUR_MS });
    await c.pass();
    expect(f.catalog.snapshotSummaries((await f.catalog.loadTable('acme.wal', 'traces'))!)).toHaveLength(1);
  });

  it('a WAL segment older than writer.wal_marker_retention no longer holds expiry back', async () => {
    let handle = await createTracesTable(f.catalog, 'acme', 'stuck');
    for (let i = 0; i < 2; i++) handle = (await appendSpanFile(f, handle, h1, 5, 600 + i)).handle;
    // Stuck for a minute, with markers kept 30 s: the writer would set it aside, not commit it.
    const segment = `wal/${String(Date.now() - 60_000).padStart(15, '0')}-acc-1-${'2'.padStart(10, '0')}.wal`;
    await f.store.put(segment, new Uint8Array([0]));
    try {
      const c = new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: 0, markerRetentionMs: 30_000, minFileAgeMs: HOUR_MS });
      await c.pass();
      expect(f.catalog.snapshotSummaries((await f.catalog.loadTable('acme.stuck', 'traces'))!)).toHaveLength(1);
    } finally {
      await f.store.delete(segment);
    }
  });

  it('compacts every table and survives a table whose files are damaged', async () => {
    let a = await createTracesTable(f.catalog, 'beta', 'default');
    let b = await createTracesTable(f.catalog, 'gamma', 'default');
    const bKeys: string[] = [];
    for (let i = 0; i < 2; i++) {
      a = (await appendSpanFile(f, a, h2, 8, 600 + i)).handle;
      const r = await appendSpanFile(f, b, h2, 8, 700 + i);
      b = r.handle;
      bKeys.push(r.key);
    }
    // One of gamma's inputs is lost from storage: its group fails, beta's still commits.
    await f.store.delete(bKeys[0]!);
    const c = new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: HOUR_MS, minFileAgeMs: 0 });
    const s = await c.pass();
    expect(s.compaction.failures).toBe(1);
    expect(byHour(await f.catalog.planFiles((await f.catalog.loadTable('beta.default', 'traces'))!)).get(h2)).toHaveLength(1);
    expect(await f.catalog.planFiles((await f.catalog.loadTable('gamma.default', 'traces'))!)).toHaveLength(2);
    // Nothing half-written stays behind in gamma's data area.
    const gammaData = (await f.store.list(`${f.store.keyFromUri(b.metadata.location)}/data/`)).map((o) => o.key);
    expect(gammaData.filter((k) => k.endsWith('.parquet'))).toEqual([bKeys[1]]);
  });

  it('a periodic pass visits only the compactor’s share of the tables; an on-demand pass every table of its scope', async () => {
    let mine = await createTracesTable(f.catalog, 'share-a', 'default');
    let theirs = await createTracesTable(f.catalog, 'share-b', 'default');
    for (let i = 0; i < 2; i++) {
      mine = (await appendSpanFile(f, mine, h3, 8, 800 + i)).handle;
      theirs = (await appendSpanFile(f, theirs, h3, 8, 900 + i)).handle;
    }
    const visited: string[] = [];
    const owns = (table: string) => {
      visited.push(table);
      return table === 'share-a.default.traces';
    };
    const c = new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: HOUR_MS, minFileAgeMs: 0, owns });
    const files = async (ns: string) => (await f.catalog.planFiles((await f.catalog.loadTable(ns, 'traces'))!)).length;
    const periodic = await c.pass(undefined, { table: 'traces' });
    expect(visited).toContain('share-a.default.traces');
    expect(visited).toContain('share-b.default.traces');
    expect(await files('share-a.default')).toBe(1);
    expect(await files('share-b.default')).toBe(2);
    expect(periodic.compaction.groups).toBeGreaterThanOrEqual(1);
    // Delete requests too: a periodic pass takes up only those of its tables.
    const started: string[] = [];
    const request = (id: string, tenantId: string) => ({ id, tenantId, datasetId: 'default', table: 'traces' }) as unknown as DeleteRequest;
    const queue = {
      due: async () => [request('req-a', 'share-a'), request('req-b', 'share-b')],
      start: async (id: string) => (started.push(id), false),
      finish: async () => {},
    };
    await new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: HOUR_MS, owns, deleteRequests: queue }).pass();
    expect(started).toEqual(['req-a']);
    const onDemand = await c.pass(undefined, { tenant: 'share-b' }, true);
    expect(onDemand.tables).toBe(1);
    expect(onDemand.compaction.groups).toBe(1);
    expect(await files('share-b.default')).toBe(1);
  });
});
