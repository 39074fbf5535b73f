import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MetaError,
  createApiKey,
  createDataset,
  createTenant,
  deleteDataset,
  deleteTenant,
  ensureTenant,
  liveDatasets,
  getDataset,
  getDefaultDataset,
  getTenant,
  listApiKeys,
  listDatasets,
  listTenants,
  updateTenant,
} from './index.ts';
import type { Db } from './index.ts';
import { BACKENDS, createMigratedTestDatabase } from './test-databases.ts';
import type { TestDatabase } from './test-databases.ts';

describe.each(BACKENDS)('tenants and datasets on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;

  beforeAll(async () => {
    t = await createMigratedTestDatabase(kind);
    db = t.db;
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('creates a tenant together with its default dataset', async () => {
    const tenant = await createTenant(db, { id: 'acme', displayName: 'Acme Corp' });
    expect(tenant).toMatchObject({
      id: 'acme',
      displayName: 'Acme Corp',
      disabled: false,
      settings: {},
      defaultDatasetId: 'default',
    });
    expect(tenant.createdAt).toBeInstanceOf(Date);
    expect(await listDatasets(db, 'acme')).toEqual([
      { tenantId: 'acme', id: 'default', isDefault: true, createdAt: expect.any(Date) },
    ]);
    expect(await getDefaultDataset(db, 'acme')).toMatchObject({ id: 'default', isDefault: true });
    expect(await getTenant(db, 'acme')).toEqual(tenant);
  });

  it('defaults the display name to the id and accepts the _system tenant', async () => {
    expect(await createTenant(db, { id: '_system' })).toMatchObject({ id: '_system', displayName: '_system' });
  });

  it('liveDatasets names which datasets exist, a tenant\'s default one always, with when each was last deleted; deleteDataset refuses the default one', async () => {
    await createDataset(db, { tenantId: 'acme', id: 'short-lived' });
    const pairs = [
      { tenant: 'acme', dataset: 'default' },
      { tenant: 'acme', dataset: 'short-lived' },
      { tenant: 'acme', dataset: 'never' },
      { tenant: '_system', dataset: 'default' },
      { tenant: 'nobody', dataset: 'default' },
      { tenant: "o'brien", dataset: "x'y" },
    ];
    expect(await liveDatasets(db, pairs)).toEqual(new Map([['acme/default', 0], ['acme/short-lived', 0], ['_system/default', 0]]));
    expect(await liveDatasets(db, [])).toEqual(new Map());

    const key = await createApiKey(db, { tenantId: 'acme', datasetId: 'short-lived', scopes: ['ingest'] });
    await deleteDataset(db, 'acme', 'short-lived');
    expect(await getDataset(db, 'acme', 'short-lived')).toBeUndefined();
    // The keys bound to it went with it.
    expect((await listApiKeys(db, 'acme')).map((k) => k.id)).not.toContain(key.id);
    const before = Date.now();
    expect(await liveDatasets(db, pairs)).toEqual(new Map([['acme/default', 0], ['_system/default', 0]]));
    // Created again: it exists, and says when it was deleted (the writer drops older WAL records).
    await createDataset(db, { tenantId: 'acme', id: 'short-lived' });
    const again = await liveDatasets(db, pairs);
    expect(again.get('acme/default')).toBe(0);
    expect(again.get('acme/short-lived')).toBeGreaterThanOrEqual(before - 1000);
    expect(again.get('acme/short-lived')).toBeLessThanOrEqual(Date.now() + 1000);
    await deleteDataset(db, 'acme', 'short-lived');
    await expect(deleteDataset(db, 'acme', 'short-lived')).rejects.toMatchObject({ kind: 'not_found' });
    await expect(deleteDataset(db, 'acme', 'default')).rejects.toMatchObject({ kind: 'conflict', message: 'dataset default is the default dataset of tenant acme; it goes only with its tenant' });
    await expect(deleteDataset(db, 'acme', 'Not Valid')).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('refuses a duplicate tenant with kind conflict and leaves the original alone', async () => {
    await expect(createTenant(db, { id: 'acme', displayName: 'Impostor' })).rejects.toMatchObject({
      name: 'MetaError',
      kind: 'conflict',
    });
    expect((await getTenant(db, 'acme'))?.displayName).toBe('Acme Corp');
    expect(await listDatasets(db, 'acme')).toHaveLength(1);
  });

  it('gives exactly one winner when the same tenant is created concurrently', async () => {
    const results = await Promise.allSettled([1, 2, 3].map(() => createTenant(db, { id: 'race' })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) {
      if (r.status === 'rejected') expect(r.reason).toMatchObject({ kind: 'conflict' });
    }
    expect(await listDatasets(db, 'race')).toHaveLength(1);
  });

  it.each([
    ['upper case', 'Acme'],
    ['a dot', 'acme.prod'],
    ['a leading dash', '-acme'],
    ['a slash', 'a/b'],
    ['64 characters', 'a'.repeat(64)],
    ['the empty string', ''],
    ['another underscore name', '_admin'],
  ])('rejects a tenant id with %s as bad_data', async (_name, id) => {
    const err = await createTenant(db, { id }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MetaError);
    expect(err).toMatchObject({ kind: 'bad_data' });
  });

  it('rejects settings that are not an object', async () => {
    await expect(createTenant(db, { id: 'bad-settings', settings: [] as never })).rejects.toMatchObject({ kind: 'bad_data' });
    expect(await getTenant(db, 'bad-settings')).toBeUndefined();
  });

  it('ensureTenant creates when missing and returns the existing tenant otherwise', async () => {
    const first = await ensureTenant(db, { id: 'ensured' });
    const again = await ensureTenant(db, { id: 'ensured', displayName: 'ignored' });
    expect(first.created).toBe(true);
    expect(again).toEqual({ created: false, tenant: first.tenant });
  });

  it('lists tenants ordered by id, optionally without disabled ones', async () => {
    await createTenant(db, { id: 'zeta' });
    await updateTenant(db, 'zeta', { disabled: true });
    const all = (await listTenants(db)).map((x) => x.id);
    expect(all).toEqual([...all].sort());
    expect(all).toEqual(expect.arrayContaining(['_system', 'acme', 'zeta']));
    expect((await listTenants(db, { includeDisabled: false })).map((x) => x.id)).not.toContain('zeta');
  });

  it('updates the given fields only', async () => {
    await createTenant(db, { id: 'upd', displayName: 'Before', settings: { a: 1 } });
    const renamed = await updateTenant(db, 'upd', { displayName: 'After' });
    expect(renamed).toMatchObject({ displayName: 'After', disabled: false, settings: { a: 1 } });
    const changed = await updateTenant(db, 'upd', { settings: { retention_days: 30 }, disabled: true });
    expect(changed).toMatchObject({ displayName: 'After', disabled: true, settings: { retention_days: 30 } });
    await expect(updateTenant(db, 'nope', { disabled: true })).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('deletes a tenant with its datasets and keys', async () => {
    await createTenant(db, { id: 'doomed' });
    await createDataset(db, { tenantId: 'doomed', id: 'extra' });
    await createApiKey(db, { tenantId: 'doomed', scopes: ['ingest'] });
    await deleteTenant(db, 'doomed');
    expect(await getTenant(db, 'doomed')).toBeUndefined();
    expect(await listDatasets(db, 'doomed')).toEqual([]);
    expect(await listApiKeys(db, 'doomed')).toEqual([]);
    await expect(deleteTenant(db, 'doomed')).rejects.toMatchObject({ kind: 'not_found' });
    // Created again, every dataset of it says when the tenant went.
    await createTenant(db, { id: 'doomed' });
    await createDataset(db, { tenantId: 'doomed', id: 'extra' });
    const live = await liveDatasets(db, [{ tenant: 'doomed', dataset: 'default' }, { tenant: 'doomed', dataset: 'extra' }]);
    expect(live.get('doomed/default')).toBeGreaterThan(0);
    expect(live.get('doomed/extra')).toBe(live.get('doomed/default'));
  });

  it('creates further datasets, lists them default first, and gets them', async () => {
    await createTenant(db, { id: 'multi' });
    const prod = await createDataset(db, { tenantId: 'multi', id: 'prod' });
    await createDataset(db, { tenantId: 'multi', id: 'dev' });
    expect(prod).toEqual({ tenantId: 'multi', id: 'prod', isDefault: false, createdAt: expect.any(Date) });
    expect((await listDatasets(db, 'multi')).map((d) => d.id)).toEqual(['default', 'dev', 'prod']);
    expect(await getDataset(db, 'multi', 'prod')).toEqual(prod);
    expect(await getDataset(db, 'multi', 'missing')).toBeUndefined();
    expect(await getDataset(db, 'acme', 'prod')).toBeUndefined(); // datasets are per tenant
  });

  it.each([
    ['a duplicate dataset', { tenantId: 'acme', id: 'default' }, 'conflict'],
    ['an unknown tenant', { tenantId: 'nobody', id: 'prod' }, 'not_found'],
    ['a malformed dataset id', { tenantId: 'acme', id: 'Prod!' }, 'bad_data'],
  ])('createDataset refuses %s', async (_name, input, errKind) => {
    await expect(createDataset(db, input)).rejects.toMatchObject({ kind: errKind });
  });

  it('answers lookups about unknown or malformed tenants with nothing', async () => {
    expect(await getTenant(db, 'nobody')).toBeUndefined();
    expect(await getTenant(db, "x' OR '1'='1")).toBeUndefined();
    expect(await listDatasets(db, 'nobody')).toEqual([]);
    expect(await getDefaultDataset(db, 'nobody')).toBeUndefined();
  });

  it('creates a tenant inside a caller transaction and rolls it back with it', async () => {
    await expect(
      db.withTransaction(async (tx) => {
        await createTenant(tx, { id: 'rolled-back' });
        expect(await getTenant(tx, 'rolled-back')).toBeDefined();
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(await getTenant(db, 'rolled-back')).toBeUndefined();
    expect(await listDatasets(db, 'rolled-back')).toEqual([]);
  });

  it('of concurrent deletes of one dataset, one succeeds and the others find it gone', async () => {
    await createTenant(db, { id: 'racing' });
    const other = await t.open();
    for (let i = 0; i < 5; i++) {
      await createDataset(db, { tenantId: 'racing', id: `doomed-${i}` });
      const outcomes = await Promise.allSettled([db, other, db, other].map((h) => deleteDataset(h, 'racing', `doomed-${i}`)));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toMatchObject({ kind: 'not_found' });
    }
  });
});
