import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryDedup } from './dedup.ts';
import { FingerprintTable } from './fingerprint-table.ts';

const key = () => new Uint32Array(randomBytes(16).buffer);

describe('FingerprintTable', () => {
  it('finds every key it holds, with its expiry, across growth; others are absent', () => {
    const t = new FingerprintTable(50_000, 16);
    const keys = Array.from({ length: 50_000 }, key);
    expect(keys.every((k, i) => t.set(k, 1 + i))).toBe(true);
    expect(t.size).toBe(50_000);
    expect(keys.filter((k, i) => t.get(k) !== 1 + i)).toEqual([]);
    expect(Array.from({ length: 1000 }, () => t.get(key())).filter((x) => x !== 0)).toEqual([]);
  });

  it('replaces the expiry of a key it holds without taking another slot', () => {
    const t = new FingerprintTable(4);
    const k = key();
    t.set(k, 10);
    t.set(new Uint32Array(k), 20);
    expect(t.size).toBe(1);
    expect(t.get(k)).toBe(20);
  });

  it('refuses a new key beyond maxEntries, keeping what it holds and still updating them', () => {
    const t = new FingerprintTable(3, 2);
    const keys = Array.from({ length: 3 }, key);
    expect(keys.map((k) => t.set(k, 5))).toEqual([true, true, true]);
    expect(t.set(key(), 5)).toBe(false);
    expect(t.set(keys[0]!, 6)).toBe(true);
    expect(keys.map((k) => t.get(k))).toEqual([6, 5, 5]);
  });

  it('keys that share a first word (one slot) are told apart by the rest', () => {
    const t = new FingerprintTable(8);
    const a = new Uint32Array([7, 1, 2, 3]);
    const b = new Uint32Array([7, 1, 2, 4]);
    t.set(a, 1);
    expect(t.get(b)).toBe(0);
    t.set(b, 2);
    expect([t.get(a), t.get(b)]).toEqual([1, 2]);
  });
});

describe('MemoryDedup', () => {
  const fp = (text: string) => createHash('sha256').update(text).digest();

  it('keeps between half and all of maxEntries of the latest fingerprints', async () => {
    const d = new MemoryDedup(1000);
    const fps = Array.from({ length: 2600 }, (_, i) => fp(`fp-${i}`));
    for (const f of fps) await d.remember(f, 60_000);
    const seen = await Promise.all(fps.map((f) => d.seen(f)));
    const kept = seen.filter(Boolean).length;
    expect(kept).toBeGreaterThanOrEqual(500);
    expect(kept).toBeLessThanOrEqual(1000);
    // The latest are the ones kept.
    expect(seen.slice(fps.length - kept).every(Boolean)).toBe(true);
    expect(seen.slice(0, fps.length - kept).some(Boolean)).toBe(false);
  });

  it('a fingerprint remembered again gets the new window', async () => {
    const d = new MemoryDedup();
    await d.remember(fp('x'), -1);
    expect(await d.seen(fp('x'))).toBe(false);
    await d.remember(fp('x'), 60_000);
    expect(await d.seen(fp('x'))).toBe(true);
  });

  it('close() forgets everything', async () => {
    const d = new MemoryDedup();
    await d.remember(fp('x'), 60_000);
    await d.close();
    expect(await d.seen(fp('x'))).toBe(false);
  });

  it('keys on the first 128 bits of the digest, each of them; refuses a fingerprint shorter than that', async () => {
    const d = new MemoryDedup();
    const a = randomBytes(32);
    await d.remember(a, 60_000);
    for (let bit = 0; bit < 128; bit++) {
      const b = Buffer.from(a);
      b[bit >> 3] = b[bit >> 3]! ^ (1 << (bit & 7));
      expect(await d.seen(b)).toBe(false);
    }
    // Bytes past the first 16 are not part of the key.
    const tail = Buffer.from(a);
    tail[31] = tail[31]! ^ 1;
    expect(await d.seen(tail)).toBe(true);
    // A view into a larger buffer reads its own bytes.
    const framed = Buffer.concat([randomBytes(3), a]).subarray(3);
    expect(await d.seen(framed)).toBe(true);
    await expect(d.remember(randomBytes(15), 60_000)).rejects.toThrow(RangeError);
  });
});
