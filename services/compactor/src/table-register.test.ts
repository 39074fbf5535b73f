import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TableHandle } from '@floe/iceberg';
import { createDataset, createTenant } from '@floe/meta';
import type { ObjectStore } from '@floe/storage';
import { checkTables } from './table-check.ts';
import { DATA_HOUR, refusal, tableHelpers } from './table-fixture.ts';
import { findUnregistered, parseRegisterRequest, registerTable, type UnregisteredReport } from './table-register.ts';
import { allRows, appendSpanFile, createTracesTable, openFixture, type Fixture } from './test-support.ts';

describe.each(['pglite', 'pg'] as const)('finding and registering tables the catalog lost (%s catalog, fs store)', (kind) => {
  let f: Fixture;

  beforeAll(async () => {
    f = await openFixture(kind);
  });
  afterAll(async () => {
    await f?.close();
  });

  const { table, damage, pointer } = tableHelpers(() => f);
  /** The restore: the tenant's catalog rows are gone, its files stay. */
  const loseRows = (tenant: string) => f.db.query(`DELETE FROM iceberg_tables WHERE table_namespace = $1 OR table_namespace LIKE $2`, [tenant, `${tenant}.%`]);
  const register = async (tenant: string, more: Record<string, unknown> = {}, dataset = 'default') => registerTable(f.catalog, f.store, f.db, parseRegisterRequest({ tenant, dataset, table: 'traces', ...more }));
  const find = (tenant?: string, store: ObjectStore = f.store) => findUnregistered(f.catalog, store, f.db, tenant === undefined ? undefined : { tenant });
  const rowsOf = async (h: TableHandle) => allRows((await f.catalog.planFiles(h)).map((p) => f.store.localPath(p.key)!));

  it('finds a table whose catalog row is gone, and registers it: a dry run changes nothing, its rows read back the same, and it takes commits again', async () => {
    await createTenant(f.db, { id: 'reg-a' });
    const t = await table('reg-a', 3);
    await table('reg-kept', 1);
    const v3 = t.versions[3]!;
    const original = await rowsOf(v3);
    expect(original).toHaveLength(30);
    const snapshot = v3.metadata.snapshots.at(-1)!;
    await loseRows('reg-a');
    expect(await pointer('reg-a')).toBeUndefined();

    const lost = {
      table: 'reg-a.default.traces',
      catalog_row: 'none',
      metadata_files: 4,
      metadata_location: v3.metadataLocation,
      version: 3,
      snapshot_id: String(snapshot['snapshot-id']),
      total_records: 30,
      committed_at: new Date(snapshot['timestamp-ms']).toISOString(),
      tenant_exists: true,
      dataset_exists: true,
    };
    // The whole warehouse: the registered table of the other tenant is not listed.
    expect(await find()).toEqual({ table_directories: 2, unregistered: 1, tables: [lost] });
    expect(await find('reg-a')).toEqual({ table_directories: 1, unregistered: 1, tables: [lost] });

    const dry = await register('reg-a', { dry_run: true });
    expect(dry).toEqual({
      table: 'reg-a.default.traces',
      dry_run: true,
      registered: false,
      metadata_location: v3.metadataLocation,
      new_metadata_location: null,
      chosen: { version: 3, snapshot_id: lost.snapshot_id, total_records: 30, committed_at: lost.committed_at, problems: [] },
      passed_over: [],
      replaced_empty_row: null,
      note: `Dry run: nothing changed. Registered, reg-a.default.traces would have the content of ${v3.metadataLocation} (30 rows).`,
    });
    expect(await pointer('reg-a')).toBeUndefined();

    const done = await register('reg-a');
    expect(done).toEqual({ ...dry, dry_run: false, registered: true, new_metadata_location: expect.stringMatching(/\/reg-a\/default\/traces\/metadata\/00004-[^/]+\.metadata\.json$/), note: expect.stringMatching(/^reg-a\.default\.traces has a catalog row again: .* \(30 rows\) as its new version .*00004-/) });
    expect(await pointer('reg-a')).toBe(done.new_metadata_location);
    const registered = (await f.catalog.loadTable('reg-a.default', 'traces'))!;
    expect(await rowsOf(registered)).toEqual(original);
    // The snapshots, and with their summaries the writer's ledger of the WAL segments committed.
    expect(registered.metadata.snapshots).toEqual(v3.metadata.snapshots);
    expect((await checkTables(f.catalog, f.store, { tenant: 'reg-a' })).tables[0]).toMatchObject({ status: 'ok', problems: [] });
    expect(await find('reg-a')).toEqual({ table_directories: 1, unregistered: 0, tables: [] });
    const next = await appendSpanFile(f, registered, DATA_HOUR, 5, 4242);
    expect((await f.catalog.planFiles(next.handle)).map((p) => p.key).sort()).toEqual([...t.data, next.key].sort());
  });

  it('passes over newer versions that are not sound, or takes the one named', async () => {
    await createTenant(f.db, { id: 'reg-b' });
    const t = await table('reg-b', 3);
    await damage(t.versions[3]!);
    await f.store.delete(t.data[1]!);
    await loseRows('reg-b');
    // The newest that parses is listed; registering passes it over, as it lacks a data file.
    expect((await find('reg-b')).tables[0]).toMatchObject({ metadata_location: t.versions[2]!.metadataLocation, version: 2, total_records: 20 });
    const done = await register('reg-b');
    expect(done).toMatchObject({
      registered: true,
      metadata_location: t.versions[1]!.metadataLocation,
      new_metadata_location: expect.stringMatching(/\/metadata\/00004-/),
      passed_over: [
        { metadata_location: t.versions[3]!.metadataLocation, version: 3, problems: [expect.objectContaining({ kind: 'metadata_unparseable' })] },
        { metadata_location: t.versions[2]!.metadataLocation, version: 2, problems: [expect.objectContaining({ kind: 'data_files_missing', keys: [t.data[1]] })] },
      ],
    });
    expect((await f.catalog.planFiles((await f.catalog.loadTable('reg-b.default', 'traces'))!)).map((p) => p.key)).toEqual([t.data[0]]);

    await createTenant(f.db, { id: 'reg-named' });
    const named = await table('reg-named', 2);
    await loseRows('reg-named');
    const taken = await register('reg-named', { metadata_location: named.versions[1]!.metadataLocation });
    expect(taken).toMatchObject({ registered: true, metadata_location: named.versions[1]!.metadataLocation, chosen: { version: 1, total_records: 10 } });
    expect((await f.catalog.planFiles((await f.catalog.loadTable('reg-named.default', 'traces'))!)).map((p) => p.key)).toEqual([named.data[0]]);
  });

  it('replaces the empty row of a table provisioned again when its tenant was created again', async () => {
    const t = await table('reg-again', 2);
    const original = await rowsOf(t.versions[2]!);
    await loseRows('reg-again');
    // The tenant created again: its tables are provisioned, empty, in the same directories.
    await createTenant(f.db, { id: 'reg-again' });
    const empty = await createTracesTable(f.catalog, 'reg-again', 'default');
    expect(empty.metadataLocation).toMatch(/\/reg-again\/default\/traces\/metadata\/00000-/);
    expect((await find('reg-again')).tables).toEqual([expect.objectContaining({ table: 'reg-again.default.traces', catalog_row: 'empty', metadata_files: 3, metadata_location: t.versions[2]!.metadataLocation })]);

    const done = await register('reg-again');
    expect(done).toMatchObject({ registered: true, metadata_location: t.versions[2]!.metadataLocation, replaced_empty_row: empty.metadataLocation, new_metadata_location: expect.stringMatching(/\/metadata\/00003-/) });
    expect(await rowsOf((await f.catalog.loadTable('reg-again.default', 'traces'))!)).toEqual(original);
    expect(await find('reg-again')).toMatchObject({ unregistered: 0 });
    // A row that holds data is the operator's to judge: rollback-table --to.
    expect(await refusal(register('reg-again'))).toEqual({
      kind: 'conflict',
      message: `reg-again.default.traces has a catalog row already (at ${done.new_metadata_location}): to give it the content of a newer metadata file, use floe ops rollback-table reg-again.default.traces --to <metadata file>`,
    });
  });

  it('does not list a table never written that was provisioned again: it has nothing to recover', async () => {
    await createTracesTable(f.catalog, 'reg-empty', 'default');
    await table('reg-empty', 1, 'eu');
    await loseRows('reg-empty');
    // Listed while no row is there, with no snapshot to recover.
    expect((await find('reg-empty')).tables.map((x) => [x.table, x.catalog_row, x.snapshot_id])).toEqual([['reg-empty.default.traces', 'none', null], ['reg-empty.eu.traces', 'none', expect.any(String)]]);
    await createTenant(f.db, { id: 'reg-empty' });
    await createDataset(f.db, { tenantId: 'reg-empty', id: 'eu' });
    await createTracesTable(f.catalog, 'reg-empty', 'default');
    await createTracesTable(f.catalog, 'reg-empty', 'eu');
    expect((await find('reg-empty')).tables.map((x) => [x.table, x.catalog_row])).toEqual([['reg-empty.eu.traces', 'empty']]);
  });

  it('refuses a tenant or dataset missing from the registry, a table with nothing that parses or no files, and changes nothing', async () => {
    await table('reg-gone', 1);
    await loseRows('reg-gone');
    expect((await find('reg-gone')).tables).toEqual([expect.objectContaining({ table: 'reg-gone.default.traces', tenant_exists: false, dataset_exists: false })]);
    expect(await refusal(register('reg-gone'))).toEqual({ kind: 'conflict', message: 'tenant reg-gone does not exist in the registry: create it first (floe tenant create reg-gone), then register reg-gone.default.traces' });

    await createTenant(f.db, { id: 'reg-ds' });
    await table('reg-ds', 1, 'eu');
    await loseRows('reg-ds');
    expect((await find('reg-ds')).tables).toEqual([expect.objectContaining({ table: 'reg-ds.eu.traces', tenant_exists: true, dataset_exists: false })]);
    expect(await refusal(register('reg-ds', {}, 'eu'))).toEqual({ kind: 'conflict', message: 'dataset eu of tenant reg-ds does not exist in the registry: create it first (floe dataset create eu --tenant reg-ds), then register reg-ds.eu.traces' });
    await createDataset(f.db, { tenantId: 'reg-ds', id: 'eu' });
    expect(await register('reg-ds', { dry_run: true }, 'eu')).toMatchObject({ registered: false, chosen: { version: 1 } });

    await createTenant(f.db, { id: 'reg-broken' });
    const broken = await table('reg-broken', 1);
    for (const v of broken.versions) await damage(v);
    await loseRows('reg-broken');
    expect((await find('reg-broken')).tables).toEqual([
      expect.objectContaining({ metadata_files: 2, metadata_location: null, version: null, snapshot_id: null, problem: expect.stringMatching(/^metadata file .*\/00001-.* does not parse: table metadata is not valid JSON/) }),
    ]);
    expect(await refusal(register('reg-broken'))).toEqual({ kind: 'conflict', message: 'no metadata file of reg-broken.default.traces parses (2 under warehouse/reg-broken/default/traces/metadata/): there is nothing to register it from' });
    expect((await refusal(register('reg-broken', { metadata_location: broken.versions[0]!.metadataLocation }))).kind).toBe('bad_data');

    await createTenant(f.db, { id: 'reg-none' });
    expect(await refusal(register('reg-none'))).toEqual({ kind: 'not_found', message: 'no metadata file of reg-none.default.traces under warehouse/reg-none/default/traces/metadata/: nothing to register' });
    expect((await refusal(register('reg-none', { metadata_location: 'x', unknown: 1 }))).kind).toBe('bad_data');
    expect([await pointer('reg-gone'), await pointer('reg-ds', 'eu'), await pointer('reg-broken'), await pointer('reg-none')]).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('walks the warehouse page by page in name order, listing no data file', async () => {
    const whole = await find();
    expect(whole.table_directories).toBeGreaterThan(5);
    const pages: UnregisteredReport[] = [];
    let after: string | undefined;
    do {
      const page = await findUnregistered(f.catalog, f.store, f.db, undefined, { limit: 2, ...(after === undefined ? {} : { after }) });
      pages.push(page);
      after = page.next ?? undefined;
    } while (after !== undefined);
    expect(pages).toHaveLength(Math.ceil(whole.table_directories / 2));
    expect(pages.every((p) => p.tables_in_scope === whole.table_directories)).toBe(true);
    expect(pages.flatMap((p) => p.tables)).toEqual(whole.tables);
    expect(pages.at(-1)!.next).toBeNull();

    const touched: string[] = [];
    const counting = new Proxy(f.store, {
      get(target, prop, receiver) {
        const fn = Reflect.get(target, prop, receiver) as unknown;
        if (typeof fn !== 'function' || !['get', 'head', 'list', 'listPrefixes'].includes(prop as string)) return fn;
        return (k: string) => {
          touched.push(k);
          return (fn as (k: string) => unknown).call(target, k);
        };
      },
    });
    expect(await find(undefined, counting)).toEqual(whole);
    expect(touched.filter((k) => k.includes('/data/') || k.endsWith('/data'))).toEqual([]);
  });
});
