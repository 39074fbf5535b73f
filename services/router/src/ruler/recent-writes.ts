import { FreshSampleIndex, type FreshSample } from '@floe/query';

/** How long a write is kept for rule queries: well past the ingest path's ack → visible time. */
export const RECENT_WRITES_WINDOW_MS = 60_000;
/** Samples kept per dataset at most (the oldest writes go first): a bound on memory and on each query's overlay. */
export const RECENT_WRITES_PER_DATASET = 50_000;

interface Write {
  at: number;
  samples: readonly FreshSample[];
}

/**
 * What this ruler wrote in the last minute, per dataset, for its own PromQL queries to read. Rule
 * results reach storage through the ingest path and are readable only after the writer commits
 * (seconds); a rule of another group, or a range over this group's recent evaluations, would
 * otherwise read a value one evaluation old. Mimir's ruler reads its writes at once from the
 * ingesters; this gives the ruler the same view. Samples storage already has are laid over
 * themselves (the same time and value), so keeping them longer than needed is harmless. Only
 * successful writes are recorded: a failed one never reaches storage.
 */
const EMPTY = new FreshSampleIndex([]);

export class RecentWrites {
  readonly #byDataset = new Map<string, Write[]>();
  /** Each dataset's live samples indexed, until its next write or expiry: every rule query of an evaluation reads the same. */
  readonly #indexed = new Map<string, FreshSampleIndex>();
  readonly #windowMs: number;
  readonly #max: number;

  constructor(windowMs = RECENT_WRITES_WINDOW_MS, max = RECENT_WRITES_PER_DATASET) {
    this.#windowMs = windowMs;
    this.#max = max;
  }

  record(tenant: string, dataset: string, samples: readonly FreshSample[], now: number): void {
    if (samples.length === 0) return;
    const key = `${tenant}\u0000${dataset}`;
    const writes = this.#live(key, now);
    writes.push({ at: now, samples: samples.length > this.#max ? samples.slice(samples.length - this.#max) : samples });
    let total = writes.reduce((n, w) => n + w.samples.length, 0);
    while (total > this.#max) total -= writes.shift()!.samples.length;
    this.#byDataset.set(key, writes);
    this.#indexed.delete(key);
  }

  /** The samples of the dataset's writes within the window before `now`, in write order, indexed by metric name. */
  of(tenant: string, dataset: string, now: number): FreshSampleIndex {
    const key = `${tenant}\u0000${dataset}`;
    const writes = this.#live(key, now);
    if (writes.length === 0) {
      this.#byDataset.delete(key);
      return EMPTY;
    }
    let index = this.#indexed.get(key);
    if (!index) this.#indexed.set(key, (index = new FreshSampleIndex(writes.length === 1 ? writes[0]!.samples : writes.flatMap((w) => w.samples))));
    return index;
  }

  /** The key's writes made within the window (older ones dropped). */
  #live(key: string, now: number): Write[] {
    const writes = this.#byDataset.get(key) ?? [];
    const oldest = now - this.#windowMs;
    let i = 0;
    while (i < writes.length && writes[i]!.at < oldest) i++;
    if (i > 0) {
      writes.splice(0, i);
      this.#indexed.delete(key);
    }
    return writes;
  }
}
