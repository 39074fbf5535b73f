/**
 * Prometheus's XOR chunk encoding (the `XOR` chunks of its TSDB, after Facebook's Gorilla): what
 * remote read's STREAMED_XOR_CHUNKS answers carry. Written by hand: the format is Prometheus's
 * own (Go) and no JavaScript library writes it.
 *
 * A chunk is a 2-byte big-endian sample count, then a bit stream (most significant bit first):
 * the first sample's time as a zigzag varint and its value's 64 bits; the second's time delta as
 * a varint and its value XOR-ed with the first; every later time as the delta of its delta in a
 * prefix-coded width (0, 14, 17, 20 or 64 bits) and its value XOR-ed with the one before, the
 * XOR's meaningful bits written in the previous sample's window when they fit in it, else with
 * a new window (5 bits of leading zeros, 6 of length).
 *
 * Values are handled as their two 32-bit halves, so NaN payloads (the staleness marker) keep
 * their exact bits.
 */

/** Samples per chunk, as Prometheus's head cuts them. */
export const SAMPLES_PER_CHUNK = 120;

class BitWriter {
  bytes = new Uint8Array(256);
  /** Bits written. */
  n = 0;

  #room(bits: number): void {
    const need = (this.n + bits + 7) >> 3;
    if (need <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(need, this.bytes.length * 2));
    grown.set(this.bytes);
    this.bytes = grown;
  }

  bit(b: number): void {
    this.#room(1);
    if (b) this.bytes[this.n >> 3]! |= 0x80 >> (this.n & 7);
    this.n++;
  }

  /** The low `count` (≤ 32) bits of `v`, most significant first. */
  bits32(v: number, count: number): void {
    this.#room(count);
    for (let i = count - 1; i >= 0; i--) this.bit((v >>> i) & 1);
  }

  /** The low `count` (≤ 64) bits of the 64-bit value hi:lo. */
  bits64(hi: number, lo: number, count: number): void {
    if (count > 32) {
      this.bits32(hi, count - 32);
      this.bits32(lo, 32);
    } else this.bits32(lo, count);
  }

  /** A byte-aligned varint, as the first two samples write theirs (only ever at a byte boundary there). */
  uvarint(v: bigint): void {
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) byte |= 0x80;
      this.bits32(byte, 8);
    } while (v > 0n);
  }

  finish(): Uint8Array {
    return this.bytes.slice(0, (this.n + 7) >> 3);
  }
}

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LO = LITTLE_ENDIAN ? 0 : 1;
const HI = LITTLE_ENDIAN ? 1 : 0;

/** Prometheus's staleness marker, 0x7ff0000000000002, as its halves. */
const STALE_HI = 0x7ff00000;
const STALE_LO = 0x00000002;

/** Leading zero bits of hi:lo (64 for zero). */
const clz64 = (hi: number, lo: number) => (hi !== 0 ? Math.clz32(hi) : 32 + Math.clz32(lo));
/** Trailing zero bits of hi:lo (64 for zero). */
function ctz64(hi: number, lo: number): number {
  if (lo !== 0) return 31 - Math.clz32(lo & -lo);
  if (hi !== 0) return 32 + 31 - Math.clz32(hi & -hi);
  return 64;
}
/** hi:lo shifted right by s (0 ≤ s < 64), as halves. */
function shr64(hi: number, lo: number, s: number): [number, number] {
  if (s === 0) return [hi, lo];
  if (s >= 32) return [0, hi >>> (s - 32)];
  return [hi >>> s, ((lo >>> s) | (hi << (32 - s))) >>> 0];
}

/** One chunk of samples (times in ms ascending; `stale[k]` marks a staleness marker). */
export function encodeXorChunk(t: ArrayLike<number>, v: ArrayLike<number>, stale: ArrayLike<boolean | number> | undefined, from: number, to: number): Uint8Array {
  const count = to - from;
  if (count <= 0 || count > 0xffff) throw new RangeError(`an XOR chunk holds 1 to 65535 samples, not ${count}`);
  const w = new BitWriter();
  w.bits32(count, 16);
  let prevT = 0;
  let prevDelta = 0;
  let prevHi = 0;
  let prevLo = 0;
  let leading = 0xff;
  let trailing = 0;
  for (let k = from; k < to; k++) {
    const tk = t[k]!;
    let hi: number;
    let lo: number;
    if (stale?.[k]) {
      hi = STALE_HI;
      lo = STALE_LO;
    } else {
      f64[0] = v[k]!;
      hi = u32[HI]!;
      lo = u32[LO]!;
    }
    const i = k - from;
    if (i === 0) {
      // zigzag, as Go's binary.PutVarint
      const z = BigInt(tk);
      w.uvarint(z >= 0n ? z << 1n : ((-z) << 1n) - 1n);
      w.bits32(hi, 32);
      w.bits32(lo, 32);
    } else {
      const delta = tk - prevT;
      if (i === 1) w.uvarint(BigInt(delta));
      else writeDeltaOfDelta(w, delta - prevDelta);
      // The value: its XOR with the previous one.
      const xhi = (hi ^ prevHi) >>> 0;
      const xlo = (lo ^ prevLo) >>> 0;
      if (xhi === 0 && xlo === 0) w.bit(0);
      else {
        w.bit(1);
        let lead = clz64(xhi, xlo);
        const trail = ctz64(xhi, xlo);
        // Five bits hold the leading count.
        if (lead >= 32) lead = 31;
        if (leading !== 0xff && lead >= leading && trail >= trailing) {
          w.bit(0);
          const [shi, slo] = shr64(xhi, xlo, trailing);
          w.bits64(shi, slo, 64 - leading - trailing);
        } else {
          leading = lead;
          trailing = trail;
          w.bit(1);
          w.bits32(lead, 5);
          const sig = 64 - lead - trail;
          // 64 significant bits do not fit in six: written as 0 (never otherwise used: no bits is the XOR-0 case).
          w.bits32(sig === 64 ? 0 : sig, 6);
          const [shi, slo] = shr64(xhi, xlo, trail);
          w.bits64(shi, slo, sig);
        }
      }
      prevDelta = delta;
    }
    prevT = tk;
    prevHi = hi;
    prevLo = lo;
  }
  return w.finish();
}

/** Whether x fits the signed range Prometheus gives `bits` bits: [-(2^(bits-1) - 1), 2^(bits-1)]. */
const fits = (x: number, bits: number) => -(2 ** (bits - 1) - 1) <= x && x <= 2 ** (bits - 1);

function writeDeltaOfDelta(w: BitWriter, dod: number): void {
  if (dod === 0) {
    w.bit(0);
    return;
  }
  for (const [prefix, prefixBits, bits] of [
    [0b10, 2, 14],
    [0b110, 3, 17],
    [0b1110, 4, 20],
  ] as const) {
    if (fits(dod, bits)) {
      w.bits32(prefix, prefixBits);
      // Two's complement in `bits` bits; a reader takes values above 2^(bits-1) as negative.
      w.bits32(dod & (2 ** bits - 1), bits);
      return;
    }
  }
  w.bits32(0b1111, 4);
  const big = BigInt.asUintN(64, BigInt(dod));
  w.bits64(Number(big >> 32n), Number(big & 0xffffffffn), 64);
}
