import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { onFreePorts, protoLogExporter, sendSampleLogs, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Floe's OAuth 2.1 authorization server (spec 2, the consent flow) end to end, in both modes (the
 * cluster's grants in PostgreSQL, its router and querier separate processes): the official MCP SDK's client discovers it from /mcp's 401, registers, sends the user to
 * the consent page and exchanges the code with PKCE, then reads the tenant the user chose; the
 * user's side (sign-in, consent context, decision) is played with the session cookie as the
 * consent page does. Then what a token can reach, PKCE, single-use codes, refresh rotation,
 * denial, revocation, and every bad input the endpoints refuse.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('OAuth authorization server (%s)', (mode) => {
  let floe: FloeUnderTest;
  let base: string;
  let key: string;
  let cookie: string;
  const tenant = 'oauthco';
  const other = 'elsewhere';
  const REDIRECT = 'http://127.0.0.1:45123/callback';

  const json = async (res: Response) => ({ status: res.status, headers: res.headers, body: (await res.json()) as any });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }).then(json);
  const form = (path: string, fields: Record<string, string>) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() }).then(json);
  const verifierPair = () => {
    const verifier = randomBytes(32).toString('base64url');
    return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
  };
  const register = async (redirectUris = [REDIRECT], name = 'Test agent') => (await post('/oauth/register', { client_name: name, redirect_uris: redirectUris })).body.client_id as string;
  /** GET /oauth/authorize; the Location it answers with. */
  const authorize = async (params: Record<string, string>) => {
    const res = await fetch(`${base}/oauth/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
    return { status: res.status, location: res.headers.get('location'), body: res.status === 302 ? undefined : ((await res.json()) as any) };
  };
  const handleOf = (location: string) => new URL(location).searchParams.get('request')!;
  const decide = (request: string, approve: boolean, tenantId?: string, headers: Record<string, string> = { cookie }) =>
    post('/oauth/authorize/decision', { request, approve, ...(tenantId ? { tenant_id: tenantId } : {}) }, headers);
  /** A whole flow by hand up to the code: register, authorize, approve for `tenantId`. */
  const codeFor = async (tenantId = tenant, scope = 'query') => {
    const clientId = await register();
    const { verifier, challenge } = verifierPair();
    const a = await authorize({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'st8', scope });
    const d = await decide(handleOf(a.location!), true, tenantId);
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    const code = new URL(d.body.redirect_to).searchParams.get('code')!;
    return { clientId, verifier, code };
  };
  const exchange = (clientId: string, code: string, verifier: string, redirectUri = REDIRECT) =>
    form('/oauth/token', { grant_type: 'authorization_code', client_id: clientId, code, code_verifier: verifier, redirect_uri: redirectUri });
  const logLabels = (token: string, asTenant?: string) =>
    fetch(`${base}/logquery/loki/api/v1/labels`, { headers: { authorization: `Bearer ${token}`, ...(asTenant ? { 'x-tenant-id': asTenant } : {}) } }).then(json);

  beforeAll(async () => {
    floe = await onFreePorts(1, ([port]) => {
      base = `http://127.0.0.1:${port}`;
      return startFloe({ mode, config: { router: { port }, public: { api_url: base } } });
    });
    key = (await floe.bootstrap(tenant)).api_key;
    await floe.bootstrap(other);
    const admin = { authorization: `Bearer ${floe.adminApiKey}` };
    const user = await post('/api/v1/users', { email: 'ada@example.com', password: 'pa55word!' }, admin);
    expect(user.status).toBe(201);
    expect((await post(`/api/v1/tenants/${tenant}/memberships`, { user_id: user.body.id, role: 'viewer' }, admin)).status).toBe(201);
    const login = await fetch(`${base}/ui/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ada@example.com', password: 'pa55word!' }) });
    cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    await sendSampleLogs(protoLogExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'oauth-logs');
    await waitFor('logs queryable', async () => ((await logLabels(key, tenant)).body.data?.includes('service_name') ? true : undefined), 30_000, 200);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('publishes its metadata, and /mcp\'s 401 points at it', async () => {
    const meta = await fetch(`${base}/.well-known/oauth-authorization-server`).then(json);
    expect(meta.body).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
    });
    const resource = await fetch(`${base}/.well-known/oauth-protected-resource/mcp`).then(json);
    expect(resource.body).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base] });
    const mcp = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
    const page = await fetch(`${base}/oauth/consent?request=x`);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(await page.text()).toContain('/oauth/authorize/decision');
  });

  it('the MCP SDK client signs in through the consent flow and reads the tenant the user chose, without X-Tenant-ID', async () => {
    let authUrl: URL | undefined;
    let info: OAuthClientInformationMixed | undefined;
    let tokens: OAuthTokens | undefined;
    let verifier = '';
    const provider: OAuthClientProvider = {
      redirectUrl: REDIRECT,
      clientMetadata: { client_name: 'MCP SDK agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
      clientInformation: () => info,
      saveClientInformation: (i) => void (info = i),
      tokens: () => tokens,
      saveTokens: (t) => void (tokens = t),
      redirectToAuthorization: (url) => void (authUrl = url),
      saveCodeVerifier: (v) => void (verifier = v),
      codeVerifier: () => verifier,
    };
    const transport = () => new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    const first = transport();
    await expect(new Client({ name: 'sdk', version: '1.0.0' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(info?.client_id).toMatch(/^floe-client-/);
    expect(authUrl?.toString()).toContain(`${base}/oauth/authorize?`);

    // The user agent: the authorization endpoint sends it to the consent page.
    const at = await fetch(authUrl!, { redirect: 'manual' });
    expect(at.status).toBe(302);
    const consent = new URL(at.headers.get('location')!);
    expect(`${consent.origin}${consent.pathname}`).toBe(`${base}/oauth/consent`);
    const request = consent.searchParams.get('request')!;
    expect((await fetch(`${base}/oauth/consent/context?request=${request}`).then(json)).status).toBe(401);
    const context = await fetch(`${base}/oauth/consent/context?request=${request}`, { headers: { cookie } }).then(json);
    expect(context.status).toBe(200);
    expect(context.body).toMatchObject({ client: { client_name: 'MCP SDK agent', redirect_uri: REDIRECT }, scopes: ['query'], user: { email: 'ada@example.com' } });
    // Only tenants where the user may grant something; a viewer grants reads.
    expect(context.body.tenants).toEqual([{ tenant_id: tenant, role: 'viewer', scopes: ['query'] }]);
    const decided = await decide(request, true, tenant, { cookie, origin: base });
    expect(decided.status).toBe(200);
    const back = new URL(decided.body.redirect_to);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('iss')).toBe(base);
    await first.finishAuth(back.searchParams.get('code')!);
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'query' });
    expect(tokens!.access_token).toMatch(/^floe_/);

    const client = new Client({ name: 'sdk', version: '1.0.0' });
    await client.connect(transport());
    const labels = (await client.callTool({ name: 'log_label_values', arguments: { label: 'service_name' } })) as CallToolResult;
    expect(labels.isError, JSON.stringify(labels.content)).toBeFalsy();
    expect((labels.structuredContent as { values: string[] }).values).toEqual(['oauth-logs']);
    await client.close();
  });

  it('a token reaches only its own tenant, with only its scopes', async () => {
    const { clientId, verifier, code } = await codeFor();
    const token = (await exchange(clientId, code, verifier)).body.access_token as string;
    expect((await logLabels(token, tenant)).status).toBe(200);
    expect((await logLabels(token, other)).status).toBe(403);
    // Outside /mcp the query APIs still want X-Tenant-ID.
    expect((await logLabels(token)).status).toBe(401);
    // A query-only grant cannot send.
    const ingest = await fetch(`${floe.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'x-tenant-id': tenant, 'content-type': 'application/json' }, body: '{"resourceLogs":[]}' });
    expect(ingest.status).toBe(403);
    // Nor can a viewer grant a client more than a viewer may do.
    const askIngest = await authorize({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: verifierPair().challenge, code_challenge_method: 'S256', scope: 'ingest' });
    expect((await decide(handleOf(askIngest.location!), true, tenant)).status).toBe(403);
    // Nor choose a tenant the user is not in.
    const again = await authorize({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: verifierPair().challenge, code_challenge_method: 'S256' });
    expect((await decide(handleOf(again.location!), true, other)).status).toBe(403);
  });

  it('PKCE is checked and a code works once; a second use revokes its token', async () => {
    const wrong = await codeFor();
    const bad = await exchange(wrong.clientId, wrong.code, verifierPair().verifier);
    expect(bad).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(bad.headers.get('cache-control')).toBe('no-store');
    expect((await exchange(wrong.clientId, wrong.code, wrong.verifier)).body.error).toBe('invalid_grant');

    const { clientId, verifier, code } = await codeFor();
    expect((await exchange(clientId, code, verifier, 'http://127.0.0.1:45123/other')).body.error).toBe('invalid_grant');
    const second = await codeFor();
    const good = await exchange(second.clientId, second.code, second.verifier);
    expect(good.status).toBe(200);
    expect((await logLabels(good.body.access_token, tenant)).status).toBe(200);
    expect((await exchange(second.clientId, second.code, second.verifier)).body.error).toBe('invalid_grant');
    await waitFor('replayed code revokes the token', async () => ((await logLabels(good.body.access_token, tenant)).status === 401 ? true : undefined), 15_000, 200);
    // A code is bound to the client it was issued to.
    const third = await codeFor();
    const stranger = await register();
    expect((await exchange(stranger, third.code, third.verifier)).body.error).toBe('invalid_grant');
  });

  it('refresh rotates both tokens; the old refresh token used again ends the grant; revocation ends it too', async () => {
    const { clientId, verifier, code } = await codeFor();
    const first = (await exchange(clientId, code, verifier)).body;
    const next = await form('/oauth/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: first.refresh_token });
    expect(next.status).toBe(200);
    expect(next.body.refresh_token).not.toBe(first.refresh_token);
    expect((await logLabels(next.body.access_token, tenant)).status).toBe(200);
    await waitFor('old access token revoked', async () => ((await logLabels(first.access_token, tenant)).status === 401 ? true : undefined), 15_000, 200);
    const replay = await form('/oauth/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: first.refresh_token });
    expect(replay.body.error).toBe('invalid_grant');
    await waitFor('grant revoked after replay', async () => ((await logLabels(next.body.access_token, tenant)).status === 401 ? true : undefined), 15_000, 200);

    const other = await codeFor();
    const t = (await exchange(other.clientId, other.code, other.verifier)).body;
    expect((await form('/oauth/revoke', { client_id: other.clientId, token: t.refresh_token })).status).toBe(200);
    await waitFor('revoked', async () => ((await logLabels(t.access_token, tenant)).status === 401 ? true : undefined), 15_000, 200);
    expect((await form('/oauth/token', { grant_type: 'refresh_token', client_id: other.clientId, refresh_token: t.refresh_token })).body.error).toBe('invalid_grant');
  });

  it('a denial sends the browser back with access_denied and the state', async () => {
    const clientId = await register();
    const a = await authorize({ response_type: 'code', client_id: clientId, code_challenge: verifierPair().challenge, code_challenge_method: 'S256', state: 'xyz' });
    expect(a.status).toBe(302);
    const d = await decide(handleOf(a.location!), false);
    const back = new URL(d.body.redirect_to);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('xyz');
    expect(back.searchParams.get('code')).toBeNull();
    // Decided once: a second decision finds nothing.
    expect((await decide(handleOf(a.location!), true, tenant)).status).toBe(404);
  });

  it('refuses bad input with the protocol\'s errors, never redirecting to an unregistered URI', async () => {
    for (const uri of ['http://evil.example/cb', 'javascript:alert(1)', 'https://a.example/cb#x']) {
      expect(await post('/oauth/register', { redirect_uris: [uri] })).toMatchObject({ status: 400, body: { error: 'invalid_redirect_uri' } });
    }
    expect((await post('/oauth/register', { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic' })).body.error).toBe('invalid_client_metadata');
    expect((await post('/oauth/register', { redirect_uris: Array(11).fill(REDIRECT) })).body.error).toBe('invalid_redirect_uri');
    expect((await post('/oauth/register', [1, 2])).body.error).toBe('invalid_client_metadata');
    const big = await fetch(`${base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'x'.repeat(100_000) }) });
    expect(big.status).toBe(413);

    const clientId = await register();
    const challenge = verifierPair().challenge;
    const unknown = await authorize({ response_type: 'code', client_id: 'floe-client-' + '0'.repeat(32), redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256' });
    expect(unknown).toMatchObject({ status: 400, location: null, body: { error: 'invalid_client' } });
    const elsewhere = await authorize({ response_type: 'code', client_id: clientId, redirect_uri: 'https://attacker.example/cb', code_challenge: challenge, code_challenge_method: 'S256' });
    expect(elsewhere).toMatchObject({ status: 400, location: null, body: { error: 'invalid_request' } });
    // Once the redirect URI is known good, errors go back to it with the state.
    for (const [params, error] of [
      [{ code_challenge: challenge, code_challenge_method: 'plain' }, 'invalid_request'],
      [{}, 'invalid_request'],
      [{ code_challenge: challenge, code_challenge_method: 'S256', scope: 'tenant:manage' }, 'invalid_scope'],
      [{ code_challenge: challenge, code_challenge_method: 'S256', resource: 'https://other.example/mcp' }, 'invalid_target'],
    ] as const) {
      const r = await authorize({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, state: 's1', ...params });
      expect(r.status).toBe(302);
      const to = new URL(r.location!);
      expect(`${to.origin}${to.pathname}`).toBe(REDIRECT);
      expect(to.searchParams.get('error')).toBe(error);
      expect(to.searchParams.get('state')).toBe('s1');
    }
    const tokenish = await authorize({ response_type: 'token', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256' });
    expect(new URL(tokenish.location!).searchParams.get('error')).toBe('unsupported_response_type');

    const a = await authorize({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256' });
    const handle = handleOf(a.location!);
    expect((await decide(handle, true, tenant, {})).status).toBe(401);
    expect((await decide(handle, true, tenant, { cookie, origin: 'https://attacker.example' })).status).toBe(403);
    expect((await decide(handle, true, undefined)).status).toBe(400);
    expect((await decide('A'.repeat(43), true, tenant)).status).toBe(404);
    expect((await post('/oauth/authorize/decision', { request: handle, approve: 'yes' }, { cookie })).status).toBe(400);
    // An API key is not a person: consent needs the session.
    expect((await fetch(`${base}/oauth/consent/context?request=${handle}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } })).status).toBe(401);

    expect(await form('/oauth/token', { grant_type: 'password', client_id: clientId })).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
    expect(await form('/oauth/token', { client_id: clientId })).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(await form('/oauth/token', { grant_type: 'authorization_code', client_id: 'nobody', code: 'x', code_verifier: 'y' })).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect((await form('/oauth/token', { grant_type: 'authorization_code', client_id: clientId, code: "' OR 1=1 --", code_verifier: 'v'.repeat(43), redirect_uri: REDIRECT })).body.error).toBe('invalid_grant');
    const dup = await fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `grant_type=refresh_token&grant_type=authorization_code&client_id=${clientId}` });
    expect(((await dup.json()) as { error: string }).error).toBe('invalid_request');
  });
});
