import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFloeCatalog, type SqlCatalog } from '@floe/iceberg';
import { createDataset, createTenant, listDatasets, migrate, openDb, updateTenant, type Db } from '@floe/meta';
import { createObjectStore, type ObjectStore } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { runReconcileLoop, TableReconciler } from './reconcile.ts';
import { eventually, openWriterFixture, recordingTelemetry, type CapturedLog, type WriterFixture } from './test-support.ts';
import { writerMetrics } from './writer-metrics.ts';

/**
 * The writer's reconcile pass (spec 2, provisioning rules 2 and 6) on a real PGlite meta database
 * and a real directory-backed catalog: every tenant of the registry, every dataset of each with
 * the default one counted even without its row, and converged datasets left alone.
 */
describe('TableReconciler', () => {
  let dir: string;
  let db: Db;
  let store: ObjectStore;
  let catalog: SqlCatalog;
  /** Catalog methods called through `counted`, by name. */
  const calls: string[] = [];
  let counted: SqlCatalog;

  const defaults = { traces_enabled: true, logs_enabled: true, metrics_enabled: false, profiles_enabled: false, custom_schemas: [] };
  const tablesOf = async (tenant: string, dataset: string) => (await catalog.listTables(`${tenant}.${dataset}`)).filter((t) => t.namespace === `${tenant}.${dataset}`).map((t) => t.name);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'floe-reconcile-'));
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    store = createObjectStore({ kind: 'fs', root: join(dir, 'store') });
    catalog = openFloeCatalog(db, store);
    // Every method call goes to the real catalog (as itself, for its private state) and is counted.
    counted = new Proxy(catalog, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop, target);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(prop));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  });
  afterAll(async () => {
    await store?.close();
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('provisions the default dataset of a tenant that has no dataset row for it', async () => {
    await createTenant(db, { id: 'acme' });
    await createDataset(db, { tenantId: 'acme', id: 'staging' });
    // The default dataset's row removed by hand: spec 2 still counts the dataset.
    await db.query('DELETE FROM datasets WHERE tenant_id = $1 AND is_default', ['acme']);
    expect((await listDatasets(db, 'acme')).map((d) => d.id)).toEqual(['staging']);
    // A tenant with no dataset rows at all.
    await createTenant(db, { id: 'bare' });
    await db.query('DELETE FROM datasets WHERE tenant_id = $1', ['bare']);
    // A tenant that turned traces off for itself.
    await createTenant(db, { id: 'quiet', settings: { schema: { traces_enabled: false } } });

    const reconciler = new TableReconciler({ db, catalog: counted, defaults, log: silentLogger() });
    const stats = await reconciler.pass();
    expect(stats.tables_failed).toBe(0);
    expect(await tablesOf('acme', 'default')).toEqual(['logs', 'traces']);
    expect(await tablesOf('acme', 'staging')).toEqual(['logs', 'traces']);
    expect(await tablesOf('bare', 'default')).toEqual(['logs', 'traces']);
    expect(await tablesOf('quiet', 'default')).toEqual(['logs']);
    // Disabled signals get no table anywhere.
    expect((await catalog.listTables()).some((t) => t.name.startsWith('metric') || t.name === 'profiles')).toBe(false);
    expect(stats.datasets_skipped).toBe(0);
    expect(stats.tables_created).toBe(7);
  });

  it('skips converged datasets on the next pass without a catalog call, and takes up new ones', async () => {
    const reconciler = new TableReconciler({ db, catalog: counted, defaults, log: silentLogger() });
    const first = await reconciler.pass();
    // Tables the previous reconciler (another process, say) made are found, not made again.
    expect(first.tables_created).toBe(0);
    expect(first.datasets_checked).toBeGreaterThanOrEqual(4);

    calls.length = 0;
    const second = await reconciler.pass();
    expect(calls).toEqual([]);
    expect(second).toMatchObject({ datasets_checked: 0, datasets_skipped: first.datasets_checked, tables_created: 0, tables_failed: 0 });

    // A dataset created since: only it is visited.
    await createDataset(db, { tenantId: 'acme', id: 'later' });
    const third = await reconciler.pass();
    expect(third).toMatchObject({ datasets_checked: 1, datasets_skipped: first.datasets_checked, tables_created: 2 });
    expect(await tablesOf('acme', 'later')).toEqual(['logs', 'traces']);

    // A tenant that turns a signal back on is no longer converged: its table appears next pass.
    await updateTenant(db, 'quiet', { settings: {} });
    const fourth = await reconciler.pass();
    expect(fourth).toMatchObject({ datasets_checked: 1, tables_created: 1 });
    expect(await tablesOf('quiet', 'default')).toEqual(['logs', 'traces']);
  });
});

/**
 * What a reconcile pass reports (spec 2, Events): its counts at info when it created or failed
 * anything, and tables_provisioned / table_provisioning_failures per tenant and dataset on a real
 * OpenTelemetry SDK meter; and its schedule (writer.table_reconcile_interval, Limits).
 */
describe('TableReconciler reporting and schedule', () => {
  let f: WriterFixture;
  let captured: CapturedLog;
  const defaults = { traces_enabled: true, logs_enabled: true, metrics_enabled: false, profiles_enabled: false, custom_schemas: [] };
  const tablesOf = async (tenant: string, dataset: string) => (await f.catalog.listTables(`${tenant}.${dataset}`)).filter((t) => t.namespace === `${tenant}.${dataset}`).map((t) => t.name);
  const passLines = async () => (await captured.lines()).filter((l) => l.msg === 'table reconcile pass');

  beforeAll(async () => {
    f = await openWriterFixture('reconcile-reporting');
    captured = f.capture('info');
  });
  afterAll(() => f?.close());

  it('a pass that failed or created tables logs its counts at info and counts them per dataset; a pass with nothing to do logs nothing', async () => {
    await createTenant(f.db, { id: 'acme' });
    await createDataset(f.db, { tenantId: 'acme', id: 'staging' });
    // A real store that cannot be written: its root lies under a regular file (ENOTDIR, even as root).
    const blocked = join(f.dir, 'blocked');
    writeFileSync(blocked, '');
    const store = createObjectStore({ kind: 'fs', root: join(blocked, 'store') });
    const m = recordingTelemetry();
    const reconciler = new TableReconciler({ db: f.db, catalog: openFloeCatalog(f.db, store), defaults, log: captured.log, metrics: writerMetrics(m.telemetry) });
    const perDataset = (value: number) => [
      { attributes: { 'tenant.id': 'acme', 'dataset.id': 'default' }, value },
      { attributes: { 'tenant.id': 'acme', 'dataset.id': 'staging' }, value },
    ];
    try {
      expect(await reconciler.pass()).toEqual({ datasets_checked: 2, datasets_skipped: 0, tables_created: 0, tables_failed: 4 });
      expect(await passLines()).toEqual([expect.objectContaining({ level: 'info', datasets_checked: 2, datasets_skipped: 0, tables_created: 0, tables_failed: 4 })]);
      expect(await m.points('table_provisioning_failures')).toEqual(expect.arrayContaining(perDataset(2)));
      expect(await m.points('table_provisioning_failures')).toHaveLength(2);
      expect(await m.points('tables_provisioned')).toEqual([]);
      expect(await tablesOf('acme', 'default')).toEqual([]);

      // The store comes back: the failed datasets are retried by the next pass.
      rmSync(blocked);
      mkdirSync(blocked);
      expect(await reconciler.pass()).toEqual({ datasets_checked: 2, datasets_skipped: 0, tables_created: 4, tables_failed: 0 });
      expect((await passLines())[1]).toMatchObject({ level: 'info', datasets_checked: 2, datasets_skipped: 0, tables_created: 4, tables_failed: 0 });
      expect(await m.points('tables_provisioned')).toEqual(expect.arrayContaining(perDataset(2)));
      expect(await m.points('tables_provisioned')).toHaveLength(2);
      expect(await tablesOf('acme', 'staging')).toEqual(['logs', 'traces']);

      // Converged: nothing created or failed, no line, nothing counted.
      expect(await reconciler.pass()).toEqual({ datasets_checked: 0, datasets_skipped: 2, tables_created: 0, tables_failed: 0 });
      expect(await passLines()).toHaveLength(2);
      expect(await m.points('tables_provisioned')).toEqual(expect.arrayContaining(perDataset(2)));
      expect(await m.points('table_provisioning_failures')).toEqual(expect.arrayContaining(perDataset(2)));
    } finally {
      await store.close();
    }
  });

  /** The reconciler, counting its passes. */
  const counting = () => {
    const reconciler = new TableReconciler({ db: f.db, catalog: f.catalog, defaults, log: silentLogger() });
    const counted = {
      /** Passes finished. */
      passes: 0,
      async pass() {
        const stats = await reconciler.pass();
        counted.passes++;
        return stats;
      },
    };
    return counted;
  };

  it('interval 0s: the startup pass runs and the loop ends by itself, with no pass left to come', async () => {
    await createTenant(f.db, { id: 'once' });
    const reconciler = counting();
    const never = new AbortController();
    await runReconcileLoop(reconciler, 0, never.signal, silentLogger());
    expect(never.signal.aborted).toBe(false);
    expect(reconciler.passes).toBe(1);
    expect(await tablesOf('once', 'default')).toEqual(['logs', 'traces']);
  });

  it('an interval above 0 passes again until stopped: a dataset made after the startup pass gets its tables', async () => {
    const reconciler = counting();
    const stop = new AbortController();
    const loop = runReconcileLoop(reconciler, 20, stop.signal, silentLogger());
    try {
      await eventually('the startup pass', async () => (reconciler.passes > 0 ? true : undefined));
      await createDataset(f.db, { tenantId: 'once', id: 'later' });
      await eventually('tables of the dataset made later', async () => ((await tablesOf('once', 'later')).length === 2 ? true : undefined));
    } finally {
      stop.abort();
      await loop;
    }
    // The loop ends once stopped, after the pass in progress.
    expect(reconciler.passes).toBeGreaterThanOrEqual(2);
  });

  it('a pass that throws (meta database gone) is logged at warn and is not fatal', async () => {
    // A real PostgreSQL pool, closed: every query fails as when the database is unreachable.
    const gone = await openDb({ kind: 'pg', url: 'postgres://postgres@127.0.0.1:5432/postgres' });
    await gone.close();
    const reconciler = new TableReconciler({ db: gone, catalog: f.catalog, defaults, log: captured.log });
    await runReconcileLoop(reconciler, 0, new AbortController().signal, captured.log);
    const failed = (await captured.lines()).filter((l) => l.msg === 'table reconcile pass failed; retrying at the next interval');
    expect(failed).toEqual([expect.objectContaining({ level: 'warn', err: expect.objectContaining({ message: 'Cannot use a pool after calling end on the pool' }) })]);
  });
});
