// The stored side of Floe's OAuth 2.1 authorization server (spec 2, the consent flow; the router's
// oauth/ routes speak the protocol). Clients register themselves (RFC 7591); an authorization
// request waits for the signed-in user's decision; an approved request becomes a single-use code;
// a redeemed code becomes a grant: an API key with an expiry as the access token, and a rotating
// refresh token. Every secret is random (256 bits) and stored only as its SHA-256.

import { createHash, randomBytes } from 'node:crypto';
import { createApiKey, hashApiKeySecret, parseApiKeySecret } from './api-keys.ts';
import { keysChanged } from './key-cache.ts';
import type { Db } from './db.ts';
import { MetaError } from './errors.ts';
import { assertLabel } from './ids.ts';

export interface OAuthClient {
  id: string;
  name: string;
  redirectUris: string[];
  createdAt: Date;
}

export interface OAuthRequest {
  client: OAuthClient;
  redirectUri: string;
  scopes: string[];
  state: string | null;
  codeChallenge: string;
  resource: string | null;
  expiresAt: Date;
}

export interface OAuthCode {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  userId: string;
  tenantId: string;
  scopes: string[];
  resource: string | null;
}

export interface OAuthTokens {
  accessToken: string;
  refreshToken: string;
  /** Seconds the access token lives. */
  expiresIn: number;
  scopes: string[];
  tenantId: string;
}

/** A code redeemed for the first time, one presented again (its grants are now revoked), or none. */
export type RedeemedCode = { status: 'ok'; code: OAuthCode } | { status: 'reused' } | { status: 'invalid' };

const hash = (secret: string) => createHash('sha256').update(secret, 'utf8').digest('hex');
const newSecret = () => randomBytes(32).toString('base64url');
/** Handles, codes and refresh tokens are newSecret()s: anything else is refused before any lookup. */
const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const CLIENT_ID_PATTERN = /^floe-client-[0-9a-f]{32}$/;
const isSecret = (v: unknown): v is string => typeof v === 'string' && SECRET_PATTERN.test(v);

/** Most redirect URIs one client may register. */
export const MAX_REDIRECT_URIS = 10;

type ClientRow = { id: string; name: string; redirect_uris: string[]; created_at: Date };
const toClient = (r: ClientRow): OAuthClient => ({ id: r.id, name: r.name, redirectUris: r.redirect_uris, createdAt: r.created_at });

/** Registers a public client. The caller has checked the redirect URIs' form (the router's oauth/redirect-uris.ts). */
export async function registerOAuthClient(db: Db, input: { name: string; redirectUris: readonly string[] }): Promise<OAuthClient> {
  assertLabel('client name', input.name, 100);
  if (input.redirectUris.length === 0 || input.redirectUris.length > MAX_REDIRECT_URIS) {
    throw new MetaError('bad_data', `redirect_uris must list 1 to ${MAX_REDIRECT_URIS} URIs`);
  }
  for (const uri of input.redirectUris) assertLabel('redirect URI', uri, 2000);
  const id = `floe-client-${randomBytes(16).toString('hex')}`;
  // Registration is open (RFC 7591), so registrations that never led to a grant go after a day
  // instead of piling up; a client that comes back registers again.
  await db.query(
    `DELETE FROM oauth_clients c WHERE c.created_at < now() - interval '1 day'
       AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.id AND g.revoked_at IS NULL AND g.expires_at > now())`,
  );
  const { rows } = await db.query<ClientRow>(
    'INSERT INTO oauth_clients (id, name, redirect_uris) VALUES ($1, $2, $3::text[]) RETURNING id, name, redirect_uris, created_at',
    [id, input.name, [...input.redirectUris]],
  );
  return toClient(rows[0]!);
}

export async function getOAuthClient(db: Db, id: unknown): Promise<OAuthClient | undefined> {
  if (typeof id !== 'string' || !CLIENT_ID_PATTERN.test(id)) return undefined;
  const { rows } = await db.query<ClientRow>('SELECT id, name, redirect_uris, created_at FROM oauth_clients WHERE id = $1', [id]);
  return rows[0] ? toClient(rows[0]) : undefined;
}

/** Stores an authorization request awaiting the user's decision; the handle is returned once. */
export async function createOAuthRequest(
  db: Db,
  input: { clientId: string; redirectUri: string; scopes: readonly string[]; state: string | null; codeChallenge: string; resource: string | null; ttlMs: number },
): Promise<{ handle: string; expiresAt: Date }> {
  const handle = newSecret();
  // Housekeeping on the way in keeps the table to live requests without a background job.
  await db.query(`DELETE FROM oauth_requests WHERE expires_at < now() - interval '1 day'`);
  const { rows } = await db.query<{ expires_at: Date }>(
    `INSERT INTO oauth_requests (id, client_id, redirect_uri, scopes, state, code_challenge, resource, expires_at)
     VALUES ($1, $2, $3, $4::text[], $5, $6, $7, now() + make_interval(secs => $8))
     RETURNING expires_at`,
    [hash(handle), input.clientId, input.redirectUri, [...input.scopes], input.state, input.codeChallenge, input.resource, input.ttlMs / 1000],
  );
  return { handle, expiresAt: rows[0]!.expires_at };
}

type RequestRow = ClientRow & { redirect_uri: string; scopes: string[]; state: string | null; code_challenge: string; resource: string | null; expires_at: Date };
const REQUEST_SELECT = `SELECT c.id, c.name, c.redirect_uris, c.created_at, r.redirect_uri, r.scopes, r.state, r.code_challenge, r.resource, r.expires_at
  FROM oauth_requests r JOIN oauth_clients c ON c.id = r.client_id`;
const toRequest = (r: RequestRow): OAuthRequest => ({
  client: toClient(r),
  redirectUri: r.redirect_uri,
  scopes: r.scopes,
  state: r.state,
  codeChallenge: r.code_challenge,
  resource: r.resource,
  expiresAt: r.expires_at,
});

/** A request still awaiting its decision (not expired, not decided), or undefined. */
export async function getOAuthRequest(db: Db, handle: unknown): Promise<OAuthRequest | undefined> {
  if (!isSecret(handle)) return undefined;
  const { rows } = await db.query<RequestRow>(`${REQUEST_SELECT} WHERE r.id = $1 AND r.decided_at IS NULL AND r.expires_at > now()`, [hash(handle)]);
  return rows[0] ? toRequest(rows[0]) : undefined;
}

/**
 * Takes a request's decision: the request, once (a second decision, or one after expiry, gets
 * undefined). With `approve`, a code for the user and tenant in the same transaction.
 */
export async function decideOAuthRequest(
  db: Db,
  handle: unknown,
  approve: { userId: string; tenantId: string; scopes: readonly string[]; codeTtlMs: number } | undefined,
): Promise<{ request: OAuthRequest; code?: string } | undefined> {
  if (!isSecret(handle)) return undefined;
  return db.withTransaction(async (tx) => {
    const taken = await tx.query('UPDATE oauth_requests SET decided_at = now() WHERE id = $1 AND decided_at IS NULL AND expires_at > now()', [hash(handle)]);
    if (taken.rowCount === 0) return undefined;
    const { rows } = await tx.query<RequestRow>(`${REQUEST_SELECT} WHERE r.id = $1`, [hash(handle)]);
    const request = toRequest(rows[0]!);
    if (!approve) return { request };
    const code = newSecret();
    await tx.query(`DELETE FROM oauth_codes WHERE expires_at < now() - interval '1 day'`);
    await tx.query(
      `INSERT INTO oauth_codes (id, client_id, redirect_uri, code_challenge, user_id, tenant_id, scopes, resource, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7::text[], $8, now() + make_interval(secs => $9))`,
      [hash(code), request.client.id, request.redirectUri, request.codeChallenge, approve.userId, approve.tenantId, [...approve.scopes], request.resource, approve.codeTtlMs / 1000],
    );
    return { request, code };
  });
}

/**
 * Redeems a code once. A code presented again is a sign it leaked: the grant made from it is
 * revoked (RFC 6749 §4.1.2, OAuth 2.1 §4.1.3), and the caller refuses the exchange. The code is
 * marked too, so a grant not issued yet when the replay comes is never issued (issueOAuthGrant).
 */
export async function redeemOAuthCode(db: Db, code: unknown): Promise<RedeemedCode> {
  if (!isSecret(code)) return { status: 'invalid' };
  const id = hash(code);
  const { rows } = await db.query<{ client_id: string; redirect_uri: string; code_challenge: string; user_id: string; tenant_id: string; scopes: string[]; resource: string | null }>(
    `UPDATE oauth_codes SET used_at = now() WHERE id = $1 AND used_at IS NULL AND expires_at > now()
     RETURNING client_id, redirect_uri, code_challenge, user_id, tenant_id, scopes, resource`,
    [id],
  );
  const r = rows[0];
  if (r) {
    return { status: 'ok', code: { clientId: r.client_id, redirectUri: r.redirect_uri, codeChallenge: r.code_challenge, userId: r.user_id, tenantId: r.tenant_id, scopes: r.scopes, resource: r.resource } };
  }
  // Waits for the row lock of an issueOAuthGrant under way, so the grant it makes is committed
  // (and revoked below) or refused.
  const used = await db.query('UPDATE oauth_codes SET replayed_at = COALESCE(replayed_at, now()) WHERE id = $1 AND used_at IS NOT NULL', [id]);
  if (used.rowCount === 0) return { status: 'invalid' };
  await revokeGrants(db, 'code_id = $1', [id]);
  return { status: 'reused' };
}

interface GrantInput {
  clientId: string;
  clientName: string;
  userId: string;
  tenantId: string;
  scopes: readonly string[];
  accessTtlMs: number;
  refreshTtlMs: number;
}

/** The access token of a grant: an API key of the tenant with the grant's scopes, expiring. */
async function mintAccessKey(tx: Db, g: Omit<GrantInput, 'refreshTtlMs'>): Promise<{ id: string; secret: string }> {
  const key = await createApiKey(tx, { tenantId: g.tenantId, name: `oauth: ${g.clientName}`.slice(0, 200), scopes: g.scopes, createdBy: g.userId, ttlMs: g.accessTtlMs });
  return { id: key.id, secret: key.secret };
}

/**
 * Starts a grant from a redeemed code: its first access token and refresh token. undefined when
 * the code was presented again since its redemption (or is gone): it leaked, so no grant.
 */
export async function issueOAuthGrant(db: Db, input: GrantInput & { codeId?: string }): Promise<OAuthTokens | undefined> {
  return db.withTransaction(async (tx) => {
    if (input.codeId !== undefined) {
      // Held until COMMIT: a replay marking the code waits, then revokes this grant.
      const code = await tx.query<{ replayed: boolean }>('SELECT replayed_at IS NOT NULL AS replayed FROM oauth_codes WHERE id = $1 FOR UPDATE', [input.codeId]);
      if (code.rows[0]?.replayed !== false) return undefined;
    }
    const access = await mintAccessKey(tx, input);
    const refreshToken = newSecret();
    await tx.query(`DELETE FROM oauth_grants WHERE expires_at < now() - interval '1 day'`);
    await tx.query(
      `INSERT INTO oauth_grants (id, client_id, user_id, tenant_id, scopes, code_id, refresh_hash, access_key_id, expires_at)
       VALUES ($1, $2, $3, $4, $5::text[], $6, $7, $8, now() + make_interval(secs => $9))`,
      [randomBytes(16).toString('hex'), input.clientId, input.userId, input.tenantId, [...input.scopes], input.codeId ?? null, hash(refreshToken), access.id, input.refreshTtlMs / 1000],
    );
    return { accessToken: access.secret, refreshToken, expiresIn: Math.round(input.accessTtlMs / 1000), scopes: [...input.scopes], tenantId: input.tenantId };
  });
}

/** The hash of a code, as redeemOAuthCode stores it (a grant names the code it came from). */
export const oauthCodeId = (code: string): string => hash(code);

/**
 * Retired refresh tokens kept per grant, newest first. A retired hash exists to catch the replay
 * of a recently rotated token (a copy taken while it was live, used after the client moved on);
 * a copy older than this many rotations has been dead for as long as the client has used the
 * grant, and a cap keeps a long-lived, often-refreshed grant from growing without end.
 */
export const RETIRED_REFRESH_KEPT = 16;

/**
 * Rotates a grant's refresh token: a new access token (the old one revoked) and a new refresh
 * token. `scopesFor` narrows the grant to what the user may still do in its tenant now (an empty
 * list, as for a user who left the tenant, revokes the grant). Any of the last
 * RETIRED_REFRESH_KEPT refresh tokens it rotated away, presented again, revokes the grant, as does
 * one rotated by a concurrent refresh. undefined: not a live refresh token of this client.
 */
export async function refreshOAuthGrant(
  db: Db,
  input: { refreshToken: unknown; clientId: string; accessTtlMs: number; refreshTtlMs: number; scopesFor: (userId: string, tenantId: string, scopes: readonly string[]) => Promise<string[]> },
): Promise<OAuthTokens | undefined> {
  if (!isSecret(input.refreshToken)) return undefined;
  const presented = hash(input.refreshToken);
  type GrantRow = { id: string; client_id: string; client_name: string; user_id: string; tenant_id: string; scopes: string[]; access_key_id: string | null };
  const { rows } = await db.query<GrantRow>(
    `SELECT g.id, g.client_id, c.name AS client_name, g.user_id, g.tenant_id, g.scopes, g.access_key_id
     FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client_id JOIN users u ON u.id = g.user_id
     WHERE g.refresh_hash = $1 AND g.revoked_at IS NULL AND g.expires_at > now() AND NOT u.disabled`,
    [presented],
  );
  const g = rows[0];
  if (!g) {
    await revokeRetired(db, presented);
    return undefined;
  }
  if (g.client_id !== input.clientId) return undefined;
  const scopes = (await input.scopesFor(g.user_id, g.tenant_id, g.scopes)).filter((s) => g.scopes.includes(s));
  if (scopes.length === 0) {
    await revokeGrants(db, 'id = $1', [g.id]);
    return undefined;
  }
  const tokens = await db.withTransaction(async (tx) => {
    const refreshToken = newSecret();
    // Only the holder of the current token rotates: a concurrent rotation of the same token loses here.
    const moved = await tx.query(
      `UPDATE oauth_grants SET refresh_hash = $2, previous_refresh_hash = refresh_hash, scopes = $3::text[], expires_at = now() + make_interval(secs => $4)
       WHERE id = $1 AND refresh_hash = $5 AND revoked_at IS NULL`,
      [g.id, hash(refreshToken), scopes, input.refreshTtlMs / 1000, presented],
    );
    if (moved.rowCount === 0) return undefined;
    await tx.query('INSERT INTO oauth_retired_refresh (refresh_hash, grant_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [presented, g.id]);
    // Rotations of one grant are serial (each presents the token the last one committed), so
    // retired_at orders them; a grant kept alive for months would otherwise grow a row a rotation.
    await tx.query(
      `DELETE FROM oauth_retired_refresh WHERE grant_id = $1 AND refresh_hash NOT IN (
         SELECT refresh_hash FROM oauth_retired_refresh WHERE grant_id = $1 ORDER BY retired_at DESC, refresh_hash LIMIT $2)`,
      [g.id, RETIRED_REFRESH_KEPT],
    );
    const access = await mintAccessKey(tx, { clientId: g.client_id, clientName: g.client_name, userId: g.user_id, tenantId: g.tenant_id, scopes, accessTtlMs: input.accessTtlMs });
    if (g.access_key_id) await tx.query('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1', [g.access_key_id]);
    await tx.query('UPDATE oauth_grants SET access_key_id = $2 WHERE id = $1', [g.id, access.id]);
    return { accessToken: access.secret, refreshToken, expiresIn: Math.round(input.accessTtlMs / 1000), scopes, tenantId: g.tenant_id };
  });
  if (tokens) await keysChanged(db);
  // Another use of the same token rotated it first (the UPDATE waited for it to commit): a reuse.
  else await revokeRetired(db, presented);
  return tokens;
}

/** Revokes the grant that once had this refresh token (a token of an older process's rotation too). */
async function revokeRetired(db: Db, refreshHash: string): Promise<void> {
  await revokeGrants(db, 'id IN (SELECT grant_id FROM oauth_retired_refresh WHERE refresh_hash = $1) OR previous_refresh_hash = $1', [refreshHash]);
}

/**
 * Revokes what a token names (RFC 7009): a refresh token's grant and its access token, or an
 * access token of a grant (that grant, whole). Anything else is ignored, as the RFC asks.
 */
export async function revokeOAuthToken(db: Db, token: unknown, clientId: string): Promise<void> {
  if (isSecret(token)) {
    await revokeGrants(db, 'refresh_hash = $1 AND client_id = $2', [hash(token), clientId]);
    return;
  }
  const key = parseApiKeySecret(token);
  if (key) {
    await revokeGrants(db, 'access_key_id = $1 AND client_id = $2 AND access_key_id IN (SELECT id FROM api_keys WHERE key_hash = $3)', [key.keyId, clientId, hashApiKeySecret(token as string)]);
  }
}

/** Revokes the grants `where` selects and the access keys they hold. */
async function revokeGrants(db: Db, where: string, params: unknown[]): Promise<void> {
  const { rows } = await db.query<{ access_key_id: string | null }>(`UPDATE oauth_grants SET revoked_at = COALESCE(revoked_at, now()) WHERE ${where} RETURNING access_key_id`, params);
  const keys = rows.map((r) => r.access_key_id).filter((k): k is string => k !== null);
  if (keys.length === 0) return;
  await db.query('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = ANY($1::text[])', [keys]);
  await keysChanged(db);
}
