/**
 * Byte ranges of values a few bytes to a few dozen long (strings in column batches and Parquet
 * pages), copied, compared and tested for equality 4 bytes at a time through DataViews
 * (unaligned reads are fine). For such lengths that beats a byte loop, and making a subarray for
 * set() or Buffer.compare costs more than either. `sv`, `dv` and `bv` are DataViews of exactly the
 * arrays they go with (viewOf), so offsets in them are the arrays' indices.
 */

/** A DataView of exactly the bytes of `b`. */
export const viewOf = (b: Uint8Array): DataView => new DataView(b.buffer, b.byteOffset, b.byteLength);

/** Copies src[s, e) to dst at q; returns the position after it. */
export function copyBytes(src: Uint8Array, sv: DataView, s: number, e: number, dst: Uint8Array, dv: DataView, q: number): number {
  if (e - s > 64) {
    dst.set(src.subarray(s, e), q);
    return q + e - s;
  }
  for (; s + 4 <= e; s += 4, q += 4) dv.setUint32(q, sv.getUint32(s));
  for (; s < e; s++) dst[q++] = src[s]!;
  return q;
}

/** Whether b[s1, e1) and b[s2, e2) hold the same bytes. */
export function bytesEqual(b: Uint8Array, bv: DataView, s1: number, e1: number, s2: number, e2: number): boolean {
  const n = e1 - s1;
  if (n !== e2 - s2) return false;
  let i = 0;
  for (; i + 4 <= n; i += 4) if (bv.getUint32(s1 + i) !== bv.getUint32(s2 + i)) return false;
  for (; i < n; i++) if (b[s1 + i] !== b[s2 + i]) return false;
  return true;
}

/** Whether all of `a` (av: its view) equals b[s, e) (bv: b's view). */
export function rangesEqual(a: Uint8Array, av: DataView, b: Uint8Array, bv: DataView, s: number, e: number): boolean {
  const n = e - s;
  if (n !== a.length) return false;
  let i = 0;
  for (; i + 4 <= n; i += 4) if (av.getUint32(i) !== bv.getUint32(s + i)) return false;
  for (; i < n; i++) if (a[i] !== b[s + i]) return false;
  return true;
}

/** Whether b[start, start + n) holds exactly the bytes of `key` (a value compared with a key kept apart). */
export function bytesAre(b: Uint8Array, start: number, n: number, key: Uint8Array): boolean {
  if (key.length !== n) return false;
  for (let i = 0; i < n; i++) if (b[start + i] !== key[i]) return false;
  return true;
}

/** FNV-1a's offset basis: the seed of a hash not continuing another. */
export const HASH_SEED = 0x811c9dc5;

/**
 * A 32-bit hash of b[s, e): FNV-1a over 4-byte words, then a final mix (a product's low bits see
 * only its factors' low bits, and hash tables take slots from the low bits). `seed` continues a
 * hash (hashText), for keys of several parts.
 */
export function hashBytes(b: Uint8Array, bv: DataView, s: number, e: number, seed: number = HASH_SEED): number {
  let h = seed;
  let i = s;
  for (; i + 4 <= e; i += 4) h = Math.imul(h ^ bv.getUint32(i), 0x01000193);
  for (; i < e; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  return (h ^ (h >>> 13)) >>> 0;
}

/** FNV-1a over a string's UTF-16 code units, unmixed: the seed of a hashBytes that follows it. */
export function hashText(text: string, seed: number = HASH_SEED): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h;
}

/** Unsigned byte-order comparison of b[as, ae) and b[bs, be): negative, 0 or positive. */
export function compareBytes(b: Uint8Array, bv: DataView, as: number, ae: number, bs: number, be: number): number {
  const n = Math.min(ae - as, be - bs);
  let i = 0;
  // Big-endian words compare as their bytes do.
  for (; i + 4 <= n; i += 4) {
    const x = bv.getUint32(as + i);
    const y = bv.getUint32(bs + i);
    if (x !== y) return x < y ? -1 : 1;
  }
  for (; i < n; i++) {
    const d = b[as + i]! - b[bs + i]!;
    if (d !== 0) return d;
  }
  return ae - as - (be - bs);
}
