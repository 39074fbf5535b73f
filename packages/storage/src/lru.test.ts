import { describe, expect, it } from 'vitest';
import { hashBytes, hashText, viewOf } from './byte-ranges.ts';
import { BytesLru, Lru } from './lru.ts';

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

  it('tells onEvict of every value that leaves (evicted, replaced, cleared), and a mark set on a value found without the key keeps it', () => {
    const gone: number[] = [];
    const lru = new Lru<string, number>(2, () => 1, (v) => gone.push(v));
    const one = lru.set('a', 1);
    lru.set('b', 2);
    expect(lru.set('huge', 9)).toBeDefined();
    expect(gone).toEqual([1]); // a was not read: it went
    lru.set('b', 20); // replaced under its key
    expect(gone).toEqual([1, 2]);
    expect(one).toBeDefined();
    // A holder marks its value as read through set's mark: older unread ones go first.
    const c = lru.set('c', 3)!;
    c.used = true;
    lru.set('d', 4);
    expect(gone).toEqual([1, 2, 9, 20]);
    expect(keys(lru, ['b', 'c', 'd'])).toEqual(['c', 'd']);
    lru.clear();
    expect(gone.slice(4).sort()).toEqual([3, 4]);
    expect(new Lru<string, number[]>(1, (v) => v.length).set('x', [1, 2])).toBeUndefined();
  });
});

describe('BytesLru', () => {
  const buf = (text: string) => Buffer.from(text);

  it('finds a value by its prefix and the bytes of a range, wherever the range sits', () => {
    const cache = new BytesLru<string>(1024);
    const a = buf('..job=api,instance=a..');
    cache.set('counter|', a, viewOf(a), 2, 20, 'A');
    const b = buf('xxxxjob=api,instance=a');
    expect(cache.get('counter|', b, viewOf(b), 4, 22)?.value).toBe('A');
    expect(cache.get('gauge|', b, viewOf(b), 4, 22)?.value).toBeUndefined(); // another prefix
    expect(cache.get('counter|', b, viewOf(b), 4, 21)?.value).toBeUndefined(); // a shorter range
    const c = buf('job=api,instance=b');
    expect(cache.get('counter|', c, viewOf(c), 0, c.length)?.value).toBeUndefined();
    // The cache kept a copy: changing the buffer it was set from changes nothing.
    a.fill(0);
    expect(cache.get('counter|', b, viewOf(b), 4, 22)?.value).toBe('A');
  });

  it('never answers a key with the value of another key of the same hash', () => {
    // Two 8-byte keys whose hashes (with the prefix) collide, found by search (a 4-byte key
    // cannot collide: each step of the hash is a bijection of one word).
    const keyOf = (i: number) => {
      const b = Buffer.alloc(8);
      b.writeUInt32BE(i);
      b.writeInt32BE(Math.imul(i, 0x9e3779b1), 4);
      return b;
    };
    const seen = new Map<number, number>();
    let pair: [number, number] | undefined;
    for (let i = 0; !pair; i++) {
      const key = keyOf(i);
      const h = hashBytes(key, viewOf(key), 0, 8, hashText('p'));
      const j = seen.get(h);
      if (j !== undefined) pair = [j, i];
      else seen.set(h, i);
    }
    const [x, y] = pair.map(keyOf);
    const cache = new BytesLru<string>(1024);
    cache.set('p', x!, viewOf(x!), 0, 8, 'x');
    expect(cache.get('p', y!, viewOf(y!), 0, 8)?.value).toBeUndefined();
    cache.set('p', y!, viewOf(y!), 0, 8, 'y');
    expect(cache.get('p', y!, viewOf(y!), 0, 8)?.value).toBe('y');
    expect(cache.get('p', x!, viewOf(x!), 0, 8)?.value).toBeUndefined(); // evicted by its twin, not confused with it
  });

  it('weighs key bytes, prefix and value together', () => {
    const cache = new BytesLru<string>(100, (v) => v.length);
    const k = buf('k'.repeat(40));
    cache.set('pp', k, viewOf(k), 0, 40, 'v'.repeat(50)); // 40 + 2 * 2 + 50 = 94
    expect(cache.size).toBe(1);
    const k2 = buf('j'.repeat(40));
    cache.set('pp', k2, viewOf(k2), 0, 40, 'v'.repeat(50)); // 188 in all: one of them goes
    expect(cache.size).toBe(1);
  });

  it('answers lookups made after a previous hit right, in the same order or another, and never with an entry it evicted', () => {
    const cache = new BytesLru<string>(10 * 64, () => 40);
    const keys = Array.from({ length: 8 }, (_, i) => buf(`job=api,instance=host-${i}`));
    let after;
    for (const k of keys) after = cache.set('p|', k, viewOf(k), 0, k.length, k.toString(), after);
    // The same order: each lookup after the last hit gets its own value.
    after = undefined;
    for (const k of keys) {
      const hit = cache.get('p|', k, viewOf(k), 0, k.length, after);
      expect(hit?.value).toBe(k.toString());
      after = hit;
    }
    // Another order: the link is a guess, compared before it is taken.
    const first = cache.get('p|', keys[0]!, viewOf(keys[0]!), 0, keys[0]!.length);
    expect(cache.get('p|', keys[5]!, viewOf(keys[5]!), 0, keys[5]!.length, first)?.value).toBe(keys[5]!.toString());
    // keys[0] leads to keys[1] again; then the cache fills with other keys, and keys[1] is evicted.
    const h0 = cache.get('p|', keys[0]!, viewOf(keys[0]!), 0, keys[0]!.length);
    cache.get('p|', keys[1]!, viewOf(keys[1]!), 0, keys[1]!.length, h0);
    const filler = Array.from({ length: 12 }, (_, i) => buf(`job=other,instance=${i}`));
    for (const k of filler) cache.set('p|', k, viewOf(k), 0, k.length, 'filler');
    // h0 links to keys[1], which is gone: not answered from the link.
    expect(cache.get('p|', keys[1]!, viewOf(keys[1]!), 0, keys[1]!.length, h0)).toBeUndefined();
    expect(cache.size).toBeLessThanOrEqual(16);
  });
});
