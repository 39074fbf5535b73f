// Named leases in the metadata DB (table `leases`, RULES_MIGRATION): one holder per name until it
// expires, on the database's clock, so the holders' clocks need not agree. The ruler's evaluator
// is one lease; the writers' membership is a lease per writer under a common prefix.

import type { Db } from './db.ts';
import { MetaError } from './errors.ts';

/**
 * Takes or renews the named lease for `holder` until `ttlMs` from now: true when `holder` holds
 * it afterwards (it was free, expired or already its own).
 */
export async function acquireLease(db: Db, name: string, holder: string, ttlMs: number): Promise<boolean> {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new MetaError('bad_data', 'lease ttl must be positive');
  const { rows } = await db.query<{ holder: string }>(
    `INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
     ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE leases.holder = EXCLUDED.holder OR leases.expires_at < now()
     RETURNING holder`,
    [name, holder, Math.ceil(ttlMs)],
  );
  return rows[0]?.holder === holder;
}

/** Gives the lease up if `holder` has it, so another can take it at once. */
export async function releaseLease(db: Db, name: string, holder: string): Promise<void> {
  await db.query(`DELETE FROM leases WHERE name = $1 AND holder = $2`, [name, holder]);
}

/**
 * The holders of the unexpired leases whose names start with `prefix`, sorted; the expired ones
 * of that prefix are deleted (a member that comes back takes a new lease).
 */
export async function liveLeaseHolders(db: Db, prefix: string): Promise<string[]> {
  if (prefix.length === 0) throw new MetaError('bad_data', 'a lease prefix must not be empty');
  // left() rather than LIKE: the prefix is matched as it is, whatever characters it holds.
  await db.query(`DELETE FROM leases WHERE left(name, length($1)) = $1 AND expires_at < now()`, [prefix]);
  const { rows } = await db.query<{ holder: string }>(
    `SELECT holder FROM leases WHERE left(name, length($1)) = $1 AND expires_at >= now() ORDER BY holder`,
    [prefix],
  );
  return rows.map((r) => r.holder);
}
