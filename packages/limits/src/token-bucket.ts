/**
 * Token buckets, one per (tenant, dimension): a bucket holds at most `burst` tokens and refills at
 * `ratePerSec`. A request takes `cost` tokens or is refused with the time until it could pass.
 * A cost above the burst is taken as the burst, so one large request passes a full bucket instead
 * of being refused forever. A negative cost gives tokens back (never beyond the burst).
 */
export interface BucketLimit {
  ratePerSec: number;
  burst: number;
}

export interface TakeResult {
  allowed: boolean;
  /** Milliseconds until `cost` tokens will be there (0 when allowed). */
  retryAfterMs: number;
  /** Tokens left after this take (or before it, when refused). */
  remaining: number;
}

export interface TokenBuckets {
  take(key: string, cost: number, limit: BucketLimit): Promise<TakeResult>;
  close(): Promise<void>;
}

/** Shared arithmetic of both stores: refill from `last` to `now`, then take `cost` if there. */
export function refillAndTake(state: { tokens: number; last: number } | undefined, now: number, cost: number, limit: BucketLimit): { state: { tokens: number; last: number }; result: TakeResult } {
  const need = Math.min(cost, limit.burst);
  const elapsed = state ? Math.max(0, now - state.last) : 0;
  const tokens = state ? Math.min(limit.burst, state.tokens + (elapsed * limit.ratePerSec) / 1000) : limit.burst;
  if (tokens >= need) {
    const left = Math.min(limit.burst, tokens - need);
    return { state: { tokens: left, last: now }, result: { allowed: true, retryAfterMs: 0, remaining: left } };
  }
  return { state: { tokens, last: now }, result: { allowed: false, retryAfterMs: msUntilTokens(need - tokens, limit), remaining: tokens } };
}

/** Milliseconds until a bucket refills by `missing` tokens. */
export function msUntilTokens(missing: number, limit: BucketLimit): number {
  return Math.ceil((missing * 1000) / limit.ratePerSec);
}

/** One process's buckets (the embedded mode, or a single acceptor). */
export class MemoryTokenBuckets implements TokenBuckets {
  readonly #buckets = new Map<string, { tokens: number; last: number }>();
  readonly #now: () => number;

  constructor(now: () => number = () => performance.timeOrigin + performance.now()) {
    this.#now = now;
  }

  async take(key: string, cost: number, limit: BucketLimit): Promise<TakeResult> {
    const { state, result } = refillAndTake(this.#buckets.get(key), this.#now(), cost, limit);
    this.#buckets.set(key, state);
    // A full bucket needs no memory: drop it (bounded by the keys active within one refill time).
    if (state.tokens >= limit.burst) this.#buckets.delete(key);
    return result;
  }

  async close(): Promise<void> {
    this.#buckets.clear();
  }
}

/**
 * Shared buckets (Redis) with this process's own standing in while the shared store cannot be
 * reached: every limit then holds per process rather than per cluster, so an outage of the store
 * neither refuses requests (a 500 before) nor lets a tenant through unlimited. After a failure the
 * shared store is left alone for `pauseMs`, so requests do not each wait out its reconnection.
 */
export class FallbackTokenBuckets implements TokenBuckets {
  readonly #shared: TokenBuckets;
  readonly #local: TokenBuckets;
  readonly #onFallback: (err: unknown) => void;
  readonly #pauseMs: number;
  readonly #now: () => number;
  #sharedAfter = 0;

  constructor(shared: TokenBuckets, o: { onFallback: (err: unknown) => void; pauseMs?: number; local?: TokenBuckets; now?: () => number }) {
    this.#shared = shared;
    this.#local = o.local ?? new MemoryTokenBuckets();
    this.#onFallback = o.onFallback;
    this.#pauseMs = o.pauseMs ?? 5000;
    this.#now = o.now ?? Date.now;
  }

  async take(key: string, cost: number, limit: BucketLimit): Promise<TakeResult> {
    if (this.#now() >= this.#sharedAfter) {
      try {
        return await this.#shared.take(key, cost, limit);
      } catch (err) {
        this.#sharedAfter = this.#now() + this.#pauseMs;
        this.#onFallback(err);
      }
    }
    return this.#local.take(key, cost, limit);
  }

  async close(): Promise<void> {
    await Promise.all([this.#shared.close(), this.#local.close()]);
  }
}
