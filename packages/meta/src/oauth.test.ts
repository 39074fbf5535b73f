import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOAuthRequest,
  createTenant,
  createUser,
  decideOAuthRequest,
  getApiKey,
  getOAuthClient,
  getOAuthRequest,
  issueOAuthGrant,
  oauthCodeId,
  parseApiKeySecret,
  redeemOAuthCode,
  refreshOAuthGrant,
  registerOAuthClient,
  revokeOAuthToken,
  updateUser,
  verifyApiKey,
} from './index.ts';
import type { Db, OAuthClient, OAuthTokens } from './index.ts';
import { BACKENDS, createMigratedTestDatabase } from './test-databases.ts';
import type { TestDatabase } from './test-databases.ts';

const HOUR = 3_600_000;
const sameScopes = async (_u: string, _t: string, scopes: readonly string[]) => [...scopes];

describe.each(BACKENDS)('oauth on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;
  let client: OAuthClient;
  let userId: string;

  beforeAll(async () => {
    t = await createMigratedTestDatabase(kind);
    db = t.db;
    await createTenant(db, { id: 'acme' });
    userId = (await createUser(db, { email: 'ada@example.com' })).id;
    client = await registerOAuthClient(db, { name: 'Claude', redirectUris: ['http://127.0.0.1:33418/callback'] });
  });
  afterAll(async () => {
    await t?.drop();
  });

  /** A request approved for acme, its code redeemed: the grant's tokens. */
  const grant = async (scopes = ['query']): Promise<{ tokens: OAuthTokens; code: string }> => {
    const { handle } = await createOAuthRequest(db, { clientId: client.id, redirectUri: client.redirectUris[0]!, scopes, state: 's', codeChallenge: 'c'.repeat(43), resource: null, ttlMs: 600_000 });
    const decided = await decideOAuthRequest(db, handle, { userId, tenantId: 'acme', scopes, codeTtlMs: 60_000 });
    const code = decided!.code!;
    const redeemed = await redeemOAuthCode(db, code);
    expect(redeemed.status).toBe('ok');
    const tokens = await issueOAuthGrant(db, { clientId: client.id, clientName: client.name, userId, tenantId: 'acme', scopes, accessTtlMs: HOUR, refreshTtlMs: 24 * HOUR, codeId: oauthCodeId(code) });
    return { tokens, code };
  };

  it('registers clients and finds them only by their exact id', async () => {
    expect(client.id).toMatch(/^floe-client-[0-9a-f]{32}$/);
    expect(await getOAuthClient(db, client.id)).toEqual(client);
    expect(await getOAuthClient(db, 'floe-client-' + '0'.repeat(32))).toBeUndefined();
    expect(await getOAuthClient(db, "x' OR 1=1 --")).toBeUndefined();
    await expect(registerOAuthClient(db, { name: 'n', redirectUris: [] })).rejects.toMatchObject({ kind: 'bad_data' });
    await expect(registerOAuthClient(db, { name: 'x'.repeat(101), redirectUris: ['https://a.example/cb'] })).rejects.toMatchObject({ kind: 'bad_data' });
  });

  it('registrations that never got a live grant go after a day; clients with one stay', async () => {
    const idle = await registerOAuthClient(db, { name: 'Idle', redirectUris: ['https://idle.example/cb'] });
    const used = await registerOAuthClient(db, { name: 'Used', redirectUris: ['https://used.example/cb'] });
    await issueOAuthGrant(db, { clientId: used.id, clientName: used.name, userId, tenantId: 'acme', scopes: ['query'], accessTtlMs: HOUR, refreshTtlMs: HOUR });
    await db.query(`UPDATE oauth_clients SET created_at = now() - interval '2 days' WHERE id IN ($1, $2)`, [idle.id, used.id]);
    await registerOAuthClient(db, { name: 'Newcomer', redirectUris: ['https://new.example/cb'] });
    expect(await getOAuthClient(db, idle.id)).toBeUndefined();
    expect(await getOAuthClient(db, used.id)).toMatchObject({ name: 'Used' });
    expect(await getOAuthClient(db, client.id)).toMatchObject({ name: 'Claude' });
  });

  it('a request is decided once; a denial makes no code', async () => {
    const { handle } = await createOAuthRequest(db, { clientId: client.id, redirectUri: client.redirectUris[0]!, scopes: ['query'], state: null, codeChallenge: 'c'.repeat(43), resource: null, ttlMs: 600_000 });
    expect(await getOAuthRequest(db, handle)).toMatchObject({ client: { id: client.id, name: 'Claude' }, scopes: ['query'], state: null });
    const denied = await decideOAuthRequest(db, handle, undefined);
    expect(denied?.code).toBeUndefined();
    expect(await getOAuthRequest(db, handle)).toBeUndefined();
    expect(await decideOAuthRequest(db, handle, { userId, tenantId: 'acme', scopes: ['query'], codeTtlMs: 60_000 })).toBeUndefined();
    expect(await getOAuthRequest(db, 'not a handle')).toBeUndefined();
  });

  it('an expired request cannot be decided', async () => {
    const { handle } = await createOAuthRequest(db, { clientId: client.id, redirectUri: client.redirectUris[0]!, scopes: ['query'], state: null, codeChallenge: 'c'.repeat(43), resource: null, ttlMs: -1000 });
    expect(await getOAuthRequest(db, handle)).toBeUndefined();
    expect(await decideOAuthRequest(db, handle, { userId, tenantId: 'acme', scopes: ['query'], codeTtlMs: 60_000 })).toBeUndefined();
  });

  it('the access token is an expiring API key of the tenant with the granted scopes', async () => {
    const { tokens } = await grant(['query']);
    expect(tokens).toMatchObject({ expiresIn: 3600, scopes: ['query'], tenantId: 'acme' });
    expect(await verifyApiKey(db, tokens.accessToken)).toMatchObject({ tenantId: 'acme', scopes: ['query'] });
    const key = (await getApiKey(db, 'acme', parseApiKeySecret(tokens.accessToken)!.keyId))!;
    expect(key.name).toBe('oauth: Claude');
    expect(key.createdBy).toBe(userId);
    expect(key.expiresAt!.getTime()).toBeGreaterThan(Date.now() + HOUR - 60_000);
  });

  it('an expired access token no longer verifies', async () => {
    const tokens = await issueOAuthGrant(db, { clientId: client.id, clientName: client.name, userId, tenantId: 'acme', scopes: ['query'], accessTtlMs: -1000, refreshTtlMs: HOUR });
    expect(await verifyApiKey(db, tokens.accessToken)).toBeUndefined();
  });

  it('a code presented twice is refused and revokes what it was exchanged for', async () => {
    const { tokens, code } = await grant();
    expect(await redeemOAuthCode(db, code)).toEqual({ status: 'reused' });
    expect(await verifyApiKey(db, tokens.accessToken)).toBeUndefined();
    expect(await refreshOAuthGrant(db, { refreshToken: tokens.refreshToken, clientId: client.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor: sameScopes })).toBeUndefined();
    expect(await redeemOAuthCode(db, 'A'.repeat(43))).toEqual({ status: 'invalid' });
  });

  it('refresh rotates both tokens; the old refresh token presented again revokes the grant', async () => {
    const { tokens } = await grant();
    const next = await refreshOAuthGrant(db, { refreshToken: tokens.refreshToken, clientId: client.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor: sameScopes });
    expect(next).toBeDefined();
    expect(next!.refreshToken).not.toBe(tokens.refreshToken);
    expect(await verifyApiKey(db, tokens.accessToken)).toBeUndefined();
    expect(await verifyApiKey(db, next!.accessToken)).toMatchObject({ tenantId: 'acme' });
    // Replay of the rotated token: refused, and the live tokens of the grant stop working.
    expect(await refreshOAuthGrant(db, { refreshToken: tokens.refreshToken, clientId: client.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor: sameScopes })).toBeUndefined();
    expect(await verifyApiKey(db, next!.accessToken)).toBeUndefined();
    expect(await refreshOAuthGrant(db, { refreshToken: next!.refreshToken, clientId: client.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor: sameScopes })).toBeUndefined();
  });

  it('refresh is refused to another client, and narrows to what the user may still do', async () => {
    const other = await registerOAuthClient(db, { name: 'Other', redirectUris: ['https://other.example/cb'] });
    const { tokens } = await grant(['ingest', 'query']);
    expect(await refreshOAuthGrant(db, { refreshToken: tokens.refreshToken, clientId: other.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor: sameScopes })).toBeUndefined();
    const narrowed = await refreshOAuthGrant(db, { refreshToken: tokens.refreshToken, clientId: client.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor: async () => ['query', 'tenant:manage'] });
    expect(narrowed?.scopes).toEqual(['query']);
    expect(await verifyApiKey(db, narrowed!.accessToken)).toMatchObject({ scopes: ['query'] });
    // A user who may do nothing in the tenant any more loses the grant.
    expect(await refreshOAuthGrant(db, { refreshToken: narrowed!.refreshToken, clientId: client.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor: async () => [] })).toBeUndefined();
    expect(await verifyApiKey(db, narrowed!.accessToken)).toBeUndefined();
  });

  it('a disabled user cannot refresh', async () => {
    const bob = await createUser(db, { email: 'bob@example.com' });
    const tokens = await issueOAuthGrant(db, { clientId: client.id, clientName: client.name, userId: bob.id, tenantId: 'acme', scopes: ['query'], accessTtlMs: HOUR, refreshTtlMs: HOUR });
    await updateUser(db, bob.id, { disabled: true });
    expect(await refreshOAuthGrant(db, { refreshToken: tokens.refreshToken, clientId: client.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor: sameScopes })).toBeUndefined();
  });

  it('revocation by refresh token or by access token ends the grant; only its own client may revoke', async () => {
    const a = (await grant()).tokens;
    await revokeOAuthToken(db, a.refreshToken, 'floe-client-' + 'f'.repeat(32));
    expect(await verifyApiKey(db, a.accessToken)).toMatchObject({ tenantId: 'acme' });
    await revokeOAuthToken(db, a.refreshToken, client.id);
    expect(await verifyApiKey(db, a.accessToken)).toBeUndefined();
    const b = (await grant()).tokens;
    await revokeOAuthToken(db, b.accessToken, client.id);
    expect(await verifyApiKey(db, b.accessToken)).toBeUndefined();
    expect(await refreshOAuthGrant(db, { refreshToken: b.refreshToken, clientId: client.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor: sameScopes })).toBeUndefined();
    await revokeOAuthToken(db, 'garbage', client.id);
  });
});
