import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { currentSnapshot, DataFileContent, decodeManifestList, encodeManifest, encodeManifestList, ManifestContent, ManifestEntryStatus, metadataVersion, openFloeCatalog, type TableHandle } from '@floe/iceberg';
import type { ObjectStore } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { Compactor } from './compactor.ts';
import { checkTables, type CheckReport } from './table-check.ts';
import { DROP_DAMAGED_SUMMARY_KEY, dropDamagedFiles, parseDropDamagedRequest } from './table-drop-damaged.ts';
import { DATA_HOUR, HOUR_MS, refusal, tableHelpers } from './table-fixture.ts';
import { parseRollbackRequest, rollbackTable, type RollbackAnswer } from './table-rollback.ts';
import { allRows, appendSpanFile, openFixture, sqlList, withDuck, type Fixture } from './test-support.ts';

describe.each(['pglite', 'pg'] as const)('checking and rolling back tables (%s catalog, fs store)', (kind) => {
  let f: Fixture;

  beforeAll(async () => {
    f = await openFixture(kind);
  });
  afterAll(async () => {
    await f?.close();
  });

  const { table, key, damage, pointer, appendBatchFile, flipInPage } = tableHelpers(() => f);
  const rollback = (tenant: string, more: Record<string, unknown> = {}, store: ObjectStore = f.store) => rollbackTable(f.catalog, store, parseRollbackRequest({ tenant, dataset: 'default', table: 'traces', ...more }));
  const dropDamaged = async (tenant: string, more: Record<string, unknown> = {}) => dropDamagedFiles(f.catalog, f.store, parseDropDamagedRequest({ tenant, dataset: 'default', table: 'traces', ...more }));
  /** Cuts the end off a data file, as an upload that stopped short. */
  const truncate = async (key: string) => {
    const bytes = (await f.store.get(key))!;
    await f.store.put(key, bytes.subarray(0, bytes.length - 100));
    return bytes.length;
  };

  it('reports a sound table ok, and a damaged current metadata, a missing manifest and a missing data file each as its problem', async () => {
    const sound = await table('chk-ok', 2);
    const unparseable = await table('chk-json', 2);
    await damage(unparseable.versions[2]!);
    const noManifest = await table('chk-manifest', 2);
    const current = noManifest.versions[2]!;
    const manifests = decodeManifestList((await f.store.get(f.store.keyFromUri(currentSnapshot(current.metadata)!['manifest-list'])))!).map((m) => f.store.keyFromUri(m.manifestPath));
    expect(manifests).toHaveLength(2);
    await f.store.delete(manifests[1]!);
    const noData = await table('chk-data', 3);
    await f.store.delete(noData.data[1]!);

    const all = await checkTables(f.catalog, f.store);
    const byTenant = (t: string) => all.tables.find((c) => c.table === `${t}.default.traces`)!;
    expect(all).toMatchObject({ tables_checked: 4, ok: 1, damaged: 3 });
    expect(byTenant('chk-ok')).toEqual({ table: 'chk-ok.default.traces', status: 'ok', metadata_location: sound.versions[2]!.metadataLocation, problems: [] });
    expect(byTenant('chk-json')).toEqual({
      table: 'chk-json.default.traces',
      status: 'damaged',
      metadata_location: unparseable.versions[2]!.metadataLocation,
      problems: [{ kind: 'metadata_unparseable', message: expect.stringMatching(/^metadata file .*\/metadata\/00002-.*\.metadata\.json does not parse: table metadata is not valid JSON \(.+\)$/), keys: [key(unparseable.versions[2]!)] }],
    });
    expect(byTenant('chk-manifest').problems).toEqual([
      { kind: 'manifests_missing', message: `1 manifests of the current snapshot are missing, first: ${manifests[1]}`, count: 1, keys: [manifests[1]] },
    ]);
    expect(byTenant('chk-data').problems).toEqual([{ kind: 'data_files_missing', message: `1 data files of the current snapshot are missing, first: ${noData.data[1]}`, count: 1, keys: [noData.data[1]] }]);

    // The scope of /ops/compact; a missing current metadata file is a problem of its own.
    await f.store.delete(key(sound.versions[2]!));
    expect(await checkTables(f.catalog, f.store, { tenant: 'chk-ok', table: 'traces' })).toEqual({
      tables_checked: 1,
      ok: 0,
      damaged: 1,
      tables: [{ table: 'chk-ok.default.traces', status: 'damaged', metadata_location: sound.versions[2]!.metadataLocation, problems: [{ kind: 'metadata_missing', message: `metadata file ${key(sound.versions[2]!)} is missing`, keys: [key(sound.versions[2]!)] }] }],
    });
  });

  it('rolls back to the newest sound version: a dry run changes nothing, the rollback swaps the pointer and the table takes commits again', async () => {
    // v3 does not parse, v2 lacks a data file (the one its append added), v1 is sound.
    const t = await table('rb-auto', 3);
    await damage(t.versions[3]!);
    await f.store.delete(t.data[1]!);
    const v3 = t.versions[3]!.metadataLocation;
    const v2 = t.versions[2]!.metadataLocation;
    const v1 = t.versions[1]!.metadataLocation;
    const appended2 = currentSnapshot(t.versions[2]!.metadata)!;

    const expected = (dryRun: boolean): RollbackAnswer => ({
      table: 'rb-auto.default.traces',
      dry_run: dryRun,
      rolled_back: !dryRun,
      previous_metadata_location: v3,
      metadata_location: v1,
      // v1's content as a new version, numbered above every other: version numbers never go back.
      new_metadata_location: dryRun ? null : expect.stringMatching(/\/metadata\/00004-[^/]+\.metadata\.json$/),
      chosen: { version: 1, snapshot_id: String(t.versions[1]!.metadata['current-snapshot-id']), problems: [] },
      given_up: [
        { metadata_location: v3, version: 3, parses: false, problems: [expect.objectContaining({ kind: 'metadata_unparseable' })], snapshots: [] },
        {
          metadata_location: v2,
          version: 2,
          parses: true,
          problems: [expect.objectContaining({ kind: 'data_files_missing', count: 1, keys: [t.data[1]] })],
          snapshots: [{ snapshot_id: String(appended2['snapshot-id']), operation: 'append', timestamp_ms: appended2['timestamp-ms'], added_records: 10, deleted_records: 0 }],
        },
      ],
      records_given_up: 10,
      note: dryRun ? expect.stringMatching(/^Dry run: nothing changed\./) : expect.stringContaining("the compactor's orphan sweep deletes each once it is 60 minutes old"),
    });
    expect(await rollback('rb-auto', { dry_run: true })).toEqual(expected(true));
    expect(await pointer('rb-auto')).toBe(v3);

    const done = await rollback('rb-auto');
    expect(done).toEqual(expected(false));
    const v4 = done.new_metadata_location!;
    expect(await pointer('rb-auto')).toBe(v4);
    expect((await checkTables(f.catalog, f.store, { tenant: 'rb-auto' })).tables[0]).toMatchObject({ status: 'ok', metadata_location: v4 });
    const restored = (await f.catalog.loadTable('rb-auto.default', 'traces'))!;
    expect(restored.metadata.snapshots).toEqual(t.versions[1]!.metadata.snapshots);
    expect(restored.metadata['metadata-log'].at(-1)!['metadata-file']).toBe(v1);
    const healed = (await f.catalog.loadTable('rb-auto.default', 'traces'))!;
    const next = await appendSpanFile(f, healed, DATA_HOUR, 7, 999);
    expect((await f.catalog.planFiles(next.handle)).map((p) => p.key).sort()).toEqual([t.data[0]!, next.key].sort());
    // Again: the table is sound, so nothing is chosen but its current version.
    const again = await rollback('rb-auto');
    expect(again).toMatchObject({ rolled_back: false, metadata_location: next.handle.metadataLocation, given_up: [] });

    // As the answer says: the orphan sweep takes what only the given-up versions referenced (here
    // at once, the minimum age set to 0), and nothing the table still reads.
    await new Compactor({ ...f, log: silentLogger(), targetFileBytes: 1 << 27, snapshotRetentionMs: HOUR_MS, orphanMinAgeMs: 0 }).pass(undefined, { tenant: 'rb-auto' });
    const left = new Set((await f.store.list(key(t.versions[0]!).replace(/metadata\/[^/]+$/, ''))).map((o) => o.key));
    expect([key(t.versions[3]!), key(t.versions[2]!), t.data[2]!].filter((k) => left.has(k))).toEqual([]);
    expect([key(t.versions[1]!), key(next.handle), t.data[0]!, next.key].filter((k) => !left.has(k))).toEqual([]);
  });

  it('rolls back to the version the damaged one was committed on, not to a lost commit attempt of the same number', async () => {
    const t = await table('rb-parent', 2);
    const v1 = t.versions[1]!;
    // Another committer's attempt at version 1 that lost its swap, written after the winner: as
    // sound as it, and newer, so only the catalog row (v2 was committed on v1) tells them apart.
    const lostKey = key(v1).replace(/00001-[^/]+$/, '00001-00000000-0000-4000-8000-000000000000.metadata.json');
    await new Promise((r) => setTimeout(r, 20));
    await f.store.put(lostKey, (await f.store.get(key(v1)))!);
    await damage(t.versions[2]!);
    const answer = await rollback('rb-parent', { dry_run: true });
    expect(answer.metadata_location).toBe(v1.metadataLocation);
    expect(answer.given_up.map((g) => g.metadata_location)).toEqual([t.versions[2]!.metadataLocation]);
  });

  it('names a catalog behind its files (restored from an older backup), keeps the orphan sweep off the newer files, and rolls forward', async () => {
    const t = await table('rb-behind', 3);
    // The metadata DB restored from a backup taken at version 1; the bucket holds versions 2 and 3.
    await f.db.query(`UPDATE iceberg_tables SET metadata_location = $1 WHERE table_namespace = 'rb-behind.default' AND table_name = 'traces'`, [t.versions[1]!.metadataLocation]);
    const checked = (await checkTables(f.catalog, f.store, { tenant: 'rb-behind' })).tables[0]!;
    expect(checked).toMatchObject({ status: 'damaged', metadata_location: t.versions[1]!.metadataLocation });
    expect(checked.problems).toEqual([expect.objectContaining({ kind: 'catalog_behind_files', count: 1, keys: [key(t.versions[3]!)] })]);

    const sweep = () => new Compactor({ ...f, log: silentLogger(), targetFileBytes: 1 << 27, snapshotRetentionMs: HOUR_MS, orphanMinAgeMs: 0, minFileAgeMs: HOUR_MS }).pass(undefined, { tenant: 'rb-behind' });
    // The table fails its pass: nothing committed on the old pointer, nothing swept.
    expect(await sweep()).toMatchObject({ tables: 1, failedTables: 1, orphans: { data: 0, metadata: 0 } });
    expect(await pointer('rb-behind')).toBe(t.versions[1]!.metadataLocation);
    const all = [key(t.versions[2]!), key(t.versions[3]!), ...t.data];
    const present = async () => new Set((await f.store.list(key(t.versions[0]!).replace(/metadata\/[^/]+$/, ''))).map((o) => o.key));
    let left = await present();
    expect(all.filter((k) => !left.has(k))).toEqual([]);

    const forward = await rollback('rb-behind', { metadata_location: t.versions[3]!.metadataLocation });
    expect(forward).toMatchObject({ rolled_back: true, metadata_location: t.versions[3]!.metadataLocation, new_metadata_location: expect.stringMatching(/\/metadata\/00004-/) });
    const healed = (await f.catalog.loadTable('rb-behind.default', 'traces'))!;
    expect((await f.catalog.planFiles(healed)).map((p) => p.key).sort()).toEqual([...t.data].sort());
    expect((await checkTables(f.catalog, f.store, { tenant: 'rb-behind' })).tables[0]).toMatchObject({ status: 'ok', problems: [] });
    expect(await sweep()).toMatchObject({ tables: 1, failedTables: 0 });
    left = await present();
    expect(t.data.filter((k) => !left.has(k))).toEqual([]);
  });

  it('refuses an unknown table (404), a location outside the table or that does not parse (400), and a pointer that moved meanwhile (409)', async () => {
    const t = await table('rb-bad', 2);
    const other = await table('rb-other', 1);
    expect(await refusal(rollback('rb-none'))).toEqual({ kind: 'not_found', message: 'no table rb-none.default.traces' });
    const outside = [
      other.versions[1]!.metadataLocation,
      t.data[0]!,
      `${key(t.versions[1]!).replace(/\/metadata\/.*$/, '/metadata/../../rb-other/metadata/')}${key(other.versions[1]!).split('/').at(-1)}`,
      'file:///etc/passwd',
    ];
    for (const to of outside) expect((await refusal(rollback('rb-bad', { metadata_location: to }))).kind).toBe('bad_data');
    expect(await refusal(rollback('rb-bad', { metadata_location: other.versions[1]!.metadataLocation }))).toEqual({
      kind: 'bad_data',
      message: `metadata_location ${other.versions[1]!.metadataLocation} is not a metadata file of rb-bad.default.traces (a *.metadata.json directly under ${key(t.versions[0]!).replace(/[^/]+$/, '')})`,
    });
    await damage(t.versions[1]!);
    expect(await refusal(rollback('rb-bad', { metadata_location: t.versions[1]!.metadataLocation }))).toEqual({
      kind: 'bad_data',
      message: expect.stringMatching(/^metadata_location .* cannot be used: metadata file .* does not parse: table metadata is not valid JSON/),
    });
    expect(await pointer('rb-bad')).toBe(t.versions[2]!.metadataLocation);

    // A commit lands between the rollback's read of the pointer and its swap (during its listing).
    let moving: Promise<TableHandle> | undefined;
    const racing = new Proxy(f.store, {
      get(target, prop, receiver) {
        if (prop !== 'list') return Reflect.get(target, prop, receiver) as unknown;
        return async (prefix: string) => {
          moving ??= f.catalog.setProperties(t.versions[2]!, { 'floe.test': 'raced' });
          await moving;
          return target.list(prefix);
        };
      },
    });
    const raced = refusal(rollback('rb-bad', { metadata_location: t.versions[0]!.metadataLocation }, racing));
    const moved = await raced.then(async (r) => ({ r, handle: await moving! }));
    expect(moved.r).toEqual({
      kind: 'conflict',
      message: `rb-bad.default.traces moved from ${t.versions[2]!.metadataLocation} to ${moved.handle.metadataLocation} meanwhile; nothing was changed: check it again`,
    });
    expect(await pointer('rb-bad')).toBe(moved.handle.metadataLocation);
    // Named explicitly, an older sound version is taken as asked.
    expect(await rollback('rb-bad', { metadata_location: t.versions[0]!.metadataLocation })).toMatchObject({ rolled_back: true, chosen: { version: 0, snapshot_id: null, problems: [] } });
  });

  it('reports a data file that is not the size its manifest records as data_files_wrong_size, from the listing', async () => {
    const t = await table('chk-size', 3);
    const size = await truncate(t.data[1]!);
    expect((await checkTables(f.catalog, f.store, { tenant: 'chk-size' })).tables).toEqual([
      {
        table: 'chk-size.default.traces',
        status: 'damaged',
        metadata_location: t.versions[3]!.metadataLocation,
        problems: [
          {
            kind: 'data_files_wrong_size',
            message: `1 data files of the current snapshot are not the size their manifests record (truncated or overwritten), first: ${t.data[1]} (${size} bytes in its manifest, ${size - 100} in the store)`,
            count: 1,
            keys: [t.data[1]],
          },
        ],
      },
    ]);
    // Read per file it would not be: the check's listing is all it needs.
    let reads = 0;
    const counting = new Proxy(f.store, {
      get(target, prop, receiver) {
        if (prop === 'get' || prop === 'head') {
          return async (key: string) => {
            if (t.data.includes(key)) reads++;
            return (Reflect.get(target, prop, receiver) as (k: string) => Promise<unknown>).call(target, key);
          };
        }
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    expect((await checkTables(f.catalog, counting, { tenant: 'chk-size' })).damaged).toBe(1);
    expect(reads).toBe(0);
  });

  it('drops exactly the missing and truncated data files: a dry run changes nothing, the other rows stay readable, a second run finds nothing', async () => {
    const t = await table('drop-files', 4);
    const kept = [t.data[0]!, t.data[3]!];
    const keptRows = await allRows(kept.map((k) => f.store.localPath(k)!));
    expect(keptRows).toHaveLength(20);
    await f.store.delete(t.data[1]!);
    const size = await truncate(t.data[2]!);
    const v4 = t.versions[4]!.metadataLocation;
    const files = [
      { key: t.data[1]!, reason: 'missing', record_count: 10, file_size_in_bytes: expect.any(Number), size_in_store: null },
      { key: t.data[2]!, reason: 'wrong_size', record_count: 10, file_size_in_bytes: size, size_in_store: size - 100 },
    ].sort((a, b) => (a.key < b.key ? -1 : 1));

    const dry = await dropDamaged('drop-files', { dry_run: true });
    expect(dry).toEqual({
      table: 'drop-files.default.traces',
      dry_run: true,
      dropped: false,
      previous_metadata_location: v4,
      new_metadata_location: null,
      snapshot_id: null,
      files,
      records_given_up: 20,
      note: 'Dry run: nothing changed. Dropping the 2 files would give up their 20 rows and keep every other row of drop-files.default.traces.',
    });
    expect(await pointer('drop-files')).toBe(v4);
    expect((await checkTables(f.catalog, f.store, { tenant: 'drop-files' })).tables[0]!.problems.map((p) => p.kind)).toEqual(['data_files_missing', 'data_files_wrong_size']);

    const done = await dropDamaged('drop-files');
    expect(done).toEqual({
      table: 'drop-files.default.traces',
      dry_run: false,
      dropped: true,
      previous_metadata_location: v4,
      new_metadata_location: expect.stringMatching(/\/metadata\/00005-[^/]+\.metadata\.json$/),
      snapshot_id: expect.stringMatching(/^\d+$/),
      files,
      records_given_up: 20,
      note: expect.stringMatching(/^drop-files\.default\.traces no longer reads the 2 files \(20 rows\) as of snapshot \d+\./),
    });
    expect(await pointer('drop-files')).toBe(done.new_metadata_location);
    const healed = (await f.catalog.loadTable('drop-files.default', 'traces'))!;
    const planned = await f.catalog.planFiles(healed);
    expect(planned.map((p) => p.key).sort()).toEqual([...kept].sort());
    expect(await allRows(planned.map((p) => f.store.localPath(p.key)!))).toEqual(keptRows);
    expect(f.catalog.snapshotSummaries(healed).at(-1)!.summary).toMatchObject({
      operation: 'delete',
      [DROP_DAMAGED_SUMMARY_KEY]: '1 missing, 1 of the wrong size',
      'deleted-data-files': '2',
      'deleted-records': '20',
      'total-records': '20',
    });
    expect((await checkTables(f.catalog, f.store, { tenant: 'drop-files' })).tables[0]).toMatchObject({ status: 'ok', problems: [] });

    const again = await dropDamaged('drop-files');
    expect(again).toMatchObject({ dropped: false, files: [], records_given_up: 0, new_metadata_location: null, note: 'No live data file of drop-files.default.traces is missing or of the wrong size: nothing to do' });
    expect(await pointer('drop-files')).toBe(done.new_metadata_location);
    // The table takes commits again.
    const next = await appendSpanFile(f, healed, DATA_HOUR, 5, 4242);
    expect((await f.catalog.planFiles(next.handle)).map((p) => p.key).sort()).toEqual([...kept, next.key].sort());
  });

  it('with check_pages, finds and drops only a file with a bit flipped inside a page (same size); without it, neither reads nor reports it', async () => {
    // Three flushes through Floe's own encoder (crcs on every page), one through DuckDB (none).
    let handle = (await table('drop-pages', 0)).versions[0]!;
    const floe: string[] = [];
    for (const seed of [501, 502, 503]) {
      const r = await appendBatchFile(handle, 10, seed);
      handle = r.handle;
      floe.push(r.key);
    }
    const duck = await appendSpanFile(f, handle, DATA_HOUR, 10, 504);
    const all = [...floe, duck.key];
    const bad = floe[1]!;
    const kept = all.filter((k) => k !== bad);
    const keptRows = await allRows(kept.map((k) => f.store.localPath(k)!));
    const size = (await f.store.head(bad))!.size;
    const chunk = await flipInPage(bad);
    expect((await f.store.head(bad))!.size).toBe(size);
    const bytes = (await Promise.all(all.map((k) => f.store.head(k)))).reduce((a, o) => a + o!.size, 0);

    // Without check_pages: no data file is read, nothing is reported, nothing would be dropped.
    let reads = 0;
    const counting = new Proxy(f.store, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== 'get' && prop !== 'getRange' && prop !== 'head') return v;
        return (k: string, ...rest: unknown[]) => {
          if (all.includes(k)) reads++;
          return (v as (...a: unknown[]) => unknown).call(target, k, ...rest);
        };
      },
    });
    expect((await checkTables(f.catalog, counting, { tenant: 'drop-pages' })).tables[0]).toEqual({ table: 'drop-pages.default.traces', status: 'ok', metadata_location: duck.handle.metadataLocation, problems: [] });
    expect(await dropDamagedFiles(f.catalog, counting, parseDropDamagedRequest({ tenant: 'drop-pages', dataset: 'default', table: 'traces', dry_run: true }))).toMatchObject({ files: [], records_given_up: 0 });
    expect(reads).toBe(0);

    // With it: exactly the flipped file, where its damage is; the DuckDB-written file (no crcs) is sound.
    const checked = (await checkTables(f.catalog, f.store, { tenant: 'drop-pages' }, undefined, {})).tables[0]!;
    expect(checked).toEqual({
      table: 'drop-pages.default.traces',
      status: 'damaged',
      metadata_location: duck.handle.metadataLocation,
      problems: [{ kind: 'data_files_damaged_pages', message: expect.stringMatching(/^1 data files of the current snapshot have damaged pages \(.*\), first: .*: damaged page in row group 0, column .*: page crc -?\d+ does not match/), count: 1, keys: [bad] }],
      pages_checked: { files: 4, bytes },
    });
    const file = {
      key: bad,
      reason: 'damaged_pages',
      record_count: 10,
      file_size_in_bytes: size,
      size_in_store: size,
      damage: { message: expect.stringContaining(`${bad}: damaged page in row group ${chunk.rowGroup}, column ${chunk.column}, at byte `), row_group: chunk.rowGroup, column: chunk.column, offset: expect.any(Number) },
    };
    const dry = await dropDamaged('drop-pages', { dry_run: true, check_pages: true });
    expect(dry).toEqual({
      table: 'drop-pages.default.traces',
      dry_run: true,
      dropped: false,
      previous_metadata_location: duck.handle.metadataLocation,
      new_metadata_location: null,
      snapshot_id: null,
      files: [file],
      records_given_up: 10,
      pages_checked: { files: 4, bytes },
      note: 'Dry run: nothing changed. Dropping the 1 files would give up their 10 rows and keep every other row of drop-pages.default.traces.',
    });
    expect(dry.files[0]!.damage!.offset).toBeGreaterThanOrEqual(chunk.start);
    expect(dry.files[0]!.damage!.offset).toBeLessThan(chunk.end);
    expect(await pointer('drop-pages')).toBe(duck.handle.metadataLocation);

    const done = await dropDamaged('drop-pages', { check_pages: true });
    expect(done).toMatchObject({ dropped: true, files: [file], records_given_up: 10, new_metadata_location: expect.stringMatching(/\/metadata\/00005-[^/]+\.metadata\.json$/) });
    const healed = (await f.catalog.loadTable('drop-pages.default', 'traces'))!;
    // One snapshot, removing only the damaged file.
    expect(healed.metadata.snapshots).toHaveLength(duck.handle.metadata.snapshots.length + 1);
    expect(f.catalog.snapshotSummaries(healed).at(-1)!.summary).toMatchObject({ operation: 'delete', [DROP_DAMAGED_SUMMARY_KEY]: '1 with damaged pages', 'deleted-data-files': '1', 'deleted-records': '10', 'total-records': '30' });
    const planned = await f.catalog.planFiles(healed);
    expect(planned.map((p) => p.key).sort()).toEqual([...kept].sort());
    expect(await allRows(planned.map((p) => f.store.localPath(p.key)!))).toEqual(keptRows);
    expect((await checkTables(f.catalog, f.store, { tenant: 'drop-pages' }, undefined, {})).tables[0]).toMatchObject({ status: 'ok', problems: [], pages_checked: { files: 3 } });
    expect(await dropDamaged('drop-pages', { check_pages: true })).toMatchObject({ dropped: false, files: [], note: 'No live data file of drop-pages.default.traces is missing or of the wrong size or has damaged pages: nothing to do' });
  });

  /**
   * Commits a position delete file (rows `positions` of `dataKey`) as another engine sharing the
   * catalog does (Floe itself deletes by rewriting data files): a Parquet file DuckDB writes, in a
   * delete manifest of a new snapshot. Returns the version committed and the delete file's key.
   */
  const commitPositionDeletes = async (handle: TableHandle, tenant: string, dataKey: string, positions: number[]): Promise<{ handle: TableHandle; key: string }> => {
    const root = f.store.keyFromUri(handle.metadata.location);
    const target = (await f.catalog.planFiles(handle)).find((p) => p.key === dataKey)!;
    const key = `${root}/data/${randomUUID()}-deletes.parquet`;
    const local = join(f.dir, `${randomUUID()}.parquet`);
    const rows = positions.map((p) => `('${f.store.uri(dataKey)}', ${p}::BIGINT)`).join(', ');
    await withDuck((q) => q(`COPY (SELECT * FROM (VALUES ${rows}) AS d(file_path, pos)) TO '${local}' (FORMAT parquet)`));
    const bytes = await readFile(local);
    await f.store.put(key, bytes);
    const m = handle.metadata;
    const parent = currentSnapshot(m)!;
    const seq = m['last-sequence-number'] + 1;
    const snapshotId = parent['snapshot-id'] + 1n;
    const spec = m['partition-specs'].find((s) => s['spec-id'] === m['default-spec-id'])!;
    const schema = m.schemas.find((s) => s['schema-id'] === m['current-schema-id'])!;
    const dataFile = { content: DataFileContent.POSITION_DELETES, filePath: f.store.uri(key), fileFormat: 'PARQUET', partition: target.partition, recordCount: positions.length, fileSizeInBytes: bytes.length };
    const manifest = encodeManifest([{ status: ManifestEntryStatus.ADDED, snapshotId, sequenceNumber: seq, fileSequenceNumber: seq, dataFile }], { spec, schema, content: 'deletes' });
    const manifestKey = `${root}/metadata/${randomUUID()}-m0.avro`;
    await f.store.put(manifestKey, manifest);
    const previous = decodeManifestList((await f.store.get(f.store.keyFromUri(parent['manifest-list'])))!);
    const added = { manifestPath: f.store.uri(manifestKey), manifestLength: manifest.length, partitionSpecId: spec['spec-id'], content: ManifestContent.DELETES, sequenceNumber: seq, minSequenceNumber: seq, addedSnapshotId: snapshotId, addedFilesCount: 1, existingFilesCount: 0, deletedFilesCount: 0, addedRowsCount: positions.length, existingRowsCount: 0, deletedRowsCount: 0, partitions: null, keyMetadata: null };
    const listKey = `${root}/metadata/snap-${snapshotId}-1-${randomUUID()}.avro`;
    await f.store.put(listKey, encodeManifestList([added, ...previous], { snapshotId, parentSnapshotId: parent['snapshot-id'], sequenceNumber: seq }));
    const now = Date.now();
    const snapshot = { 'snapshot-id': snapshotId, 'parent-snapshot-id': parent['snapshot-id'], 'sequence-number': seq, 'timestamp-ms': now, 'manifest-list': f.store.uri(listKey), summary: { operation: 'delete', 'added-position-delete-files': '1' }, 'schema-id': schema['schema-id'] };
    const metadata = {
      ...m,
      'last-sequence-number': seq,
      'current-snapshot-id': snapshotId,
      refs: { ...m.refs, main: { 'snapshot-id': snapshotId, type: 'branch' as const } },
      snapshots: [...m.snapshots, snapshot],
      'snapshot-log': [...m['snapshot-log'], { 'timestamp-ms': now, 'snapshot-id': snapshotId }],
    };
    const version = metadataVersion(f.store.keyFromUri(handle.metadataLocation)) + 1;
    const location = await f.catalog.restoreVersion(`${tenant}.default`, 'traces', handle.metadataLocation, { location: handle.metadataLocation, metadata }, version);
    expect(location).toBeDefined();
    return { handle: (await f.catalog.loadTable(`${tenant}.default`, 'traces'))!, key };
  };

  /** Writes 0xff over the first byte of the file's largest column chunk: its first page's header no longer reads (DuckDB's pages carry no crc), the size unchanged. */
  const breakPageHeader = async (key: string) => {
    const [start] = await withDuck(async (q) => (await q(`SELECT coalesce(dictionary_page_offset, data_page_offset) FROM parquet_metadata(${sqlList([f.store.localPath(key)!])}) ORDER BY total_compressed_size DESC LIMIT 1`)).map((r) => Number(r[0])));
    const bytes = Buffer.from((await f.store.get(key))!);
    bytes[start!] = 0xff;
    await f.store.put(key, bytes);
  };

  it("reports a delete file (another engine's position deletes) with damaged pages or missing under its own kind, with rollback-table as the repair; drop-damaged-files refuses it (409) and commits nothing", async () => {
    const tenant = 'del-pages';
    let handle = (await table(tenant, 0)).versions[0]!;
    const data: string[] = [];
    for (const seed of [701, 702]) {
      const r = await appendBatchFile(handle, 10, seed);
      handle = r.handle;
      data.push(r.key);
    }
    const before = handle.metadataLocation;
    const deletes = await commitPositionDeletes(handle, tenant, data[0]!, [0, 1]);
    const pointerNow = deletes.handle.metadataLocation;
    const bytes = (await Promise.all([...data, deletes.key].map((k) => f.store.head(k)))).reduce((a, o) => a + o!.size, 0);
    // Sound, the delete file's pages read with the data files'.
    expect((await checkTables(f.catalog, f.store, { tenant }, undefined, {})).tables[0]).toEqual({ table: `${tenant}.default.traces`, status: 'ok', metadata_location: pointerNow, problems: [], pages_checked: { files: 3, bytes } });

    await breakPageHeader(deletes.key);
    // Without check_pages the size is right: nothing to see.
    expect((await checkTables(f.catalog, f.store, { tenant })).tables[0]).toMatchObject({ status: 'ok', problems: [] });
    const checked = (await checkTables(f.catalog, f.store, { tenant }, undefined, {})).tables[0]!;
    expect(checked).toEqual({
      table: `${tenant}.default.traces`,
      status: 'damaged',
      metadata_location: pointerNow,
      problems: [
        {
          kind: 'delete_files_damaged_pages',
          message: expect.stringMatching(
            /^1 delete files of the current snapshot have damaged pages \(.*\), first: .*-deletes\.parquet: .*; an engine reading the table brings back the rows they delete or hides others, and dropping them would bring back those rows: floe ops rollback-table --to a version from before they were added is the repair, not drop-damaged-files$/,
          ),
          count: 1,
          keys: [deletes.key],
        },
      ],
      pages_checked: { files: 3, bytes },
    });

    for (const dry_run of [true, false]) {
      expect(await refusal(dropDamaged(tenant, { check_pages: true, dry_run }))).toEqual({
        kind: 'conflict',
        message: `1 delete files of ${tenant}.default.traces are damaged (first: ${deletes.key}, damaged_pages): dropping them would bring back deleted rows; floe ops rollback-table --to a version from before they were added moves it back to a sound version`,
      });
    }
    expect(await pointer(tenant)).toBe(pointerNow);
    expect((await f.catalog.loadTable(`${tenant}.default`, 'traces'))!.metadata.snapshots).toHaveLength(deletes.handle.metadata.snapshots.length);

    // Missing: its own kind from the listing alone, refused alike.
    const kept = (await f.store.get(deletes.key))!;
    await f.store.delete(deletes.key);
    expect((await checkTables(f.catalog, f.store, { tenant })).tables[0]!.problems).toEqual([
      {
        kind: 'delete_files_missing',
        message: `1 delete files of the current snapshot are missing, first: ${deletes.key}; an engine reading the table brings back the rows they delete or hides others, and dropping them would bring back those rows: floe ops rollback-table is the repair, not drop-damaged-files`,
        count: 1,
        keys: [deletes.key],
      },
    ]);
    expect((await refusal(dropDamaged(tenant))).message).toMatch(/^1 delete files of del-pages\.default\.traces are damaged \(first: .*, missing\): dropping them would bring back deleted rows; floe ops rollback-table moves/);
    await f.store.put(deletes.key, kept);

    // The repair: back to the version before the delete file, which reads whole.
    expect(await rollback(tenant, { metadata_location: before })).toMatchObject({ rolled_back: true, metadata_location: before });
    expect((await checkTables(f.catalog, f.store, { tenant }, undefined, {})).tables[0]).toMatchObject({ status: 'ok', problems: [], pages_checked: { files: 2 } });
  });

  it('refuses to drop files of an unknown table (404), of a table whose metadata or manifests are damaged, or whose catalog is behind its files (409)', async () => {
    expect(await refusal(dropDamaged('drop-none'))).toEqual({ kind: 'not_found', message: 'no table drop-none.default.traces' });
    expect((await refusal(dropDamaged('drop-none', { metadata_location: 'x' }))).kind).toBe('bad_data');

    const unparseable = await table('drop-json', 2);
    await f.store.delete(unparseable.data[0]!);
    await damage(unparseable.versions[2]!);
    expect(await refusal(dropDamaged('drop-json'))).toEqual({
      kind: 'conflict',
      message: expect.stringMatching(/^drop-json\.default\.traces's current version is itself damaged \(metadata_unparseable: metadata file .* does not parse: .*\): dropping data files cannot repair it; floe ops rollback-table moves it back to a sound version$/),
    });

    const noManifest = await table('drop-manifest', 2);
    const manifests = decodeManifestList((await f.store.get(f.store.keyFromUri(currentSnapshot(noManifest.versions[2]!.metadata)!['manifest-list'])))!).map((m) => f.store.keyFromUri(m.manifestPath));
    await f.store.delete(manifests[0]!);
    await f.store.delete(noManifest.data[0]!);
    expect((await refusal(dropDamaged('drop-manifest'))).message).toMatch(/current version is itself damaged \(manifests_missing: /);

    const behind = await table('drop-behind', 3);
    await f.store.delete(behind.data[0]!);
    await f.db.query(`UPDATE iceberg_tables SET metadata_location = $1 WHERE table_namespace = 'drop-behind.default' AND table_name = 'traces'`, [behind.versions[1]!.metadataLocation]);
    expect(await refusal(dropDamaged('drop-behind'))).toEqual({
      kind: 'conflict',
      message: `the catalog is behind drop-behind.default.traces's files (1 metadata files numbered beyond the next commit's): a commit on ${behind.versions[1]!.metadataLocation} would fork its history; resolve it with floe ops rollback-table first`,
    });
    // Nothing was committed.
    expect([await pointer('drop-json'), await pointer('drop-manifest'), await pointer('drop-behind')]).toEqual([unparseable.versions[2]!.metadataLocation, noManifest.versions[2]!.metadataLocation, behind.versions[1]!.metadataLocation]);
  });

  it('checks page by page in name order: the pages together report what one call does', async () => {
    const whole = await checkTables(f.catalog, f.store);
    expect(whole.tables_checked).toBeGreaterThan(5);
    expect(whole.tables.map((t) => t.table)).toEqual(whole.tables.map((t) => t.table).sort());
    const walk = async (limit: number, budgetMs?: number) => {
      const pages: CheckReport[] = [];
      let after: string | undefined;
      do {
        const page = await checkTables(f.catalog, f.store, undefined, { limit, ...(after === undefined ? {} : { after }), ...(budgetMs === undefined ? {} : { budgetMs }) });
        pages.push(page);
        after = page.next ?? undefined;
      } while (after !== undefined);
      return pages;
    };
    const pages = await walk(2);
    expect(pages).toHaveLength(Math.ceil(whole.tables_checked / 2));
    expect(pages.every((p) => p.tables_in_scope === whole.tables_checked && p.tables.length <= 2)).toBe(true);
    expect(pages.flatMap((p) => p.tables)).toEqual(whole.tables);
    expect(pages.reduce((a, p) => a + p.damaged, 0)).toBe(whole.damaged);
    expect(pages.at(-1)!.next).toBeNull();
    expect(pages[0]!.next).toBe(pages[0]!.tables[1]!.table);
    // A page out of time ends early, after at least one table.
    const hurried = await walk(100, 0);
    expect(hurried.map((p) => p.tables.length)).toEqual(whole.tables.map(() => 1));
    expect(hurried.flatMap((p) => p.tables)).toEqual(whole.tables);
    // A scope pages the same way; past the last table a page is empty.
    const scoped = await checkTables(f.catalog, f.store, { tenant: 'drop-files' }, { limit: 5 });
    expect(scoped).toMatchObject({ tables_checked: 1, tables_in_scope: 1, next: null });
    expect(await checkTables(f.catalog, f.store, undefined, { limit: 5, after: whole.tables.at(-1)!.table })).toEqual({ tables_checked: 0, ok: 0, damaged: 0, tables: [], tables_in_scope: whole.tables_checked, next: null });
  });

  it('the orphan sweep deletes nothing of a table whose current metadata does not parse', async () => {
    const t = await table('sweep', 2);
    await damage(t.versions[2]!);
    const loc = key(t.versions[0]!).replace(/\/metadata\/[^/]+$/, '');
    const before = (await f.store.list(`${loc}/`)).map((o) => o.key);
    // A catalog that has not parsed the file before it was damaged, as after a restart: the
    // fixture's own one still holds its parse of the sound bytes.
    const catalog = openFloeCatalog(f.db, f.store);
    const pass = await new Compactor({ ...f, catalog, log: silentLogger(), targetFileBytes: 1 << 27, snapshotRetentionMs: 0, orphanMinAgeMs: 0, minFileAgeMs: 0 }).pass(undefined, { tenant: 'sweep' });
    expect(pass).toMatchObject({ tables: 1, failedTables: 1, orphans: { data: 0, metadata: 0 } });
    expect((await f.store.list(`${loc}/`)).map((o) => o.key)).toEqual(before);
  });
});
