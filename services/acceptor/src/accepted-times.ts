import { formatDurationMs } from '@floe/config';

/**
 * The row times a tenant's ingest takes (limits.ingest_max_age, limits.ingest_max_future), fixed
 * when its request is admitted. A row outside is refused like any invalid item (OTLP partial
 * success; remote write's 400 after the rest is stored): each distinct hour of a request becomes a
 * WAL record and a flush file of its own, so a client with a broken clock could otherwise scatter
 * one request over thousands of partitions, some of them in a future that retention never reaches.
 *
 * Times are compared as doubles of unix nanoseconds: their 256 ns steps at today's times do not
 * matter against bounds measured in minutes, and the wire transcoders have a time as two 32-bit
 * halves, which make a double in one multiply-add.
 */
export class AcceptedTimes {
  /** Every time accepted: what ingest without limits (a converter's own tests) uses. */
  static readonly ANY = new AcceptedTimes(0, 0, 0);

  /** Earliest and latest accepted time, unix nanoseconds (±Infinity: unbounded). */
  readonly minNs: number;
  readonly maxNs: number;
  readonly #maxAgeMs: number;
  readonly #maxFutureMs: number;

  /** `maxAgeMs`, `maxFutureMs`: 0 for no bound on that side. */
  constructor(nowMs: number, maxAgeMs: number, maxFutureMs: number) {
    this.minNs = maxAgeMs > 0 ? (nowMs - maxAgeMs) * 1e6 : -Infinity;
    this.maxNs = maxFutureMs > 0 ? (nowMs + maxFutureMs) * 1e6 : Infinity;
    this.#maxAgeMs = maxAgeMs;
    this.#maxFutureMs = maxFutureMs;
  }

  admits(ns: number): boolean {
    return ns >= this.minNs && ns <= this.maxNs;
  }

  /** Which bound a time admits() refused is past. */
  kindOf(ns: number): 'too_old' | 'too_new' {
    return ns < this.minNs ? 'too_old' : 'too_new';
  }

  /** Why the time `ns` of `what` (e.g. "span start time") is refused; only for a time admits() refused. */
  refusal(what: string, ns: number): string {
    if (ns < this.minNs) {
      return `${what} is more than ${formatDurationMs(this.#maxAgeMs)} in the past (limits.ingest_max_age; oldest accepted: ${isoOf(this.minNs)})`;
    }
    return `${what} is more than ${formatDurationMs(this.#maxFutureMs)} in the future (limits.ingest_max_future; latest accepted: ${isoOf(this.maxNs)})`;
  }
}

const isoOf = (ns: number) => new Date(Math.floor(ns / 1e6)).toISOString();

/** A time given as the unsigned 32-bit halves of its nanoseconds, as a double. */
export const nsOfHalves = (lo: number, hi: number): number => hi * 4294967296 + lo;
