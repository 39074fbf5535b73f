import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGitHub, startFloe, type FakeGitHub, type FloeUnderTest } from '../src/index.ts';

/**
 * Hostile requests to the source-control link callback (embedded, fake GitHub): spec 2 makes every
 * callback failure a 302 with a generic reason, so repeated or oversized parameters, which a
 * browser arriving from anywhere may carry, are redirects as well, never a JSON error body.
 */
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const APP = { appId: '4242', clientId: 'Iv1.floetest', clientSecret: 'test-client-secret' };
const PUBLIC_URL = 'https://floe.example.test';

describe('source-control callback: hostile parameters (embedded)', () => {
  let floe: FloeUnderTest;
  let gh: FakeGitHub;
  let cookie: string;

  const json = { 'content-type': 'application/json' };
  const callback = async (query: string) => {
    const res = await fetch(`${floe.routerUrl}/ui/scm/callback?${query}`, { headers: { cookie }, redirect: 'manual' });
    return { status: res.status, location: res.headers.get('location') };
  };
  const startLink = async () => {
    const res = await fetch(`${floe.routerUrl}/api/v1/tenants/acme/scm-installations/link`, { method: 'POST', headers: { cookie } });
    expect(res.status).toBe(200);
    return new URL(((await res.json()) as { install_url: string }).install_url).searchParams.get('state')!;
  };
  const refused = (reason: string) => ({ status: 302, location: `${PUBLIC_URL}/integrations/scm?scm=error&reason=${reason}` });

  beforeAll(async () => {
    gh = await startFakeGitHub({ ...APP, appPublicKey: publicKey });
    floe = await startFloe({
      mode: 'embedded',
      config: {
        public: { api_url: PUBLIC_URL },
        scm: { app_id: APP.appId, app_slug: 'floe-test', private_key: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(), client_id: APP.clientId, client_secret: APP.clientSecret, api_url: gh.apiUrl, web_url: gh.webUrl },
      },
    });
    await floe.bootstrap('acme');
    const admin = { ...json, authorization: `Bearer ${floe.adminApiKey}` };
    const user = (await (await fetch(`${floe.routerUrl}/api/v1/users`, { method: 'POST', headers: admin, body: JSON.stringify({ email: 'ann@acme.test', password: 'correct horse battery' }) })).json()) as { id: string };
    const m = await fetch(`${floe.routerUrl}/api/v1/tenants/acme/memberships`, { method: 'POST', headers: admin, body: JSON.stringify({ user_id: user.id, role: 'admin' }) });
    expect(m.status).toBe(201);
    const login = await fetch(`${floe.routerUrl}/ui/session`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'ann@acme.test', password: 'correct horse battery' }) });
    cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    gh.addInstallation({ id: 101, account: { login: 'acme-org', type: 'Organization' }, permissions: { contents: 'read', metadata: 'read' }, repositories: ['acme-org/api'] });
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
    await gh?.close();
  });

  it('a repeated state is a redirect with reason state', async () => {
    const state = await startLink();
    const code = gh.issueCode('ann', [101]);
    expect(await callback(`code=${code}&installation_id=101&state=${state}&state=${state}`)).toEqual(refused('state'));
  });

  it('an oversized state or code is a redirect with a reason, and the state stays usable', async () => {
    const state = await startLink();
    expect(await callback(`code=x&installation_id=101&state=${'s'.repeat(5000)}`)).toEqual(refused('state'));
    expect(await callback(`code=${'c'.repeat(5000)}&installation_id=101&state=${state}`)).toEqual(refused('scm'));
    expect(await callback(`code=${gh.issueCode('ann', [101])}&installation_id=101&installation_id=102&state=${state}`)).toEqual(refused('scm'));
    expect(await callback(`code=${gh.issueCode('ann', [101])}&installation_id=101&state=${state}`)).toEqual({ status: 302, location: `${PUBLIC_URL}/integrations/scm?scm=linked` });
  });

  it('removing an installation id past 2^53 names the id as sent, not a rounded neighbour', async () => {
    const res = await fetch(`${floe.routerUrl}/api/v1/tenants/acme/scm-installations/9999999999999999`, { method: 'DELETE', headers: { cookie } });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ status: 'error', errorType: 'not_found', error: 'installation 9999999999999999 is not linked to tenant acme' });
  });
});
