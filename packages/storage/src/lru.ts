import { hashBytes, hashText, rangesEqual, viewOf } from './byte-ranges.ts';

// A small cache map bounded by total weight (entry count by default), for caches of immutable
// objects, evicting in least-recently-used order approximately: CLOCK ("second chance"). A hit
// only marks its entry; eviction walks from the oldest insertion, moving marked entries to the
// young end (unmarked) and dropping the first unmarked ones. A strict LRU re-inserted every hit
// into the Map, and on a hot path (remote write looks up every series of every request) that
// churn of deletes and inserts cost more than the lookup itself.

interface Entry<V> {
  value: V;
  weight: number;
  used: boolean;
}

export class Lru<K, V> {
  readonly #map = new Map<K, Entry<V>>();
  readonly #maxWeight: number;
  readonly #weigh: (value: V) => number;
  readonly #onEvict: ((value: V) => void) | undefined;
  #weight = 0;

  /** `onEvict`: told of each value that leaves the cache (evicted, or replaced under its key). */
  constructor(maxWeight: number, weigh: (value: V) => number = () => 1, onEvict?: (value: V) => void) {
    this.#maxWeight = maxWeight;
    this.#weigh = weigh;
    this.#onEvict = onEvict;
  }

  get size(): number {
    return this.#map.size;
  }

  /** The entries' total weight. */
  get weight(): number {
    return this.#weight;
  }

  /** The most total weight it keeps. */
  get maxWeight(): number {
    return this.#maxWeight;
  }

  get(key: K): V | undefined {
    const hit = this.#map.get(key);
    if (!hit) return undefined;
    hit.used = true;
    return hit.value;
  }

  /** Returns the entry's mark (see get), for a holder of the value that finds it without the key; undefined when not kept. */
  set(key: K, value: V): LruMark | undefined {
    const old = this.#map.get(key);
    if (old) {
      this.#weight -= old.weight;
      this.#map.delete(key);
      this.#onEvict?.(old.value);
    }
    const weight = this.#weigh(value);
    if (weight > this.#maxWeight) return undefined; // never cache something bigger than the whole cache
    const entry = { value, weight, used: false };
    this.#map.set(key, entry);
    this.#weight += weight;
    // A marked entry, and the one just set, is moved to the young end instead of dropped; the
    // others go first. Marks are cleared as they are moved, and the new entry alone never
    // exceeds the bound, so the walk ends.
    for (const [k, e] of this.#map) {
      if (this.#weight <= this.#maxWeight) break;
      this.#map.delete(k);
      if (e.used || k === key) {
        e.used = false;
        this.#map.set(k, e);
        continue;
      }
      this.#weight -= e.weight;
      this.#onEvict?.(e.value);
    }
    return this.#map.get(key) === entry ? entry : undefined;
  }

  clear(): void {
    if (this.#onEvict) for (const e of this.#map.values()) this.#onEvict(e.value);
    this.#map.clear();
    this.#weight = 0;
  }
}

/** What get() sets on a hit: a holder of a value found another way sets it too (BytesLru). */
export interface LruMark {
  used: boolean;
}

/** A cached value as BytesLru.get finds it: the `after` of the next lookup. */
export interface BytesHit<V> {
  readonly value: V;
}

interface BytesEntry<V> extends BytesHit<V> {
  prefix: string;
  key: Buffer;
  keyView: DataView;
  /** The entry looked up right after this one last time (see get). */
  next: BytesEntry<V> | undefined;
  /** Its mark in the Lru while it is cached; undefined once evicted. */
  mark: LruMark | undefined;
}

/**
 * An Lru keyed by a short text and a byte range of a larger buffer (a series' labels as they sit
 * in a request), without making a key string per lookup: that string's allocation, copy and hash
 * cost more than the rest of a cache hit. A 32-bit hash of both parts finds the entry and a
 * comparison confirms it; two keys of the same hash evict each other, so a collision costs
 * misses, never a wrong value. Weighs each entry's key bytes and text with its value.
 *
 * Keys that come in the same order again (a remote-write shard sends its series in the same order
 * in every request) are found without hashing: a lookup given the previous one's hit (`after`)
 * first compares the key with the entry that followed that hit last time, and takes it if it is
 * the same and still cached. An evicted entry forgets what followed it, so those links keep at
 * most one evicted entry alive per cached one.
 */
export class BytesLru<V> {
  readonly #lru: Lru<number, BytesEntry<V>>;

  constructor(maxWeight: number, weigh: (value: V) => number = () => 0) {
    this.#lru = new Lru(
      maxWeight,
      (e) => e.key.length + 2 * e.prefix.length + weigh(e.value),
      (e) => {
        e.next = undefined;
        e.mark = undefined;
      },
    );
  }

  get size(): number {
    return this.#lru.size;
  }

  /** `view` is a DataView of exactly `data` (viewOf), made once per buffer by the caller; `after`, the hit of the lookup before (see above). */
  get(prefix: string, data: Buffer, view: DataView, from: number, to: number, after?: BytesHit<V>): BytesHit<V> | undefined {
    const guess = (after as BytesEntry<V> | undefined)?.next;
    // Compared here, word by word: Buffer#compare's native call cost more than the comparison.
    const mark = guess?.mark;
    if (mark !== undefined && guess!.prefix === prefix && rangesEqual(guess!.key, guess!.keyView, data, view, from, to)) {
      mark.used = true;
      return guess;
    }
    const e = this.#lru.get(hashBytes(data, view, from, to, hashText(prefix)));
    if (e === undefined || e.prefix !== prefix || !rangesEqual(e.key, e.keyView, data, view, from, to)) return undefined;
    if (after !== undefined) (after as BytesEntry<V>).next = e;
    return e;
  }

  set(prefix: string, data: Buffer, view: DataView, from: number, to: number, value: V, after?: BytesHit<V>): BytesHit<V> {
    const key = Buffer.from(data.subarray(from, to));
    const e: BytesEntry<V> = { prefix, key, keyView: viewOf(key), value, next: undefined, mark: undefined };
    e.mark = this.#lru.set(hashBytes(data, view, from, to, hashText(prefix)), e);
    if (after !== undefined) (after as BytesEntry<V>).next = e;
    return e;
  }

  clear(): void {
    this.#lru.clear();
  }
}
