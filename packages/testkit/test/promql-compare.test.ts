import { describe, expect, it } from 'vitest';
import { comparePromAnswers, type PromApiBody } from '../src/index.ts';

/**
 * The agreement rule of the PromQL differential test and bench/promql: a wrong answer must never
 * pass as agreeing (that would hide a Floe bug), and answers Prometheus would give too must not be
 * reported as differing.
 */

const vector = (...samples: Array<[Record<string, string>, number, string]>): PromApiBody => ({
  status: 'success',
  data: { resultType: 'vector', result: samples.map(([metric, t, v]) => ({ metric, value: [t, v] })) },
});
const matrix = (...series: Array<[Record<string, string>, Array<[number, string]>]>): PromApiBody => ({
  status: 'success',
  data: { resultType: 'matrix', result: series.map(([metric, values]) => ({ metric, values })) },
});
const scalar = (t: number, v: string): PromApiBody => ({ status: 'success', data: { resultType: 'scalar', result: [t, v] } });
const refused = (error: string): PromApiBody => ({ status: 'error', errorType: 'bad_data', error });

const a = { __name__: 'up', instance: 'a' };
const b = { __name__: 'up', instance: 'b' };

describe('comparePromAnswers', () => {
  it('holds infinities equal only to the same infinity', () => {
    expect(comparePromAnswers('q', scalar(1, '+Inf'), scalar(1, '+Inf'))).toBeUndefined();
    expect(comparePromAnswers('q', scalar(1, '-Inf'), scalar(1, '-Inf'))).toBeUndefined();
    expect(comparePromAnswers('q', scalar(1, '+Inf'), scalar(1, '5'))).toBe('value 5 vs +Inf');
    expect(comparePromAnswers('q', scalar(1, '5'), scalar(1, '+Inf'))).toBe('value +Inf vs 5');
    expect(comparePromAnswers('q', scalar(1, '+Inf'), scalar(1, '-Inf'))).toBe('value -Inf vs +Inf');
    expect(comparePromAnswers('q', vector([a, 1, '+Inf']), vector([a, 1, '1e308']))).toMatch(/at 1: 1e308 vs \+Inf/);
    expect(comparePromAnswers('q', matrix([a, [[1, '1'], [2, '-Inf']]]), matrix([a, [[1, '1'], [2, '+Inf']]]))).toMatch(/at 2: \+Inf vs -Inf/);
  });

  it('holds NaN equal to NaN and to nothing else', () => {
    expect(comparePromAnswers('q', vector([a, 1, 'NaN']), vector([a, 1, 'NaN']))).toBeUndefined();
    expect(comparePromAnswers('q', matrix([a, [[1, 'NaN']]]), matrix([a, [[1, 'NaN']]]))).toBeUndefined();
    expect(comparePromAnswers('q', vector([a, 1, 'NaN']), vector([a, 1, '0']))).toMatch(/at 1: 0 vs NaN/);
    expect(comparePromAnswers('q', vector([a, 1, '0']), vector([a, 1, 'NaN']))).toMatch(/at 1: NaN vs 0/);
    expect(comparePromAnswers('q', scalar(1, 'NaN'), scalar(1, '+Inf'))).toBe('value +Inf vs NaN');
  });

  it('allows the summation-order residue of finite values, not more', () => {
    expect(comparePromAnswers('q', vector([a, 1, '1000']), vector([a, 1, '1000.0000000001']))).toBeUndefined();
    expect(comparePromAnswers('q', vector([a, 1, '0']), vector([a, 1, '1e-13']))).toBeUndefined();
    expect(comparePromAnswers('q', vector([a, 1, '1000']), vector([a, 1, '1000.001']))).toMatch(/at 1: 1000.001 vs 1000/);
  });

  it('reports differing label sets, timestamps, point and series counts', () => {
    expect(comparePromAnswers('q', vector([a, 1, '1']), vector([b, 1, '1']))).toBe(`series ${JSON.stringify(Object.entries(a))} missing`);
    expect(comparePromAnswers('q', vector([a, 1, '1']), vector([{ ...a, job: 'x' }, 1, '1']))).toMatch(/missing/);
    expect(comparePromAnswers('q', vector([a, 1, '1']), vector([a, 2, '1']))).toMatch(/time 2 vs 1/);
    expect(comparePromAnswers('q', vector([a, 1, '1'], [b, 1, '1']), vector([a, 1, '1']))).toBe('1 series, Prometheus 2');
    expect(comparePromAnswers('q', matrix([a, [[1, '1']]]), matrix([a, [[1, '1']]], [b, [[1, '1']]]))).toBe('2 series, Prometheus 1');
    expect(comparePromAnswers('q', matrix([a, [[1, '1'], [2, '1']]]), matrix([a, [[1, '1']]]))).toMatch(/1 points vs 2/);
    expect(comparePromAnswers('q', matrix([a, [[1, '1'], [2, '1']]]), matrix([a, [[1, '1'], [3, '1']]]))).toMatch(/time 3 vs 2/);
    expect(comparePromAnswers('q', scalar(1, '1'), scalar(2, '1'))).toBe('time 2 vs 1');
    expect(comparePromAnswers('q', vector([a, 1, '1']), matrix([a, [[1, '1']]]))).toBe('result type matrix, Prometheus vector');
  });

  it('ignores the order of series except for sort() and sort_desc() instant queries', () => {
    const ab = vector([a, 1, '1'], [b, 1, '2']);
    const ba = vector([b, 1, '2'], [a, 1, '1']);
    expect(comparePromAnswers('up', ab, ba)).toBeUndefined();
    expect(comparePromAnswers('sort(up)', ab, ba)).toBe('sort order differs');
    expect(comparePromAnswers('sort_desc(up)', ba, ba)).toBeUndefined();
    expect(comparePromAnswers('sort(up)', matrix([a, [[1, '1']]], [b, [[1, '2']]]), matrix([b, [[1, '2']]], [a, [[1, '1']]]))).toBeUndefined();
  });

  it('lets two refusals agree, not one', () => {
    expect(comparePromAnswers('q', refused('parse error'), refused('other words'))).toBeUndefined();
    expect(comparePromAnswers('q', refused('parse error'), scalar(1, '1'))).toMatch(/^Prometheus refused/);
    expect(comparePromAnswers('q', scalar(1, '1'), refused('nope'))).toMatch(/^Floe refused \(bad_data: nope\)/);
  });
});
