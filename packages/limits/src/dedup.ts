import { hash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { FingerprintTable } from './fingerprint-table.ts';

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

/**
 * Fingerprints remembered in this process's memory, outside the JavaScript heap
 * (fingerprint-table.ts): each is kept as the first 128 bits of its SHA-256, with its expiry.
 * Bounded: the most recent fingerprints are kept in two generations of at most maxEntries / 2
 * each; when the newer one is full it becomes the older and the older one is dropped, so between
 * maxEntries / 2 and maxEntries of the latest are remembered (expired ones go by then anyway).
 */
export class MemoryDedup implements DedupStore {
  readonly #generation: number;
  #newer: FingerprintTable;
  #older: FingerprintTable | undefined;
  readonly #key = new Uint32Array(4);

  constructor(maxEntries = 1_000_000) {
    this.#generation = Math.max(1, Math.floor(maxEntries / 2));
    this.#newer = new FingerprintTable(this.#generation);
  }

  async seen(fingerprint: string): Promise<boolean> {
    const k = this.#keyOf(fingerprint);
    const now = Date.now();
    return this.#newer.get(k) > now || (this.#older?.get(k) ?? 0) > now;
  }

  async remember(fingerprint: string, windowMs: number): Promise<void> {
    const k = this.#keyOf(fingerprint);
    const until = Math.max(1, Date.now() + windowMs);
    if (this.#newer.get(k) === 0 && this.#newer.size >= this.#generation) {
      this.#older = this.#newer;
      this.#newer = new FingerprintTable(this.#generation);
    }
    this.#newer.set(k, until);
  }

  async close(): Promise<void> {
    this.#newer = new FingerprintTable(this.#generation);
    this.#older = undefined;
  }

  /**
   * The fingerprint's 128-bit key, in a buffer reused by the next call: the first 128 bits of a
   * base64url SHA-256 digest (what the acceptor's fingerprints are) as they are, of any other
   * string its SHA-256's. Either way the bits are uniformly spread, as the table needs.
   */
  #keyOf(fingerprint: string): Uint32Array {
    const k = this.#key;
    if (fingerprint.length === 43 && decodeBase64url128(fingerprint, k)) return k;
    const digest = hash('sha256', fingerprint, 'buffer');
    for (let i = 0; i < 4; i++) k[i] = digest.readUInt32LE(4 * i);
    return k;
  }
}

/** 6-bit values of the base64url alphabet by char code (-1: not in it). */
const BASE64URL = new Int8Array(128).fill(-1);
for (const [i, c] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'].entries()) BASE64URL[c.charCodeAt(0)] = i;

/**
 * The first 16 bytes that base64url `text` encodes, as 4 words (by hand: Buffer.from would allocate
 * on every request); false when one of its first 22 chars is not base64url.
 */
function decodeBase64url128(text: string, out: Uint32Array): boolean {
  let word = 0;
  let bytes = 0;
  // Four chars hold three bytes; the sixth group's first two chars hold the 16th byte.
  for (let i = 0; i < 24 && bytes < 16; i += 4) {
    let group = 0;
    for (let j = 0; j < 4; j++) {
      const c = i + j < 22 ? text.charCodeAt(i + j) : 65; // 'A' (0) pads the last group
      const v = c < 128 ? BASE64URL[c]! : -1;
      if (v < 0) return false;
      group = (group << 6) | v;
    }
    for (let b = 16; b >= 0 && bytes < 16; b -= 8) {
      word = (word << 8) | ((group >>> b) & 0xff);
      if (++bytes % 4 === 0) out[bytes / 4 - 1] = word >>> 0;
    }
  }
  return true;
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
