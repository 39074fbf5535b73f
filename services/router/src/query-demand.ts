import { recordAttributeQueryDemand, type Db } from '@floe/meta';
import type { Logger } from '@floe/telemetry';

/**
 * Query demand counting (spec 1, Log query API): the query APIs note the attribute keys each
 * query filters on without a column of its own (@floe/query's filterDemand); the counts are
 * summed in memory and added to the metadata DB every `router.query_demand_flush_interval`, and
 * once more on stop. The counts are advice (which keys deserve a materialized label), so the
 * query path never waits for them, a failed flush is logged and dropped, and the pending set is
 * bounded: past MAX_PENDING distinct keys, new ones are dropped until the next flush.
 */
export interface QueryDemand {
  note(tenant: string, dataset: string, table: string, keys: readonly string[]): void;
  /** Writes what is pending (tests; stop calls it too). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export const MAX_PENDING = 10_000;
/** Longer keys are not counted: an attribute key is user text, and no real one is this long. */
export const MAX_KEY_LENGTH = 256;

const NUL = '\u0000';

export function createQueryDemand(db: Db, log: Logger, flushIntervalMs: number): QueryDemand {
  if (flushIntervalMs <= 0) return { note() {}, async flush() {}, async close() {} };
  let pending = new Map<string, Map<string, number>>();
  let size = 0;
  let dropped = 0;
  let flushing: Promise<void> = Promise.resolve();

  const write = async (batch: Map<string, Map<string, number>>, lost: number) => {
    if (lost > 0) log.warn({ dropped: lost, max: MAX_PENDING }, 'query demand: too many distinct keys between flushes; some were not counted');
    for (const [group, counts] of batch) {
      const [tenant, dataset, table] = group.split(NUL) as [string, string, string];
      try {
        await recordAttributeQueryDemand(db, tenant, dataset, table, counts);
      } catch (err) {
        log.warn({ err, tenant, dataset, table }, 'query demand: flush failed; these counts are dropped');
      }
    }
  };
  const flush = () => {
    const batch = pending;
    const lost = dropped;
    pending = new Map();
    size = 0;
    dropped = 0;
    flushing = flushing.then(() => write(batch, lost));
    return flushing;
  };
  const timer = setInterval(() => void flush(), flushIntervalMs);
  timer.unref();

  return {
    note(tenant, dataset, table, keys) {
      if (keys.length === 0) return;
      const group = `${tenant}${NUL}${dataset}${NUL}${table}`;
      let counts = pending.get(group);
      for (const key of keys) {
        if (key.length > MAX_KEY_LENGTH) continue;
        const n = counts?.get(key);
        if (n !== undefined) {
          counts!.set(key, n + 1);
          continue;
        }
        if (size >= MAX_PENDING) {
          dropped++;
          continue;
        }
        if (!counts) pending.set(group, (counts = new Map()));
        counts.set(key, 1);
        size++;
      }
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
