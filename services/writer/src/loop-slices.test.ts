import { describe, expect, it } from 'vitest';
import { LoopSlices } from './loop-slices.ts';

/** Busy-waits `ms` on the event loop (a stand-in for a segment's synchronous read and check). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

describe('LoopSlices', () => {
  it('lets a timer run during a loop of settled awaits, which alone never would', async () => {
    const loop = async (slices?: LoopSlices) => {
      let fired = false;
      const timer = setTimeout(() => (fired = true), 0);
      const seen: boolean[] = [];
      for (let i = 0; i < 20; i++) {
        if (slices) await slices.pause();
        await Promise.resolve();
        busy(1);
        seen.push(fired);
      }
      clearTimeout(timer);
      return seen;
    };
    // Without pauses the timer waits for the whole loop.
    expect((await loop()).some(Boolean)).toBe(false);
    // With 4 ms slices it runs after the first slice: well before the loop's end.
    const seen = await loop(new LoopSlices(4));
    expect(seen.indexOf(true)).toBeGreaterThan(0);
    expect(seen.indexOf(true)).toBeLessThan(10);
  });

  it('does not yield within a slice', async () => {
    const slices = new LoopSlices(1_000);
    let fired = false;
    const timer = setTimeout(() => (fired = true), 0);
    for (let i = 0; i < 5; i++) await slices.pause();
    clearTimeout(timer);
    expect(fired).toBe(false);
  });
});
