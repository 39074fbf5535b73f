import { createKeyVerifier, effectiveRoles, getDataset, getSession, listUserMemberships, type Db } from '@floe/meta';
import { DEFAULT_DATASET, type AuthDeps } from './authenticate.ts';
import type { ManagementAuthDeps } from './principal.ts';

/**
 * The AuthDeps every service builds from the metadata DB: cached key verification and a cached
 * dataset-existence check (both expire after `ttlMs`, and are cleared by revocations and dataset
 * deletions as they are announced, so those reach every process).
 */
export function authDepsFromDb(db: Db, opts: { adminApiKey: string; ttlMs: number }): AuthDeps {
  const seen = new Map<string, number>();
  // A dataset's deletion invalidates the keys (its bound keys go with it), and with them this.
  const verifier = createKeyVerifier(db, { ttlMs: opts.ttlMs, onInvalidate: () => seen.clear() });
  return {
    adminApiKey: opts.adminApiKey,
    verifyKey: (secret) => verifier.verify(secret),
    datasetExists: async (tenant, dataset) => {
      if (dataset === DEFAULT_DATASET) return true;
      const k = `${tenant}/${dataset}`;
      const at = seen.get(k);
      if (at !== undefined && Date.now() - at < opts.ttlMs) return true;
      const ok = (await getDataset(db, tenant, dataset)) !== undefined;
      if (ok) seen.set(k, Date.now());
      return ok;
    },
  };
}

/**
 * ManagementAuthDeps over the metadata DB. Sessions are looked up on every request (no cache), so
 * sign-out, disabling a user and role changes take effect at once.
 */
export function managementAuthDepsFromDb(db: Db, auth: AuthDeps, opts: { isDemoUser?: (email: string) => boolean } = {}): ManagementAuthDeps {
  return {
    adminApiKey: auth.adminApiKey,
    verifyKey: auth.verifyKey,
    async session(token) {
      const found = await getSession(db, token);
      if (!found) return undefined;
      const { user, session } = found;
      return {
        sessionId: session.id,
        expiresAt: session.expiresAt,
        user: {
          id: user.id,
          email: user.email,
          displayName: user.displayName,
          isInstanceAdmin: user.isInstanceAdmin,
          isDemo: opts.isDemoUser?.(user.email) ?? false,
        },
        roles: effectiveRoles(await listUserMemberships(db, user.id)),
      };
    },
  };
}
