import { createHash, timingSafeEqual } from 'node:crypto';
import { FloeError } from '@floe/errors';
import type { MembershipRole } from '@floe/meta';
import type { VerifiedKey } from './authenticate.ts';

/**
 * Who is calling the management API (spec 2, Authentication). Unlike ingest and query, where
 * every caller acts inside one tenant (TenantContext), a management caller may reach several
 * tenants or none: the break-glass key and instance admins reach all, a signed-in user reaches
 * the tenants of their memberships, an API key only its own tenant.
 */
export type Principal =
  | { readonly kind: 'admin_key' }
  | {
      readonly kind: 'user';
      readonly user: SessionUser;
      /** SHA-256 of the session token. */
      readonly sessionId: string;
      /** Effective role per tenant (the higher of the local and the SSO-mapped row). */
      readonly roles: ReadonlyMap<string, MembershipRole>;
    }
  | ({ readonly kind: 'api_key' } & VerifiedKey);

export interface SessionUser {
  id: string;
  email: string;
  displayName: string;
  isInstanceAdmin: boolean;
  /** The configured demo account (read-only everywhere). */
  isDemo: boolean;
}

export interface ResolvedSession {
  sessionId: string;
  expiresAt: Date;
  user: SessionUser;
  roles: ReadonlyMap<string, MembershipRole>;
}

export interface ManagementAuthDeps {
  /** Break-glass key (`auth.admin_api_key`); empty disables it. */
  adminApiKey: string;
  verifyKey(secret: string): Promise<VerifiedKey | undefined>;
  /** The live session of a cookie token with its enabled user, or undefined. */
  session(token: string): Promise<ResolvedSession | undefined>;
}

export interface ManagementCredentials {
  authorization: string | undefined;
  /** X-Tenant-ID: optional here; when sent with an API key it must name the key's tenant. */
  tenant: string | undefined;
  /** The `floe_session` cookie. */
  sessionToken: string | undefined;
}

const sha = (s: string) => createHash('sha256').update(s).digest();

/**
 * An explicit Authorization header wins over a cookie, so a script's key is never silently
 * replaced by a browser session. Missing or invalid credentials → 401; an API key presented with
 * another tenant's X-Tenant-ID → 403, as on every other surface.
 */
export async function resolvePrincipal(creds: ManagementCredentials, deps: ManagementAuthDeps): Promise<Principal> {
  const header = creds.authorization?.trim();
  if (header) {
    const m = /^Bearer\s+(\S+)$/i.exec(header);
    if (!m) throw new FloeError('unauthorized', 'malformed Authorization header (expected "Bearer <api key>")', { code: 'FLOE_ERR_AUTH_MALFORMED' });
    const secret = m[1]!;
    if (deps.adminApiKey && timingSafeEqual(sha(secret), sha(deps.adminApiKey))) return { kind: 'admin_key' };
    const key = await deps.verifyKey(secret);
    if (!key) throw new FloeError('unauthorized', 'invalid or revoked API key', { code: 'FLOE_ERR_AUTH_INVALID_KEY' });
    const tenant = creds.tenant?.trim();
    if (tenant && tenant !== key.tenantId) {
      throw new FloeError('forbidden', `API key is not valid for tenant ${tenant}`, { code: 'FLOE_ERR_AUTH_WRONG_TENANT' });
    }
    return { kind: 'api_key', keyId: key.keyId, tenantId: key.tenantId, datasetId: key.datasetId, scopes: key.scopes };
  }
  if (creds.sessionToken) {
    const s = await deps.session(creds.sessionToken);
    if (!s) throw new FloeError('unauthorized', 'session expired or signed out', { code: 'FLOE_ERR_AUTH_SESSION' });
    return { kind: 'user', user: s.user, sessionId: s.sessionId, roles: s.roles };
  }
  throw new FloeError('unauthorized', 'sign in, or send "Authorization: Bearer <api key>"', { code: 'FLOE_ERR_AUTH_MISSING' });
}

/** How a principal is recorded in created_by / granted_by. */
export function principalLabel(p: Principal): string {
  switch (p.kind) {
    case 'admin_key':
      return 'admin';
    case 'user':
      return `user:${p.user.id}`;
    case 'api_key':
      return `key:${p.keyId}`;
  }
}
