// Process-local registry of API-key verification caches, keyed by the root Db handle. Writes that can
// change a verification result (revoke, scope change, tenant disabled or deleted) call
// keysChanged(db), which clears every cache on that database once the write is committed. Other
// processes see the change when their cache entries expire (the verifier's TTL).

import { afterCommit, rootOf } from './db.ts';
import type { Db } from './db.ts';

const registry = new WeakMap<Db, Set<() => void>>();

export function registerKeyCache(db: Db, invalidate: () => void): () => void {
  const root = rootOf(db);
  let set = registry.get(root);
  if (!set) {
    set = new Set();
    registry.set(root, set);
  }
  set.add(invalidate);
  return () => {
    set.delete(invalidate);
  };
}

export function keysChanged(db: Db): void {
  const root = rootOf(db);
  afterCommit(db, () => {
    for (const invalidate of registry.get(root) ?? []) invalidate();
  });
}
