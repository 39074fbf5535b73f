import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, createSession, createTenant, createUser, grantMembership, migrate, openDb, type Db } from '@floe/meta';
import { createObjectStore, type ObjectStore } from '@floe/storage';
import { provisionOnCreate, type TenantTables } from './tenant-tables.ts';
import { ADMIN, makeApp, makeTenantTables, type App } from './test-support.ts';

/**
 * Management requests a hostile or careless caller sends, through inject() on an in-memory
 * PGlite: personal data of other members, reserved tenant ids, racing deletes, JSON bodies that
 * mean two things, compressed bodies.
 */

describe('management API against hostile requests', () => {
  let db: Db;
  let app: App;
  let tables: TenantTables;
  let store: ObjectStore;
  const dir = mkdtempSync(join(tmpdir(), 'floe-mgmt-hostile-'));
  let readKey: string;
  let manageKey: string;
  let ada: string;
  let bob: string;
  let bobCookie: string;

  beforeAll(async () => {
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    store = createObjectStore({ kind: 'fs', root: dir });
    tables = makeTenantTables(db, store);
    app = await makeApp(db, { tables, provisionDataset: provisionOnCreate(tables, db) });
    await createTenant(db, { id: 'acme' });
    readKey = (await createApiKey(db, { tenantId: 'acme', scopes: ['query'] })).secret;
    manageKey = (await createApiKey(db, { tenantId: 'acme', scopes: ['tenant:manage'] })).secret;
    ada = (await createUser(db, { email: 'ada@example.com', displayName: 'Ada' })).id;
    bob = (await createUser(db, { email: 'bob@example.com', displayName: 'Bob' })).id;
    await grantMembership(db, { tenantId: 'acme', userId: ada, role: 'admin', grantedBy: 'admin' });
    await grantMembership(db, { tenantId: 'acme', userId: bob, role: 'viewer', grantedBy: 'admin' });
    bobCookie = `floe_session=${(await createSession(db, bob, 3_600_000)).token}`;
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, opts: { key?: string; cookie?: string; body?: string | Buffer; headers?: Record<string, string>; via?: App } = {}) => {
    const res = await (opts.via ?? app).inject({
      method,
      url,
      headers: {
        ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
        ...(opts.cookie ? { cookie: opts.cookie } : {}),
        ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...opts.headers,
      },
      ...(opts.body !== undefined ? { payload: opts.body } : {}),
    });
    return { status: res.statusCode, body: res.body === '' ? undefined : (res.json() as Record<string, unknown>) };
  };
  const emails = (body: Record<string, unknown> | undefined) =>
    Object.fromEntries((body!['memberships'] as Array<{ user_id: string; email: string | null }>).map((m) => [m.user_id, m.email]));

  describe('member emails', () => {
    it('a key that only reads the tenant sees the members, not their emails', async () => {
      const res = await call('GET', '/api/v1/tenants/acme/memberships', { key: readKey });
      expect(res.status).toBe(200);
      expect(emails(res.body)).toEqual({ [ada]: null, [bob]: null });
    });

    it('a viewer sees their own email only', async () => {
      const res = await call('GET', '/api/v1/tenants/acme/memberships', { cookie: bobCookie });
      expect(res.status).toBe(200);
      expect(emails(res.body)).toEqual({ [ada]: null, [bob]: 'bob@example.com' });
    });

    it('whoever manages the tenant sees every email', async () => {
      for (const key of [manageKey, ADMIN]) {
        const res = await call('GET', '/api/v1/tenants/acme/memberships', { key });
        expect(emails(res.body)).toEqual({ [ada]: 'ada@example.com', [bob]: 'bob@example.com' });
      }
    });
  });

  describe('reserved tenant ids', () => {
    it('the tenant of Floe\'s own telemetry cannot be created through the API: 400 naming the field', async () => {
      const res = await call('POST', '/api/v1/tenants', { key: ADMIN, body: JSON.stringify({ id: '_system' }) });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ status: 'error', errorType: 'bad_data', error: expect.stringMatching(/^body\.id /) });
      expect((await db.query(`SELECT id FROM tenants WHERE id = '_system'`)).rows).toEqual([]);
    });
  });

  describe('racing deletes', () => {
    it('of one dataset: one 204, every other 404 as a DELETE after it gets', async () => {
      expect((await call('POST', '/api/v1/tenants/acme/datasets', { key: manageKey, body: JSON.stringify({ id: 'doomed' }) })).status).toBe(201);
      expect((await tables.held('acme', 'doomed')).length).toBeGreaterThan(0);
      const statuses = await Promise.all(Array.from({ length: 5 }, () => call('DELETE', '/api/v1/tenants/acme/datasets/doomed', { key: manageKey }).then((r) => r.status)));
      expect(statuses.sort()).toEqual([204, 404, 404, 404, 404]);
      expect((await call('DELETE', '/api/v1/tenants/acme/datasets/doomed', { key: manageKey })).status).toBe(404);
      expect(await tables.held('acme', 'doomed')).toEqual([]);
    });

    it('of one tenant: one 204, every other 404', async () => {
      expect((await call('POST', '/api/v1/tenants', { key: ADMIN, body: JSON.stringify({ id: 'doomed-tenant' }) })).status).toBe(201);
      expect((await tables.held('doomed-tenant')).length).toBeGreaterThan(0);
      const statuses = await Promise.all(Array.from({ length: 5 }, () => call('DELETE', '/api/v1/tenants/doomed-tenant', { key: ADMIN }).then((r) => r.status)));
      expect(statuses.sort()).toEqual([204, 404, 404, 404, 404]);
      expect(await tables.held('doomed-tenant')).toEqual([]);
    });

    /**
     * Two routers on one metadata DB, each with its own catalog handle over the same store. A
     * purge takes a while (many files): here each holds back a moment before purging, time enough
     * for the other router's DELETE to find the row gone and the tables still there.
     */
    const twoRouters = async (): Promise<{ routers: App[]; purges: string[]; mostAtOnce(): number; close(): Promise<void> }> => {
      const purges: string[] = [];
      let running = 0;
      let most = 0;
      const routers = await Promise.all(
        ['a', 'b'].map(async (name) => {
          const own = makeTenantTables(db, store);
          const slowPurge: TenantTables = {
            ...own,
            purge: async (tenantId, dataset) => {
              purges.push(`${name}: ${tenantId}/${dataset ?? '*'}`);
              most = Math.max(most, ++running);
              try {
                await new Promise((r) => setTimeout(r, 300));
                return await own.purge(tenantId, dataset);
              } finally {
                running--;
              }
            },
          };
          return makeApp(db, { tables: slowPurge, provisionDataset: provisionOnCreate(own, db) });
        }),
      );
      return { routers, purges, mostAtOnce: () => most, close: async () => void (await Promise.all(routers.map((r) => r.close()))) };
    };

    it('of one dataset through two routers: one purges and answers 204, the other 404 after it', async () => {
      const { routers, purges, close } = await twoRouters();
      try {
        expect((await call('POST', '/api/v1/tenants/acme/datasets', { key: manageKey, body: JSON.stringify({ id: 'shared' }), via: routers[0] })).status).toBe(201);
        expect((await tables.held('acme', 'shared')).length).toBeGreaterThan(0);
        const statuses = await Promise.all(routers.map((via) => call('DELETE', '/api/v1/tenants/acme/datasets/shared', { key: manageKey, via }).then((r) => r.status)));
        expect(statuses.sort()).toEqual([204, 404]);
        expect(purges).toHaveLength(1);
        expect(purges[0]).toMatch(/^[ab]: acme\/shared$/);
        expect(await tables.held('acme', 'shared')).toEqual([]);
        expect((await db.query(`SELECT name FROM leases WHERE name LIKE 'delete-%'`)).rows).toEqual([]);
      } finally {
        await close();
      }
    });

    it('of one tenant through two routers: one purges and answers 204, the other 404 after it', async () => {
      const { routers, purges, close } = await twoRouters();
      try {
        expect((await call('POST', '/api/v1/tenants', { key: ADMIN, body: JSON.stringify({ id: 'shared-tenant' }), via: routers[0] })).status).toBe(201);
        expect((await tables.held('shared-tenant')).length).toBeGreaterThan(0);
        const statuses = await Promise.all(routers.map((via) => call('DELETE', '/api/v1/tenants/shared-tenant', { key: ADMIN, via }).then((r) => r.status)));
        expect(statuses.sort()).toEqual([204, 404]);
        expect(purges).toEqual([expect.stringMatching(/^[ab]: shared-tenant\/\*$/)]);
        expect(await tables.held('shared-tenant')).toEqual([]);
      } finally {
        await close();
      }
    });

    it("of a tenant through one router and of its dataset through another: the purges run one after the other", async () => {
      const { routers, purges, mostAtOnce, close } = await twoRouters();
      try {
        expect((await call('POST', '/api/v1/tenants', { key: ADMIN, body: JSON.stringify({ id: 'both-ways' }), via: routers[0] })).status).toBe(201);
        expect((await call('POST', '/api/v1/tenants/both-ways/datasets', { key: ADMIN, body: JSON.stringify({ id: 'side' }), via: routers[0] })).status).toBe(201);
        // The dataset's purge is under way when the tenant's DELETE arrives.
        const dataset = call('DELETE', '/api/v1/tenants/both-ways/datasets/side', { key: ADMIN, via: routers[1] }).then((r) => r.status);
        while (purges.length === 0) await new Promise((r) => setTimeout(r, 5));
        const tenant = await call('DELETE', '/api/v1/tenants/both-ways', { key: ADMIN, via: routers[0] }).then((r) => r.status);
        expect([await dataset, tenant]).toEqual([204, 204]);
        expect(purges).toEqual(['b: both-ways/side', 'a: both-ways/*']);
        expect(mostAtOnce()).toBe(1);
        expect(await tables.held('both-ways')).toEqual([]);
      } finally {
        await close();
      }
    });
  });

  describe('JSON bodies', () => {
    it('a key given twice is refused, naming it, at any depth', async () => {
      const top = await call('POST', '/api/v1/tenants', { key: ADMIN, body: '{"id":"dup-a","display_name":"A","id":"dup-b"}' });
      expect(top).toMatchObject({ status: 400, body: { errorType: 'bad_data', error: 'body.id is given more than once' } });
      // Spelt differently, the same key.
      const escaped = await call('POST', '/api/v1/tenants', { key: ADMIN, body: '{"id":"dup-c","settings":{"x":{"retention":"1d","ret\\u0065ntion":"30d"}}}' });
      expect(escaped).toMatchObject({ status: 400, body: { errorType: 'bad_data', error: 'body.settings.x.retention is given more than once' } });
      expect((await db.query(`SELECT id FROM tenants WHERE id LIKE 'dup-%'`)).rows).toEqual([]);
      // The same key in sibling objects is no duplicate.
      expect((await call('POST', '/api/v1/tenants', { key: ADMIN, body: '{"id":"dup-d","settings":{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]}}' })).status).toBe(201);
    });

    it('a gzip body is inflated, with the size limit on what it inflates to', async () => {
      const zipped = await call('POST', '/api/v1/tenants', { key: ADMIN, body: gzipSync('{"id":"zipped"}'), headers: { 'content-encoding': 'gzip' } });
      expect(zipped).toMatchObject({ status: 201, body: { id: 'zipped' } });
      // 10 MB of spaces inflate from a few kB: refused as too large, never parsed.
      const bomb = gzipSync(`{"id":"bomb"${' '.repeat(10 * 1024 * 1024)}}`);
      const res = await call('POST', '/api/v1/tenants', { key: ADMIN, body: bomb, headers: { 'content-encoding': 'gzip' } });
      expect(res).toMatchObject({ status: 413, body: { errorType: 'too_large' } });
      const broken = await call('POST', '/api/v1/tenants', { key: ADMIN, body: Buffer.from('not gzip at all'), headers: { 'content-encoding': 'gzip' } });
      expect(broken).toMatchObject({ status: 400, body: { errorType: 'bad_data' } });
    });

    it('an encoding other than gzip is 415 in the envelope', async () => {
      const res = await call('POST', '/api/v1/tenants', { key: ADMIN, body: Buffer.from('{"id":"br"}'), headers: { 'content-encoding': 'br' } });
      expect(res).toMatchObject({ status: 415, body: { status: 'error', error: expect.stringContaining('br') } });
    });
  });
});
