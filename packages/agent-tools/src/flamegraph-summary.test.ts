import { describe, expect, it } from 'vitest';
import { functionCosts, topChanges, topFunctions, type FlamebearerDocument } from './flamegraph-summary.ts';

/**
 * total 10 ─ main 10 ─┬─ a 6 (self 2) ─ b 4 (self 1) ─ a 3 (self 3)   (a recursive under b)
 *                     └─ c 4 (self 4)
 */
const SINGLE: FlamebearerDocument = {
  flamebearer: {
    names: ['total', 'main', 'a', 'b', 'c'],
    levels: [
      [0, 10, 0, 0],
      [0, 10, 0, 1],
      [0, 6, 2, 2, 0, 4, 4, 4],
      [0, 4, 1, 3],
      [0, 3, 3, 2],
    ],
    numTicks: 10,
  },
  metadata: { format: 'single', units: 'samples' },
};

/** Left: main → x 4 (self 4), main self 0; right: main → x 1 (self 1), y 5 (self 5). */
const DOUBLE: FlamebearerDocument = {
  flamebearer: {
    names: ['total', 'main', 'x', 'y'],
    levels: [
      [0, 4, 0, 0, 6, 0, 0],
      [0, 4, 0, 0, 6, 0, 1],
      // x: left 4 at 0, right 1 at 0; y: left 0 at 4, right 5 at 1.
      [0, 4, 4, 0, 1, 1, 2, 0, 0, 0, 0, 5, 5, 3],
    ],
    numTicks: 10,
  },
  metadata: { format: 'double', units: 'bytes' },
  leftTicks: 4,
  rightTicks: 6,
};

describe('flamegraph summaries', () => {
  it('sums self over every node and total once per stack (recursion counted once)', () => {
    expect(Object.fromEntries(functionCosts(SINGLE))).toEqual({
      main: { self: [0], total: [10] },
      a: { self: [5], total: [6] },
      b: { self: [1], total: [4] },
      c: { self: [4], total: [4] },
    });
  });

  it('ranks the top functions by self or total, ties by name', () => {
    expect(topFunctions(SINGLE, 'self', 2)).toEqual({
      units: 'samples',
      totalValue: 10,
      functionCount: 4,
      functions: [
        { name: 'a', self: 5, total: 6, selfPercent: 50, totalPercent: 60 },
        { name: 'c', self: 4, total: 4, selfPercent: 40, totalPercent: 40 },
      ],
    });
    expect(topFunctions(SINGLE, 'total', 4).functions.map((f) => f.name)).toEqual(['main', 'a', 'b', 'c']);
  });

  it('pairs the nodes of a diff to their parents on both sides and ranks the changes', () => {
    expect(Object.fromEntries(functionCosts(DOUBLE))).toEqual({
      main: { self: [0, 0], total: [4, 6] },
      x: { self: [4, 1], total: [4, 1] },
      y: { self: [0, 5], total: [0, 5] },
    });
    const diff = topChanges(DOUBLE, 'self', 10);
    expect(diff).toMatchObject({ units: 'bytes', leftTotal: 4, rightTotal: 6, changedCount: 3 });
    expect(diff.changes.map((c) => [c.name, c.selfDelta, c.totalDelta])).toEqual([
      ['y', 5, 5],
      ['x', -3, -3],
      ['main', 0, 2],
    ]);
    // x went from all of the left to a sixth of the right.
    expect(diff.changes[1]!.selfShareDelta).toBe(-83.33);
  });

  it('reads an empty flamegraph as no functions', () => {
    const empty: FlamebearerDocument = { flamebearer: { names: ['total'], levels: [[0, 0, 0, 0]], numTicks: 0 }, metadata: { format: 'single' } };
    expect(topFunctions(empty, 'self', 5)).toEqual({ units: '', totalValue: 0, functionCount: 0, functions: [] });
  });
});
