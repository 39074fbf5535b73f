import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDataset,
  createTenant,
  deleteTenant,
  listAttributeTypeMismatches,
  listAttributeTypePins,
  pinAttributeTypes,
  recordAttributeTypeMismatches,
} from './index.ts';
import type { Db } from './index.ts';
import { BACKENDS, createMigratedTestDatabase } from './test-databases.ts';
import type { TestDatabase } from './test-databases.ts';

describe.each(BACKENDS)('attribute type pins and mismatches on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;

  beforeAll(async () => {
    t = await createMigratedTestDatabase(kind);
    db = t.db;
    await createTenant(db, { id: 'acme', displayName: 'Acme' });
    await createDataset(db, { tenantId: 'acme', id: 'prod' });
    await createTenant(db, { id: 'gone', displayName: 'Gone' });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('pins new keys to the type asked for and answers existing pins as they are', async () => {
    expect(
      await pinAttributeTypes(db, 'acme', 'default', [
        { key: 'http.status_code', type: 'int' },
        { key: 'user.id', type: 'str' },
      ]),
    ).toEqual([
      { key: 'http.status_code', type: 'int', pinned: 'now' },
      { key: 'user.id', type: 'str', pinned: 'now' },
    ]);
    // The first-seen type stays: asking for another type answers the pin.
    expect(
      await pinAttributeTypes(db, 'acme', 'default', [
        { key: 'user.id', type: 'int' },
        { key: 'ratio', type: 'double' },
        { key: 'ratio', type: 'double' },
      ]),
    ).toEqual([
      { key: 'ratio', type: 'double', pinned: 'now' },
      { key: 'user.id', type: 'str', pinned: 'before' },
    ]);
    const pins = await listAttributeTypePins(db, 'acme', 'default');
    expect(pins.map((p) => [p.key, p.type])).toEqual([
      ['http.status_code', 'int'],
      ['ratio', 'double'],
      ['user.id', 'str'],
    ]);
    expect(pins[0]!.firstSeenAt).toBeInstanceOf(Date);
    expect((await listAttributeTypePins(db, 'acme', 'default', ['user.id', 'nope'])).map((p) => p.key)).toEqual(['user.id']);
    expect(await listAttributeTypePins(db, 'acme', 'default', [])).toEqual([]);
  });

  it('keeps pins per dataset, and keys of any spelling as sent', async () => {
    const odd = ["it's", 'a"b', '__proto__', 'ключ', 'k8s.pod.name'];
    expect((await pinAttributeTypes(db, 'acme', 'prod', [...odd.map((key) => ({ key, type: 'bool' as const })), { key: 'user.id', type: 'int' }])).map((p) => p.pinned)).toEqual(
      Array(odd.length + 1).fill('now'),
    );
    expect((await listAttributeTypePins(db, 'acme', 'prod', ['user.id']))[0]).toMatchObject({ key: 'user.id', type: 'int' });
    expect((await listAttributeTypePins(db, 'acme', 'default', ['user.id']))[0]).toMatchObject({ key: 'user.id', type: 'str' });
    expect((await listAttributeTypePins(db, 'acme', 'prod')).map((p) => p.key).sort()).toEqual([...odd, 'user.id'].sort());
  });

  it('pins nothing for a dataset that does not exist, and nothing for invalid ids', async () => {
    expect(await pinAttributeTypes(db, 'acme', 'nope', [{ key: 'a', type: 'str' }])).toEqual([]);
    expect(await pinAttributeTypes(db, 'Bad.Tenant', 'default', [{ key: 'a', type: 'str' }])).toEqual([]);
    expect(await pinAttributeTypes(db, 'acme', 'default', [])).toEqual([]);
    expect(await listAttributeTypePins(db, 'acme', 'nope')).toEqual([]);
  });

  it('sums mismatch counts per table, key and reason', async () => {
    await recordAttributeTypeMismatches(db, 'acme', 'default', 'logs', [
      { key: 'user.id', reason: 'off_type', count: 2 },
      { key: 'user.id', reason: 'off_type', count: 1 },
      { key: 'ratio', reason: 'pin_conflict', count: 4 },
      { key: 'zero', reason: 'off_type', count: 0 },
    ]);
    await recordAttributeTypeMismatches(db, 'acme', 'default', 'logs', [{ key: 'user.id', reason: 'off_type', count: 5 }]);
    await recordAttributeTypeMismatches(db, 'acme', 'default', 'traces', [{ key: 'user.id', reason: 'off_type', count: 1 }]);
    await recordAttributeTypeMismatches(db, 'acme', 'default', 'traces', []);
    const all = await listAttributeTypeMismatches(db, 'acme', 'default');
    expect(all.map(({ table, key, reason, count }) => ({ table, key, reason, count }))).toEqual([
      { table: 'logs', key: 'ratio', reason: 'pin_conflict', count: 4 },
      { table: 'logs', key: 'user.id', reason: 'off_type', count: 8 },
      { table: 'traces', key: 'user.id', reason: 'off_type', count: 1 },
    ]);
    expect(all[0]!.lastSeenAt).toBeInstanceOf(Date);
    expect((await listAttributeTypeMismatches(db, 'acme', 'default', { key: 'ratio' })).map((m) => m.count)).toEqual([4]);
    expect(await listAttributeTypeMismatches(db, 'acme', 'prod')).toEqual([]);
    // Counts beyond 32 bits.
    await recordAttributeTypeMismatches(db, 'acme', 'prod', 'metrics', [{ key: 'big', reason: 'off_type', count: 2 ** 40 }]);
    expect((await listAttributeTypeMismatches(db, 'acme', 'prod'))[0]!.count).toBe(2 ** 40);
  });

  it('records nothing for a dataset that does not exist', async () => {
    await recordAttributeTypeMismatches(db, 'acme', 'nope', 'logs', [{ key: 'a', reason: 'off_type', count: 1 }]);
    expect(await listAttributeTypeMismatches(db, 'acme', 'nope')).toEqual([]);
  });

  it('rejects types and reasons outside the closed sets', async () => {
    await expect(
      db.query(`INSERT INTO attribute_type_pins (tenant_id, dataset_id, attr_key, attr_type) VALUES ('acme', 'default', 'x', 'string')`),
    ).rejects.toMatchObject({ code: '23514' });
    await expect(
      db.query(`INSERT INTO attribute_type_mismatches (tenant_id, dataset_id, table_name, attr_key, reason, count) VALUES ('acme', 'default', 'logs', 'x', 'other', 1)`),
    ).rejects.toMatchObject({ code: '23514' });
  });

  it('goes away with its tenant', async () => {
    await pinAttributeTypes(db, 'gone', 'default', [{ key: 'a', type: 'str' }]);
    await recordAttributeTypeMismatches(db, 'gone', 'default', 'logs', [{ key: 'a', reason: 'off_type', count: 1 }]);
    expect(await listAttributeTypePins(db, 'gone', 'default')).toHaveLength(1);
    await deleteTenant(db, 'gone');
    const { rows } = await db.query(`SELECT 1 FROM attribute_type_pins WHERE tenant_id = 'gone' UNION ALL SELECT 1 FROM attribute_type_mismatches WHERE tenant_id = 'gone'`);
    expect(rows).toEqual([]);
  });

  // Two pools on one PGlite are impossible (it is one connection in-process): only PostgreSQL has the race.
  if (kind === 'pg') it('answers a pin set by a concurrent writer with that writer\'s type', async () => {
    // Two pools, like two writer processes, pin the same new keys with different types at once.
    const other = await t.open();
    const keys = Array.from({ length: 50 }, (_, i) => `race.${i}`);
    const [a, b] = await Promise.all([
      pinAttributeTypes(db, 'acme', 'prod', keys.map((key) => ({ key, type: 'int' as const }))),
      pinAttributeTypes(other, 'acme', 'prod', keys.map((key) => ({ key, type: 'str' as const }))),
    ]);
    const pins = new Map((await listAttributeTypePins(db, 'acme', 'prod', keys)).map((p) => [p.key, p.type]));
    expect(pins.size).toBe(keys.length);
    // Both callers answer every key with the pin that won, and exactly one of them created it.
    for (const key of keys) {
      const fromA = a.find((o) => o.key === key)!;
      const fromB = b.find((o) => o.key === key)!;
      expect(fromA.type).toBe(pins.get(key));
      expect(fromB.type).toBe(pins.get(key));
      expect([fromA.pinned, fromB.pinned].filter((p) => p === 'now')).toHaveLength(1);
    }
  });
});
