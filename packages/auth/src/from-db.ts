import { createKeyVerifier, getDataset, type Db } from '@floe/meta';
import { DEFAULT_DATASET, type AuthDeps } from './authenticate.ts';

/**
 * The AuthDeps every service builds from the metadata DB: cached key verification and a cached
 * dataset-existence check (both expire after `ttlMs`, so revocations reach every process).
 */
export function authDepsFromDb(db: Db, opts: { adminApiKey: string; ttlMs: number }): AuthDeps {
  const verifier = createKeyVerifier(db, { ttlMs: opts.ttlMs });
  const seen = new Map<string, number>();
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
