import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BOOTSTRAP_SCOPES,
  SYSTEM_TENANT_ID,
  bootstrapTenant,
  createApiKey,
  createDataset,
  createKeyVerifier,
  createTenant,
  ensureTenant,
  getApiKey,
  getTenant,
  listApiKeys,
  parseApiKeySecret,
  revokeApiKey,
  updateApiKeyScopes,
  updateTenant,
  verifyApiKey,
} from './index.ts';
import type { Db } from './index.ts';
import { BACKENDS, createMigratedTestDatabase } from './test-databases.ts';
import type { TestDatabase } from './test-databases.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(BACKENDS)('api keys on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;

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

  it('create → verify → revoke → verify undefined', async () => {
    const key = await createApiKey(db, { tenantId: 'acme', name: 'collector', scopes: ['ingest'], createdBy: 'u1' });
    expect(key.secret).toMatch(/^floe_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(parseApiKeySecret(key.secret)).toEqual({ keyId: key.id });
    expect(key).toMatchObject({
      tenantId: 'acme',
      datasetId: null,
      name: 'collector',
      scopes: ['ingest'],
      revokedAt: null,
      lastUsedAt: null,
      createdBy: 'u1',
    });

    expect(await verifyApiKey(db, key.secret)).toEqual({ keyId: key.id, tenantId: 'acme', datasetId: null, scopes: ['ingest'] });

    const revoked = await revokeApiKey(db, 'acme', key.id);
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    expect(await verifyApiKey(db, key.secret)).toBeUndefined();

    // Revoking again is idempotent and keeps the first revocation time.
    expect((await revokeApiKey(db, 'acme', key.id)).revokedAt).toEqual(revoked.revokedAt);
  });

  it('stores only the SHA-256 of the secret, never the secret', async () => {
    const key = await createApiKey(db, { tenantId: 'acme', scopes: ['query'] });
    const { rows } = await db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [key.id]);
    const row = rows[0]!;
    expect(row['key_hash']).toBe(createHash('sha256').update(key.secret).digest('hex'));
    expect(Object.values(row).map((v) => String(v))).not.toContain(key.secret);
    expect(JSON.stringify(row)).not.toContain(key.secret.slice(22)); // the random part appears nowhere
    // Listings expose neither secret nor hash.
    const listed = (await listApiKeys(db, 'acme')).find((k) => k.id === key.id)!;
    expect(Object.keys(listed).sort()).toEqual(
      ['createdAt', 'createdBy', 'datasetId', 'expiresAt', 'id', 'lastUsedAt', 'name', 'revokedAt', 'scopes', 'tenantId'],
    );
  });

  it('binds a key to a dataset of its tenant', async () => {
    const key = await createApiKey(db, { tenantId: 'acme', datasetId: 'prod', scopes: ['ingest', 'query'] });
    expect(await verifyApiKey(db, key.secret)).toEqual({
      keyId: key.id,
      tenantId: 'acme',
      datasetId: 'prod',
      scopes: ['ingest', 'query'],
    });
    // 'prod' belongs to acme, not to other.
    await expect(createApiKey(db, { tenantId: 'other', datasetId: 'prod', scopes: ['ingest'] })).rejects.toMatchObject({
      kind: 'not_found',
    });
  });

  it.each([
    ['an unknown tenant', { tenantId: 'nobody', scopes: ['ingest'] }, 'not_found'],
    ['an unknown dataset', { tenantId: 'acme', datasetId: 'nope', scopes: ['ingest'] }, 'not_found'],
    ['no scopes', { tenantId: 'acme', scopes: [] }, 'bad_data'],
    ['an unknown scope', { tenantId: 'acme', scopes: ['ingest', 'root'] }, 'bad_data'],
    ['a name with a newline', { tenantId: 'acme', name: 'a\nb', scopes: ['ingest'] }, 'bad_data'],
  ])('createApiKey refuses %s', async (_name, input, errKind) => {
    await expect(createApiKey(db, input)).rejects.toMatchObject({ name: 'MetaError', kind: errKind });
  });

  it('deduplicates scopes into canonical order', async () => {
    const key = await createApiKey(db, { tenantId: 'acme', scopes: ['tenant:manage', 'ingest', 'ingest'] });
    expect(key.scopes).toEqual(['ingest', 'tenant:manage']);
  });

  it('answers undefined for malformed, unknown and tampered secrets', async () => {
    const key = await createApiKey(db, { tenantId: 'acme', scopes: ['ingest'] });
    const [, id, random] = /^floe_([0-9a-f]{16})_(.+)$/.exec(key.secret)!;
    const flipped = (random!.startsWith('A') ? 'B' : 'A') + random!.slice(1);
    const candidates: unknown[] = [
      '',
      'floe_',
      key.secret + 'x',
      key.secret.slice(0, -1),
      key.secret.toUpperCase(),
      ` ${key.secret}`,
      `floe_${id}_${flipped}`, // right id, wrong secret
      `floe_0000000000000000_${random}`, // unknown id, right secret part
      `floe_${id}_${'A'.repeat(43)}' OR '1'='1`,
      undefined,
      null,
      42,
    ];
    for (const c of candidates) expect(await verifyApiKey(db, c)).toBeUndefined();
    expect(await verifyApiKey(db, key.secret)).toBeDefined();
  });

  it('refuses keys of a disabled tenant and accepts them again when re-enabled', async () => {
    await createTenant(db, { id: 'paused' });
    const key = await createApiKey(db, { tenantId: 'paused', scopes: ['ingest'] });
    await updateTenant(db, 'paused', { disabled: true });
    expect(await verifyApiKey(db, key.secret)).toBeUndefined();
    await updateTenant(db, 'paused', { disabled: false });
    expect(await verifyApiKey(db, key.secret)).toMatchObject({ tenantId: 'paused' });
  });

  it('records last use on verification', async () => {
    const key = await createApiKey(db, { tenantId: 'acme', scopes: ['ingest'] });
    await verifyApiKey(db, key.secret);
    expect((await getApiKey(db, 'acme', key.id))?.lastUsedAt).toBeInstanceOf(Date);
  });

  it('updates scopes and revokes only within the key’s own tenant', async () => {
    const key = await createApiKey(db, { tenantId: 'acme', scopes: ['ingest'] });
    await expect(revokeApiKey(db, 'other', key.id)).rejects.toMatchObject({ kind: 'not_found' });
    await expect(updateApiKeyScopes(db, 'other', key.id, ['query'])).rejects.toMatchObject({ kind: 'not_found' });
    await expect(updateApiKeyScopes(db, 'acme', key.id, ['sudo'])).rejects.toMatchObject({ kind: 'bad_data' });
    expect((await updateApiKeyScopes(db, 'acme', key.id, ['query'])).scopes).toEqual(['query']);
    expect(await verifyApiKey(db, key.secret)).toMatchObject({ scopes: ['query'] });
    expect(await verifyApiKey(db, key.secret)).not.toBeUndefined();
  });

  it('lists a tenant’s keys oldest first, with or without revoked ones', async () => {
    await createTenant(db, { id: 'lister' });
    const a = await createApiKey(db, { tenantId: 'lister', name: 'a', scopes: ['ingest'] });
    const b = await createApiKey(db, { tenantId: 'lister', name: 'b', scopes: ['query'] });
    await revokeApiKey(db, 'lister', a.id);
    const all = await listApiKeys(db, 'lister');
    expect(all.map((k) => k.name)).toEqual(['a', 'b']);
    expect(all[0]?.revokedAt).toBeInstanceOf(Date);
    expect((await listApiKeys(db, 'lister', { activeOnly: true })).map((k) => k.id)).toEqual([b.id]);
    expect(await listApiKeys(db, 'nobody')).toEqual([]);
  });

  describe('cached verifier', () => {
    it('serves repeated verifications from memory until the TTL passes', async () => {
      const verifier = createKeyVerifier(db, { ttlMs: 150 });
      try {
        const key = await createApiKey(db, { tenantId: 'acme', scopes: ['ingest'] });
        expect(await verifier.verify(key.secret)).toMatchObject({ keyId: key.id });
        // Revoked behind the cache's back, as another process would.
        await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
        expect(await verifier.verify(key.secret)).toMatchObject({ keyId: key.id });
        await sleep(200);
        expect(await verifier.verify(key.secret)).toBeUndefined();
      } finally {
        verifier.dispose();
      }
    });

    it('forgets everything on invalidate()', async () => {
      const verifier = createKeyVerifier(db, { ttlMs: 60_000 });
      try {
        const key = await createApiKey(db, { tenantId: 'acme', scopes: ['ingest'] });
        expect(await verifier.verify(key.secret)).toBeDefined();
        await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
        verifier.invalidate();
        expect(await verifier.verify(key.secret)).toBeUndefined();
      } finally {
        verifier.dispose();
      }
    });

    it('sees revocations, scope changes and tenant disabling made through this process at once', async () => {
      const verifier = createKeyVerifier(db, { ttlMs: 60_000 });
      try {
        const revoked = await createApiKey(db, { tenantId: 'acme', scopes: ['ingest'] });
        const rescoped = await createApiKey(db, { tenantId: 'acme', scopes: ['ingest'] });
        await createTenant(db, { id: 'switch' });
        const disabled = await createApiKey(db, { tenantId: 'switch', scopes: ['ingest'] });
        for (const k of [revoked, rescoped, disabled]) expect(await verifier.verify(k.secret)).toBeDefined();

        await revokeApiKey(db, 'acme', revoked.id);
        await updateApiKeyScopes(db, 'acme', rescoped.id, ['query']);
        await updateTenant(db, 'switch', { disabled: true });

        expect(await verifier.verify(revoked.secret)).toBeUndefined();
        expect(await verifier.verify(rescoped.secret)).toMatchObject({ scopes: ['query'] });
        expect(await verifier.verify(disabled.secret)).toBeUndefined();
      } finally {
        verifier.dispose();
      }
    });

    it('invalidates after the revoking transaction commits, and not for one that rolls back', async () => {
      const verifier = createKeyVerifier(db, { ttlMs: 60_000 });
      try {
        const key = await createApiKey(db, { tenantId: 'acme', scopes: ['ingest'] });
        expect(await verifier.verify(key.secret)).toBeDefined();
        await expect(
          db.withTransaction(async (tx) => {
            await revokeApiKey(tx, 'acme', key.id);
            throw new Error('changed my mind');
          }),
        ).rejects.toThrow('changed my mind');
        expect(await verifier.verify(key.secret)).toBeDefined();
        expect(await verifyApiKey(db, key.secret)).toBeDefined();

        await db.withTransaction((tx) => revokeApiKey(tx, 'acme', key.id));
        expect(await verifier.verify(key.secret)).toBeUndefined();
      } finally {
        verifier.dispose();
      }
    });

    it('shares one lookup between concurrent verifications and returns identical results', async () => {
      const verifier = createKeyVerifier(db);
      try {
        const key = await createApiKey(db, { tenantId: 'acme', datasetId: 'prod', scopes: ['ingest'] });
        const results = await Promise.all(Array.from({ length: 8 }, () => verifier.verify(key.secret)));
        expect(new Set(results).size).toBe(1);
        expect(results[0]).toEqual({ keyId: key.id, tenantId: 'acme', datasetId: 'prod', scopes: ['ingest'] });
        expect(Object.isFrozen(results[0])).toBe(true);
        expect(await verifier.verify('not a key')).toBeUndefined();
      } finally {
        verifier.dispose();
      }
    });

    it('keeps at most maxEntries results', async () => {
      const verifier = createKeyVerifier(db, { ttlMs: 60_000, maxEntries: 2 });
      try {
        const keys = await Promise.all([1, 2, 3].map(() => createApiKey(db, { tenantId: 'acme', scopes: ['ingest'] })));
        for (const k of keys) await verifier.verify(k.secret);
        // The oldest entry was evicted: its revocation behind the cache's back is seen, the newest is not.
        await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = ANY($1::text[])', [keys.map((k) => k.id)]);
        expect(await verifier.verify(keys[0]!.secret)).toBeUndefined();
        expect(await verifier.verify(keys[2]!.secret)).toBeDefined();
      } finally {
        verifier.dispose();
      }
    });
  });

  describe('bootstrapTenant', () => {
    it('creates the tenant and a tenant-wide key with ingest, query and tenant:manage', async () => {
      const result = await bootstrapTenant(db, 'fresh');
      expect(result.tenant).toMatchObject({ id: 'fresh', defaultDatasetId: 'default' });
      expect(result.dataset).toMatchObject({ tenantId: 'fresh', id: 'default', isDefault: true });
      expect(result.api_key).toMatchObject({ tenantId: 'fresh', datasetId: null, scopes: [...BOOTSTRAP_SCOPES] });
      expect(BOOTSTRAP_SCOPES).toEqual(['ingest', 'query', 'tenant:manage']);
      expect(await verifyApiKey(db, result.api_key.secret)).toEqual({
        keyId: result.api_key.id,
        tenantId: 'fresh',
        datasetId: null,
        scopes: ['ingest', 'query', 'tenant:manage'],
      });
    });

    it('is idempotent for the tenant and issues a new key each run', async () => {
      const first = await bootstrapTenant(db, 'again');
      const second = await bootstrapTenant(db, 'again');
      expect(second.tenant).toEqual(first.tenant);
      expect(second.dataset).toEqual(first.dataset);
      expect(second.api_key.id).not.toBe(first.api_key.id);
      expect(await verifyApiKey(db, first.api_key.secret)).toBeDefined();
      expect(await verifyApiKey(db, second.api_key.secret)).toBeDefined();
      expect(await listApiKeys(db, 'again')).toHaveLength(2);
    });

    it('works for an existing tenant created elsewhere, and refuses a malformed id', async () => {
      expect((await bootstrapTenant(db, 'acme')).tenant.id).toBe('acme');
      await expect(bootstrapTenant(db, 'Not Valid')).rejects.toMatchObject({ kind: 'bad_data' });
      expect(await getTenant(db, 'Not Valid')).toBeUndefined();
    });

    it('refuses the tenant of Floe\'s own telemetry, existing or not: no key for it', async () => {
      for (let i = 0; i < 2; i++) {
        await expect(bootstrapTenant(db, SYSTEM_TENANT_ID)).rejects.toMatchObject({ kind: 'bad_data', message: 'tenant id _system is reserved for Floe\'s own telemetry' });
        expect(await listApiKeys(db, SYSTEM_TENANT_ID)).toEqual([]);
        await ensureTenant(db, { id: SYSTEM_TENANT_ID }); // self-monitoring creates it; bootstrap still refuses
      }
    });

    it("refuses an id whose deleted tenant left tables in the catalog (the new tenant would read them), on every path that bootstraps", async () => {
      await db.query(`INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location) VALUES ('floe', 'ghost.default', 'traces', 's3://x/m.json'), ('floe', 'ghost.prod', 'logs', 's3://x/n.json')`);
      await expect(bootstrapTenant(db, 'ghost')).rejects.toMatchObject({
        kind: 'conflict',
        message: 'tenant id ghost still holds 2 table(s) of a deleted tenant (ghost.default.traces, ghost.prod.logs); DELETE /api/v1/tenants/ghost removes them',
      });
      expect(await getTenant(db, 'ghost')).toBeUndefined();
      // Another id that only starts the same is not concerned; a tenant that exists owns its tables.
      expect((await bootstrapTenant(db, 'ghos')).tenant.id).toBe('ghos');
      await db.query(`INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location) VALUES ('floe', 'ghos.default', 'traces', 's3://x/o.json')`);
      expect((await bootstrapTenant(db, 'ghos')).tenant.id).toBe('ghos');
      await db.query(`DELETE FROM iceberg_tables WHERE table_namespace LIKE 'ghos%'`);
    });
  });
});
