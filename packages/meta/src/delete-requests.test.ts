import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelDeleteRequest, createDataset, createDeleteRequest, createTenant, deleteDataset, dueDeleteRequests, finishDeleteRequest, listDeleteRequests, startDeleteRequest, type Db } from './index.ts';
import { BACKENDS, createMigratedTestDatabase, type TestDatabase } from './test-databases.ts';

describe.each(BACKENDS)('delete requests on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;
  const req = (tenantId: string, datasetId = 'default', query = '{service_name="a"}') => createDeleteRequest(db, { tenantId, datasetId, table: 'logs', query, startMs: 1_000, endMs: 2_000 });

  beforeAll(async () => {
    t = await createMigratedTestDatabase(kind);
    db = t.db;
    await createTenant(db, { id: 'acme' });
    await createTenant(db, { id: 'other' });
    await createDataset(db, { tenantId: 'acme', id: 'prod' });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('lists a dataset’s requests oldest first, and only its own', async () => {
    const a = await req('acme');
    const b = await req('acme', 'default', '{service_name="b"}');
    await req('acme', 'prod');
    await req('other');
    expect(a).toMatchObject({ tenantId: 'acme', datasetId: 'default', table: 'logs', startMs: 1_000, endMs: 2_000, startedAt: null, processedAt: null, deletedRows: null });
    expect(a.id).toMatch(/^[0-9a-f]{16}$/);
    expect((await listDeleteRequests(db, 'acme', 'default', 'logs')).map((r) => r.id)).toEqual([a.id, b.id]);
    expect(await listDeleteRequests(db, 'acme', 'default', 'metrics')).toEqual([]);
  });

  it('cancels only a request of the caller’s dataset that no compactor has taken up', async () => {
    const r = await req('acme');
    expect(await cancelDeleteRequest(db, 'other', 'default', 'logs', r.id)).toBe('not_found');
    expect(await cancelDeleteRequest(db, 'acme', 'prod', 'logs', r.id)).toBe('not_found');
    expect(await startDeleteRequest(db, r.id)).toBe(true);
    expect(await cancelDeleteRequest(db, 'acme', 'default', 'logs', r.id)).toBe('started');
    const s = await req('acme');
    expect(await cancelDeleteRequest(db, 'acme', 'default', 'logs', s.id)).toBe('cancelled');
    expect(await cancelDeleteRequest(db, 'acme', 'default', 'logs', s.id)).toBe('not_found');
    expect(await startDeleteRequest(db, s.id)).toBe(false);
  });

  it('hands the compactor what is past the cutoff and records what it deleted', async () => {
    const r = await req('other', 'default', '{service_name="due"}');
    const due = await dueDeleteRequests(db, new Date(Date.now() + 1_000));
    expect(due.map((d) => d.id)).toContain(r.id);
    expect((await dueDeleteRequests(db, new Date(r.createdAt.getTime() - 1))).map((d) => d.id)).not.toContain(r.id);
    await startDeleteRequest(db, r.id);
    await finishDeleteRequest(db, r.id, 42);
    const [done] = (await listDeleteRequests(db, 'other', 'default', 'logs')).filter((d) => d.id === r.id);
    expect(done).toMatchObject({ deletedRows: 42 });
    expect(done!.processedAt).toBeInstanceOf(Date);
    expect((await dueDeleteRequests(db, new Date(Date.now() + 1_000))).map((d) => d.id)).not.toContain(r.id);
    expect((await listDeleteRequests(db, 'other', 'default', 'logs', { pendingOnly: true })).map((d) => d.id)).not.toContain(r.id);
  });

  it('keeps a metrics request’s series, and hands it over at once when its table is immediate', async () => {
    const r = await createDeleteRequest(db, { tenantId: 'other', datasetId: 'default', table: 'metrics', query: 'up{job="a"}', seriesIds: ['s1', 's2'], startMs: 0, endMs: 5 });
    expect(r.seriesIds).toEqual(['s1', 's2']);
    const longAgo = new Date(0);
    expect((await dueDeleteRequests(db, longAgo)).map((d) => d.id)).not.toContain(r.id);
    const due = await dueDeleteRequests(db, longAgo, ['metrics']);
    expect(due.map((d) => [d.id, d.seriesIds])).toEqual([[r.id, ['s1', 's2']]]);
  });

  it('go with their dataset', async () => {
    await req('acme', 'prod');
    await deleteDataset(db, 'acme', 'prod');
    expect(await listDeleteRequests(db, 'acme', 'prod', 'logs')).toEqual([]);
  });
});
