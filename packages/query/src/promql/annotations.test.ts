import { describe, expect, it } from 'vitest';
import type { VectorSelector } from './ast.ts';
import { Annotations, formatG, goQuote } from './annotations.ts';
import { evalInstant, evalRange, type RawSeries } from './eval.ts';
import { makeLabels } from '../labels.ts';
import { parsePromQL } from './parse.ts';
import { matchLabels } from './series.ts';

const series = (labels: Record<string, string>, points: Array<[number, number]>): RawSeries => ({
  labels: makeLabels(Object.entries(labels)),
  t: points.map(([t]) => t * 1000),
  v: points.map(([, v]) => v),
});
const every15s = (f: (i: number) => number) => Array.from({ length: 20 }, (_, i): [number, number] => [1 + i * 15, f(i)]);

const DATA: RawSeries[] = [
  series({ __name__: 'requests_total', job: 'a' }, every15s((i) => i * 10)),
  series({ __name__: 'temperature', job: 'a' }, every15s((i) => 20 + (i % 3))),
  series({ __name__: 'temperature', job: 'b' }, every15s((i) => 21 + (i % 2))),
  series({ __name__: 'one_sample' }, [[1, 5]]),
  // A histogram whose le="5" bucket counts less than le="1" (forced monotonic), and a bucket without a number.
  series({ __name__: 'lat_bucket', le: '1' }, every15s(() => 6)),
  series({ __name__: 'lat_bucket', le: '5' }, every15s(() => 4)),
  series({ __name__: 'lat_bucket', le: '+Inf' }, every15s(() => 10)),
  series({ __name__: 'odd_bucket', le: 'abc' }, every15s(() => 1)),
  series({ __name__: 'odd_bucket' }, every15s(() => 1)),
];
const source = (sel: VectorSelector) => DATA.filter((s) => matchLabels(s.labels, sel.matchers));

/** Annotations of an instant query at t = 200 s, a range query over [100, 280] s by the series-at-a-time path, and the same step by step. */
function notes(q: string) {
  const expr = parsePromQL(q);
  const run = (f: (a: Annotations) => void) => {
    const annotations = new Annotations();
    f(annotations);
    return annotations.asStrings(q);
  };
  const opts = (a: Annotations, start: number, end: number) => ({ startMs: start, endMs: end, lookbackMs: 300_000, defaultSubqueryStepMs: 60_000, annotations: a });
  const instant = run((a) => evalInstant(expr, 200_000, source, opts(a, 200_000, 200_000)));
  const range = run((a) => evalRange(expr, 100_000, 280_000, 15_000, source, opts(a, 100_000, 280_000)));
  const stepwise = run((a) => evalRange(expr, 100_000, 280_000, 15_000, source, opts(a, 100_000, 280_000), true));
  expect(range).toEqual(stepwise);
  return { instant, range };
}

describe('PromQL annotations (Prometheus 3 warnings and infos)', () => {
  it('rate and increase over a name without a counter suffix: one info per name, at the range selector', () => {
    const info = 'PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "temperature"';
    expect(notes('rate(temperature[1m])')).toEqual({ instant: { warnings: [], infos: [`${info} (1:6)`] }, range: { warnings: [], infos: [`${info} (1:6)`] } });
    expect(notes('sum(\n  increase(temperature{job="a"}[2m])\n)').range.infos).toEqual([`${info} (2:12)`]);
    // Counters, other functions, and a series with too few samples for a result are not noted.
    for (const q of ['rate(requests_total[1m])', 'delta(temperature[1m])', 'avg_over_time(temperature[1m])', 'rate(one_sample[10m])', 'rate(lat_bucket[1m])']) {
      expect(notes(q), q).toEqual({ instant: { warnings: [], infos: [] }, range: { warnings: [], infos: [] } });
    }
  });

  it('quantiles outside [0, 1] warn with the value as Go prints it, at the parameter', () => {
    expect(notes('quantile(1.5, temperature)').instant.warnings).toEqual(['PromQL warning: quantile value should be between 0 and 1, got 1.5 (1:10)']);
    expect(notes('quantile_over_time(-2, temperature[1m])').range.warnings).toEqual(['PromQL warning: quantile value should be between 0 and 1, got -2 (1:20)']);
    expect(notes('histogram_quantile(NaN, lat_bucket)').range.warnings).toEqual(['PromQL warning: quantile value should be between 0 and 1, got NaN (1:20)']);
    expect(notes('quantile(0.5, temperature)').instant.warnings).toEqual([]);
    // Nothing selected: quantile and quantile_over_time have nothing to compute and stay silent.
    expect(notes('quantile(7, nothing)').instant.warnings).toEqual([]);
  });

  it('histogram_quantile: a bucket without a usable le warns; buckets forced monotonic are an info', () => {
    const r = notes('histogram_quantile(0.9, {__name__=~"lat_bucket|odd_bucket"})');
    const expected = {
      warnings: [
        'PromQL warning: bucket label "le" is missing or has a malformed value of "" for metric name "odd_bucket" (1:25)',
        'PromQL warning: bucket label "le" is missing or has a malformed value of "abc" for metric name "odd_bucket" (1:25)',
      ],
      infos: ['PromQL info: input to histogram_quantile needed to be fixed for monotonicity (see https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile) (1:25)'],
    };
    expect(r).toEqual({ instant: expected, range: expected });
    // After rate() the name is gone: the warning names no metric.
    expect(notes('histogram_quantile(0.9, rate(odd_bucket{le="abc"}[1m]))').instant.warnings).toEqual([
      'PromQL warning: bucket label "le" is missing or has a malformed value of "abc" (1:25)',
    ]);
  });

  it('at most ten of each, then how many more', () => {
    const a = new Annotations();
    for (let i = 0; i < 13; i++) a.counterInput(makeLabels([['__name__', `m${String(i).padStart(2, '0')}`]]), { from: 0, to: 1 });
    const { infos } = a.asStrings('x');
    expect(infos).toHaveLength(11);
    expect(infos[0]).toBe('PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "m00" (1:1)');
    expect(infos[10]).toBe('3 more info annotations omitted');
  });

  it("formats numbers as Go's %g and strings as Go's %q", () => {
    const cases: Array<[number, string]> = [
      [1.5, '1.5'], [2, '2'], [-2, '-2'], [0, '0'], [123456, '123456'], [1e6, '1e+06'], [1234567, '1.234567e+06'],
      [0.0001, '0.0001'], [0.00001, '1e-05'], [1e21, '1e+21'], [1e-300, '1e-300'], [NaN, 'NaN'], [Infinity, '+Inf'], [-Infinity, '-Inf'],
    ];
    for (const [x, s] of cases) expect(formatG(x), String(x)).toBe(s);
    expect(goQuote('a"b\\c\nd\u0001é')).toBe('"a\\"b\\\\c\\nd\\x01é"');
  });
});
