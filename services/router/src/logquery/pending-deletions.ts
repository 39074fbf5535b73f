import { listDeleteRequests, type Db } from '@floe/meta';
import { logDeletionOfRequest, type LogDeletion, type RowFilter, type TimeRange } from '@floe/query';
import type { FastifyBaseLogger } from 'fastify';

/**
 * The delete requests of a dataset's logs that the compactor has not processed yet, as the
 * deletions a log query leaves out (Loki's filter-and-delete mode: lines vanish from answers as
 * soon as their request is recorded, long before the compactor rewrites their files). Read from
 * the metadata DB at most every TTL_MS per dataset; this router's own changes apply at once, other
 * routers' within TTL_MS.
 */
export interface PendingDeletions {
  of(tenant: string, dataset: string): Promise<LogDeletion[]>;
  /** Forgets a dataset's requests (one was recorded or cancelled here). */
  changed(tenant: string, dataset: string): void;
}

export const TTL_MS = 5_000;
const MAX_DATASETS = 10_000;

export function createPendingDeletions(db: Db, log: FastifyBaseLogger, now: () => number = Date.now): PendingDeletions {
  const cache = new Map<string, { at: number; deletions: Promise<LogDeletion[]> }>();
  const key = (tenant: string, dataset: string) => `${tenant}\u0000${dataset}`;
  const load = async (tenant: string, dataset: string): Promise<LogDeletion[]> => {
    const out: LogDeletion[] = [];
    for (const r of await listDeleteRequests(db, tenant, dataset, 'logs', { pendingOnly: true })) {
      try {
        out.push(logDeletionOfRequest(r.query, r.startMs, r.endMs));
      } catch (err) {
        // Checked when it was recorded; a query this version cannot read stays with the compactor.
        log.warn({ err, request: r.id, tenant, dataset }, 'a pending delete request could not be read; its lines are not filtered from queries');
      }
    }
    return out;
  };
  return {
    of(tenant, dataset) {
      const k = key(tenant, dataset);
      const hit = cache.get(k);
      if (hit && now() - hit.at < TTL_MS) return hit.deletions;
      const entry = { at: now(), deletions: load(tenant, dataset) };
      cache.set(k, entry);
      entry.deletions.catch(() => {
        if (cache.get(k) === entry) cache.delete(k);
      });
      if (cache.size > MAX_DATASETS) cache.delete(cache.keys().next().value!);
      return entry.deletions;
    },
    changed(tenant, dataset) {
      cache.delete(key(tenant, dataset));
    },
  };
}

/** The filter leaving out the deletions whose window meets `range` (none: undefined). */
export function exclusionFilter(deletions: readonly LogDeletion[], range?: TimeRange): RowFilter | undefined {
  const meeting = range ? deletions.filter((d) => d.range.startNs < range.endNs && range.startNs < d.range.endNs) : [...deletions];
  return meeting.length === 0 ? undefined : { kind: 'exclude', deletions: meeting };
}
