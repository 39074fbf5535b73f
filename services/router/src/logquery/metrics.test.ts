import { describe, expect, it } from 'vitest';
import { toInstant, toMatrix, withinSeriesLimit } from './metrics.ts';
import { defaultStepNs } from './params.ts';
import { secondsOf } from './results.ts';

const S = 1_000_000_000n;

describe('metric results in Loki shapes', () => {
  it('sample values print as Prometheus does: shortest decimal, no exponent, NaN and ±Inf spelled out', () => {
    const printed = (value: number) => toInstant({ kind: 'scalar', value }, 0n).result[1];
    expect([2, 0.05, 4 / 60, -3.5, 0, 1e21, 1.5e-7, -2e22, NaN, Infinity, -Infinity].map(printed)).toEqual([
      '2',
      '0.05',
      '0.06666666666666667',
      '-3.5',
      '0',
      '1000000000000000000000',
      '0.00000015',
      '-20000000000000000000000',
      'NaN',
      '+Inf',
      '-Inf',
    ]);
  });

  it('times are float seconds with millisecond precision', () => {
    expect(secondsOf(1_700_000_000_123_456_789n)).toBe(1_700_000_000.123);
    expect(secondsOf(4n * S)).toBe(4);
  });

  it('a matrix lists each series oldest first; a scalar becomes one label-less series', () => {
    const grid = { startNs: 100n * S, endNs: 160n * S, stepNs: 30n * S };
    const series = [{ labels: { level: 'INFO' }, points: new Map([[2, 3], [0, 1]]) }];
    expect(toMatrix({ kind: 'matrix', series }, grid)).toEqual([{ metric: { level: 'INFO' }, values: [[100, '1'], [160, '3']] }]);
    expect(toMatrix({ kind: 'scalar', value: 2 }, grid)).toEqual([{ metric: {}, values: [[100, '2'], [130, '2'], [160, '2']] }]);
  });

  it('more series than the limit is 400, as Loki answers max_query_series; at the limit, or a scalar, passes', () => {
    const series = (n: number) => ({ kind: 'matrix' as const, series: Array.from({ length: n }, (_, i) => ({ labels: { pod: `p${i}` }, points: new Map([[0, 1]]) })) });
    expect(withinSeriesLimit(series(3), 3)).toEqual(series(3));
    expect(withinSeriesLimit({ kind: 'scalar', value: 1 }, 0)).toEqual({ kind: 'scalar', value: 1 });
    expect(() => withinSeriesLimit(series(4), 3)).toThrow(expect.objectContaining({ kind: 'bad_data', code: 'FLOE_ERR_LOGQL_SERIES', message: expect.stringMatching(/^maximum number of series \(3\) reached for a single query/) }));
  });

  it('an instant result is a vector at the time, or a scalar', () => {
    expect(toInstant({ kind: 'matrix', series: [{ labels: {}, points: new Map([[0, 2]]) }] }, 4n * S)).toEqual({ resultType: 'vector', result: [{ metric: {}, value: [4, '2'] }] });
    expect(toInstant({ kind: 'matrix', series: [] }, 4n * S)).toEqual({ resultType: 'vector', result: [] });
    expect(toInstant({ kind: 'scalar', value: 0.5 }, 10n * S)).toEqual({ resultType: 'scalar', result: [10, '0.5'] });
  });

  it("Loki's default step: the range over 250 points, whole seconds, at least 1s", () => {
    expect(defaultStepNs(0n, 3600n * S)).toBe(14n * S);
    expect(defaultStepNs(0n, 60n * S)).toBe(S);
  });
});
