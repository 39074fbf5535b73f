import { createHash } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { ExportTraceServiceRequestSchema, create, toBinary } from '@floe/proto';
import { startFloe, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * The management API, who may do what, and sessions (issue 3; spec 2, Authentication), against a
 * running router in both modes: embedded (PGlite, one process) and cluster (PostgreSQL, five
 * processes). Every rule is checked by status, body and the rows stored in the metadata DB.
 */

interface Res<T = any> {
  status: number;
  body: T;
  headers: Headers;
}
interface Call {
  key?: string;
  cookie?: string;
  tenant?: string;
  body?: unknown;
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

describe.each<FloeMode>(['embedded', 'cluster'])('management API (%s)', (mode) => {
  let floe: FloeUnderTest;
  let admin: string;
  /** tenant:manage key of acme from `floe admin bootstrap`. */
  let acmeKey: string;
  let globexKey: string;

  beforeAll(async () => {
    floe = await startFloe({ mode });
    admin = floe.adminApiKey;
    acmeKey = (await floe.bootstrap('acme')).api_key;
    globexKey = (await floe.bootstrap('globex')).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  async function api<T = any>(method: string, path: string, c: Call = {}): Promise<Res<T>> {
    const headers: Record<string, string> = { ...c.headers };
    if (c.key) headers.authorization = `Bearer ${c.key}`;
    if (c.cookie) headers.cookie = c.cookie;
    if (c.tenant) headers['x-tenant-id'] = c.tenant;
    let body: string | Buffer | undefined = c.raw;
    if (c.body !== undefined) body = JSON.stringify(c.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const res = await fetch(`${floe.routerUrl}${path}`, { method, headers, body });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text), headers: res.headers };
  }

  const envelope = (errorType: string) => ({ status: 'error', errorType, error: expect.any(String) });

  const login = async (username: string, password: string) => {
    const res = await api('POST', '/ui/session', { body: { username, password } });
    const cookie = res.headers.get('set-cookie');
    return { res, cookie: cookie ? cookie.split(';')[0]! : undefined, setCookie: cookie };
  };

  async function newUser(email: string, opts: { password?: string; role?: 'admin' | 'member' | 'viewer'; tenant?: string; instanceAdmin?: boolean } = {}) {
    const created = await api('POST', '/api/v1/users', { key: admin, body: { email, ...(opts.password ? { password: opts.password } : {}), ...(opts.instanceAdmin ? { is_instance_admin: true } : {}) } });
    expect(created.status).toBe(201);
    if (opts.role) {
      const g = await api('POST', `/api/v1/tenants/${opts.tenant ?? 'acme'}/memberships`, { key: admin, body: { user_id: created.body.id, role: opts.role } });
      expect(g.status).toBe(201);
    }
    return created.body as { id: string; email: string };
  }

  describe('tenants', () => {
    it('the break-glass key creates, lists, reads, updates and deletes tenants', async () => {
      const created = await api('POST', '/api/v1/tenants', { key: admin, body: { id: 'initech', display_name: 'Initech' } });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ id: 'initech', display_name: 'Initech', default_dataset: 'default', disabled: false, settings: {} });
      expect(await floe.metaQuery('SELECT id, display_name FROM tenants WHERE id = $1', ['initech'])).toEqual([{ id: 'initech', display_name: 'Initech' }]);
      expect(await floe.metaQuery('SELECT id, is_default FROM datasets WHERE tenant_id = $1', ['initech'])).toEqual([{ id: 'default', is_default: true }]);

      expect((await api('POST', '/api/v1/tenants', { key: admin, body: { id: 'initech' } })).body).toEqual({ status: 'error', errorType: 'conflict', error: 'tenant initech already exists' });
      const list = await api('GET', '/api/v1/tenants', { key: admin });
      expect(list.status).toBe(200);
      expect(list.body.tenants.map((t: { id: string }) => t.id)).toEqual(expect.arrayContaining(['acme', 'globex', 'initech']));
      expect((await api('GET', '/api/v1/tenants/initech', { key: admin })).body).toMatchObject({ id: 'initech' });

      const patched = await api('PATCH', '/api/v1/tenants/initech', { key: admin, body: { display_name: 'Initech LLC' } });
      expect(patched.status).toBe(200);
      expect(patched.body.display_name).toBe('Initech LLC');

      const del = await api('DELETE', '/api/v1/tenants/initech', { key: admin });
      expect(del.status).toBe(204);
      expect(await floe.metaQuery('SELECT id FROM tenants WHERE id = $1', ['initech'])).toEqual([]);
      expect(await floe.metaQuery('SELECT id FROM datasets WHERE tenant_id = $1', ['initech'])).toEqual([]);
      expect((await api('GET', '/api/v1/tenants/initech', { key: admin })).status).toBe(404);
      expect((await api('DELETE', '/api/v1/tenants/initech', { key: admin })).status).toBe(404);
    });

    it.each([
      ['no credentials', {}, 401, 'unauthorized'],
      ['an unknown key', { key: 'floe_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, 401, 'unauthorized'],
      ['a malformed Authorization header', { headers: { authorization: 'Token abc' } }, 401, 'unauthorized'],
      ['a stale session cookie', { cookie: 'floe_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, 401, 'unauthorized'],
    ] as const)('%s → %i', async (_n, call, status, kind) => {
      const res = await api('GET', '/api/v1/tenants', call as Call);
      expect(res.status).toBe(status);
      expect(res.body).toEqual(envelope(kind));
    });

    it('a tenant:manage key sees and manages only its own tenant', async () => {
      const list = await api('GET', '/api/v1/tenants', { key: acmeKey });
      expect(list.body.tenants.map((t: { id: string }) => t.id)).toEqual(['acme']);
      expect((await api('GET', '/api/v1/tenants/acme', { key: acmeKey })).status).toBe(200);
      expect((await api('GET', '/api/v1/tenants/globex', { key: acmeKey })).body).toEqual(envelope('forbidden'));
      expect((await api('GET', '/api/v1/tenants/globex', { key: acmeKey })).status).toBe(403);
      // X-Tenant-ID naming another tenant is refused, as on every surface.
      expect((await api('GET', '/api/v1/tenants/acme', { key: acmeKey, tenant: 'globex' })).status).toBe(403);
      // Instance-wide actions are not a tenant admin's.
      expect((await api('POST', '/api/v1/tenants', { key: acmeKey, body: { id: 'sneaky' } })).status).toBe(403);
      expect((await api('DELETE', '/api/v1/tenants/acme', { key: acmeKey })).status).toBe(403);
      expect((await api('PATCH', '/api/v1/tenants/acme', { key: acmeKey, body: { disabled: true } })).status).toBe(403);
      expect((await api('PATCH', '/api/v1/tenants/acme', { key: acmeKey, body: { display_name: 'ACME' } })).status).toBe(200);
      expect(await floe.metaQuery('SELECT disabled, display_name FROM tenants WHERE id = $1', ['acme'])).toEqual([{ disabled: false, display_name: 'ACME' }]);
      expect(await floe.metaQuery('SELECT id FROM tenants WHERE id = $1', ['sneaky'])).toEqual([]);
    });

    it('a tenant admin writes its settings but not its limits (rates, quota, retention): those are the operator\'s', async () => {
      const limits = { max_storage_bytes: 1_000_000, retention: '30d' };
      expect((await api('PATCH', '/api/v1/tenants/acme', { key: admin, body: { settings: { limits } } })).status).toBe(200);
      const raise = await api('PATCH', '/api/v1/tenants/acme', { key: acmeKey, body: { settings: { limits: { ...limits, max_storage_bytes: 0 } } } });
      expect(raise.status).toBe(403);
      expect(raise.body).toMatchObject({ status: 'error', errorType: 'forbidden', error: 'tenant.limits needs an instance admin' });
      // Other settings are the tenant's; an absent limits is carried over, an unchanged one accepted.
      const own = await api('PATCH', '/api/v1/tenants/acme', { key: acmeKey, body: { settings: { theme: 'dark' } } });
      expect(own.status).toBe(200);
      expect(own.body.settings).toEqual({ theme: 'dark', limits });
      expect((await api('PATCH', '/api/v1/tenants/acme', { key: acmeKey, body: { settings: { theme: 'light', limits } } })).status).toBe(200);
      expect(await floe.metaQuery('SELECT settings FROM tenants WHERE id = $1', ['acme'])).toEqual([{ settings: { theme: 'light', limits } }]);
      // The operator's are checked as the config keys they override.
      const bad = await api('PATCH', '/api/v1/tenants/acme', { key: admin, body: { settings: { limits: { retention: 'soon', retention_by_table: { spans: '1d' }, store: 'redis' } } } });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({
        status: 'error',
        errorType: 'bad_data',
        error: 'settings.limits.retention: not a duration: "soon" (use e.g. "500ms", "5s", "1h"); settings.limits.retention_by_table.spans: unknown key; settings.limits.store: unknown key',
      });
      expect((await api('POST', '/api/v1/tenants', { key: admin, body: { id: 'badlimits', settings: { limits: { max_storage_bytes: -1 } } } })).status).toBe(400);
      // The operator may lift them.
      expect((await api('PATCH', '/api/v1/tenants/acme', { key: admin, body: { settings: { theme: 'light' } } })).status).toBe(200);
      expect(await floe.metaQuery('SELECT settings FROM tenants WHERE id = $1', ['acme'])).toEqual([{ settings: { theme: 'light' } }]);
    });
  });

  describe('datasets', () => {
    it('a tenant:manage key creates a dataset in its tenant (201, row stored) and gets 403 on another', async () => {
      const res = await api('POST', '/api/v1/tenants/acme/datasets', { key: acmeKey, body: { id: 'prod' } });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ tenant_id: 'acme', id: 'prod', is_default: false });
      expect(await floe.metaQuery('SELECT tenant_id, id, is_default FROM datasets WHERE tenant_id = $1 AND id = $2', ['acme', 'prod'])).toEqual([{ tenant_id: 'acme', id: 'prod', is_default: false }]);

      const other = await api('POST', '/api/v1/tenants/globex/datasets', { key: acmeKey, body: { id: 'stolen' } });
      expect(other.status).toBe(403);
      expect(other.body).toEqual(envelope('forbidden'));
      expect(await floe.metaQuery('SELECT id FROM datasets WHERE tenant_id = $1 AND id = $2', ['globex', 'stolen'])).toEqual([]);

      expect((await api('POST', '/api/v1/tenants/acme/datasets', { key: acmeKey, body: { id: 'prod' } })).status).toBe(409);
      expect((await api('POST', '/api/v1/tenants/acme/datasets', { key: acmeKey, body: { id: 'default' } })).status).toBe(409);
      // The break-glass key needs no tenant.
      expect((await api('POST', '/api/v1/tenants/globex/datasets', { key: admin, body: { id: 'edge' } })).status).toBe(201);
      expect((await api('POST', '/api/v1/tenants/nobody/datasets', { key: admin, body: { id: 'x' } })).status).toBe(404);
    });

    it('lists the default dataset first and reads one', async () => {
      const list = await api('GET', '/api/v1/tenants/acme/datasets', { key: acmeKey });
      expect(list.status).toBe(200);
      expect(list.body.datasets.map((d: { id: string }) => d.id)).toEqual(['default', 'prod']);
      expect((await api('GET', '/api/v1/tenants/acme/datasets/prod', { key: acmeKey })).body).toMatchObject({ id: 'prod', tenant_id: 'acme' });
      expect((await api('GET', '/api/v1/tenants/acme/datasets/nope', { key: acmeKey })).status).toBe(404);
    });

    it('a dataset-bound key is not a tenant admin, even with tenant:manage', async () => {
      const bound = await api('POST', '/api/v1/tenants/acme/api-keys', { key: acmeKey, body: { scopes: ['tenant:manage'], dataset_id: 'prod' } });
      expect(bound.status).toBe(201);
      expect((await api('POST', '/api/v1/tenants/acme/datasets', { key: bound.body.secret, body: { id: 'wider' } })).status).toBe(403);
      expect((await api('GET', '/api/v1/tenants/acme/datasets', { key: bound.body.secret })).status).toBe(200);
    });
  });

  describe('api keys', () => {
    it('create returns the secret once; the database holds only its hash; list never shows it', async () => {
      const res = await api('POST', '/api/v1/tenants/acme/api-keys', { key: acmeKey, body: { name: 'collector', scopes: ['ingest', 'query'] } });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ tenant_id: 'acme', dataset_id: null, name: 'collector', scopes: ['ingest', 'query'], revoked_at: null });
      expect(res.body.secret).toMatch(/^floe_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
      const [row] = await floe.metaQuery<{ key_hash: string; created_by: string }>('SELECT key_hash, created_by FROM api_keys WHERE id = $1', [res.body.id]);
      expect(row!.key_hash).toBe(createHash('sha256').update(res.body.secret).digest('hex'));
      expect(row!.created_by).toMatch(/^key:[0-9a-f]{16}$/);
      const list = await api('GET', '/api/v1/tenants/acme/api-keys', { key: acmeKey });
      expect(list.status).toBe(200);
      const listed = list.body.api_keys.find((k: { id: string }) => k.id === res.body.id);
      expect(listed).toMatchObject({ name: 'collector' });
      expect(JSON.stringify(list.body)).not.toContain(res.body.secret);
      expect(listed).not.toHaveProperty('secret');
      expect((await api('GET', `/api/v1/tenants/acme/api-keys/${res.body.id}`, { key: acmeKey })).body).not.toHaveProperty('secret');
    });

    it('updates scopes (stored) and refuses unknown scopes', async () => {
      const k = (await api('POST', '/api/v1/tenants/acme/api-keys', { key: acmeKey, body: { scopes: ['ingest'] } })).body;
      const upd = await api('PATCH', `/api/v1/tenants/acme/api-keys/${k.id}`, { key: acmeKey, body: { scopes: ['query'] } });
      expect(upd.status).toBe(200);
      expect(upd.body.scopes).toEqual(['query']);
      expect(await floe.metaQuery('SELECT scopes FROM api_keys WHERE id = $1', [k.id])).toEqual([{ scopes: ['query'] }]);
      const bad = await api('PATCH', `/api/v1/tenants/acme/api-keys/${k.id}`, { key: acmeKey, body: { scopes: ['root'] } });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual(envelope('bad_data'));
      // Another tenant's key cannot touch it.
      expect((await api('PATCH', `/api/v1/tenants/acme/api-keys/${k.id}`, { key: globexKey, body: { scopes: ['ingest'] } })).status).toBe(403);
    });

    it('a revoked key is 401 on the next request at the router, the acceptor and the querier', async () => {
      const k = (await api('POST', '/api/v1/tenants/acme/api-keys', { key: acmeKey, body: { scopes: ['ingest', 'query', 'tenant:manage'] } })).body;
      const otlp = () =>
        fetch(`${floe.otlpHttpUrl}/v1/traces`, {
          method: 'POST',
          headers: { authorization: `Bearer ${k.secret}`, 'x-tenant-id': 'acme', 'content-type': 'application/x-protobuf' },
          body: Buffer.from(toBinary(ExportTraceServiceRequestSchema, create(ExportTraceServiceRequestSchema, {}))),
        });
      const flight = () =>
        flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT 1 AS x'), metadata: { authorization: `Bearer ${k.secret}`, 'x-tenant-id': 'acme' }, deadlineMs: 20_000 }).then(
          () => 'ok',
          (err: { code?: number }) => err.code,
        );
      const echo = () => fetch(`${floe.routerUrl}/tracequery/api/echo`, { headers: { authorization: `Bearer ${k.secret}`, 'x-tenant-id': 'acme' } });

      // Used everywhere first, so every service has the key cached as valid.
      expect((await api('GET', '/api/v1/whoami', { key: k.secret })).body).toMatchObject({ kind: 'api_key', api_key: { id: k.id, tenant_id: 'acme' } });
      expect((await otlp()).status).toBe(200);
      expect(await flight()).toBe('ok');
      expect((await echo()).status).toBe(200);

      const revoked = await api('DELETE', `/api/v1/tenants/acme/api-keys/${k.id}`, { key: acmeKey });
      expect(revoked.status).toBe(200);
      expect(revoked.body.revoked_at).toEqual(expect.any(String));
      expect((await floe.metaQuery<{ revoked: boolean }>('SELECT revoked_at IS NOT NULL AS revoked FROM api_keys WHERE id = $1', [k.id]))[0]!.revoked).toBe(true);

      expect((await api('GET', '/api/v1/whoami', { key: k.secret })).status).toBe(401);
      expect((await otlp()).status).toBe(401);
      expect((await echo()).status).toBe(401);
      expect(await flight()).toBe(16); // UNAUTHENTICATED
      // Listed only with include_revoked.
      expect((await api('GET', '/api/v1/tenants/acme/api-keys', { key: acmeKey })).body.api_keys.map((x: { id: string }) => x.id)).not.toContain(k.id);
      expect((await api('GET', '/api/v1/tenants/acme/api-keys?include_revoked=true', { key: acmeKey })).body.api_keys.map((x: { id: string }) => x.id)).toContain(k.id);
    });
  });

  describe('users, roles and sessions', () => {
    it('creates local users (salted scrypt hash stored) and passwordless ones', async () => {
      const u = await api('POST', '/api/v1/users', { key: admin, body: { email: 'Ann@Example.com', password: 'correct horse', display_name: 'Ann' } });
      expect(u.status).toBe(201);
      expect(u.body).toMatchObject({ email: 'ann@example.com', display_name: 'Ann', has_password: true, is_instance_admin: false, disabled: false });
      expect(u.body).not.toHaveProperty('password_hash');
      const [row] = await floe.metaQuery<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = $1', [u.body.id]);
      expect(row!.password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
      expect(row!.password_hash).not.toContain('correct horse');

      const sso = await api('POST', '/api/v1/users', { key: admin, body: { email: 'sso@example.com' } });
      expect(sso.status).toBe(201);
      expect(sso.body.has_password).toBe(false);
      expect((await login('sso@example.com', 'anything-at-all')).res.status).toBe(401);
      expect((await api('POST', '/api/v1/users', { key: admin, body: { email: 'ann@example.com' } })).status).toBe(409);
      // Users are an instance-wide resource.
      expect((await api('POST', '/api/v1/users', { key: acmeKey, body: { email: 'x@example.com' } })).status).toBe(403);
      expect((await api('GET', '/api/v1/users', { key: acmeKey })).status).toBe(403);
      expect((await api('GET', '/api/v1/users', { key: admin })).body.users.map((x: { email: string }) => x.email)).toEqual(expect.arrayContaining(['ann@example.com', 'sso@example.com']));
    });

    it('signs in with a password: cookie attributes, GET /ui/session, whoami, sign-out revokes server-side', async () => {
      const u = await newUser('sam@example.com', { password: 'pa55word!', role: 'viewer' });
      const { res, cookie, setCookie } = await login('SAM@example.com', 'pa55word!');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ user: { id: u.id, email: 'sam@example.com', is_instance_admin: false, is_demo: false }, memberships: [{ tenant_id: 'acme', role: 'viewer' }] });
      const attrs = setCookie!.split('; ');
      expect(attrs[0]).toMatch(/^floe_session=[A-Za-z0-9_-]{43}$/);
      expect(attrs).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Lax', 'Path=/']));
      expect(attrs).not.toContain('Secure'); // the test router's public URL is http
      const token = cookie!.slice('floe_session='.length);
      const [stored] = await floe.metaQuery<{ id: string; user_id: string }>('SELECT id, user_id FROM sessions WHERE user_id = $1', [u.id]);
      expect(stored).toEqual({ id: createHash('sha256').update(token).digest('hex'), user_id: u.id });

      const me = await api('GET', '/ui/session', { cookie });
      expect(me.status).toBe(200);
      expect(me.body.user).toEqual({ id: u.id, email: 'sam@example.com', display_name: '', is_instance_admin: false, is_demo: false });
      expect((await api('GET', '/api/v1/whoami', { cookie })).body).toMatchObject({ kind: 'user', user: { id: u.id }, memberships: [{ tenant_id: 'acme', role: 'viewer' }] });
      // The session endpoint is cookie-only: a key is not a session.
      expect((await api('GET', '/ui/session', { key: admin })).status).toBe(401);

      const out = await api('DELETE', '/ui/session', { cookie });
      expect(out.status).toBe(204);
      expect(out.headers.get('set-cookie')).toBe('floe_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax');
      expect((await floe.metaQuery<{ revoked: boolean }>('SELECT revoked_at IS NOT NULL AS revoked FROM sessions WHERE user_id = $1', [u.id]))[0]!.revoked).toBe(true);
      expect((await api('GET', '/ui/session', { cookie })).status).toBe(401);
      expect((await api('GET', '/api/v1/whoami', { cookie })).status).toBe(401);
    });

    it('wrong passwords, unknown users and disabled users cannot sign in, with one answer; disabling ends live sessions', async () => {
      const u = await newUser('dora@example.com', { password: 'pa55word!', role: 'member' });
      const { cookie } = await login('dora@example.com', 'pa55word!');
      expect((await api('GET', '/ui/session', { cookie })).status).toBe(200);
      const wrong = await login('dora@example.com', 'wrong-password');
      const unknown = await login('nobody@example.com', 'pa55word!');
      expect(wrong.res.status).toBe(401);
      expect(unknown.res.body).toEqual(wrong.res.body);
      expect(wrong.setCookie).toBeNull();

      const dis = await api('PATCH', `/api/v1/users/${u.id}`, { key: admin, body: { disabled: true } });
      expect(dis.status).toBe(200);
      expect(dis.body.disabled).toBe(true);
      expect(await floe.metaQuery('SELECT disabled FROM users WHERE id = $1', [u.id])).toEqual([{ disabled: true }]);
      const refused = await login('dora@example.com', 'pa55word!');
      expect(refused.res.status).toBe(401);
      expect(refused.res.body).toEqual(wrong.res.body);
      expect(refused.setCookie).toBeNull();
      expect((await api('GET', '/ui/session', { cookie })).status).toBe(401);
      expect((await api('GET', '/api/v1/tenants/acme', { cookie })).status).toBe(401);
    });

    it('locks password sign-in of an account after five failures (429 with Retry-After, the right password too); other accounts sign in', async () => {
      await newUser('lockme@example.com', { password: 'pa55word!', role: 'member' });
      await newUser('unlocked@example.com', { password: 'pa55word!', role: 'member' });
      for (let i = 0; i < 5; i++) expect((await login('lockme@example.com', `guess-${i}`)).res.status).toBe(401);
      const locked = await login('lockme@example.com', 'pa55word!');
      expect(locked.res.status).toBe(429);
      // About a minute until one attempt has come back (the failures' own seconds refill a little).
      expect(locked.res.body).toEqual({ status: 'error', errorType: 'rate_limited', error: expect.stringMatching(/^too many failed sign-ins for this account; try again in \d+ s$/), retryAfterMs: expect.any(Number) });
      expect(Number(locked.res.headers.get('retry-after'))).toBe(Math.ceil(locked.res.body.retryAfterMs / 1000));
      expect(locked.setCookie).toBeNull();
      expect((await login('unlocked@example.com', 'pa55word!')).res.status).toBe(200);
    });

    it('a viewer reads but cannot manage: no keys, no datasets, no grants', async () => {
      await newUser('vic@example.com', { password: 'pa55word!', role: 'viewer' });
      const { cookie } = await login('vic@example.com', 'pa55word!');
      expect((await api('GET', '/api/v1/tenants/acme', { cookie })).status).toBe(200);
      expect((await api('GET', '/api/v1/tenants/acme/datasets', { cookie })).status).toBe(200);
      const key = await api('POST', '/api/v1/tenants/acme/api-keys', { cookie, body: { scopes: ['query'] } });
      expect(key.status).toBe(403);
      expect(key.body).toEqual(envelope('forbidden'));
      expect((await api('POST', '/api/v1/tenants/acme/datasets', { cookie, body: { id: 'viewerset' } })).status).toBe(403);
      expect((await api('POST', '/api/v1/tenants/acme/memberships', { cookie, body: { email: 'vic@example.com', role: 'admin' } })).status).toBe(403);
      expect((await api('GET', '/api/v1/tenants/globex', { cookie })).status).toBe(403);
      expect(await floe.metaQuery('SELECT id FROM datasets WHERE id = $1', ['viewerset'])).toEqual([]);
    });

    it('a member creates keys without tenant:manage and revokes only their own; cannot create datasets', async () => {
      await newUser('meg@example.com', { password: 'pa55word!', role: 'member' });
      const { cookie } = await login('meg@example.com', 'pa55word!');
      const mine = await api('POST', '/api/v1/tenants/acme/api-keys', { cookie, body: { scopes: ['ingest'] } });
      expect(mine.status).toBe(201);
      expect(mine.body.created_by).toMatch(/^user:[0-9a-f]{16}$/);
      expect((await api('POST', '/api/v1/tenants/acme/api-keys', { cookie, body: { scopes: ['tenant:manage'] } })).status).toBe(403);
      expect((await api('POST', '/api/v1/tenants/acme/datasets', { cookie, body: { id: 'memberset' } })).status).toBe(403);
      const someoneElses = (await api('POST', '/api/v1/tenants/acme/api-keys', { key: acmeKey, body: { scopes: ['ingest'] } })).body;
      expect((await api('DELETE', `/api/v1/tenants/acme/api-keys/${someoneElses.id}`, { cookie })).status).toBe(403);
      expect((await api('DELETE', `/api/v1/tenants/acme/api-keys/${mine.body.id}`, { cookie })).status).toBe(200);
    });

    it('a tenant admin (by role) manages the tenant; a local and a mapped row coexist and the higher role wins', async () => {
      const u = await newUser('ada@example.com', { password: 'pa55word!', role: 'viewer' });
      // An SSO group mapping (written at SSO login in a later issue) grants admin beside the local viewer grant.
      await floe.metaQuery(`INSERT INTO memberships (tenant_id, user_id, role, source, granted_by) VALUES ('acme', $1, 'admin', 'mapped', 'oidc_mapping')`, [u.id]);
      const { cookie } = await login('ada@example.com', 'pa55word!');
      expect((await api('GET', '/api/v1/whoami', { cookie })).body.memberships).toEqual([{ tenant_id: 'acme', role: 'admin' }]);
      const rows = (await api('GET', '/api/v1/tenants/acme/memberships', { cookie })).body.memberships.filter((m: { user_id: string }) => m.user_id === u.id);
      expect(rows.map((m: { role: string; granted_by: string }) => [m.role, m.granted_by])).toEqual([
        ['viewer', 'admin'],
        ['admin', 'oidc_mapping'],
      ]);
      const ds = await api('POST', '/api/v1/tenants/acme/datasets', { cookie, body: { id: 'adaset' } });
      expect(ds.status).toBe(201);
      // Removing the local grant leaves the mapped one.
      expect((await api('DELETE', `/api/v1/tenants/acme/memberships/${u.id}`, { key: acmeKey })).status).toBe(204);
      expect(await floe.metaQuery('SELECT role, granted_by FROM memberships WHERE user_id = $1', [u.id])).toEqual([{ role: 'admin', granted_by: 'oidc_mapping' }]);
    });

    it('tenant admins grant roles (granted_by records who); 201 new, 200 changed; unknown users 404', async () => {
      const u = await newUser('gus@example.com');
      const g = await api('POST', '/api/v1/tenants/acme/memberships', { key: acmeKey, body: { email: 'gus@example.com', role: 'member' } });
      expect(g.status).toBe(201);
      expect(g.body).toMatchObject({ tenant_id: 'acme', user_id: u.id, role: 'member', granted_by: expect.stringMatching(/^key:/) });
      const again = await api('POST', '/api/v1/tenants/acme/memberships', { key: acmeKey, body: { user_id: u.id, role: 'viewer' } });
      expect(again.status).toBe(200);
      expect(await floe.metaQuery(`SELECT role FROM memberships WHERE user_id = $1 AND source = 'local'`, [u.id])).toEqual([{ role: 'viewer' }]);
      expect((await api('POST', '/api/v1/tenants/acme/memberships', { key: acmeKey, body: { email: 'ghost@example.com', role: 'viewer' } })).status).toBe(404);
      expect((await api('POST', '/api/v1/tenants/acme/memberships', { key: acmeKey, body: { email: 'gus@example.com', user_id: u.id, role: 'viewer' } })).status).toBe(400);
      expect((await api('POST', '/api/v1/tenants/globex/memberships', { key: acmeKey, body: { user_id: u.id, role: 'admin' } })).status).toBe(403);
    });

    it('an instance-admin session has the break-glass rights', async () => {
      await newUser('root@example.com', { password: 'pa55word!', instanceAdmin: true });
      const { cookie } = await login('root@example.com', 'pa55word!');
      expect((await api('POST', '/api/v1/tenants', { cookie, body: { id: 'hooli' } })).status).toBe(201);
      expect((await api('POST', '/api/v1/tenants/hooli/datasets', { cookie, body: { id: 'x' } })).status).toBe(201);
      expect((await api('GET', '/api/v1/whoami', { cookie })).body).toMatchObject({ kind: 'user', is_instance_admin: true });
    });

    it('login configuration is public: no SSO yet, passwords on, no demo', async () => {
      const res = await api('GET', '/ui/session/config');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ oidc: null, password_enabled: true });
    });
  });

  describe('OpenAPI 3.1 and bad input', () => {
    it('serves the live document with every management, session and query operation', async () => {
      const res = await api('GET', '/api/v1/openapi.json');
      expect(res.status).toBe(200);
      expect(res.body.openapi).toBe('3.1.0');
      const ops = Object.entries(res.body.paths as Record<string, Record<string, { operationId: string }>>).flatMap(([path, o]) => Object.entries(o).map(([m, op]) => `${op.operationId} ${m.toUpperCase()} ${path}`));
      expect(ops.sort()).toEqual(
        [
          'bootstrap_tenant POST /api/v1/admin/bootstrap',
          'get_openapi GET /api/v1/openapi.json',
          'list_tenants GET /api/v1/tenants',
          'create_tenant POST /api/v1/tenants',
          'get_tenant GET /api/v1/tenants/{tenant_id}',
          'update_tenant PATCH /api/v1/tenants/{tenant_id}',
          'delete_tenant DELETE /api/v1/tenants/{tenant_id}',
          'create_dataset POST /api/v1/tenants/{tenant_id}/datasets',
          'list_datasets GET /api/v1/tenants/{tenant_id}/datasets',
          'get_dataset GET /api/v1/tenants/{tenant_id}/datasets/{dataset_id}',
          'delete_dataset DELETE /api/v1/tenants/{tenant_id}/datasets/{dataset_id}',
          'get_attribute_stats GET /api/v1/tenants/{tenant_id}/datasets/{dataset_id}/attribute-stats',
          'list_tables GET /api/v1/tenants/{tenant_id}/tables',
          'create_tables POST /api/v1/tenants/{tenant_id}/tables/create',
          'get_tenant_usage GET /api/v1/tenants/{tenant_id}/usage',
          'list_memberships GET /api/v1/tenants/{tenant_id}/memberships',
          'create_membership POST /api/v1/tenants/{tenant_id}/memberships',
          'delete_membership DELETE /api/v1/tenants/{tenant_id}/memberships/{user_id}',
          'create_api_key POST /api/v1/tenants/{tenant_id}/api-keys',
          'list_api_keys GET /api/v1/tenants/{tenant_id}/api-keys',
          'get_api_key GET /api/v1/tenants/{tenant_id}/api-keys/{key_id}',
          'update_api_key PATCH /api/v1/tenants/{tenant_id}/api-keys/{key_id}',
          'revoke_api_key DELETE /api/v1/tenants/{tenant_id}/api-keys/{key_id}',
          'list_users GET /api/v1/users',
          'create_user POST /api/v1/users',
          'get_user GET /api/v1/users/{user_id}',
          'update_user PATCH /api/v1/users/{user_id}',
          'delete_user DELETE /api/v1/users/{user_id}',
          'get_whoami GET /api/v1/whoami',
          'list_query_sources GET /api/v1/query/sources',
          'run_query POST /api/v1/query',
          'create_scm_installation_link POST /api/v1/tenants/{tenant_id}/scm-installations/link',
          'list_scm_installations GET /api/v1/tenants/{tenant_id}/scm-installations',
          'delete_scm_installation DELETE /api/v1/tenants/{tenant_id}/scm-installations/{installation_id}',
          'attach_scm_installation POST /api/v1/tenants/{tenant_id}/scm-installations/attach',
          'lookup_source_context POST /api/v1/tenants/{tenant_id}/source-context',
          'get_source_context_status GET /api/v1/tenants/{tenant_id}/source-context',
          'start_compaction POST /api/v1/ops/compact',
          'get_compaction_status GET /api/v1/ops/compact/status',
          'plan_compaction POST /api/v1/ops/compact/dry-run',
          'check_tables POST /api/v1/ops/tables/check',
          'rollback_table POST /api/v1/ops/tables/rollback',
          'drop_damaged_files POST /api/v1/ops/tables/drop-damaged-files',
          'find_unregistered_tables POST /api/v1/ops/tables/unregistered',
          'register_table POST /api/v1/ops/tables/register',
          'get_ops_job GET /api/v1/ops/jobs/{id}',
          'list_schemas GET /api/v1/tenants/{tenant_id}/schemas',
          'list_available_schemas GET /api/v1/schemas/available',
          'create_schema_registry POST /api/v1/schema/registries',
          'list_schema_registries GET /api/v1/schema/registries',
          'get_schema_registry GET /api/v1/schema/registries/{registry_id}',
          'update_schema_registry PUT /api/v1/schema/registries/{registry_id}',
          'delete_schema_registry DELETE /api/v1/schema/registries/{registry_id}',
          'validate_schema_registry POST /api/v1/schema/registries:validate',
          'list_schema_attributes GET /api/v1/schema/attributes',
          'get_schema_attribute GET /api/v1/schema/attributes/{key}',
          'list_schema_entities GET /api/v1/schema/entities',
          'list_schema_metrics GET /api/v1/schema/metrics',
          'get_session_config GET /ui/session/config',
          'create_session POST /ui/session',
          'get_session GET /ui/session',
          'delete_session DELETE /ui/session',
          // The query APIs (GET, the form POST twin, and Grafana's /loki/api/v1 path of the log API).
          'profiles_by_trace GET /api/profiles/trace/{trace_id}',
          'get_log_build_info GET /logquery/api/v1/status/buildinfo',
          'format_logql_query GET /logquery/api/v1/format_query',
          'post_format_logql_query POST /logquery/api/v1/format_query',
          'loki_format_logql_query GET /logquery/loki/api/v1/format_query',
          'post_loki_format_logql_query POST /logquery/loki/api/v1/format_query',
          'get_log_drilldown_limits GET /logquery/api/v1/drilldown-limits',
          'loki_get_log_build_info GET /logquery/loki/api/v1/status/buildinfo',
          'loki_get_log_drilldown_limits GET /logquery/loki/api/v1/drilldown-limits',
          'list_detected_field_values GET /logquery/api/v1/detected_field/{name}/values',
          'post_list_detected_field_values POST /logquery/api/v1/detected_field/{name}/values',
          'list_detected_fields GET /logquery/api/v1/detected_fields',
          'post_list_detected_fields POST /logquery/api/v1/detected_fields',
          'list_detected_labels GET /logquery/api/v1/detected_labels',
          'post_list_detected_labels POST /logquery/api/v1/detected_labels',
          'get_log_index_stats GET /logquery/api/v1/index/stats',
          'post_get_log_index_stats POST /logquery/api/v1/index/stats',
          'get_log_volume GET /logquery/api/v1/index/volume',
          'post_get_log_volume POST /logquery/api/v1/index/volume',
          'get_log_volume_range GET /logquery/api/v1/index/volume_range',
          'post_get_log_volume_range POST /logquery/api/v1/index/volume_range',
          'list_log_label_values GET /logquery/api/v1/label/{name}/values',
          'post_list_log_label_values POST /logquery/api/v1/label/{name}/values',
          'list_log_labels GET /logquery/api/v1/labels',
          'post_list_log_labels POST /logquery/api/v1/labels',
          'list_log_patterns GET /logquery/api/v1/patterns',
          'post_list_log_patterns POST /logquery/api/v1/patterns',
          'logql_query GET /logquery/api/v1/query',
          'post_logql_query POST /logquery/api/v1/query',
          'logql_query_range GET /logquery/api/v1/query_range',
          'post_logql_query_range POST /logquery/api/v1/query_range',
          'list_log_series GET /logquery/api/v1/series',
          'post_list_log_series POST /logquery/api/v1/series',
          'tail_logs GET /logquery/api/v1/tail',
          'post_tail_logs POST /logquery/api/v1/tail',
          'loki_list_detected_field_values GET /logquery/loki/api/v1/detected_field/{name}/values',
          'post_loki_list_detected_field_values POST /logquery/loki/api/v1/detected_field/{name}/values',
          'loki_list_detected_fields GET /logquery/loki/api/v1/detected_fields',
          'post_loki_list_detected_fields POST /logquery/loki/api/v1/detected_fields',
          'loki_list_detected_labels GET /logquery/loki/api/v1/detected_labels',
          'post_loki_list_detected_labels POST /logquery/loki/api/v1/detected_labels',
          'loki_get_log_index_stats GET /logquery/loki/api/v1/index/stats',
          'post_loki_get_log_index_stats POST /logquery/loki/api/v1/index/stats',
          'loki_get_log_volume GET /logquery/loki/api/v1/index/volume',
          'post_loki_get_log_volume POST /logquery/loki/api/v1/index/volume',
          'loki_get_log_volume_range GET /logquery/loki/api/v1/index/volume_range',
          'post_loki_get_log_volume_range POST /logquery/loki/api/v1/index/volume_range',
          'loki_list_log_label_values GET /logquery/loki/api/v1/label/{name}/values',
          'post_loki_list_log_label_values POST /logquery/loki/api/v1/label/{name}/values',
          'loki_list_log_labels GET /logquery/loki/api/v1/labels',
          'post_loki_list_log_labels POST /logquery/loki/api/v1/labels',
          'loki_list_log_patterns GET /logquery/loki/api/v1/patterns',
          'post_loki_list_log_patterns POST /logquery/loki/api/v1/patterns',
          'loki_logql_query GET /logquery/loki/api/v1/query',
          'post_loki_logql_query POST /logquery/loki/api/v1/query',
          'loki_logql_query_range GET /logquery/loki/api/v1/query_range',
          'post_loki_logql_query_range POST /logquery/loki/api/v1/query_range',
          'loki_list_log_series GET /logquery/loki/api/v1/series',
          'post_loki_list_log_series POST /logquery/loki/api/v1/series',
          'loki_tail_logs GET /logquery/loki/api/v1/tail',
          'post_loki_tail_logs POST /logquery/loki/api/v1/tail',
          'format_promql_query GET /metricquery/api/v1/format_query',
          'post_format_promql_query POST /metricquery/api/v1/format_query',
          'list_metric_label_values GET /metricquery/api/v1/label/{name}/values',
          'post_list_metric_label_values POST /metricquery/api/v1/label/{name}/values',
          'list_metric_labels GET /metricquery/api/v1/labels',
          'post_list_metric_labels POST /metricquery/api/v1/labels',
          'list_metric_metadata GET /metricquery/api/v1/metadata',
          'post_list_metric_metadata POST /metricquery/api/v1/metadata',
          'parse_promql_query GET /metricquery/api/v1/parse_query',
          'post_parse_promql_query POST /metricquery/api/v1/parse_query',
          'promql_query GET /metricquery/api/v1/query',
          'post_promql_query POST /metricquery/api/v1/query',
          'promql_query_exemplars GET /metricquery/api/v1/query_exemplars',
          'post_promql_query_exemplars POST /metricquery/api/v1/query_exemplars',
          'promql_query_range GET /metricquery/api/v1/query_range',
          'post_promql_query_range POST /metricquery/api/v1/query_range',
          'list_metric_series GET /metricquery/api/v1/series',
          'post_list_metric_series POST /metricquery/api/v1/series',
          'get_metric_build_info GET /metricquery/api/v1/status/buildinfo',
          'get_metric_tsdb_status GET /metricquery/api/v1/status/tsdb',
          'pyroscope_label_names GET /profilequery/label-names',
          'post_pyroscope_label_names POST /profilequery/label-names',
          'pyroscope_label_values GET /profilequery/label-values',
          'post_pyroscope_label_values POST /profilequery/label-values',
          'pyroscope_profile_types GET /profilequery/profile-types',
          'post_pyroscope_profile_types POST /profilequery/profile-types',
          'delete_metric_series POST /metricquery/api/v1/admin/tsdb/delete_series',
          'put_delete_metric_series PUT /metricquery/api/v1/admin/tsdb/delete_series',
          'clean_metric_tombstones POST /metricquery/api/v1/admin/tsdb/clean_tombstones',
          'put_clean_metric_tombstones PUT /metricquery/api/v1/admin/tsdb/clean_tombstones',
          'prometheus_remote_read POST /metricquery/api/v1/read',
          'list_metric_rules GET /metricquery/api/v1/rules',
          'list_metric_alerts GET /metricquery/api/v1/alerts',
          'list_log_rules GET /logquery/prometheus/api/v1/rules',
          'list_log_alerts GET /logquery/prometheus/api/v1/alerts',
          // The ruler config API: Mimir's and Cortex's paths on the metrics API, Loki's two on the log API.
          'list_rule_groups_mimir GET /metricquery/config/v1/rules',
          'list_namespace_rule_groups_mimir GET /metricquery/config/v1/rules/{namespace}',
          'get_rule_group_mimir GET /metricquery/config/v1/rules/{namespace}/{group}',
          'set_rule_group_mimir POST /metricquery/config/v1/rules/{namespace}',
          'delete_rule_group_mimir DELETE /metricquery/config/v1/rules/{namespace}/{group}',
          'delete_rule_namespace_mimir DELETE /metricquery/config/v1/rules/{namespace}',
          'list_rule_groups_cortex GET /metricquery/rules',
          'list_namespace_rule_groups_cortex GET /metricquery/rules/{namespace}',
          'get_rule_group_cortex GET /metricquery/rules/{namespace}/{group}',
          'set_rule_group_cortex POST /metricquery/rules/{namespace}',
          'delete_rule_group_cortex DELETE /metricquery/rules/{namespace}/{group}',
          'delete_rule_namespace_cortex DELETE /metricquery/rules/{namespace}',
          'list_rule_groups_loki GET /logquery/loki/api/v1/rules',
          'list_namespace_rule_groups_loki GET /logquery/loki/api/v1/rules/{namespace}',
          'get_rule_group_loki GET /logquery/loki/api/v1/rules/{namespace}/{group}',
          'set_rule_group_loki POST /logquery/loki/api/v1/rules/{namespace}',
          'delete_rule_group_loki DELETE /logquery/loki/api/v1/rules/{namespace}/{group}',
          'delete_rule_namespace_loki DELETE /logquery/loki/api/v1/rules/{namespace}',
          'list_rule_groups_loki_legacy GET /logquery/api/prom/rules',
          'list_namespace_rule_groups_loki_legacy GET /logquery/api/prom/rules/{namespace}',
          'get_rule_group_loki_legacy GET /logquery/api/prom/rules/{namespace}/{group}',
          'set_rule_group_loki_legacy POST /logquery/api/prom/rules/{namespace}',
          'delete_rule_group_loki_legacy DELETE /logquery/api/prom/rules/{namespace}/{group}',
          'delete_rule_namespace_loki_legacy DELETE /logquery/api/prom/rules/{namespace}',
          'create_log_delete_request POST /logquery/api/v1/delete',
          'put_log_delete_request PUT /logquery/api/v1/delete',
          'list_log_delete_requests GET /logquery/api/v1/delete',
          'cancel_log_delete_request DELETE /logquery/api/v1/delete',
          'loki_create_log_delete_request POST /logquery/loki/api/v1/delete',
          'loki_put_log_delete_request PUT /logquery/loki/api/v1/delete',
          'loki_list_log_delete_requests GET /logquery/loki/api/v1/delete',
          'loki_cancel_log_delete_request DELETE /logquery/loki/api/v1/delete',
          'call_pyroscope_querier POST /profilequery/querier.v1.QuerierService/{method}',
          'pyroscope_render GET /profilequery/render',
          'pyroscope_render_pyroscope_path GET /profilequery/pyroscope/render',
          'post_pyroscope_render_pyroscope_path POST /profilequery/pyroscope/render',
          'pyroscope_render_diff_pyroscope_path GET /profilequery/pyroscope/render-diff',
          'post_pyroscope_render_diff_pyroscope_path POST /profilequery/pyroscope/render-diff',
          'pyroscope_label_values_pyroscope_path GET /profilequery/pyroscope/label-values',
          'post_pyroscope_label_values_pyroscope_path POST /profilequery/pyroscope/label-values',
          'post_pyroscope_render POST /profilequery/render',
          'pyroscope_render_diff GET /profilequery/render-diff',
          'post_pyroscope_render_diff POST /profilequery/render-diff',
          'get_trace_echo GET /tracequery/api/echo',
          'get_trace_build_info GET /tracequery/api/status/buildinfo',
          'traceql_metrics_query GET /tracequery/api/metrics/query',
          'traceql_metrics_query_range GET /tracequery/api/metrics/query_range',
          'search_traces GET /tracequery/api/search',
          'list_trace_tag_values GET /tracequery/api/search/tag/{tag}/values',
          'list_trace_tags GET /tracequery/api/search/tags',
          'get_trace GET /tracequery/api/traces/{trace_id}',
          'list_trace_tag_values_typed GET /tracequery/api/v2/search/tag/{tag}/values',
          'list_trace_tags_by_scope GET /tracequery/api/v2/search/tags',
          'get_trace_response GET /tracequery/api/v2/traces/{trace_id}',
        ].sort(),
      );
      expect(res.body.components.schemas.ErrorEnvelope.required).toEqual(['status', 'errorType', 'error']);
    });

    it('validates as OpenAPI 3.1 against the official schema', async () => {
      // @seriousme/openapi-schema-validator checks the document against the OAS 3.1 JSON Schema.
      const result = await new Validator().validate((await api('GET', '/api/v1/openapi.json')).body);
      expect(result.errors).toBeUndefined();
      expect(result.valid).toBe(true);
    });

    it.each([
      ['malformed JSON', { raw: '{"id": "x",' }, 400, 'bad_data', /not valid JSON/],
      ['a wrong type', { body: { id: 7 } }, 400, 'bad_data', /body\.id must be string/],
      ['an unknown field', { body: { id: 'zeta', owner: 'me' } }, 400, 'bad_data', /additional properties: "owner"/],
      ['a missing field', { body: {} }, 400, 'bad_data', /required property 'id'/],
      ['an empty body', { raw: '' }, 400, 'bad_data', /body must be object/],
      ['a JSON array', { raw: '[]' }, 400, 'bad_data', /body must be object/],
      ['an oversized body', { raw: JSON.stringify({ id: 'big', display_name: 'x'.repeat(200_000) }) }, 413, 'too_large', /too large/],
      ['a form body', { raw: 'id=zeta', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 415, 'unsupported_media_type', /Content-Type/],
      ['a text/plain body', { raw: '{"id":"zeta"}', headers: { 'content-type': 'text/plain' } }, 415, 'unsupported_media_type', /Content-Type/],
      ['a body nested 5,000 levels deep', { raw: `{"id":"deep","display_name":${'['.repeat(5000)}${']'.repeat(5000)}}` }, 400, 'bad_data', /deeper than 128 levels/],
    ] as const)('%s → %i in the envelope', async (_n, call, status, kind, message) => {
      const res = await api('POST', '/api/v1/tenants', { key: admin, ...(call as Call) });
      expect(res.status).toBe(status);
      expect(res.body).toEqual({ status: 'error', errorType: kind, error: expect.stringMatching(message) });
    });

    it('refuses bad path ids with 400 and unknown routes with 404, in the envelope', async () => {
      const bad = await api('GET', '/api/v1/tenants/Bad%20Id', { key: admin });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual(envelope('bad_data'));
      const none = await api('GET', '/api/v1/nothing-here', { key: admin });
      expect(none.status).toBe(404);
      expect(none.body).toEqual(envelope('not_found'));
      const badQuery = await api('GET', '/api/v1/tenants/acme/api-keys?include_revoked=maybe', { key: admin });
      expect(badQuery.status).toBe(400);
      // URLs fastify cannot route: a bad percent-escape, a path parameter past its length.
      for (const path of ['/api/v1/tenants/%ff%fe', `/api/v1/tenants/${'a'.repeat(300)}`]) {
        const res = await api('GET', path, { key: admin });
        expect(res.status, path).toBe(400);
        expect(res.body, path).toEqual(envelope('bad_data'));
      }
    });
  });
});
