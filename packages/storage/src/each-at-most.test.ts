import { describe, expect, it } from 'vitest';
import { eachAtMost } from './each-at-most.ts';

const tick = () => new Promise<void>((r) => setTimeout(r, 1));

describe('eachAtMost', () => {
  it('calls fn on every item, never more than `limit` at once', async () => {
    let running = 0;
    let most = 0;
    const seen: number[] = [];
    await eachAtMost([...Array(25).keys()], 3, async (x, i) => {
      expect(i).toBe(x);
      most = Math.max(most, ++running);
      await tick();
      seen.push(x);
      running--;
    });
    expect(most).toBe(3);
    expect(seen.sort((a, b) => a - b)).toEqual([...Array(25).keys()]);
  });

  it('rejects with the first failure and starts nothing after it', async () => {
    const started: number[] = [];
    await expect(
      eachAtMost([...Array(10).keys()], 2, async (x) => {
        started.push(x);
        await tick();
        if (x === 1) throw new Error('boom 1');
      }),
    ).rejects.toThrow('boom 1');
    expect(started).toEqual([0, 1, 2]);
  });

  it('does nothing for no items', async () => {
    await eachAtMost([], 4, () => Promise.reject(new Error('called')));
  });
});
