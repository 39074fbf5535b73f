import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onFreePorts, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';
// The provider only SSO tests need, kept out of the index so other tests do not load it.
import { TEST_OIDC_CLIENT as CLIENT, ssoSignIn, startTestProvider, type TestAccount } from '../src/oidc-provider.ts';

/**
 * Single sign-on (spec 2, Authentication: SSO rules 1–5; States: SSO provider) against a real
 * OpenID provider on loopback, with the browser flow driven by fetch: Floe's start redirect, the
 * provider's login and consent forms, Floe's callback. Embedded mode.
 */
const api = async (routerUrl: string, method: string, path: string, c: { key?: string; cookie?: string; body?: unknown } = {}) => {
  const headers: Record<string, string> = {};
  if (c.key) headers.authorization = `Bearer ${c.key}`;
  if (c.cookie) headers.cookie = c.cookie;
  if (c.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${routerUrl}${path}`, { method, headers, body: c.body === undefined ? undefined : JSON.stringify(c.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
};

const MAPPINGS = [
  { group: 'acme-admins', tenant: 'acme', role: 'admin' },
  { group: 'acme-viewers', tenant: 'acme', role: 'viewer' },
  { group: 'globex-members', tenant: 'globex', role: 'member' },
  { group: 'ghosts', tenant: 'no-such-tenant', role: 'member' },
] as const;

describe('single sign-on (embedded)', () => {
  const accounts = new Map<string, TestAccount>();
  let floe: FloeUnderTest;
  let strict: FloeUnderTest;
  let provider: { issuer: string; stop(): Promise<void> } | undefined;
  let issuer: string;
  let routerPort: number;
  let strictPort: number;
  let providerPort: number;
  const callback = (port: number) => `http://127.0.0.1:${port}/ui/session/oidc/callback`;
  const oidc = () => ({ issuer_url: issuer, client_id: CLIENT.id, client_secret: CLIENT.secret, display_name: 'Test IdP', allowed_email_domains: ['example.com'], group_claim: 'groups', group_mappings: MAPPINGS.map((m) => ({ ...m })) });

  beforeAll(async () => {
    floe = await onFreePorts(3, ([r, s, p]) => {
      [routerPort, strictPort, providerPort] = [r!, s!, p!];
      issuer = `http://127.0.0.1:${providerPort}`;
      // The provider is down while Floe starts: discovery fails and is retried in the background.
      return startFloe({ mode: 'embedded', config: { router: { port: routerPort }, public: { api_url: `http://127.0.0.1:${routerPort}` }, auth: { oidc: oidc() } } });
    });
    await floe.bootstrap('acme');
    await floe.bootstrap('globex');
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
    await strict?.stop();
    await provider?.stop();
  });

  const me = (cookie: string) => api(floe.routerUrl, 'GET', '/ui/session', { cookie });
  const rowsOf = (email: string) =>
    floe.metaQuery<{ tenant_id: string; role: string; source: string; granted_by: string | null }>(
      'SELECT m.tenant_id, m.role, m.source, m.granted_by FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = $1 ORDER BY m.tenant_id, m.source',
      [email],
    );

  it('a provider that is down at start is unavailable (no SSO offered, start 503 naming the issuer), then becomes available without restart', async () => {
    const config = await api(floe.routerUrl, 'GET', '/ui/session/config');
    expect(config.body).toEqual({ oidc: null, password_enabled: true });
    const start = await fetch(`${floe.routerUrl}/ui/session/oidc/start`, { redirect: 'manual' });
    expect(start.status).toBe(503);
    expect(await start.json()).toEqual({ status: 'error', errorType: 'unavailable', error: `single sign-on provider ${issuer} is unavailable` });

    provider = await startTestProvider(providerPort, [callback(routerPort), callback(strictPort)], accounts);
    // Retries 1 s after the failure at start, then 2 s, 4 s… (spec 2, Limits).
    await waitFor('SSO available', async () => ((await api(floe.routerUrl, 'GET', '/ui/session/config')).body.oidc ? true : undefined), 20_000, 200);
    expect((await api(floe.routerUrl, 'GET', '/ui/session/config')).body).toEqual({ oidc: { name: 'Test IdP' }, password_enabled: true });
  }, 30_000);

  it('the start redirect carries PKCE, state, nonce, the three scopes and the registered redirect URI', async () => {
    const res = await fetch(`${floe.routerUrl}/ui/session/oidc/start`, { redirect: 'manual', headers: { host: 'evil.example' } });
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get('location')!);
    expect(to.origin).toBe(issuer);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({
      client_id: CLIENT.id,
      response_type: 'code',
      scope: 'openid email profile',
      redirect_uri: callback(routerPort),
      code_challenge_method: 'S256',
      state: expect.any(String),
      nonce: expect.any(String),
      code_challenge: expect.any(String),
    });
    expect(res.headers.get('set-cookie')).toMatch(/^floe_oidc=[^;]+; Max-Age=600; Path=\/ui\/session\/oidc; HttpOnly; SameSite=Lax$/);
  });

  it('first sign-in creates a passwordless user just in time, with its mapped memberships, and signs them in', async () => {
    accounts.set('alice-sub', { email: 'Alice@Example.com', email_verified: true, name: 'Alice', groups: ['acme-admins', 'acme-viewers'] });
    const r = await ssoSignIn(floe.routerUrl, 'alice-sub');
    expect(r.status).toBe(302);
    expect(r.location).toBe(`http://127.0.0.1:${routerPort}`);
    expect(r.sessionCookie).toMatch(/^floe_session=[A-Za-z0-9_-]{43}$/);
    const s = await me(r.sessionCookie!);
    expect(s.status).toBe(200);
    expect(s.body.user).toMatchObject({ email: 'alice@example.com', display_name: 'Alice', is_instance_admin: false, is_demo: false });
    expect(s.body.memberships).toEqual([{ tenant_id: 'acme', role: 'admin' }]);
    expect(await floe.metaQuery('SELECT password_hash, oidc_issuer, oidc_subject, is_instance_admin FROM users WHERE email = $1', ['alice@example.com'])).toEqual([
      { password_hash: null, oidc_issuer: issuer, oidc_subject: 'alice-sub', is_instance_admin: false },
    ]);
    expect(await rowsOf('alice@example.com')).toEqual([{ tenant_id: 'acme', role: 'admin', source: 'mapped', granted_by: 'oidc_mapping' }]);
    // A second sign-in finds the same user by its identity.
    const again = await ssoSignIn(floe.routerUrl, 'alice-sub');
    expect((await me(again.sessionCookie!)).body.user.id).toBe(s.body.user.id);
  });

  it('an email outside allowed_email_domains is refused and no user is created; the refusal is the same as for a known address', async () => {
    accounts.set('mallory-sub', { email: 'mallory@evil.test', email_verified: true, groups: ['acme-admins'] });
    const r = await ssoSignIn(floe.routerUrl, 'mallory-sub');
    expect(r.status).toBe(403);
    expect(r.sessionCookie).toBeUndefined();
    expect(await floe.metaQuery('SELECT id FROM users WHERE email = $1', ['mallory@evil.test'])).toEqual([]);

    // A known but disabled user gets the very same answer.
    const u = await api(floe.routerUrl, 'POST', '/api/v1/users', { key: floe.adminApiKey, body: { email: 'dan@evil.test', disabled: true } });
    expect(u.status).toBe(201);
    accounts.set('dan-sub', { email: 'dan@evil.test', email_verified: true, groups: [] });
    const known = await ssoSignIn(floe.routerUrl, 'dan-sub');
    expect(known.status).toBe(403);
    expect(known.body).toEqual(r.body);
    expect(r.body).toEqual({ status: 'error', errorType: 'forbidden', error: 'single sign-on refused' });
  });

  it('an unverified email neither links nor creates', async () => {
    accounts.set('eve-sub', { email: 'eve@example.com', email_verified: false, groups: [] });
    expect((await ssoSignIn(floe.routerUrl, 'eve-sub')).status).toBe(403);
    expect(await floe.metaQuery('SELECT id FROM users WHERE email = $1', ['eve@example.com'])).toEqual([]);
  });

  it('an existing user links their identity by verified email, whatever the domain, keeping their password and local grants', async () => {
    const u = await api(floe.routerUrl, 'POST', '/api/v1/users', { key: floe.adminApiKey, body: { email: 'bob@other.test', password: 'bob-password-1' } });
    expect(u.status).toBe(201);
    expect((await api(floe.routerUrl, 'POST', '/api/v1/tenants/globex/memberships', { key: floe.adminApiKey, body: { user_id: u.body.id, role: 'viewer' } })).status).toBe(201);
    accounts.set('bob-sub', { email: 'bob@other.test', email_verified: true, groups: [] });
    const r = await ssoSignIn(floe.routerUrl, 'bob-sub');
    expect(r.status).toBe(302);
    const s = await me(r.sessionCookie!);
    expect(s.body.user.id).toBe(u.body.id);
    expect(s.body.memberships).toEqual([{ tenant_id: 'globex', role: 'viewer' }]);
    expect(await floe.metaQuery('SELECT password_hash IS NOT NULL AS has_password, oidc_subject FROM users WHERE id = $1', [u.body.id])).toEqual([{ has_password: true, oidc_subject: 'bob-sub' }]);
    // The password still works too.
    expect((await api(floe.routerUrl, 'POST', '/ui/session', { body: { username: 'bob@other.test', password: 'bob-password-1' } })).status).toBe(200);
  });

  it('group mappings are rewritten at every sign-in, apart from local grants; an unknown tenant is skipped', async () => {
    accounts.set('carol-sub', { email: 'carol@example.com', email_verified: true, groups: ['acme-viewers', 'globex-members', 'ghosts'] });
    const first = await ssoSignIn(floe.routerUrl, 'carol-sub');
    expect(first.status).toBe(302);
    expect(await rowsOf('carol@example.com')).toEqual([
      { tenant_id: 'acme', role: 'viewer', source: 'mapped', granted_by: 'oidc_mapping' },
      { tenant_id: 'globex', role: 'member', source: 'mapped', granted_by: 'oidc_mapping' },
    ]);
    const carolId = (await me(first.sessionCookie!)).body.user.id as string;
    // A local grant made by an admin beside the mapped row.
    expect((await api(floe.routerUrl, 'POST', '/api/v1/tenants/acme/memberships', { key: floe.adminApiKey, body: { user_id: carolId, role: 'member' } })).status).toBe(201);

    accounts.set('carol-sub', { ...accounts.get('carol-sub')!, groups: ['acme-admins'] });
    const second = await ssoSignIn(floe.routerUrl, 'carol-sub');
    expect(await rowsOf('carol@example.com')).toEqual([
      { tenant_id: 'acme', role: 'member', source: 'local', granted_by: 'admin' },
      { tenant_id: 'acme', role: 'admin', source: 'mapped', granted_by: 'oidc_mapping' },
    ]);
    expect((await me(second.sessionCookie!)).body.memberships).toEqual([{ tenant_id: 'acme', role: 'admin' }]);

    accounts.set('carol-sub', { ...accounts.get('carol-sub')!, groups: [] });
    const third = await ssoSignIn(floe.routerUrl, 'carol-sub');
    expect(await rowsOf('carol@example.com')).toEqual([{ tenant_id: 'acme', role: 'member', source: 'local', granted_by: 'admin' }]);
    expect((await me(third.sessionCookie!)).body).toMatchObject({ user: { is_instance_admin: false }, memberships: [{ tenant_id: 'acme', role: 'member' }] });
  });

  it('a callback without the start cookie, or with a forged one, is refused', async () => {
    const r = await api(floe.routerUrl, 'GET', '/ui/session/oidc/callback?code=x&state=y');
    expect(r.status).toBe(400);
    expect(r.body.errorType).toBe('bad_data');
    const forged = await api(floe.routerUrl, 'GET', '/ui/session/oidc/callback?code=x&state=y', { cookie: 'floe_oidc=eyJzdGF0ZSI6InkifQ.AAAA' });
    expect(forged.status).toBe(400);
  });

  it('disable_password_login refuses the password form for every user; API keys, the admin key and bootstrap still work', async () => {
    strict = await startFloe({
      mode: 'embedded',
      config: { router: { port: strictPort }, public: { api_url: `http://127.0.0.1:${strictPort}` }, auth: { oidc: { ...oidc(), disable_password_login: true } } },
    });
    const key = (await strict.bootstrap('acme')).api_key;
    const u = await api(strict.routerUrl, 'POST', '/api/v1/users', { key: strict.adminApiKey, body: { email: 'root@example.com', password: 'root-password-1', is_instance_admin: true } });
    expect(u.status).toBe(201);
    expect((await api(strict.routerUrl, 'GET', '/ui/session/config')).body).toEqual({ oidc: { name: 'Test IdP' }, password_enabled: false });
    const pw = await api(strict.routerUrl, 'POST', '/ui/session', { body: { username: 'root@example.com', password: 'root-password-1' } });
    expect(pw.status).toBe(403);
    expect(pw.body).toEqual({ status: 'error', errorType: 'forbidden', error: 'password sign-in is disabled; use single sign-on' });
    expect(pw.headers.get('set-cookie')).toBeNull();
    expect((await api(strict.routerUrl, 'GET', '/api/v1/tenants', { key: strict.adminApiKey })).status).toBe(200);
    expect((await api(strict.routerUrl, 'GET', '/api/v1/tenants/acme', { key })).status).toBe(200);
    // SSO still signs people in.
    accounts.set('frank-sub', { email: 'frank@example.com', email_verified: true, groups: [] });
    const r = await ssoSignIn(strict.routerUrl, 'frank-sub');
    expect(r.status).toBe(302);
    expect((await api(strict.routerUrl, 'GET', '/ui/session', { cookie: r.sessionCookie })).body.user.email).toBe('frank@example.com');
  }, 60_000);
});
