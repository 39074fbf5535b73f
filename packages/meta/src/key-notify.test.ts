import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, createKeyVerifier, createTenant, revokeApiKey, updateApiKeyScopes, updateTenant } from './index.ts';
import type { Db } from './index.ts';
import { createMigratedTestDatabase } from './test-databases.ts';
import type { TestDatabase } from './test-databases.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually<T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 2000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v) || Date.now() > end) return v;
    await sleep(10);
  }
}

/**
 * On PostgreSQL every process has its own pool and its own verifier cache (here: two handles on
 * one database, as two services would have). A change committed through one reaches the other's
 * cache through NOTIFY, long before the cache TTL.
 */
describe('key changes reach verifiers of other processes (pg)', () => {
  let t: TestDatabase;
  let writer: Db;
  let other: Db;

  beforeAll(async () => {
    t = await createMigratedTestDatabase('pg');
    writer = t.db;
    other = await t.open();
    await createTenant(writer, { id: 'acme' });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('revocation, a scope change and disabling the tenant are seen at once, not after the TTL', async () => {
    const verifier = createKeyVerifier(other, { ttlMs: 60_000 });
    try {
      await sleep(300); // the listening connection of `other` is up
      const revoked = await createApiKey(writer, { tenantId: 'acme', scopes: ['ingest'] });
      const rescoped = await createApiKey(writer, { tenantId: 'acme', scopes: ['ingest'] });
      for (const k of [revoked, rescoped]) expect(await verifier.verify(k.secret)).toBeDefined();

      await revokeApiKey(writer, 'acme', revoked.id);
      expect(await eventually(() => verifier.verify(revoked.secret), (v) => v === undefined, 1000)).toBeUndefined();

      await writer.withTransaction((tx) => updateApiKeyScopes(tx, 'acme', rescoped.id, ['query']));
      expect(await eventually(() => verifier.verify(rescoped.secret), (v) => v?.scopes[0] === 'query', 1000)).toMatchObject({ scopes: ['query'] });

      await updateTenant(writer, 'acme', { disabled: true });
      expect(await eventually(() => verifier.verify(rescoped.secret), (v) => v === undefined, 1000)).toBeUndefined();
      await updateTenant(writer, 'acme', { disabled: false });
    } finally {
      verifier.dispose();
    }
  });

  it('a rolled-back revocation notifies nobody', async () => {
    const verifier = createKeyVerifier(other, { ttlMs: 60_000 });
    try {
      await sleep(300);
      const key = await createApiKey(writer, { tenantId: 'acme', scopes: ['ingest'] });
      expect(await verifier.verify(key.secret)).toBeDefined();
      await expect(
        writer.withTransaction(async (tx) => {
          await revokeApiKey(tx, 'acme', key.id);
          throw new Error('no');
        }),
      ).rejects.toThrow('no');
      // Behind the cache's back (no NOTIFY): the cached positive answer stays, proving no notify came.
      await other.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
      await sleep(200);
      expect(await verifier.verify(key.secret)).toBeDefined();
    } finally {
      verifier.dispose();
    }
  });
});
