import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '@floe/config';
import { createTenant, migrate, openDb, type Db } from '@floe/meta';
import { createLogger } from '@floe/telemetry';
import { start } from '../start.ts';
import type { OidcRetry } from './oidc-provider.ts';

/**
 * The router's sign-in setup at start (spec 2, Session and login; Authentication: SSO and demo
 * mode; Limits: SSO discovery retry), through the router's own start on an in-memory PGlite, with
 * its JSON log written to a file and read back. The identity provider is a discovery document on
 * loopback: start only needs the provider's endpoints, and the full sign-in against a real
 * provider is packages/testkit/test/sso.e2e.test.ts.
 */
interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/**
 * The router's own JSON log (createLogger), written to a file. The logger writes asynchronously,
 * so `logged` waits until at least `atLeast` lines with the message have landed and returns them all.
 */
function fileLog(dir: string) {
  const path = join(dir, `router-${Math.random().toString(36).slice(2)}.log`);
  const fd = openSync(path, 'a');
  const log = createLogger({ level: 'info', fd });
  const withMessage = (msg: string) =>
    readFileSync(path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as LogLine)
      .filter((l) => l.msg === msg);
  return {
    log,
    logged: (msg: string, atLeast = 1) =>
      vi.waitFor(
        () => {
          const found = withMessage(msg);
          if (found.length < atLeast) throw new Error(`${found.length} of ${atLeast} lines "${msg}" logged`);
          return found;
        },
        { timeout: 10_000, interval: 20 },
      ),
    close: () => closeSync(fd),
  };
}

/** An identity provider's discovery document (all that start and the SSO start redirect read). */
async function startDiscoveryDocument(port = 0): Promise<{ issuer: string; port: number; stop(): Promise<void> }> {
  let issuer = '';
  const server: Server = createServer((req, res) => {
    if (req.url !== '/.well-known/openid-configuration') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  issuer = `http://127.0.0.1:${bound}`;
  return { issuer, port: bound, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A loopback port nothing listens on (taken and released). */
async function closedPort(): Promise<number> {
  const d = await startDiscoveryDocument();
  await d.stop();
  return d.port;
}

const CLIENT = { client_id: 'floe', client_secret: 'client-secret-0123456789' };
const DEMO = { username: 'demo@example.com', password: 'demo-password' };

describe('router sign-in setup at start', () => {
  let db: Db;
  let dir: string;
  const running: Array<{ stop(): Promise<void> }> = [];

  beforeAll(async () => {
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    await createTenant(db, { id: 'demo' });
    dir = mkdtempSync(join(tmpdir(), 'floe-router-login-'));
  });
  afterEach(async () => {
    for (const r of running.splice(0).reverse()) await r.stop();
  });
  afterAll(async () => {
    await db?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Starts the router on an ephemeral port with `overrides`; stopped after the test. */
  async function startRouter(overrides: Record<string, unknown>, oidcRetry?: OidcRetry) {
    const file = fileLog(dir);
    const config = loadConfig({ env: {}, overrides: { router: { host: '127.0.0.1', port: 0 }, storage: { root: join(dir, 'data') }, ...overrides } });
    const svc = await start(config, { db, log: file.log, oidcRetry });
    const handle = {
      url: `http://127.0.0.1:${svc.ports.http}`,
      logged: file.logged,
      async stop() {
        await svc.stop();
        file.close();
      },
    };
    running.push(handle);
    return handle;
  }
  const getJson = async (url: string) => {
    const res = await fetch(url);
    return { status: res.status, body: (await res.json()) as unknown };
  };

  describe('SSO (auth.oidc)', () => {
    let idp: Awaited<ReturnType<typeof startDiscoveryDocument>>;
    beforeAll(async () => {
      idp = await startDiscoveryDocument();
    });
    afterAll(async () => {
      await idp?.stop();
    });

    it.each([
      ['auth.oidc.redirect_url wins verbatim over public.api_url', 'https://sso-gateway.example.net/floe/oidc-return/', 'https://floe.example.com', 'https://sso-gateway.example.net/floe/oidc-return/'],
      ['without redirect_url it is {public.api_url}/ui/session/oidc/callback', '', 'https://floe.example.com/', 'https://floe.example.com/ui/session/oidc/callback'],
    ])('the start redirect registers the redirect URI: %s', async (_n, redirectUrl, apiUrl, want) => {
      const r = await startRouter({ public: { api_url: apiUrl }, auth: { oidc: { issuer_url: idp.issuer, ...CLIENT, redirect_url: redirectUrl } } });
      const res = await fetch(`${r.url}/ui/session/oidc/start`, { redirect: 'manual' });
      expect(res.status).toBe(302);
      const to = new URL(res.headers.get('location')!);
      expect(`${to.origin}${to.pathname}`).toBe(`${idp.issuer}/auth`);
      expect(to.searchParams.get('redirect_uri')).toBe(want);
    });

    it('without display_name the login configuration names the provider by its issuer host', async () => {
      const r = await startRouter({ auth: { oidc: { issuer_url: `${idp.issuer}/`, ...CLIENT } } });
      expect(await getJson(`${r.url}/ui/session/config`)).toEqual({ status: 200, body: { oidc: { name: `127.0.0.1:${idp.port}` }, password_enabled: true } });
    });

    it('a configured display_name is shown as written', async () => {
      const r = await startRouter({ auth: { oidc: { issuer_url: idp.issuer, ...CLIENT, display_name: 'Corporate Login' } } });
      expect((await getJson(`${r.url}/ui/session/config`)).body).toEqual({ oidc: { name: 'Corporate Login' }, password_enabled: true });
    });
  });

  describe('SSO discovery retry (Limits: start 1 s, cap 5 minutes)', () => {
    it('an unreachable provider is logged as an error naming the issuer, with the first retry 1 s away; the router still serves', async () => {
      const issuer = `http://127.0.0.1:${await closedPort()}`;
      const r = await startRouter({ auth: { oidc: { issuer_url: issuer, ...CLIENT } } });
      // The first line only: the next retry (2 s) may land before the test ends.
      expect((await r.logged('SSO provider unavailable: discovery failed'))[0]).toEqual({ level: 'error', msg: 'SSO provider unavailable: discovery failed', component: 'router', issuer: `${issuer}/`, retry_in_ms: 1000, err: expect.any(String), pid: process.pid, time: expect.any(String) });
      expect((await getJson(`${r.url}/ui/session/config`)).body).toEqual({ oidc: null, password_enabled: true });
    });

    it('each failed retry doubles the delay up to the cap, and the provider becomes available without a restart', async () => {
      const port = await closedPort();
      const issuer = `http://127.0.0.1:${port}`;
      // The schedule shortened (1 s → 20 ms, 5 min → 80 ms); its shape is the one start uses.
      const r = await startRouter({ auth: { oidc: { issuer_url: issuer, ...CLIENT } } }, { initialMs: 20, maxMs: 80 });
      const failures = await r.logged('SSO provider unavailable: discovery failed', 5);
      expect(failures.slice(0, 5).map((l) => [l.level, l.issuer, l.retry_in_ms])).toEqual([
        ['error', `${issuer}/`, 20],
        ['error', `${issuer}/`, 40],
        ['error', `${issuer}/`, 80],
        ['error', `${issuer}/`, 80],
        ['error', `${issuer}/`, 80],
      ]);

      const idp = await startDiscoveryDocument(port);
      running.push(idp);
      await vi.waitFor(async () => expect((await getJson(`${r.url}/ui/session/config`)).body).toEqual({ oidc: { name: `127.0.0.1:${port}` }, password_enabled: true }), { timeout: 10_000, interval: 20 });
      expect(await r.logged('SSO provider available')).toMatchObject([{ level: 'info', issuer: `${issuer}/` }]);
    });
  });

  describe('demo mode', () => {
    const demoRows = () =>
      db
        .query(
          'SELECT u.id, u.email, u.password_hash, u.is_instance_admin, u.disabled, m.tenant_id, m.role, m.source, m.granted_by FROM users u LEFT JOIN memberships m ON m.user_id = u.id WHERE u.email = $1',
          [DEMO.username],
        )
        .then((r) => r.rows);
    const signIn = (url: string) => fetch(`${url}/ui/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(DEMO) });

    it('a demo tenant that does not exist: the failure is logged, the router starts and serves, no demo user is created', async () => {
      const r = await startRouter({ demo: { enabled: true, tenant_id: 'ghost', ...DEMO } });
      expect(await r.logged('demo account provisioning failed')).toMatchObject([
        { level: 'error', msg: 'demo account provisioning failed', component: 'router', tenant: 'ghost', err: 'demo tenant "ghost" does not exist' },
      ]);
      const ready = await fetch(`${r.url}/ready`);
      expect([ready.status, await ready.text()]).toEqual([200, 'ready\n']);
      expect((await getJson(`${r.url}/ui/session/config`)).status).toBe(200);
      expect(await demoRows()).toEqual([]);
      const res = await signIn(r.url);
      expect(res.status).toBe(401);
    });

    it('a demo.dataset_id the tenant lacks is logged as a warning and still offered', async () => {
      const r = await startRouter({ demo: { enabled: true, tenant_id: 'demo', dataset_id: 'nope', ...DEMO } });
      expect(await r.logged('demo.dataset_id names no dataset of demo.tenant_id: the login page offers it anyway')).toMatchObject([{ level: 'warn', tenant: 'demo', dataset: 'nope' }]);
      expect((await getJson(`${r.url}/ui/session/config`)).body).toMatchObject({ demo: { tenant_id: 'demo', dataset_id: 'nope' } });
    });

    it('a restart with demo mode off leaves the demo user and its membership in place', async () => {
      const on = await startRouter({ demo: { enabled: true, tenant_id: 'demo', ...DEMO } });
      expect(await on.logged('demo account provisioned')).toMatchObject([{ level: 'info', msg: 'demo account provisioned', tenant: 'demo', username: DEMO.username }]);
      const provisioned = await demoRows();
      expect(provisioned).toMatchObject([{ email: DEMO.username, is_instance_admin: false, disabled: false, tenant_id: 'demo', role: 'viewer', source: 'local', granted_by: 'demo' }]);
      await running.pop()!.stop();

      const off = await startRouter({ demo: { enabled: false } });
      expect((await getJson(`${off.url}/ui/session/config`)).body).toEqual({ oidc: null, password_enabled: true });
      expect(await demoRows()).toEqual(provisioned);
      const res = await signIn(off.url);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { memberships: unknown }).memberships).toEqual([{ tenant_id: 'demo', role: 'viewer' }]);
    });
  });
});
