import { createHash } from 'node:crypto';
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
  RETIRED_REFRESH_KEPT,
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
    const tokens = (await issueOAuthGrant(db, { clientId: client.id, clientName: client.name, userId, tenantId: 'acme', scopes, accessTtlMs: HOUR, refreshTtlMs: 24 * HOUR, codeId: oauthCodeId(code) }))!;
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
    const tokens = (await issueOAuthGrant(db, { clientId: client.id, clientName: client.name, userId, tenantId: 'acme', scopes: ['query'], accessTtlMs: -1000, refreshTtlMs: HOUR }))!;
    expect(await verifyApiKey(db, tokens.accessToken)).toBeUndefined();
  });

  it('a code presented twice is refused and revokes what it was exchanged for', async () => {
    const { tokens, code } = await grant();
    expect(await redeemOAuthCode(db, code)).toEqual({ status: 'reused' });
    expect(await verifyApiKey(db, tokens.accessToken)).toBeUndefined();
    expect(await refreshOAuthGrant(db, { refreshToken: tokens.refreshToken, clientId: client.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor: sameScopes })).toBeUndefined();
    expect(await redeemOAuthCode(db, 'A'.repeat(43))).toEqual({ status: 'invalid' });
  });

  /** Grants made from a code that still work: live, with an access key not revoked. */
  const liveGrantsOf = async (code: string): Promise<number> => {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM oauth_grants g JOIN api_keys k ON k.id = g.access_key_id
        WHERE g.code_id = $1 AND g.revoked_at IS NULL AND k.revoked_at IS NULL`,
      [oauthCodeId(code)],
    );
    return rows[0]!.n;
  };
  const approvedCode = async (): Promise<string> => {
    const { handle } = await createOAuthRequest(db, { clientId: client.id, redirectUri: client.redirectUris[0]!, scopes: ['query'], state: null, codeChallenge: 'c'.repeat(43), resource: null, ttlMs: 600_000 });
    return (await decideOAuthRequest(db, handle, { userId, tenantId: 'acme', scopes: ['query'], codeTtlMs: 60_000 }))!.code!;
  };
  const issueFrom = (on: Db, code: string) =>
    issueOAuthGrant(on, { clientId: client.id, clientName: client.name, userId, tenantId: 'acme', scopes: ['query'], accessTtlMs: HOUR, refreshTtlMs: HOUR, codeId: oauthCodeId(code) });

  it('a code presented again between its redemption and the grant leaves no working grant', async () => {
    const code = await approvedCode();
    expect((await redeemOAuthCode(db, code)).status).toBe('ok');
    // The replay lands while the token endpoint is still checking the first exchange.
    expect(await redeemOAuthCode(db, code)).toEqual({ status: 'reused' });
    expect(await issueFrom(db, code)).toBeUndefined();
    expect(await liveGrantsOf(code)).toBe(0);
  });

  it('a replay racing the grant on another connection never leaves a working grant', async () => {
    const other = await t.open();
    for (let i = 0; i < 8; i++) {
      const code = await approvedCode();
      expect((await redeemOAuthCode(db, code)).status).toBe('ok');
      const [issued, replay] = await Promise.all([issueFrom(db, code), redeemOAuthCode(other, code)]);
      expect(replay).toEqual({ status: 'reused' });
      expect(await liveGrantsOf(code)).toBe(0);
      if (issued) expect(await verifyApiKey(other, issued.accessToken)).toBeUndefined();
    }
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

  const refresh = (refreshToken: string, scopesFor = sameScopes) => refreshOAuthGrant(db, { refreshToken, clientId: client.id, accessTtlMs: HOUR, refreshTtlMs: HOUR, scopesFor });

  it('a refresh token the grant rotated away rotations ago revokes the grant when presented again', async () => {
    const { tokens } = await grant();
    const second = (await refresh(tokens.refreshToken))!;
    const third = (await refresh(second.refreshToken))!;
    const fourth = (await refresh(third.refreshToken))!;
    expect(await verifyApiKey(db, fourth.accessToken)).toMatchObject({ tenantId: 'acme' });
    // Three rotations old: still recognised as this grant's.
    expect(await refresh(tokens.refreshToken)).toBeUndefined();
    expect(await verifyApiKey(db, fourth.accessToken)).toBeUndefined();
    expect(await refresh(fourth.refreshToken)).toBeUndefined();
  });

  it(`a grant keeps its last ${RETIRED_REFRESH_KEPT} retired refresh tokens, and a replay of the latest still revokes it`, async () => {
    const { tokens } = await grant();
    const grantId = (await db.query<{ id: string }>('SELECT id FROM oauth_grants WHERE refresh_hash = $1', [createHash('sha256').update(tokens.refreshToken).digest('hex')])).rows[0]!.id;
    const retired = () => db.query<{ n: string }>('SELECT count(*) AS n FROM oauth_retired_refresh WHERE grant_id = $1', [grantId]).then((r) => Number(r.rows[0]!.n));
    let current = tokens;
    const rotatedAway: string[] = [];
    for (let i = 0; i < RETIRED_REFRESH_KEPT + 4; i++) {
      rotatedAway.push(current.refreshToken);
      current = (await refresh(current.refreshToken))!;
      expect(current).toBeDefined();
      expect(await retired()).toBe(Math.min(i + 1, RETIRED_REFRESH_KEPT));
    }
    // The rows kept are the newest ones: the last N tokens rotated away, not the first.
    const kept = (await db.query<{ refresh_hash: string }>('SELECT refresh_hash FROM oauth_retired_refresh WHERE grant_id = $1', [grantId])).rows.map((r) => r.refresh_hash).sort();
    const newest = rotatedAway.slice(-RETIRED_REFRESH_KEPT).map((t) => createHash('sha256').update(t).digest('hex')).sort();
    expect(kept).toEqual(newest);
    expect(await verifyApiKey(db, current.accessToken)).toMatchObject({ tenantId: 'acme' });
    // The most recently retired token, presented again: refused, and the grant is over.
    expect(await refresh(rotatedAway.at(-1)!)).toBeUndefined();
    expect(await verifyApiKey(db, current.accessToken)).toBeUndefined();
    expect(await refresh(current.refreshToken)).toBeUndefined();
  });

  it('a refresh token used twice at once revokes the grant: the slower use finds it rotated', async () => {
    const { tokens } = await grant();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const slow = refresh(tokens.refreshToken, async (u, tn, scopes) => {
      entered();
      await gate;
      return sameScopes(u, tn, scopes);
    });
    await inside;
    const fast = await refresh(tokens.refreshToken);
    expect(fast).toBeDefined();
    release();
    expect(await slow).toBeUndefined();
    expect(await verifyApiKey(db, fast!.accessToken)).toBeUndefined();
    expect(await refresh(fast!.refreshToken)).toBeUndefined();
  });

  it('the retired refresh tokens of a grant go with it', async () => {
    const { tokens } = await grant();
    const next = (await refresh(tokens.refreshToken))!;
    const last = (await refresh(next.refreshToken))!;
    const grantId = (await db.query<{ id: string }>('SELECT id FROM oauth_grants WHERE refresh_hash = $1', [createHash('sha256').update(last.refreshToken).digest('hex')])).rows[0]!.id;
    expect((await db.query('SELECT 1 FROM oauth_retired_refresh WHERE grant_id = $1', [grantId])).rowCount).toBe(2);
    await db.query(`UPDATE oauth_grants SET expires_at = now() - interval '2 days' WHERE id = $1`, [grantId]);
    await grant(); // issuing clears grants expired for a day
    expect((await db.query('SELECT 1 FROM oauth_grants WHERE id = $1', [grantId])).rowCount).toBe(0);
    expect((await db.query('SELECT 1 FROM oauth_retired_refresh WHERE grant_id = $1', [grantId])).rowCount).toBe(0);
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
    const tokens = (await issueOAuthGrant(db, { clientId: client.id, clientName: client.name, userId: bob.id, tenantId: 'acme', scopes: ['query'], accessTtlMs: HOUR, refreshTtlMs: HOUR }))!;
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
