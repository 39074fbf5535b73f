import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedInMember, startFakeGitHubApp, startFloe, type FakeGitHub, type FloeUnderTest } from '../src/index.ts';

/**
 * Hostile requests to the source-control link callback (embedded, fake GitHub): spec 2 makes every
 * callback failure a 302 with a generic reason, so repeated or oversized parameters, which a
 * browser arriving from anywhere may carry, are redirects as well, never a JSON error body.
 */
const PUBLIC_URL = 'https://floe.example.test';

describe('source-control callback: hostile parameters (embedded)', () => {
  let floe: FloeUnderTest;
  let gh: FakeGitHub;
  let cookie: string;

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
    const app = await startFakeGitHubApp();
    gh = app.gh;
    floe = await startFloe({ mode: 'embedded', config: { public: { api_url: PUBLIC_URL }, scm: app.scm } });
    await floe.bootstrap('acme');
    ({ cookie } = await signedInMember(floe, { email: 'ann@acme.test', tenant: 'acme', role: 'admin' }));
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
