import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { tenantRole } from '@floe/auth';
import { FloeError, forbidden } from '@floe/errors';
import type { LoginAttempts } from '@floe/limits';
import { checkUserPassword, createKeyVerifier, effectiveRoles, getTenant, isValidTenantId, listUserMemberships, roleRank, type Db, type MembershipRole } from '@floe/meta';
import type { Actor } from './store/actor.ts';
import { headerValue } from '@floe/runtime';

/**
 * Who calls the planning API (spec 3, Authentication: "two methods", names not shown):
 *
 * 1. `Authorization: Bearer <Floe API key>`: the key's tenant is the planning tenant. An
 *    `X-Tenant-ID` naming another tenant is 403. The break-glass key (auth.admin_api_key) acts as
 *    admin of the tenant its `X-Tenant-ID` names.
 * 2. `Authorization: Basic base64(<email>:<password>)` of a Floe user, with `X-Tenant-ID` naming a
 *    tenant the user is a member of (instance admins reach every tenant).
 *
 * A caller's role in the tenant follows @floe/auth's one table: a tenant-wide key with
 * tenant:manage is admin, any other key of the tenant a viewer; a user has their membership
 * role. Reads need viewer, writes member, creating a product admin (see requireRole).
 */
export interface PlanningCaller extends Actor {
  readonly role: MembershipRole;
}

declare module 'fastify' {
  interface FastifyRequest {
    planningCaller?: PlanningCaller;
  }
}

export interface PlanningAuth {
  resolve(headers: { authorization?: string; tenant?: string }): Promise<PlanningCaller>;
  dispose(): void;
}

const sha = (s: string) => createHash('sha256').update(s).digest();

const missing = () => new FloeError('unauthorized', 'send "Authorization: Bearer <api key>", or "Authorization: Basic <email:password>" with X-Tenant-ID', { code: 'FLOE_ERR_AUTH_MISSING' });

export function createPlanningAuth(db: Db, opts: { adminApiKey: string; ttlMs: number; loginAttempts?: LoginAttempts }): PlanningAuth {
  const keys = createKeyVerifier(db, { ttlMs: opts.ttlMs });
  // Password checks cost a deliberately slow scrypt: a verified email/password pair is reused
  // for the key cache's TTL (keyed by its hash; only successes are kept, so guessing stays slow).
  const passwords = new Map<string, { userId: string; isInstanceAdmin: boolean; expires: number }>();

  const userFor = async (email: string, password: string) => {
    const k = sha(`${email}\u0000${password}`).toString('hex');
    const hit = passwords.get(k);
    if (hit && hit.expires > Date.now()) return hit;
    passwords.delete(k);
    // Failures count per account, across the router's sign-in form too (shared buckets).
    const check = () => checkUserPassword(db, email, password);
    const user = opts.loginAttempts ? await opts.loginAttempts.guard(email, check) : await check();
    if (!user) return undefined;
    const entry = { userId: user.id, isInstanceAdmin: user.isInstanceAdmin, expires: Date.now() + opts.ttlMs };
    if (passwords.size >= 10_000) passwords.delete(passwords.keys().next().value!);
    passwords.set(k, entry);
    return entry;
  };

  const liveTenant = async (tenantId: string) => {
    const tenant = await getTenant(db, tenantId);
    if (!tenant || tenant.disabled) throw forbidden(`no access to tenant ${tenantId}`);
  };

  return {
    async resolve({ authorization, tenant }) {
      const header = authorization?.trim();
      if (!header) throw missing();
      const tenantHeader = tenant?.trim() || undefined;
      if (tenantHeader !== undefined && !isValidTenantId(tenantHeader)) throw new FloeError('bad_data', 'invalid X-Tenant-ID', { code: 'FLOE_ERR_AUTH_BAD_TENANT' });

      const bearer = /^Bearer\s+(\S+)$/i.exec(header);
      if (bearer) {
        const secret = bearer[1]!;
        if (opts.adminApiKey && timingSafeEqual(sha(secret), sha(opts.adminApiKey))) {
          if (!tenantHeader) throw new FloeError('unauthorized', 'the admin key needs X-Tenant-ID naming the tenant', { code: 'FLOE_ERR_AUTH_NO_TENANT' });
          await liveTenant(tenantHeader);
          return { tenantId: tenantHeader, role: 'admin', userId: null, keyId: 'admin' };
        }
        const key = await keys.verify(secret);
        if (!key) throw new FloeError('unauthorized', 'invalid or revoked API key', { code: 'FLOE_ERR_AUTH_INVALID_KEY' });
        if (tenantHeader !== undefined && tenantHeader !== key.tenantId) throw forbidden(`API key is not valid for tenant ${tenantHeader}`, { code: 'FLOE_ERR_AUTH_WRONG_TENANT' });
        const role = tenantRole({ kind: 'api_key', ...key }, key.tenantId);
        if (!role) throw forbidden(`no access to tenant ${key.tenantId}`);
        return { tenantId: key.tenantId, role, userId: null, keyId: key.keyId };
      }

      const basic = /^Basic\s+([A-Za-z0-9+/]+=*)$/i.exec(header);
      if (!basic) throw new FloeError('unauthorized', 'malformed Authorization header (expected Bearer or Basic)', { code: 'FLOE_ERR_AUTH_MALFORMED' });
      const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon <= 0) throw new FloeError('unauthorized', 'malformed Basic credentials (expected email:password)', { code: 'FLOE_ERR_AUTH_MALFORMED' });
      if (!tenantHeader) throw new FloeError('unauthorized', 'Basic authentication needs X-Tenant-ID naming your tenant', { code: 'FLOE_ERR_AUTH_NO_TENANT' });
      const user = await userFor(decoded.slice(0, colon), decoded.slice(colon + 1));
      if (!user) throw new FloeError('unauthorized', 'wrong email or password', { code: 'FLOE_ERR_AUTH_PASSWORD' });
      // Memberships are read on every request, so a revoked membership takes effect at once.
      const role = user.isInstanceAdmin ? 'admin' : effectiveRoles(await listUserMemberships(db, user.userId)).get(tenantHeader);
      if (!role) throw forbidden(`no access to tenant ${tenantHeader}`, { code: 'FLOE_ERR_AUTH_WRONG_TENANT' });
      await liveTenant(tenantHeader);
      return { tenantId: tenantHeader, role, userId: user.userId, keyId: null };
    },
    dispose() {
      keys.dispose();
      passwords.clear();
    },
  };
}

/** Resolves the caller of every route of its scope before the body is read. */
export const planningAuthPlugin = fp<{ auth: PlanningAuth }>(async (app, opts) => {
  app.addHook('onRequest', async (req) => {
    req.planningCaller = await opts.auth.resolve({ authorization: headerValue(req.headers, 'authorization'), tenant: headerValue(req.headers, 'x-tenant-id') });
  });
});

/**
 * Holds reads to the viewer role and writes to member for every route of its scope, so no route
 * can forget it (registered after the rate limit: refused requests still spend tokens).
 */
export const planningRolePlugin = fp(async (app) => {
  app.addHook('onRequest', async (req) => {
    requireRole(req, req.method === 'GET' || req.method === 'HEAD' ? 'viewer' : 'member');
  });
});

/** The caller of a route behind planningAuthPlugin. */
export function callerOf(req: FastifyRequest): PlanningCaller {
  if (!req.planningCaller) throw new Error('callerOf: route is not behind planningAuthPlugin');
  return req.planningCaller;
}

/** Throws 403 unless the caller has at least `min` in its tenant; returns the caller. */
export function requireRole(req: FastifyRequest, min: MembershipRole): PlanningCaller {
  const caller = callerOf(req);
  if (roleRank(caller.role) < roleRank(min)) {
    throw forbidden(`this needs the ${min} role in tenant ${caller.tenantId} (you have ${caller.role}; API keys write with tenant:manage)`, { code: 'FLOE_ERR_AUTH_ROLE' });
  }
  return caller;
}
