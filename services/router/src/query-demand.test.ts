import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDataset, createTenant, listAttributeQueryDemand, migrate, openDb, type Db } from '@floe/meta';
import type { Logger } from '@floe/telemetry';
import { MAX_KEY_LENGTH, MAX_PENDING, createQueryDemand } from './query-demand.ts';

/** The router's query demand counter against a real (in-memory PGlite) metadata DB. */
describe('query demand counter', () => {
  let db: Db;
  const warnings: string[] = [];
  // Records what the counter warns about (a log sink, not a Floe service).
  const log = { warn: (obj: unknown, msg: string) => void warnings.push(`${JSON.stringify(obj)} ${msg}`) } as unknown as Logger;

  beforeAll(async () => {
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    await createTenant(db, { id: 'acme', displayName: 'Acme' });
    await createDataset(db, { tenantId: 'acme', id: 'prod' });
  });
  afterAll(async () => {
    await db?.close();
  });

  it('sums notes per key between flushes and adds them to the stored counts', async () => {
    const demand = createQueryDemand(db, log, 3_600_000);
    demand.note('acme', 'prod', 'logs', ['k8s.pod.name', 'team']);
    demand.note('acme', 'prod', 'logs', ['k8s.pod.name']);
    demand.note('acme', 'prod', 'metrics', ['team']);
    demand.note('acme', 'prod', 'logs', []);
    await demand.flush();
    demand.note('acme', 'prod', 'logs', ['team']);
    await demand.close();
    expect((await listAttributeQueryDemand(db, 'acme', 'prod')).map(({ table, key, count }) => [table, key, count])).toEqual([
      ['logs', 'k8s.pod.name', 2],
      ['logs', 'team', 2],
      ['metrics', 'team', 1],
    ]);
  });

  it('bounds what is pending between flushes and skips keys no attribute has', async () => {
    const demand = createQueryDemand(db, log, 3_600_000);
    const keys = Array.from({ length: MAX_PENDING + 5 }, (_, i) => `bulk.${i}`);
    demand.note('acme', 'prod', 'traces', keys);
    demand.note('acme', 'prod', 'traces', ['x'.repeat(MAX_KEY_LENGTH + 1)]);
    await demand.close();
    const traces = (await listAttributeQueryDemand(db, 'acme', 'prod')).filter((d) => d.table === 'traces');
    expect(traces).toHaveLength(MAX_PENDING);
    expect(traces.every((d) => d.key.startsWith('bulk.') && d.count === 1)).toBe(true);
    expect(warnings.some((w) => w.includes('"dropped":5'))).toBe(true);
  });

  it('a flush interval of 0 counts nothing', async () => {
    const demand = createQueryDemand(db, log, 0);
    demand.note('acme', 'prod', 'profiles', ['k']);
    await demand.close();
    expect((await listAttributeQueryDemand(db, 'acme', 'prod')).filter((d) => d.table === 'profiles')).toEqual([]);
  });
});
