import { FreshSampleIndex, type FreshSample } from '@floe/query';

/** How long a write is kept for rule queries: well past the ingest path's ack → visible time. */
export const RECENT_WRITES_WINDOW_MS = 60_000;
/** Samples kept per dataset at most (the oldest writes go first): a bound on memory and on each query's overlay. */
export const RECENT_WRITES_PER_DATASET = 50_000;

interface Write {
  at: number;
  samples: readonly FreshSample[];
}

/** A dataset's writes within the window, and their samples indexed once they are read. */
interface Dataset {
  writes: Write[];
  /** Dropped whenever `writes` changes: every rule query of an evaluation reads the same index. */
  index: FreshSampleIndex | undefined;
}

const EMPTY = new FreshSampleIndex([]);

/**
 * What this ruler wrote in the last minute, per dataset, for its own PromQL queries to read. Rule
 * results reach storage through the ingest path and are readable only after the writer commits
 * (seconds); a rule of another group, or a range over this group's recent evaluations, would
 * otherwise read a value one evaluation old. Mimir's ruler reads its writes at once from the
 * ingesters; this gives the ruler the same view. Samples storage already has are laid over
 * themselves (the same time and value), so keeping them longer than needed is harmless. Only
 * successful writes are recorded: a failed one never reaches storage.
 */
export class RecentWrites {
  readonly #datasets = new Map<string, Dataset>();
  readonly #windowMs: number;
  readonly #max: number;

  constructor(windowMs = RECENT_WRITES_WINDOW_MS, max = RECENT_WRITES_PER_DATASET) {
    this.#windowMs = windowMs;
    this.#max = max;
  }

  record(tenant: string, dataset: string, samples: readonly FreshSample[], now: number): void {
    if (samples.length === 0) return;
    const key = `${tenant}\u0000${dataset}`;
    const d = this.#live(key, now) ?? { writes: [], index: undefined };
    d.writes.push({ at: now, samples: samples.length > this.#max ? samples.slice(samples.length - this.#max) : samples });
    let total = d.writes.reduce((n, w) => n + w.samples.length, 0);
    while (total > this.#max) total -= d.writes.shift()!.samples.length;
    d.index = undefined;
    this.#datasets.set(key, d);
  }

  /** The samples of the dataset's writes within the window before `now`, in write order, indexed by metric name. */
  of(tenant: string, dataset: string, now: number): FreshSampleIndex {
    const d = this.#live(`${tenant}\u0000${dataset}`, now);
    if (!d) return EMPTY;
    d.index ??= new FreshSampleIndex(d.writes.length === 1 ? d.writes[0]!.samples : d.writes.flatMap((w) => w.samples));
    return d.index;
  }

  /** The key's dataset with its writes older than the window dropped; undefined (and forgotten) when none are left. */
  #live(key: string, now: number): Dataset | undefined {
    const d = this.#datasets.get(key);
    if (!d) return undefined;
    const oldest = now - this.#windowMs;
    let i = 0;
    while (i < d.writes.length && d.writes[i]!.at < oldest) i++;
    if (i > 0) {
      d.writes.splice(0, i);
      d.index = undefined;
    }
    if (d.writes.length > 0) return d;
    this.#datasets.delete(key);
    return undefined;
  }
}
