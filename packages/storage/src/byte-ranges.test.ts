import { describe, expect, it } from 'vitest';
import { bytesEqual, compareBytes, copyBytes, rangesEqual, viewOf } from './byte-ranges.ts';

describe('copyBytes', () => {
  it('copies every length around its word and set() thresholds, at any offsets of views into larger buffers', () => {
    const backing = new Uint8Array(512).map((_, i) => (i * 37 + 11) & 0xff);
    const src = backing.subarray(3, 300);
    const dstBacking = new Uint8Array(400);
    const dst = dstBacking.subarray(5, 390);
    const sv = viewOf(src);
    const dv = viewOf(dst);
    for (const n of [0, 1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 100]) {
      for (const s of [0, 1, 2, 3, 6]) {
        for (const q of [0, 1, 3, 4]) {
          dstBacking.fill(0xee);
          const end = copyBytes(src, sv, s, s + n, dst, dv, q);
          expect(end).toBe(q + n);
          expect([...dst.subarray(q, q + n)]).toEqual([...src.subarray(s, s + n)]);
          // Nothing outside [q, q + n) was touched.
          expect(dstBacking.subarray(0, 5 + q).every((b) => b === 0xee)).toBe(true);
          expect(dstBacking.subarray(5 + q + n).every((b) => b === 0xee)).toBe(true);
        }
      }
    }
  });

  it('rangesEqual tells a key from a range of another buffer that differs in any byte or in length, at any offsets', () => {
    const key = new Uint8Array(40).subarray(1, 38).map((_, i) => (i * 91 + 7) & 0xff);
    const backing = new Uint8Array(100);
    const b = backing.subarray(2);
    for (const s of [0, 1, 2, 3, 5]) {
      backing.fill(0);
      b.set(key, s);
      expect(rangesEqual(key, viewOf(key), b, viewOf(b), s, s + key.length)).toBe(true);
      expect(rangesEqual(key, viewOf(key), b, viewOf(b), s, s + key.length - 1)).toBe(false);
      expect(rangesEqual(key, viewOf(key), b, viewOf(b), s, s + key.length + 1)).toBe(false);
      for (const i of [0, 3, 4, 35, 36]) {
        b[s + i]! ^= 0x80;
        expect(rangesEqual(key, viewOf(key), b, viewOf(b), s, s + key.length)).toBe(false);
        b[s + i]! ^= 0x80;
      }
    }
  });

  it('bytesEqual and compareBytes agree with a byte-by-byte comparison (unsigned, shorter prefix first)', () => {
    // Deterministic pseudo-random strings over bytes that matter for signedness and words.
    let seed = 12345;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    const alphabet = [0x00, 0x01, 0x61, 0x7f, 0x80, 0xff];
    const b = new Uint8Array(4096);
    const bv = viewOf(b);
    const reference = (as: number, ae: number, bs: number, be: number) => {
      for (let i = 0; i < Math.min(ae - as, be - bs); i++) if (b[as + i] !== b[bs + i]) return b[as + i]! - b[bs + i]!;
      return ae - as - (be - bs);
    };
    for (let t = 0; t < 20_000; t++) {
      const la = next() % 13;
      const lb = next() % 13;
      const as = next() % 1000;
      const bs = 2000 + (next() % 1000);
      for (let i = 0; i < la; i++) b[as + i] = alphabet[next() % alphabet.length]!;
      // Mostly a shared prefix, so differences fall at every position of a word.
      for (let i = 0; i < lb; i++) b[bs + i] = i < la && next() % 10 < 8 ? b[as + i]! : alphabet[next() % alphabet.length]!;
      const want = Math.sign(reference(as, as + la, bs, bs + lb));
      expect(Math.sign(compareBytes(b, bv, as, as + la, bs, bs + lb))).toBe(want);
      expect(bytesEqual(b, bv, as, as + la, bs, bs + lb)).toBe(want === 0);
    }
  });
});
