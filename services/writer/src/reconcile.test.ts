import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFloeCatalog, type SqlCatalog } from '@floe/iceberg';
import { createDataset, createTenant, listDatasets, migrate, openDb, updateTenant, type Db } from '@floe/meta';
import { createObjectStore, type ObjectStore } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { TableReconciler } from './reconcile.ts';

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
