import { describe, expect, it } from 'vitest';
import { flamegraphLevels, truncateStacks } from './flamegraph.ts';
import { buildTimeline, diffFlamebearer, singleFlamebearer, timelineStepNs } from './flamebearer.ts';
import { parseProfileTypeRef } from './profile-type.ts';

/**
 * Flamebearer construction against hand-computed levels. The call tree of STACKS (frames leaf
 * first, as stored):
 *
 *   total 11 ─┬─ a 10 ─┬─ b 5 (self 2) ── c 3 (self 3)
 *             │        └─ d 5 (self 4) ── f 1 (self 1)
 *             └─ e 1 (self 1)
 *
 * Names in pre-order: total 0, a 1, b 2, c 3, d 4, f 5, e 6. On level 3, c spans [0, 3) and f
 * starts at 5 (under d, after b's 5), so f's x delta is 5 - 3 = 2.
 */
const STACKS = [
  { stack: ['c', 'b', 'a'], value: 3 },
  { stack: ['b', 'a'], value: 2 },
  { stack: ['d', 'a'], value: 4 },
  { stack: ['f', 'd', 'a'], value: 1 },
  { stack: ['e'], value: 1 },
];

describe('flamegraphLevels, single format', () => {
  it('lays out the merged tree: names, delta-encoded levels, totals, maxSelf', () => {
    expect(flamegraphLevels([STACKS], 100)).toEqual({
      names: ['total', 'a', 'b', 'c', 'd', 'f', 'e'],
      levels: [
        [0, 11, 0, 0],
        [0, 10, 0, 1, 0, 1, 1, 6],
        [0, 5, 2, 2, 0, 5, 4, 4],
        [0, 3, 3, 3, 2, 1, 1, 5],
      ],
      totals: [11],
      maxSelf: 4,
    });
  });

  it('merges repeated stacks and orders siblings by name whatever the input order', () => {
    const shuffled = [STACKS[4]!, { stack: ['c', 'b', 'a'], value: 1 }, STACKS[3]!, STACKS[2]!, { stack: ['c', 'b', 'a'], value: 2 }, STACKS[1]!];
    expect(flamegraphLevels([shuffled], 100)).toEqual(flamegraphLevels([STACKS], 100));
  });

  it('an empty stack adds to the root self; no stacks is a zero root', () => {
    expect(flamegraphLevels([[{ stack: [], value: 7 }, { stack: ['a'], value: 1 }]], 100)).toEqual({ names: ['total', 'a'], levels: [[0, 8, 7, 0], [0, 1, 1, 1]], totals: [8], maxSelf: 7 });
    expect(flamegraphLevels([[]], 100)).toEqual({ names: ['total'], levels: [[0, 0, 0, 0]], totals: [0], maxSelf: 0 });
  });

  it('folds the lightest children into "other" so at most maxNodes nodes show', () => {
    const wide = [40, 30, 20, 5, 5].map((value, i) => ({ stack: [`y${i + 1}`, 'x'], value }));
    // 6 nodes below the root; 5 fit when y4 and y5 (5 + 5) become one "other".
    expect(flamegraphLevels([wide], 5)).toEqual({
      names: ['total', 'x', 'y1', 'y2', 'y3', 'other'],
      levels: [
        [0, 100, 0, 0],
        [0, 100, 0, 1],
        [0, 40, 40, 2, 0, 30, 30, 3, 0, 20, 20, 4, 0, 10, 10, 5],
      ],
      totals: [100],
      maxSelf: 40,
    });
    expect(flamegraphLevels([wide], 6).names).not.toContain('other');
  });

  it('never shows more than maxNodes, "other" nodes included', () => {
    // Weights 10 (a), 5 (b, d), 3 (c), 1 (f, e): only cutting at 10 fits 4 (a, two "other").
    expect(flamegraphLevels([STACKS], 4)).toEqual({
      names: ['total', 'a', 'other'],
      levels: [
        [0, 11, 0, 0],
        [0, 10, 0, 1, 0, 1, 1, 2],
        [0, 10, 10, 2],
      ],
      totals: [11],
      maxSelf: 10,
    });
    expect(flamegraphLevels([STACKS], 1)).toEqual({ names: ['total', 'other'], levels: [[0, 11, 0, 0], [0, 11, 11, 1]], totals: [11], maxSelf: 11 });
  });

  it('keeps deep stacks (no recursion limit)', () => {
    const deep = Array.from({ length: 20_000 }, (_, i) => `f${i}`);
    const fg = flamegraphLevels([[{ stack: deep, value: 1 }]], 100_000);
    expect(fg.levels).toHaveLength(20_001);
    expect(fg.levels[20_000]).toEqual([0, 1, 1, 20_000]);
  });
});

describe('flamegraphLevels, double format', () => {
  it('lays each side out on its own: 7-int chunks', () => {
    const left = [{ stack: ['b', 'a'], value: 3 }];
    const right = [
      { stack: ['b', 'a'], value: 1 },
      { stack: ['c', 'a'], value: 2 },
    ];
    expect(flamegraphLevels([left, right], 100)).toEqual({
      names: ['total', 'a', 'b', 'c'],
      levels: [
        [0, 3, 0, 0, 3, 0, 0],
        [0, 3, 0, 0, 3, 0, 1],
        [0, 3, 3, 0, 1, 1, 2, 0, 0, 0, 0, 2, 2, 3],
      ],
      totals: [3, 3],
      maxSelf: 3,
    });
  });
});

describe('flamebearer documents', () => {
  const cpu = parseProfileTypeRef('process_cpu:cpu:nanoseconds:cpu:nanoseconds');

  it('single: Pyroscope render shape', () => {
    const timeline = buildTimeline([{ slot: 1, value: 11 }], { startNs: 1_000_000_000_000n, endNs: 1_030_000_000_000n }, 10_000_000_000n);
    expect(singleFlamebearer(STACKS, cpu, timeline, 100)).toEqual({
      version: 1,
      flamebearer: {
        names: ['total', 'a', 'b', 'c', 'd', 'f', 'e'],
        levels: [
          [0, 11, 0, 0],
          [0, 10, 0, 1, 0, 1, 1, 6],
          [0, 5, 2, 2, 0, 5, 4, 4],
          [0, 3, 3, 3, 2, 1, 1, 5],
        ],
        numTicks: 11,
        maxSelf: 4,
      },
      metadata: { format: 'single', spyName: '', sampleRate: 1_000_000_000, units: 'samples', name: 'cpu' },
      timeline: { startTime: 1000, samples: [0, 11, 0], durationDelta: 10, watermarks: null },
      groups: null,
      heatmap: null,
    });
  });

  it('single with nothing selected: an empty flamegraph', () => {
    expect(singleFlamebearer([], cpu, null, 100).flamebearer).toEqual({ names: ['total'], levels: [[0, 0, 0, 0]], numTicks: 0, maxSelf: 0 });
  });

  it('double: numTicks is left + right, with leftTicks and rightTicks', () => {
    const doc = diffFlamebearer([{ stack: ['a'], value: 2 }], [{ stack: ['a'], value: 5 }], cpu, 100);
    expect(doc).toMatchObject({
      flamebearer: { names: ['total', 'a'], levels: [[0, 2, 0, 0, 5, 0, 0], [0, 2, 2, 0, 5, 5, 1]], numTicks: 7, maxSelf: 5 },
      metadata: { format: 'double' },
      leftTicks: 2,
      rightTicks: 5,
      timeline: null,
    });
  });

  it.each([
    [60n, 10n],
    [3600n, 10n],
    [86_400n, 58n],
    [30n * 86_400n, 1728n],
  ])('timeline step of a %is range is %is', (seconds, step) => {
    expect(timelineStepNs({ startNs: 0n, endNs: seconds * 1_000_000_000n })).toBe(step * 1_000_000_000n);
  });
});

describe('truncateStacks', () => {
  const byStack = (stacks: ReadonlyArray<{ stack: readonly string[]; value: number }>) => [...stacks].sort((x, y) => x.stack.join(';').localeCompare(y.stack.join(';')));

  it('leaves stacks that fit as they are', () => {
    expect(byStack(truncateStacks(STACKS, 6))).toEqual(byStack(STACKS));
  });

  it('folds the lightest subtrees into "other" frames, keeping the total', () => {
    // Four nodes: only a is heavy enough; its children and e fold (see flamegraphLevels).
    expect(byStack(truncateStacks(STACKS, 4))).toEqual([
      { stack: ['other'], value: 1 },
      { stack: ['other', 'a'], value: 10 },
    ]);
  });

  it('draws the same flamegraph as truncating the levels', () => {
    for (const max of [1, 2, 3, 4, 5, 6]) {
      expect(flamegraphLevels([truncateStacks(STACKS, max)], 100), `max ${max}`).toEqual(flamegraphLevels([STACKS], max));
    }
  });
});
