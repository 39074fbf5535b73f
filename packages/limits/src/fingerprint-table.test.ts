import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
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
