// Named leases in the metadata DB (table `leases`, RULES_MIGRATION): one holder per name until it
// expires, on the database's clock, so the holders' clocks need not agree. The ruler's evaluator
// is one lease; the writers' membership is a lease per writer under a common prefix; a management
// action that must not run twice at once across routers (deleting a dataset) is a lease per
// action while it runs (runExclusive).

import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
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

export interface ExclusiveOptions {
  /**
   * How long the lease outlives a holder that stops renewing it (a process that died mid-task):
   * the longest a crashed holder keeps the others waiting. The holder renews every third of it.
   */
  ttlMs: number;
  /** How often a waiter asks for the lease again. */
  pollMs: number;
  /** Told of a renewal or a release that failed, or of a lease found taken by another at renewal. */
  log?: { warn(obj: object, msg: string): void };
}

/**
 * Runs `task` while holding the lease `name`, in every process on this database one at a time:
 * waits while another holds it (until it is given up, or expires because its holder died), renews
 * it while the task runs, however long, and gives it up when the task settles. The task's outcome
 * is returned or thrown as it is; a failed renewal or release is only logged (the lease then
 * lapses after `ttlMs`).
 */
export async function runExclusive<T>(db: Db, name: string, task: () => Promise<T>, opts: ExclusiveOptions): Promise<T> {
  if (!(opts.pollMs > 0)) throw new MetaError('bad_data', 'lease poll interval must be positive');
  // One holder per run: two runs in one process exclude each other too.
  const holder = randomUUID();
  while (!(await acquireLease(db, name, holder, opts.ttlMs))) await delay(opts.pollMs);
  let renewing: Promise<void> | undefined;
  const timer = setInterval(() => {
    // A slow renewal is not doubled by the next tick.
    renewing ??= acquireLease(db, name, holder, opts.ttlMs)
      .then(
        (held) => void (held || opts.log?.warn({ lease: name }, 'lease lapsed and was taken by another while its task ran')),
        (err: unknown) => opts.log?.warn({ err, lease: name }, 'lease not renewed; another may take it once it expires'),
      )
      .finally(() => {
        renewing = undefined;
      });
  }, opts.ttlMs / 3);
  // A task under way must not keep the process alive on its own account.
  timer.unref();
  try {
    return await task();
  } finally {
    clearInterval(timer);
    // A renewal landing after the release would take the lease again until it expired.
    await renewing;
    await releaseLease(db, name, holder).catch((err: unknown) => opts.log?.warn({ err, lease: name }, 'lease not given up; the next holder waits for it to expire'));
  }
}
