import { describe, expect, it } from 'vitest';
import { LOG_COLUMNS, type LogSelect } from '@floe/query';
import { spacedLines } from './interval.ts';

/**
 * spacedLines against Loki's rule applied to every line in order (the reference below), over
 * lines read the way the planner returns them: the window's lines in the query's direction, at
 * most `limit`. Pages are 1000 lines, so windows of several thousand lines cross pages.
 */
function reference(times: bigint[], forward: boolean, interval: bigint, limit: number): bigint[] {
  const out: bigint[] = [];
  let last: bigint | undefined;
  for (const t of forward ? times : [...times].reverse()) {
    if (out.length === limit) break;
    if (last === undefined || (forward ? t >= last + interval : t <= last - interval)) {
      out.push(t);
      last = t;
    }
  }
  return out;
}

describe('spacedLines', () => {
  // Irregular times with ties, sorted ascending.
  const times: bigint[] = [];
  let t = 1_000_000n;
  for (let i = 0; i < 5000; i++) {
    t += BigInt((i * 7919) % 13);
    times.push(t);
  }
  const ir = (direction: 'forward' | 'backward', limit: number): LogSelect => ({ kind: 'log_select', table: 'logs', range: { startNs: 0n, endNs: 10n ** 12n }, streams: [], filters: [], direction, limit });
  let reads = 0;
  const read = async (page: LogSelect) => {
    reads++;
    const inside = times.filter((x) => x >= page.range.startNs && x < page.range.endNs);
    return (page.direction === 'forward' ? inside : inside.reverse()).slice(0, page.limit).map((x) => ({ [LOG_COLUMNS.time]: x.toString() }));
  };

  it.each([
    ['forward', 5n, 100],
    ['forward', 40n, 5000],
    ['backward', 5n, 100],
    ['backward', 17n, 5000],
    ['forward', 1n, 3000],
  ] as const)('%s, interval %s, limit %s: the lines Loki returns', async (direction, interval, limit) => {
    const got = (await spacedLines(ir(direction, limit), interval, read)).map((r) => BigInt(String(r[LOG_COLUMNS.time])));
    expect(got).toEqual(reference(times, direction === 'forward', interval, limit));
  });

  it('skips what cannot be returned instead of reading it', async () => {
    reads = 0;
    // An interval wider than a page's span: each page read yields a line.
    const got = await spacedLines(ir('forward', 20), 10_000n, read);
    expect(got).toHaveLength(3);
    expect(reads).toBeLessThanOrEqual(4);
  });

  it('fills the limit however many pages that takes (each yields a line)', async () => {
    // 5000 lines 1 ns apart, an interval of 7: 715 returnable lines, far more than 50 pages' worth.
    const dense = Array.from({ length: 5000 }, (_, i) => BigInt(i));
    const readDense = async (page: LogSelect) => {
      const inside = dense.filter((x) => x >= page.range.startNs && x < page.range.endNs);
      return (page.direction === 'forward' ? inside : inside.reverse()).slice(0, page.limit).map((x) => ({ [LOG_COLUMNS.time]: x.toString() }));
    };
    const got = await spacedLines(ir('backward', 700), 7n, readDense);
    expect(got.map((r) => BigInt(String(r[LOG_COLUMNS.time])))).toEqual(reference(dense, false, 7n, 700));
    expect(got).toHaveLength(700);
  });
});
