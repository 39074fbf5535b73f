import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onFreePorts, signedInMember, startFloe, type FloeUnderTest } from '../src/index.ts';

/**
 * Hostile input to the OAuth authorization server (embedded): the authorization endpoint is no
 * open redirector for a client anyone registered with an https URI, a NUL in a parameter is an
 * OAuth error rather than a 500, and a decision with an Origin that is no URL is refused.
 */
describe('OAuth: hostile requests (embedded)', () => {
  let floe: FloeUnderTest;
  let base: string;
  let cookie: string;
  const LOOPBACK = 'http://127.0.0.1:45123/callback';
  const challenge = randomBytes(32).toString('base64url').slice(0, 43);

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const register = async (uri: string) => (await post('/oauth/register', { redirect_uris: [uri] })).body.client_id as string;
  const authorize = async (params: Record<string, string>) => {
    const res = await fetch(`${base}/oauth/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
    return { status: res.status, location: res.headers.get('location'), body: res.status === 302 ? undefined : ((await res.json()) as any) };
  };

  beforeAll(async () => {
    floe = await onFreePorts(1, ([port]) => {
      base = `http://127.0.0.1:${port}`;
      return startFloe({ mode: 'embedded', config: { router: { port }, public: { api_url: base } } });
    });
    await floe.bootstrap('oauthco');
    ({ cookie } = await signedInMember(floe, { email: 'eve@example.com', tenant: 'oauthco', role: 'viewer', password: 'pa55word!' }));
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('does not send an unauthenticated browser to a registered https URI with an error: it answers the error itself', async () => {
    const clientId = await register('https://attacker.example/landing');
    const r = await authorize({ client_id: clientId, response_type: 'bogus' });
    expect(r).toMatchObject({ status: 400, location: null, body: { error: 'unsupported_response_type' } });
    // A valid request still goes to the consent page, where the user sees where it leads.
    const ok = await authorize({ client_id: clientId, response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256' });
    expect(ok.status).toBe(302);
    expect(new URL(ok.location!).pathname).toBe('/oauth/consent');
    // An app on the user's own machine still gets its errors back.
    const local = await authorize({ client_id: await register(LOOPBACK), response_type: 'bogus', state: 's' });
    expect(local.status).toBe(302);
    expect(new URL(local.location!).searchParams.get('error')).toBe('unsupported_response_type');
  });

  it.each(['state', 'redirect_uri'])('refuses a NUL in %s with invalid_request, not a 500', async (name) => {
    const clientId = await register(LOOPBACK);
    const params: Record<string, string> = { client_id: clientId, response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256', redirect_uri: LOOPBACK };
    params[name] = name === 'redirect_uri' ? 'http://127.0.0.1:5/callback\u0000' : 'st\u0000te';
    const r = await authorize(params);
    expect(r).toMatchObject({ status: 400, location: null, body: { error: 'invalid_request', error_description: `parameter ${name} contains a NUL character` } });
  });

  it('refuses a NUL in resource with invalid_request sent back to the (loopback) client, not a 500', async () => {
    const clientId = await register(LOOPBACK);
    const r = await authorize({ client_id: clientId, response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256', resource: `${base}/mcp\u0000`, state: 's' });
    expect(r.status).toBe(302);
    const to = new URL(r.location!);
    expect(`${to.origin}${to.pathname}`).toBe(LOOPBACK);
    expect(to.searchParams.get('error')).toBe('invalid_request');
    expect(to.searchParams.get('error_description')).toBe('parameter resource contains a NUL character');
  });

  it('refuses a decision whose Origin is no URL with 403, not a 500', async () => {
    const clientId = await register(LOOPBACK);
    const a = await authorize({ client_id: clientId, response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256' });
    const request = new URL(a.location!).searchParams.get('request')!;
    for (const origin of ['http://[', 'null']) {
      const d = await post('/oauth/authorize/decision', { request, approve: false }, { cookie, origin });
      expect(d).toEqual({ status: 403, body: { status: 'error', errorType: 'forbidden', error: "a decision must come from Floe's own origin" } });
    }
    expect((await post('/oauth/authorize/decision', { request, approve: false }, { cookie, origin: base })).status).toBe(200);
  });
});
