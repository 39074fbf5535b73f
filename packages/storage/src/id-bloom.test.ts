import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { IdBloom } from './id-bloom.ts';

describe('IdBloom', () => {
  it('never misses a present id and rarely matches an absent one', () => {
    const ids = Array.from({ length: 20_000 }, () => randomBytes(16).toString('hex'));
    const bloom = IdBloom.decode(IdBloom.build(ids, ids.length).encode());
    expect(ids.every((id) => bloom.mayContain(id))).toBe(true);
    const absent = Array.from({ length: 20_000 }, () => randomBytes(16).toString('hex'));
    const fp = absent.filter((id) => bloom.mayContain(id)).length / absent.length;
    expect(fp).toBeLessThan(0.03);
  });

  it('rejects corrupt input', () => {
    expect(() => IdBloom.decode(new Uint8Array(5))).toThrow(/truncated/);
    expect(() => IdBloom.decode(new Uint8Array(20))).toThrow(/bad magic/);
  });
});
