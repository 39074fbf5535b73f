import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listRuleGroupVersions, createDataset, createTenant, deleteDataset, updateTenant, deleteRuleGroups, deleteTenant, listRuleGroups, putRuleGroup, saveRuleGroupState, type Db, type RuleGroupKey } from './index.ts';
import { BACKENDS, createMigratedTestDatabase, type TestDatabase } from './test-databases.ts';

describe.each(BACKENDS)('rule groups on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;
  const key = (tenantId: string, namespace: string, name: string, language: 'promql' | 'logql' = 'promql'): RuleGroupKey => ({ tenantId, datasetId: 'default', language, namespace, name });

  beforeAll(async () => {
    t = await createMigratedTestDatabase(kind);
    db = t.db;
    await createTenant(db, { id: 'acme' });
    await createTenant(db, { id: 'other' });
    await createTenant(db, { id: 'gone' });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('stores, lists by tenant, language and namespace, and replaces a group', async () => {
    await putRuleGroup(db, key('acme', 'ns1', 'b'), { rules: [1] }, 10);
    await putRuleGroup(db, key('acme', 'ns1', 'a'), { rules: [2] }, 10);
    await putRuleGroup(db, key('acme', 'ns2', 'a'), { rules: [3] }, 10);
    await putRuleGroup(db, key('acme', 'ns1', 'a', 'logql'), { rules: [4] }, 10);
    await putRuleGroup(db, key('other', 'ns1', 'a'), { rules: [5] }, 10);
    const acme = await listRuleGroups(db, { tenantId: 'acme', language: 'promql' });
    expect(acme.map((g) => [g.namespace, g.name, g.definition, g.version, g.state])).toEqual([
      ['ns1', 'a', { rules: [2] }, 1, null],
      ['ns1', 'b', { rules: [1] }, 1, null],
      ['ns2', 'a', { rules: [3] }, 1, null],
    ]);
    expect((await listRuleGroups(db, { tenantId: 'acme', language: 'logql' })).map((g) => g.definition)).toEqual([{ rules: [4] }]);
    expect((await listRuleGroups(db, { tenantId: 'acme', language: 'promql', namespace: 'ns2' })).map((g) => g.name)).toEqual(['a']);

    await putRuleGroup(db, key('acme', 'ns1', 'a'), { rules: [2, 2] }, 10);
    const [replaced] = await listRuleGroups(db, { ...key('acme', 'ns1', 'a') });
    expect(replaced).toMatchObject({ definition: { rules: [2, 2] }, version: 2 });
    // What an evaluator polls: versions only, then the definitions of the groups that changed.
    expect((await listRuleGroupVersions(db, { tenantId: 'acme', language: 'promql' })).map((g) => [g.namespace, g.name, g.version])).toEqual([
      ['ns1', 'a', 2],
      ['ns1', 'b', 1],
      ['ns2', 'a', 1],
    ]);
    const some = await listRuleGroups(db, { keys: [key('acme', 'ns2', 'a'), key('other', 'ns1', 'a'), key('acme', 'nope', 'a')] });
    expect(some.map((g) => [g.tenantId, g.namespace, g.definition])).toEqual([
      ['acme', 'ns2', { rules: [3] }],
      ['other', 'ns1', { rules: [5] }],
    ]);
    expect(await listRuleGroups(db, { keys: [] })).toEqual([]);
  });

  it('saves evaluation state only over the version evaluated, and clears it when the definition changes', async () => {
    const k = key('acme', 'state', 'g');
    await putRuleGroup(db, k, { rules: ['x'] }, 10);
    expect(await saveRuleGroupState(db, k, 1, { health: 'ok' })).toBe(true);
    expect((await listRuleGroups(db, { ...k }))[0]?.state).toEqual({ health: 'ok' });
    // The same definition again keeps the state and the version.
    await putRuleGroup(db, k, { rules: ['x'] }, 10);
    expect((await listRuleGroups(db, { ...k }))[0]).toMatchObject({ version: 1, state: { health: 'ok' } });
    await putRuleGroup(db, k, { rules: ['y'] }, 10);
    expect((await listRuleGroups(db, { ...k }))[0]).toMatchObject({ version: 2, state: null });
    // An evaluation of version 1 that finishes after the change is not recorded.
    expect(await saveRuleGroupState(db, k, 1, { health: 'stale' })).toBe(false);
    expect((await listRuleGroups(db, { ...k }))[0]?.state).toBeNull();
  });

  it('refuses a group past the per-tenant cap but still replaces an existing one', async () => {
    await putRuleGroup(db, key('other', 'cap', 'x'), {}, 2);
    await expect(putRuleGroup(db, key('other', 'cap', 'y'), {}, 2)).rejects.toMatchObject({ kind: 'bad_data', message: expect.stringContaining('limits.ruler_max_rule_groups_per_tenant') });
    await putRuleGroup(db, key('other', 'cap', 'x'), { changed: true }, 2);
    expect((await listRuleGroups(db, { tenantId: 'other', namespace: 'cap' })).map((g) => g.definition)).toEqual([{ changed: true }]);
  });

  it('deletes one group or a namespace of one tenant only, and all of a deleted tenant or dataset', async () => {
    expect(await deleteRuleGroups(db, { tenantId: 'acme', language: 'promql', namespace: 'ns1', name: 'b' })).toBe(1);
    expect(await deleteRuleGroups(db, { tenantId: 'acme', language: 'promql', namespace: 'ns1' })).toBe(1);
    expect((await listRuleGroups(db, { tenantId: 'other', namespace: 'ns1' })).length).toBe(1);
    expect((await listRuleGroups(db, { tenantId: 'acme', language: 'logql', namespace: 'ns1' })).length).toBe(1);
    await putRuleGroup(db, key('gone', 'ns', 'g'), {}, 10);
    await deleteTenant(db, 'gone');
    expect(await listRuleGroups(db, { tenantId: 'gone' })).toEqual([]);
    await createDataset(db, { tenantId: 'other', id: 'prod' });
    await putRuleGroup(db, { ...key('other', 'ns', 'g'), datasetId: 'prod' }, {}, 10);
    await deleteDataset(db, 'other', 'prod');
    expect(await listRuleGroups(db, { tenantId: 'other', datasetId: 'prod' })).toEqual([]);
    expect((await listRuleGroups(db, { tenantId: 'other' })).length).toBeGreaterThan(0);
  });

  it('leaves out the groups of disabled tenants when asked', async () => {
    await createTenant(db, { id: 'paused' });
    await putRuleGroup(db, key('paused', 'ns', 'g'), {}, 10);
    await updateTenant(db, 'paused', { disabled: true });
    expect((await listRuleGroups(db, { tenantId: 'paused' })).length).toBe(1);
    expect(await listRuleGroups(db, { tenantId: 'paused', enabledTenantsOnly: true })).toEqual([]);
    expect((await listRuleGroups(db, { enabledTenantsOnly: true })).some((g) => g.tenantId === 'acme')).toBe(true);
  });
});
