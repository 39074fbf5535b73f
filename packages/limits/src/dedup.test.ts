import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryDedup } from './dedup.ts';

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
