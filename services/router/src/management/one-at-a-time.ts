import { runExclusive, type Db } from '@floe/meta';

/** Runs tasks of one key one after another; tasks of other keys run freely. */
export interface OneAtATime {
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
}

/**
 * How long a router that died mid-task keeps the others' tasks of that key waiting. A live one
 * renews its lease every third of this, however long its task (a purge of many files) runs.
 */
export const ACROSS_ROUTERS_TTL_MS = 30_000;
/** How often a task waiting for another router's asks again: a purge takes seconds, not ms. */
export const ACROSS_ROUTERS_POLL_MS = 250;

/**
 * For management actions whose second run must see the first one's end, not its middle: tasks of
 * the same key run one after another in this process and, given `across`, in every router on the
 * same metadata DB (a lease `<lease><key>` in it). Within the process they queue without asking
 * the database; only the head of the queue waits for the lease.
 */
export function oneAtATime(across?: { db: Db; lease: string; log: { warn(obj: object, msg: string): void }; ttlMs?: number; pollMs?: number }): OneAtATime {
  const tails = new Map<string, Promise<unknown>>();
  const exclusive = <T>(key: string, task: () => Promise<T>): Promise<T> =>
    across
      ? runExclusive(across.db, across.lease + key, task, { ttlMs: across.ttlMs ?? ACROSS_ROUTERS_TTL_MS, pollMs: across.pollMs ?? ACROSS_ROUTERS_POLL_MS, log: across.log })
      : task();
  return {
    async run<T>(key: string, task: () => Promise<T>): Promise<T> {
      const mine = (tails.get(key) ?? Promise.resolve()).then(() => exclusive(key, task));
      // The next task waits for this one to settle, whatever its outcome.
      const tail = mine.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      try {
        return await mine;
      } finally {
        if (tails.get(key) === tail) tails.delete(key);
      }
    },
  };
}
