import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDataset, createTenant, deleteTenant, listAttributeQueryDemand, recordAttributeQueryDemand } from './index.ts';
import type { Db } from './index.ts';
import { BACKENDS, createMigratedTestDatabase, type TestDatabase } from './test-databases.ts';

describe.each(BACKENDS)('attribute query demand on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;

  beforeAll(async () => {
    t = await createMigratedTestDatabase(kind);
    db = t.db;
    await createTenant(db, { id: 'acme', displayName: 'Acme' });
    await createDataset(db, { tenantId: 'acme', id: 'prod' });
    await createTenant(db, { id: 'other', displayName: 'Other' });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('adds counts per table and key, most asked-for first, per dataset', async () => {
    await recordAttributeQueryDemand(db, 'acme', 'prod', 'logs', new Map([['http.route', 2], ['k8s.pod.name', 1]]));
    await recordAttributeQueryDemand(db, 'acme', 'prod', 'logs', new Map([['k8s.pod.name', 5], ['zero', 0]]));
    await recordAttributeQueryDemand(db, 'acme', 'prod', 'metrics', new Map([['http.route', 1]]));
    await recordAttributeQueryDemand(db, 'other', 'default', 'logs', new Map([['secret.key', 9]]));
    const demand = await listAttributeQueryDemand(db, 'acme', 'prod');
    expect(demand.map(({ table, key, count }) => [table, key, count])).toEqual([
      ['logs', 'k8s.pod.name', 6],
      ['logs', 'http.route', 2],
      ['metrics', 'http.route', 1],
    ]);
    expect(demand[0]!.lastSeenAt).toBeInstanceOf(Date);
    expect(await listAttributeQueryDemand(db, 'acme', 'default')).toEqual([]);
    expect((await listAttributeQueryDemand(db, 'other', 'default')).map((d) => d.key)).toEqual(['secret.key']);
  });

  it('skips datasets that do not exist (deleted while counts were pending) and goes with the tenant', async () => {
    await recordAttributeQueryDemand(db, 'acme', 'nope', 'logs', new Map([['k', 1]]));
    expect(await listAttributeQueryDemand(db, 'acme', 'nope')).toEqual([]);
    await recordAttributeQueryDemand(db, 'other', 'default', 'logs', new Map([['gone.key', 1]]));
    expect((await listAttributeQueryDemand(db, 'other', 'default')).map((d) => d.key)).toContain('gone.key');
    await deleteTenant(db, 'other');
    expect(await listAttributeQueryDemand(db, 'other', 'default')).toEqual([]);
  });
});
