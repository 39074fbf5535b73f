import { randomBytes } from 'node:crypto';
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

  it('refuses a key beyond its capacity, keeping what it holds', () => {
    const t = new FingerprintTable(3, 2);
    const keys = Array.from({ length: 4 }, key);
    expect(keys.slice(0, 3).map((k) => t.set(k, 5))).toEqual([true, true, true]);
    // Four slots' worth are allowed (half of the eight); the fifth key is refused.
    expect(t.set(keys[3]!, 5)).toBe(true);
    expect(t.set(key(), 5)).toBe(false);
    for (const k of keys) expect(t.get(k)).toBe(5);
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
  it('keeps between half and all of maxEntries of the latest fingerprints', async () => {
    const d = new MemoryDedup(1000);
    const fps = Array.from({ length: 2600 }, (_, i) => `fp-${i}`);
    for (const fp of fps) await d.remember(fp, 60_000);
    const seen = await Promise.all(fps.map((fp) => d.seen(fp)));
    const kept = seen.filter(Boolean).length;
    expect(kept).toBeGreaterThanOrEqual(500);
    expect(kept).toBeLessThanOrEqual(1000);
    // The latest are the ones kept.
    expect(seen.slice(fps.length - kept).every(Boolean)).toBe(true);
    expect(seen.slice(0, fps.length - kept).some(Boolean)).toBe(false);
  });

  it('a fingerprint remembered again gets the new window', async () => {
    const d = new MemoryDedup();
    await d.remember('x', -1);
    expect(await d.seen('x')).toBe(false);
    await d.remember('x', 60_000);
    expect(await d.seen('x')).toBe(true);
  });

  it('close() forgets everything', async () => {
    const d = new MemoryDedup();
    await d.remember('x', 60_000);
    await d.close();
    expect(await d.seen('x')).toBe(false);
  });
});

describe('MemoryDedup keys', () => {
  it('base64url SHA-256 fingerprints and other strings are told apart and found again', async () => {
    const d = new MemoryDedup();
    const digests = Array.from({ length: 2000 }, () => randomBytes(32).toString('base64url'));
    // Differs from its digest only in the top bit of the 22nd char: the key's last bit (bit 127).
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const near = digests.map((fp) => fp.slice(0, 21) + ALPHABET[ALPHABET.indexOf(fp[21]!) ^ 32] + fp.slice(22));
    for (const fp of digests) await d.remember(fp, 60_000);
    for (const fp of ['short', 'x'.repeat(43), '!'.repeat(43)]) await d.remember(fp, 60_000);
    expect((await Promise.all(digests.map((fp) => d.seen(fp)))).every(Boolean)).toBe(true);
    expect((await Promise.all(near.map((fp) => d.seen(fp)))).filter(Boolean).length).toBe(0);
    expect(await Promise.all(['short', 'x'.repeat(43), '!'.repeat(43), 'y'.repeat(43), 'shorT'].map((fp) => d.seen(fp)))).toEqual([true, true, true, false, false]);
  });
});
