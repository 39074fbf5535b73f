import { describe, expect, it } from 'vitest';
import { Lru } from './lru.ts';

const keys = (lru: Lru<string, number>, all: string[]) => all.filter((k) => lru.get(k) !== undefined);

describe('Lru (CLOCK)', () => {
  it('evicts the oldest entry not read since it was last passed over', () => {
    const lru = new Lru<string, number>(3);
    lru.set('a', 1);
    lru.set('b', 2);
    lru.set('c', 3);
    expect(lru.get('a')).toBe(1);
    lru.set('d', 4); // a was read: b goes
    expect(keys(lru, ['a', 'b', 'c', 'd'])).toEqual(['a', 'c', 'd']);
    const probe = new Lru<string, number>(3);
    for (const k of ['a', 'b', 'c']) probe.set(k, 0);
    probe.get('a');
    probe.set('d', 0);
    probe.set('e', 0); // a lost its mark when it was passed over; c is the oldest now
    expect(keys(probe, ['a', 'b', 'c', 'd', 'e'])).toEqual(['a', 'd', 'e']);
  });

  it('keeps the entry just set when every other one was read', () => {
    const lru = new Lru<string, number>(2);
    lru.set('x', 1);
    lru.set('y', 2);
    lru.get('x');
    lru.get('y');
    lru.set('z', 3);
    expect(lru.get('z')).toBe(3);
    expect(lru.size).toBe(2);
  });

  it('bounds by weight, and never keeps what outweighs the whole cache', () => {
    const lru = new Lru<string, number[]>(5, (v) => v.length);
    lru.set('a', [1, 2]);
    lru.set('b', [1, 2, 3]);
    lru.set('c', [1]); // 6 > 5: a goes
    expect(lru.get('a')).toBeUndefined();
    expect(lru.get('b')).toEqual([1, 2, 3]);
    lru.set('huge', [1, 2, 3, 4, 5, 6]);
    expect(lru.get('huge')).toBeUndefined();
    expect(lru.size).toBe(2);
  });
});
