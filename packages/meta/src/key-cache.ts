// Process-local registry of API-key verification caches, keyed by the root Db handle. Writes that can
// change a verification result (revoke, scope change, tenant disabled or deleted, dataset deleted) call
// keysChanged(db), which clears every cache on that database once the write is committed.
//
// Other processes hear of it too on PostgreSQL: keysChanged also sends NOTIFY floe_keys_changed in
// the same transaction (PostgreSQL delivers it at commit, never for a rollback), and every process
// with a verifier LISTENs on it, so a revoked key fails on the next request at every service
// (issue 3). If the listening connection is down, caches are dropped and entries fall back to the
// verifier's TTL until it is back.

import { afterCommit, listen, rootOf } from './db.ts';
import type { Db } from './db.ts';

const CHANNEL = 'floe_keys_changed';

const registry = new WeakMap<Db, Set<() => void>>();

export function registerKeyCache(db: Db, invalidate: () => void): () => void {
  const root = rootOf(db);
  let set = registry.get(root);
  if (!set) {
    set = new Set();
    registry.set(root, set);
  }
  set.add(invalidate);
  const unlisten = listen(root, CHANNEL, { onNotify: invalidate, onReset: invalidate });
  return () => {
    set.delete(invalidate);
    unlisten?.();
  };
}

export async function keysChanged(db: Db): Promise<void> {
  const root = rootOf(db);
  if (root.kind === 'pg') await db.query(`SELECT pg_notify('${CHANNEL}', '')`);
  afterCommit(db, () => {
    for (const invalidate of registry.get(root) ?? []) invalidate();
  });
}
