import type { Redis } from 'ioredis';
import { FingerprintTable } from './fingerprint-table.ts';

/**
 * Remembers request fingerprints for a window, so a byte-identical resend of a batch already made
 * durable is acknowledged without being stored twice. A fingerprint is the SHA-256 digest (32
 * bytes) of tenant, dataset, signal and the exact body. Only requests whose append succeeded are
 * remembered: a resend of a request that failed is stored normally.
 */
export interface DedupStore {
  /** Whether the fingerprint was remembered within its window. */
  seen(fingerprint: Uint8Array): Promise<boolean>;
  remember(fingerprint: Uint8Array, windowMs: number): Promise<void>;
  /**
   * Takes, for at most `ttlMs`, the turn to store the request of this fingerprint among the
   * requests (of every process) sharing the store; false while another holds it: it is storing
   * the same bytes now.
   */
  claim(fingerprint: Uint8Array, ttlMs: number): Promise<boolean>;
  /** Gives the turn back (the request is stored and remembered, or failed). */
  release(fingerprint: Uint8Array): Promise<void>;
  close(): Promise<void>;
}

/**
 * Fingerprints remembered in this process's memory, outside the JavaScript heap
 * (fingerprint-table.ts): each as the first 128 bits of its digest, with its expiry. Bounded: the
 * most recent fingerprints are kept in two generations of maxEntries / 2 each; when the newer one
 * is full it becomes the older and the older one is dropped, so between maxEntries / 2 and
 * maxEntries of the latest are remembered (expired ones go by then anyway).
 */
export class MemoryDedup implements DedupStore {
  readonly #generation: number;
  #newer: FingerprintTable;
  #older: FingerprintTable | undefined;
  readonly #key = new Uint32Array(4);
  /** Turns to store taken (claim) and not yet given back, with when they lapse. */
  readonly #turns = new Map<string, number>();

  constructor(maxEntries = 1_000_000) {
    this.#generation = Math.max(1, Math.floor(maxEntries / 2));
    this.#newer = new FingerprintTable(this.#generation);
  }

  async seen(fingerprint: Uint8Array): Promise<boolean> {
    const k = this.#keyOf(fingerprint);
    const now = Date.now();
    return this.#newer.get(k) > now || (this.#older?.get(k) ?? 0) > now;
  }

  async remember(fingerprint: Uint8Array, windowMs: number): Promise<void> {
    const k = this.#keyOf(fingerprint);
    const until = Math.max(1, Date.now() + windowMs);
    if (this.#newer.set(k, until)) return;
    this.#older = this.#newer;
    this.#newer = new FingerprintTable(this.#generation);
    this.#newer.set(k, until);
  }

  async claim(fingerprint: Uint8Array, ttlMs: number): Promise<boolean> {
    const k = Buffer.from(fingerprint.buffer, fingerprint.byteOffset, fingerprint.byteLength).toString('base64');
    const now = Date.now();
    if ((this.#turns.get(k) ?? 0) > now) return false;
    this.#turns.set(k, now + ttlMs);
    return true;
  }

  async release(fingerprint: Uint8Array): Promise<void> {
    this.#turns.delete(Buffer.from(fingerprint.buffer, fingerprint.byteOffset, fingerprint.byteLength).toString('base64'));
  }

  async close(): Promise<void> {
    this.#newer = new FingerprintTable(this.#generation);
    this.#older = undefined;
  }

  /** The digest's first 128 bits as 4 words, in a buffer reused by the next call. */
  #keyOf(fingerprint: Uint8Array): Uint32Array {
    if (fingerprint.length < 16) throw new RangeError(`a dedup fingerprint is a digest of at least 16 bytes, got ${fingerprint.length}`);
    const k = this.#key;
    for (let i = 0, p = 0; i < 4; i++, p += 4) k[i] = fingerprint[p]! | (fingerprint[p + 1]! << 8) | (fingerprint[p + 2]! << 16) | (fingerprint[p + 3]! << 24);
    return k;
  }
}

export class RedisDedup implements DedupStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, keyPrefix: string) {
    this.#redis = redis;
    this.#prefix = keyPrefix;
  }

  async seen(fingerprint: Uint8Array): Promise<boolean> {
    return (await this.#redis.exists(this.#keyOf(fingerprint))) === 1;
  }

  async remember(fingerprint: Uint8Array, windowMs: number): Promise<void> {
    await this.#redis.set(this.#keyOf(fingerprint), '1', 'PX', Math.max(1, Math.round(windowMs)));
  }

  async claim(fingerprint: Uint8Array, ttlMs: number): Promise<boolean> {
    return (await this.#redis.set(this.#keyOf(fingerprint, 'dedup-claim'), '1', 'PX', Math.max(1, Math.round(ttlMs)), 'NX')) === 'OK';
  }

  async release(fingerprint: Uint8Array): Promise<void> {
    await this.#redis.del(this.#keyOf(fingerprint, 'dedup-claim'));
  }

  async close(): Promise<void> {}

  /** The digest as base64url text in the key, as acceptors have always named it. */
  #keyOf(fingerprint: Uint8Array, kind = 'dedup'): string {
    return `${this.#prefix}${kind}:${Buffer.from(fingerprint.buffer, fingerprint.byteOffset, fingerprint.byteLength).toString('base64url')}`;
  }
}
