import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@floe/config';
import { cachedTenantLimits, limitStoresFromConfig, type LimitStores } from '@floe/limits';
import { bootstrapTenant, getTenant, migrate, openDb, type Db } from '@floe/meta';
import { createLogger } from '@floe/telemetry';
import type { SqlCatalog } from '@floe/iceberg';
import { Admission } from './admission.ts';
import type { AcceptedTimes } from './accepted-times.ts';

/**
 * Resend dedup among acceptors: copies of one request that reach two acceptors while the first
 * is still being stored (a client retrying elsewhere before it had its answer) are stored once,
 * through the turn the shared store (Redis) hands out; the store here takes 300 ms, so without
 * the turn both copies would be stored.
 */
describe('Admission: copies of one request on two acceptors at once', () => {
  const config = loadConfig({ env: {}, overrides: { limits: { store: 'redis', redis_url: process.env.FLOE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', key_prefix: `floe-test-${randomBytes(6).toString('hex')}:` } } });
  let db: Db;
  const stores: LimitStores[] = [];

  beforeAll(async () => {
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    await bootstrapTenant(db, 'acme');
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await db?.close();
    const redis = new Redis(config.limits.redis_url);
    const keys = await redis.keys(`${config.limits.key_prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  /** One acceptor's admission over its own Redis connection, as a separate process has. */
  const acceptor = () => {
    const limitStores = limitStoresFromConfig(config);
    stores.push(limitStores);
    return new Admission({
      db,
      catalog: undefined as unknown as SqlCatalog, // no storage quota is set: never read
      buckets: limitStores.buckets,
      dedup: limitStores.dedup,
      config,
      log: createLogger({ level: 'silent' }),
      limitsOf: cachedTenantLimits(config.limits, (t) => getTenant(db, t)),
    });
  };

  it('stores the request once and acknowledges the other copy as a resend', async () => {
    const [a, b] = [acceptor(), acceptor()];
    const ctx = { tenant: 'acme', dataset: 'default', principal: 'k', scopes: ['ingest'], isAdmin: false };
    const req = { signal: 'traces', contentType: 'protobuf', contentEncoding: '', body: randomBytes(64) };
    let stored = 0;
    const store = async (_times: AcceptedTimes) => {
      stored++;
      await new Promise((r) => setTimeout(r, 300));
      return 'stored';
    };
    const answers = await Promise.all([a.run(ctx, req, store, () => 'resend'), b.run(ctx, req, store, () => 'resend')]);
    expect(stored).toBe(1);
    expect(answers.sort()).toEqual(['resend', 'stored']);
    // A later copy, on either, is a resend as before.
    expect(await b.run(ctx, req, store, () => 'resend')).toBe('resend');
    expect(stored).toBe(1);
  });

  it('a failed store gives the turn back: the next copy is stored', async () => {
    const [a, b] = [acceptor(), acceptor()];
    const ctx = { tenant: 'acme', dataset: 'default', principal: 'k', scopes: ['ingest'], isAdmin: false };
    const req = { signal: 'logs', contentType: 'protobuf', contentEncoding: '', body: randomBytes(64) };
    await expect(a.run(ctx, req, async () => Promise.reject(new Error('wal unavailable')), () => 'resend')).rejects.toThrow('wal unavailable');
    expect(await b.run(ctx, req, async () => 'stored', () => 'resend')).toBe('stored');
  });
});
