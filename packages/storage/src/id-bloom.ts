/**
 * A per-file bloom filter over the id column (trace_id), stored as a small sidecar object next
 * to each Parquet file. A trace lookup tests every candidate file's filter and opens only the
 * files that may hold the id: not opening files is what pays at our scale
 * (reference/storage.md §2: per-file open cost dominates; Parquet blooms need dictionary pages).
 *
 * Format: "FIB1" | u32 k | u32 bit count | bit array (little-endian bytes).
 * Hashing: two FNV-1a variants combined by double hashing; ids are hex strings.
 */

const MAGIC = 0x31424946; // "FIB1" little-endian

function fnv1a(s: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // final avalanche so similar ids spread over the bit array
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  return h >>> 0;
}

export class IdBloom {
  readonly k: number;
  readonly nbits: number;
  readonly bits: Uint8Array;

  private constructor(k: number, nbits: number, bits: Uint8Array) {
    this.k = k;
    this.nbits = nbits;
    this.bits = bits;
  }

  /**
   * About 0.05% false positives at 16 bits per id with 11 hashes. A lookup tests one filter per
   * file in its time range (24 for a day of hourly files); at 10 bits (1%) about one lookup in
   * six also scanned a file that didn't hold the trace (bench/trace-by-id).
   */
  static build(ids: Iterable<string>, count: number, bitsPerId = 16, k = 11): IdBloom {
    const nbits = Math.max(64, Math.ceil((Math.max(count, 1) * bitsPerId) / 8) * 8);
    const bloom = new IdBloom(k, nbits, new Uint8Array(nbits / 8));
    for (const id of ids) bloom.add(id);
    return bloom;
  }

  add(id: string): void {
    const h1 = fnv1a(id, 0);
    const h2 = fnv1a(id, 0x5bd1e995) | 1;
    for (let i = 0; i < this.k; i++) {
      const bit = (h1 + Math.imul(i, h2)) >>> 0;
      const pos = bit % this.nbits;
      this.bits[pos >>> 3]! |= 1 << (pos & 7);
    }
  }

  mayContain(id: string): boolean {
    const h1 = fnv1a(id, 0);
    const h2 = fnv1a(id, 0x5bd1e995) | 1;
    for (let i = 0; i < this.k; i++) {
      const pos = ((h1 + Math.imul(i, h2)) >>> 0) % this.nbits;
      if ((this.bits[pos >>> 3]! & (1 << (pos & 7))) === 0) return false;
    }
    return true;
  }

  encode(): Uint8Array {
    const out = new Uint8Array(12 + this.bits.length);
    const dv = new DataView(out.buffer);
    dv.setUint32(0, MAGIC, true);
    dv.setUint32(4, this.k, true);
    dv.setUint32(8, this.nbits, true);
    out.set(this.bits, 12);
    return out;
  }

  static decode(buf: Uint8Array): IdBloom {
    if (buf.length < 12) throw new Error('id bloom: truncated');
    const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    if (dv.getUint32(0, true) !== MAGIC) throw new Error('id bloom: bad magic');
    const k = dv.getUint32(4, true);
    const nbits = dv.getUint32(8, true);
    if (k < 1 || k > 32 || nbits % 8 !== 0 || buf.length !== 12 + nbits / 8) throw new Error('id bloom: bad header');
    return new IdBloom(k, nbits, buf.slice(12));
  }
}

/** Key of the sidecar for a data file key. */
export const idBloomKey = (dataFileKey: string) => `${dataFileKey}.idx`;
