import { describe, expect, it } from 'vitest';
import { fitPayload, type ListPath } from './payload-cap.ts';

const size = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
const streams = (n: number, lines: number) => ({
  resultType: 'streams',
  result: Array.from({ length: n }, (_, i) => ({ stream: { app: `s${i}` }, values: Array.from({ length: lines }, (_, j) => [String(j), `line ${i}.${j} ${'x'.repeat(20)}`]) })),
});
const LOGS: ListPath[] = [['result', '*', 'values'], ['result']];

describe('fitPayload', () => {
  it('leaves an answer under the cap whole, flagged false', () => {
    const doc = streams(2, 2);
    expect(fitPayload(structuredClone(doc), LOGS, 10_000)).toEqual({ ...doc, truncated: false });
  });

  it.each([300, 600, 1000, 2000, 3000])('trims to at most %i bytes, keeping the head of every list', (cap) => {
    const full = streams(4, 20);
    const out = fitPayload(structuredClone(full), LOGS, cap);
    expect(out.truncated).toBe(true);
    expect(size(out)).toBeLessThanOrEqual(cap);
    for (const [i, s] of out.result.entries()) {
      expect(s.stream).toEqual(full.result[i]!.stream);
      expect(s.values).toEqual(full.result[i]!.values.slice(0, s.values.length));
    }
  });

  it('cuts the first declared path evenly before the next: lines per stream, then streams', () => {
    const out = fitPayload(streams(4, 20), LOGS, 2000);
    const lengths = out.result.map((s) => s.values.length);
    expect(out.result).toHaveLength(4);
    expect(new Set(lengths).size).toBe(1);
    expect(lengths[0]).toBeGreaterThan(0);
    // Too small for one line of each of four streams: one line each, then fewer streams.
    const tight = fitPayload(streams(4, 20), LOGS, 250);
    expect(tight.result.length).toBeLessThan(4);
    expect(tight.result.every((s) => s.values.length === 1)).toBe(true);
  });

  it('never cuts arrays it was not told about, such as [time, value] pairs', () => {
    const doc = { resultType: 'matrix', result: [{ metric: { a: '1' }, values: Array.from({ length: 100 }, (_, i) => [i, String(i)]) }] };
    const out = fitPayload(doc, LOGS, 300);
    expect(out.result[0]!.values.every((p) => p.length === 2)).toBe(true);
    expect(size(out)).toBeLessThanOrEqual(300);
  });

  it('empties the lists when one item alone is over the cap, and says so', () => {
    const out = fitPayload({ labels: ['x'.repeat(500)] }, [['labels']], 100);
    expect(out).toEqual({ labels: [], truncated: true });
  });

  it('with no declared list, an oversized answer is returned as it is, flagged', () => {
    const out = fitPayload({ resultType: 'scalar', result: [1, 'x'.repeat(200)] }, [], 50);
    expect(out).toEqual({ resultType: 'scalar', result: [1, 'x'.repeat(200)], truncated: true });
  });
});
