/**
 * A set of 128-bit keys, each with an expiry time, in typed arrays: open addressing with linear
 * probing, at most half full, grown by doubling up to a fixed capacity. Nothing is ever removed
 * (MemoryDedup drops a whole table at once), so probing needs no tombstones. Keys are taken to be
 * uniformly random (a cryptographic digest's bytes): their first word picks the slot.
 *
 * Why not a Map of strings: a million remembered request fingerprints held as base64url strings
 * in a Map are about 110 MB of objects on the JavaScript heap that every full garbage collection
 * marks (a full collection took 94 ms with them against 14 ms with this table, on this project's
 * machine); here a key and its expiry are 24 bytes per slot, outside the heap. The Map's
 * oldest-first eviction also slowed a lookup and insert to 11–19 µs once full (deleted entries
 * at its front are walked past), against about 2 µs here.
 */
export class FingerprintTable {
  /** Key words of slot i at [4i, 4i + 4). */
  #keys: Uint32Array;
  /** Expiry of slot i in ms since the epoch; 0: the slot is empty. */
  #until: Float64Array;
  #size = 0;
  readonly #maxEntries: number;

  /** Holds up to `maxEntries` keys (its slots grow to twice that, rounded up to a power of two). */
  constructor(maxEntries: number, initialSlots = 1024) {
    this.#maxEntries = maxEntries;
    const slots = Math.min(slotsFor(maxEntries), slotsFor(initialSlots / 2));
    this.#keys = new Uint32Array(4 * slots);
    this.#until = new Float64Array(slots);
  }

  get size(): number {
    return this.#size;
  }

  /** The expiry stored for the key (4 words at `k[0..3]`), or 0 when it is not there. */
  get(k: Uint32Array): number {
    return this.#until[this.#slotOf(k)]!;
  }

  /** Stores the key with expiry `until` (> 0), replacing the expiry it had. False when it is new and the table holds maxEntries keys. */
  set(k: Uint32Array, until: number): boolean {
    let slot = this.#slotOf(k);
    if (this.#until[slot] === 0) {
      if (this.#size === this.#maxEntries) return false;
      if (2 * (this.#size + 1) > this.#until.length) {
        this.#grow();
        slot = this.#slotOf(k);
      }
      this.#keys.set(k, 4 * slot);
      this.#size++;
    }
    this.#until[slot] = until;
    return true;
  }

  /** The slot holding the key, or else the empty slot where its probe ends (where set() puts it). */
  #slotOf(k: Uint32Array): number {
    const keys = this.#keys;
    const until = this.#until;
    const mask = until.length - 1;
    let slot = k[0]! & mask;
    for (; until[slot] !== 0; slot = (slot + 1) & mask) {
      const at = 4 * slot;
      if (keys[at] === k[0] && keys[at + 1] === k[1] && keys[at + 2] === k[2] && keys[at + 3] === k[3]) break;
    }
    return slot;
  }

  /** The first empty slot from the one `word` picks (grow(): the keys it moves are distinct). */
  #free(word: number): number {
    const until = this.#until;
    const mask = until.length - 1;
    let slot = word & mask;
    while (until[slot] !== 0) slot = (slot + 1) & mask;
    return slot;
  }

  #grow(): void {
    const keys = this.#keys;
    const until = this.#until;
    this.#keys = new Uint32Array(2 * keys.length);
    this.#until = new Float64Array(2 * until.length);
    for (let s = 0; s < until.length; s++) {
      if (until[s] === 0) continue;
      const slot = this.#free(keys[4 * s]!);
      this.#keys.set(keys.subarray(4 * s, 4 * s + 4), 4 * slot);
      this.#until[slot] = until[s]!;
    }
  }
}

/** Slots for `entries` keys at most half full: a power of two, at least 2. */
const slotsFor = (entries: number): number => 2 ** Math.max(1, Math.ceil(Math.log2(Math.max(1, 2 * entries))));
