import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createUser, grantMembership, migrate, openDb } from '@floe/meta';
import { startFloe, type FloeUnderTest } from '../src/index.ts';

/**
 * Demo mode (spec 2, Demo mode; States: Demo account) in embedded mode. The demo tenant must exist
 * before start, so the test prepares the embedded metadata DB first, with the demo user already
 * there as an admin of two tenants: start must bring it down to exactly one viewer membership.
 */
const DEMO = { username: 'demo@example.com', password: 'demo-password' };

describe('demo mode (embedded)', () => {
  let floe: FloeUnderTest;
  const metaDir = mkdtempSync(join(tmpdir(), 'floe-demo-meta-'));

  beforeAll(async () => {
    const db = await openDb({ kind: 'pglite', dataDir: metaDir });
    await migrate(db);
    await createTenant(db, { id: 'demo' });
    await createTenant(db, { id: 'acme' });
    const u = await createUser(db, { email: DEMO.username, password: 'an-old-password', isInstanceAdmin: true, disabled: true });
    await grantMembership(db, { tenantId: 'demo', userId: u.id, role: 'admin', grantedBy: 'admin' });
    await grantMembership(db, { tenantId: 'acme', userId: u.id, role: 'member', grantedBy: 'admin' });
    await db.close();
    floe = await startFloe({ mode: 'embedded', config: { meta: { data_dir: metaDir }, demo: { enabled: true, tenant_id: 'demo', dataset_id: 'default', ...DEMO } } });
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
    rmSync(metaDir, { recursive: true, force: true });
  });

  const api = async (method: string, path: string, c: { key?: string; authorization?: string; cookie?: string; body?: unknown } = {}) => {
    const headers: Record<string, string> = {};
    if (c.key) headers.authorization = `Bearer ${c.key}`;
    if (c.authorization !== undefined) headers.authorization = c.authorization;
    if (c.cookie) headers.cookie = c.cookie;
    if (c.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${floe.routerUrl}${path}`, { method, headers, body: c.body === undefined ? undefined : JSON.stringify(c.body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };
  const signIn = async () => {
    const res = await api('POST', '/ui/session', { body: DEMO });
    expect(res.status).toBe(200);
    return res.headers.get('set-cookie')!.split(';')[0]!;
  };

  it('provisions the demo user at start: configured password, no admin, enabled, exactly one viewer membership', async () => {
    expect(await floe.metaQuery('SELECT is_instance_admin, disabled FROM users WHERE email = $1', [DEMO.username])).toEqual([{ is_instance_admin: false, disabled: false }]);
    expect(await floe.metaQuery('SELECT m.tenant_id, m.role, m.source FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = $1', [DEMO.username])).toEqual([
      { tenant_id: 'demo', role: 'viewer', source: 'local' },
    ]);
    expect((await api('POST', '/ui/session', { body: { username: DEMO.username, password: 'an-old-password' } })).status).toBe(401);
  });

  it('the login configuration shows the demo credentials and where the demo opens', async () => {
    expect((await api('GET', '/ui/session/config')).body).toEqual({ oidc: null, password_enabled: true, demo: { ...DEMO, tenant_id: 'demo', dataset_id: 'default' } });
  });

  it('the session reports is_demo', async () => {
    const s = await api('GET', '/ui/session', { cookie: await signIn() });
    expect(s.body).toMatchObject({ user: { email: DEMO.username, is_demo: true, is_instance_admin: false }, memberships: [{ tenant_id: 'demo', role: 'viewer' }] });
  });

  it('a mutating management call is refused with 403: the demo account is read-only', async () => {
    const cookie = await signIn();
    for (const [method, path, body] of [
      ['POST', '/api/v1/tenants/demo/datasets', { id: 'mine' }],
      ['PATCH', '/api/v1/tenants/demo', { display_name: 'x' }],
      ['DELETE', '/api/v1/tenants/demo', undefined],
      ['POST', '/api/v1/users', { email: 'x@example.com' }],
    ] as const) {
      const res = await api(method, path, { cookie, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body).toEqual({ status: 'error', errorType: 'forbidden', error: 'the demo account is read-only' });
    }
    expect(await floe.metaQuery('SELECT id FROM datasets WHERE tenant_id = $1 AND id = $2', ['demo', 'mine'])).toEqual([]);
  });

  it('reads and the allowlisted calls are not refused by the middleware', async () => {
    const cookie = await signIn();
    expect((await api('GET', '/api/v1/tenants/demo', { cookie })).status).toBe(200);
    // The native query and source-context POSTs reach their routes (whatever those answer, it is
    // not the read-only refusal).
    for (const path of ['/api/v1/query', '/api/v1/tenants/demo/source-context']) {
      const res = await api('POST', path, { cookie, body: {} });
      expect(res.body?.error, path).not.toBe('the demo account is read-only');
    }
    expect((await api('DELETE', '/ui/session', { cookie })).status).toBe(204);
    expect((await api('GET', '/ui/session', { cookie })).status).toBe(401);
  });

  it('an Authorization header beside the demo cookie does not get a demo write past the check', async () => {
    const cookie = await signIn();
    // The consent decision acts as the cookie's user whatever the header says: a bogus key must
    // not let the demo account approve an OAuth grant.
    const decision = await api('POST', '/oauth/authorize/decision', { cookie, authorization: 'Bearer not-a-key', body: { request: 'r', approve: true, tenant_id: 'demo' } });
    expect(decision.status).toBe(403);
    expect(decision.body).toEqual({ status: 'error', errorType: 'forbidden', error: 'the demo account is read-only' });
    // A blank header is no header (the management routes then act as the cookie's user).
    const blank = await api('POST', '/api/v1/tenants/demo/datasets', { cookie, authorization: '   ', body: { id: 'blank' } });
    expect(blank.status).toBe(403);
    expect(blank.body).toEqual({ status: 'error', errorType: 'forbidden', error: 'the demo account is read-only' });
    expect(await floe.metaQuery('SELECT id FROM datasets WHERE tenant_id = $1 AND id = $2', ['demo', 'blank'])).toEqual([]);
  });

  it('other users are not affected, and an API key is judged as the key even beside a demo cookie', async () => {
    const cookie = await signIn();
    const created = await api('POST', '/api/v1/tenants', { key: floe.adminApiKey, cookie, body: { id: 'initech' } });
    expect(created.status).toBe(201);
  });
});
