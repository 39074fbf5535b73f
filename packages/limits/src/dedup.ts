import type { Redis } from 'ioredis';

/**
 * Remembers request fingerprints (a hash of tenant, dataset, signal and the exact body) for a
 * window, so a byte-identical resend of a batch already made durable is acknowledged without
 * being stored twice. Only requests whose append succeeded are remembered: a resend of a
 * request that failed is stored normally.
 */
export interface DedupStore {
  /** Whether the fingerprint was remembered within its window. */
  seen(fingerprint: string): Promise<boolean>;
  remember(fingerprint: string, windowMs: number): Promise<void>;
  close(): Promise<void>;
}

export class MemoryDedup implements DedupStore {
  readonly #until = new Map<string, number>();
  readonly #max: number;

  constructor(maxEntries = 1_000_000) {
    this.#max = maxEntries;
  }

  async seen(fingerprint: string): Promise<boolean> {
    const until = this.#until.get(fingerprint);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.#until.delete(fingerprint);
    return false;
  }

  async remember(fingerprint: string, windowMs: number): Promise<void> {
    this.#until.delete(fingerprint);
    this.#until.set(fingerprint, Date.now() + windowMs);
    // Oldest first (insertion order): bounded memory, expired entries go first anyway.
    while (this.#until.size > this.#max) this.#until.delete(this.#until.keys().next().value!);
  }

  async close(): Promise<void> {
    this.#until.clear();
  }
}

export class RedisDedup implements DedupStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, keyPrefix: string) {
    this.#redis = redis;
    this.#prefix = keyPrefix;
  }

  async seen(fingerprint: string): Promise<boolean> {
    return (await this.#redis.exists(`${this.#prefix}dedup:${fingerprint}`)) === 1;
  }

  async remember(fingerprint: string, windowMs: number): Promise<void> {
    await this.#redis.set(`${this.#prefix}dedup:${fingerprint}`, '1', 'PX', Math.max(1, Math.round(windowMs)));
  }

  async close(): Promise<void> {}
}
