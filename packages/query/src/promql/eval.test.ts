import { describe, expect, it } from 'vitest';
import xxhash from 'xxhash-wasm';
import type { VectorSelector } from './ast.ts';
import { evalInstant, evalRange, bucketQuantile, naturalLess, selectorWindows, type RawSeries } from './eval.ts';
import { quantile } from '../quantile.ts';
import { makeLabels } from '../labels.ts';
import { parsePromQL } from './parse.ts';
import { matchLabels } from './series.ts';
import { Annotations } from './annotations.ts';
import { labelsHash } from './series-hash.ts';

const L = (o: Record<string, string>) => makeLabels(Object.entries(o));
const series = (labels: Record<string, string>, points: Array<[number, number]>, stale: number[] = []): RawSeries => ({
  labels: L(labels),
  t: points.map(([t]) => t * 1000),
  v: points.map(([, v]) => v),
  stale: points.map(([t]) => stale.includes(t)),
});

// Counter: 0,10,20,5 (reset),15 every 15s from 1s; gauge with a staleness marker at 61s.
const DATA: RawSeries[] = [
  series({ __name__: 'c_total', job: 'a', i: '1' }, [[1, 0], [16, 10], [31, 20], [46, 5], [61, 15]]),
  series({ __name__: 'c_total', job: 'a', i: '2' }, [[2, 100], [17, 110], [32, 120], [47, 130], [62, 140]]),
  series({ __name__: 'g', job: 'a' }, [[1, 3], [31, 5], [61, NaN]], [61]),
  series({ __name__: 'h_bucket', le: '1' }, [[10, 2]]),
  series({ __name__: 'h_bucket', le: '5' }, [[10, 6]]),
  series({ __name__: 'h_bucket', le: '+Inf' }, [[10, 8]]),
];
const source = (sel: VectorSelector) => DATA.filter((s) => matchLabels(s.labels, sel.matchers));
const opts = (t: number) => ({ startMs: t, endMs: t, lookbackMs: 300_000, defaultSubqueryStepMs: 60_000 });

function instant(q: string, t: number) {
  const r = evalInstant(parsePromQL(q), t * 1000, source, opts(t * 1000));
  if (r.resultType === 'vector') return r.result.map((s) => ({ ...Object.fromEntries(Object.entries(s.labels)), v: s.v })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  if (r.resultType === 'scalar') return r.result[1];
  return r;
}

describe('evaluator', () => {
  it('instant selection: newest sample within the lookback; a staleness marker ends the series', () => {
    expect(instant('g', 50)).toEqual([{ __name__: 'g', job: 'a', v: 5 }]);
    expect(instant('g', 70)).toEqual([]);
    // Left-open lookback: a sample exactly 5m old is gone.
    expect(instant('c_total{i="1"}', 360)).toEqual([{ __name__: 'c_total', i: '1', job: 'a', v: 15 }]);
    expect(instant('c_total{i="1"}', 1 + 300 + 60)).toEqual([]);
  });

  it('rate and increase: counter reset corrected, extrapolated to the window edges', () => {
    // Window (5, 65]: samples 16..61 = 10,20,5,15 → increase 5 + 20 (reset) = 25 over 45s sampled.
    // avg spacing 15s, threshold 16.5s: start gap 11s < 16.5 → extrapolate 11; end gap 4s → 4. 25 * 60/45.
    const [r] = instant('increase(c_total{i="1"}[1m])', 65) as Array<{ v: number }>;
    expect(r!.v).toBeCloseTo((25 * 60) / 45, 12);
    const [rate] = instant('rate(c_total{i="1"}[1m])', 65) as Array<{ v: number }>;
    expect(rate!.v).toBeCloseTo((25 * 60) / 45 / 60, 12);
    expect(instant('resets(c_total[2m])', 65)).toEqual([
      { i: '1', job: 'a', v: 1 },
      { i: '2', job: 'a', v: 0 },
    ]);
    // irate: last two samples 5 → 15 over 15s.
    expect((instant('irate(c_total{i="1"}[1m])', 65) as Array<{ v: number }>)[0]!.v).toBeCloseTo(10 / 15, 12);
  });

  it('aggregations, binary matching and set operators', () => {
    expect(instant('sum by (job) (c_total)', 62)).toEqual([{ job: 'a', v: 155 }]);
    expect(instant('count(c_total)', 62)).toEqual([{ v: 2 }]);
    expect(instant('topk(1, c_total)', 62)).toEqual([{ __name__: 'c_total', i: '2', job: 'a', v: 140 }]);
    expect(instant('quantile(0.5, c_total)', 62)).toEqual([{ v: 77.5 }]);
    expect(instant('c_total / on(job) group_left g', 50)).toEqual([
      { i: '1', job: 'a', v: 1 },
      { i: '2', job: 'a', v: 26 },
    ]);
    expect(instant('c_total > 100', 50)).toEqual([{ __name__: 'c_total', i: '2', job: 'a', v: 130 }]);
    expect(instant('c_total > bool 100', 50)).toEqual([
      { i: '1', job: 'a', v: 0 },
      { i: '2', job: 'a', v: 1 },
    ]);
    expect(instant('c_total unless on(i) c_total{i="1"}', 50)).toEqual([{ __name__: 'c_total', i: '2', job: 'a', v: 130 }]);
    expect(() => instant('c_total + on(job) g', 50)).toThrow(/many-to-one matching must be explicit/);
  });

  it('histogram_quantile over classic buckets', () => {
    // rank 0.5*8 = 4 falls in (1, 5] holding 4 of the 6: 1 + 4 * (4-2)/4 = 3.
    expect(instant('histogram_quantile(0.5, h_bucket)', 10)).toEqual([{ v: 3 }]);
    expect(bucketQuantile(0.99, [{ upper: 1, count: 2 }, { upper: Infinity, count: 8 }])).toBe(1);
    expect(quantile(0.25, [4, 1, 3, 2])).toBe(1.75);
  });

  it('functions: absent, label_replace, clamp, scalar, time', () => {
    expect(instant('absent(nope{job="x"})', 10)).toEqual([{ job: 'x', v: 1 }]);
    expect(instant('label_replace(g, "dst", "$1-z", "job", "(.*)")', 10)).toEqual([{ __name__: 'g', dst: 'a-z', job: 'a', v: 3 }]);
    expect(instant('clamp_max(c_total, 50)', 62)).toEqual([
      { i: '1', job: 'a', v: 15 },
      { i: '2', job: 'a', v: 50 },
    ]);
    expect(instant('scalar(g) * 2', 10)).toBe(6);
    expect(instant('time()', 10)).toBe(10);
    expect(instant('timestamp(g)', 40)).toEqual([{ job: 'a', v: 31 }]);
  });

  it('subqueries evaluate at multiples of their step', () => {
    // max over (0, 60] at 20s steps of g: 3 (t=20), 5 (t=40, 60).
    expect(instant('max_over_time(g[60s:20s])', 60)).toEqual([{ job: 'a', v: 5 }]);
    expect(instant('count_over_time(g[60s:20s])', 60)).toEqual([{ job: 'a', v: 3 }]);
  });

  it('stops a subquery of absurd resolution: its steps count against maxSamples, and the deadline holds', () => {
    const e = parsePromQL('max_over_time(g[30d:1ms])');
    const t = 2_592_000_000;
    expect(() => evalInstant(e, t, source, { ...opts(t), maxSamples: 100_000 })).toThrow(
      expect.objectContaining({ kind: 'execution', message: 'query processing would load too many samples into memory in query execution' }),
    );
    expect(() => evalInstant(e, t, source, { ...opts(t), deadline: performance.now() + 50 })).toThrow(expect.objectContaining({ kind: 'timeout', message: 'query timed out in expression evaluation' }));
    // Refused before it runs when its steps alone pass the budget (as for the ruler's groups), not
    // found out step by step: with a deadline already past, a run would end in a timeout instead.
    const refusedUpFront = { kind: 'execution', message: 'query processing would load too many samples into memory in query execution' };
    const budget = (at: number) => ({ ...opts(at), maxSamples: 50_000_000, deadline: performance.now() - 1 });
    expect(() => evalInstant(parsePromQL('sum_over_time(vector(1)[1d:1ms])'), t, source, budget(t))).toThrow(expect.objectContaining(refusedUpFront));
    expect(() => evalRange(parsePromQL('sum_over_time(vector(1)[1h:1ms])'), 0, 3_600_000, 60_000, source, budget(0))).toThrow(expect.objectContaining(refusedUpFront));
    expect(() => evalInstant(parsePromQL('max_over_time(max_over_time(vector(1)[1d:1s])[1d:1s])'), t, source, budget(t))).toThrow(expect.objectContaining(refusedUpFront));
    // 61 range steps of 3.6 million subquery steps each pass 50 million; one of them does not.
    expect(evalInstant(parsePromQL('count_over_time(vector(1)[1h:1s])'), t, source, { ...opts(t), maxSamples: 50_000_000 }).result).toEqual([{ labels: L({}), t, v: 3600 }]);
    // Within the budget the same shape answers.
    expect(instant('max_over_time(g[60s:20s])', 60)).toEqual([{ job: 'a', v: 5 }]);
    expect(evalInstant(parsePromQL('count_over_time(g[60s:20s])'), 60_000, source, { ...opts(60_000), maxSamples: 3 }).result).toEqual([{ labels: L({ job: 'a' }), t: 60_000, v: 3 }]);
    expect(() => evalInstant(parsePromQL('count_over_time(g[60s:20s])'), 60_000, source, { ...opts(60_000), maxSamples: 2 })).toThrow(expect.objectContaining({ kind: 'execution' }));
  });

  it('range queries step through the window and know the fetch windows', () => {
    const r = evalRange(parsePromQL('g'), 0, 90_000, 30_000, source, { startMs: 0, endMs: 90_000, lookbackMs: 300_000, defaultSubqueryStepMs: 60_000 });
    expect(r.result).toEqual([{ labels: L({ __name__: 'g', job: 'a' }), t: [30_000, 60_000], v: [3, 5] }]);
    const w = selectorWindows(parsePromQL('rate(x[5m] offset 1m) + y'), { startMs: 1_000_000, endMs: 2_000_000, lookbackMs: 300_000, defaultSubqueryStepMs: 60_000 });
    expect(w.map((x) => [x.minMs, x.maxMs])).toEqual([
      [1_000_000 - 360_000, 2_000_000 - 60_000],
      [700_000, 2_000_000],
    ]);
  });
});

describe('Prometheus 3 experimental functions over time', () => {
  // Values 4, 1, 7, 1, 7, 3 at 10, 20, …, 60 s.
  const S = series({ __name__: 'x', a: '1' }, [[10, 4], [20, 1], [30, 7], [40, 1], [50, 7], [60, 3]]);
  const src = (sel: VectorSelector) => [S].filter((s) => matchLabels(s.labels, sel.matchers));
  const at60 = (q: string) => {
    const r = evalInstant(parsePromQL(q), 60_000, src, opts(60_000));
    if (r.resultType !== 'vector') throw new Error(r.resultType);
    return r.result.map((s) => ({ ...s.labels, v: s.v }));
  };

  it('first, ts_of_first/last, and the time of the last extreme (min and max repeat)', () => {
    expect(at60('first_over_time(x[1m])')).toEqual([{ __name__: 'x', a: '1', v: 4 }]);
    expect(at60('ts_of_first_over_time(x[1m])')).toEqual([{ a: '1', v: 10 }]);
    expect(at60('ts_of_last_over_time(x[1m])')).toEqual([{ a: '1', v: 60 }]);
    expect(at60('ts_of_min_over_time(x[1m])')).toEqual([{ a: '1', v: 40 }]);
    expect(at60('ts_of_max_over_time(x[1m])')).toEqual([{ a: '1', v: 50 }]);
    // The window (25, 60] starts at the 7 of 30 s.
    expect(at60('first_over_time(x[35s])')[0]!.v).toBe(7);
  });

  it('mad_over_time: the median of the distances from the median', () => {
    // Sorted 1 1 3 4 7 7: median 3.5; distances 0.5 2.5 2.5 0.5 3.5 3.5 → sorted 0.5 0.5 2.5 2.5 3.5 3.5: median 2.5.
    expect(at60('mad_over_time(x[1m])')).toEqual([{ a: '1', v: 2.5 }]);
  });

  it("double_exponential_smoothing: Holt's smoothing, factors checked as Prometheus does", () => {
    // s1 = 4, b = -3; then for 1, 7, 1, 7, 3 with sf = tf = 0.5.
    let s0 = 0, s1 = 4, b = -3;
    [1, 7, 1, 7, 3].forEach((x, i) => {
      if (i > 0) b = 0.5 * (s1 - s0) + 0.5 * b;
      [s0, s1] = [s1, 0.5 * x + 0.5 * (s1 + b)];
    });
    expect(at60('double_exponential_smoothing(x[1m], 0.5, 0.5)')).toEqual([{ a: '1', v: s1 }]);
    expect(() => at60('double_exponential_smoothing(x[1m], 1, 0.5)')).toThrow('invalid smoothing factor. Expected: 0 < sf < 1, got: 1.000000');
    expect(() => at60('double_exponential_smoothing(x[1m], 0.5, 0)')).toThrow('invalid trend factor. Expected: 0 < tf < 1, got: 0.000000');
    // Nothing selected: nothing to check.
    expect(at60('double_exponential_smoothing(nothing[1m], 5, 5)')).toEqual([]);
  });

  it('range queries series at a time give the step-by-step answers', () => {
    for (const q of ['ts_of_max_over_time(x[30s])', 'mad_over_time(x[40s])', 'first_over_time(x[20s])']) {
      const fast = evalRange(parsePromQL(q), 20_000, 60_000, 5_000, src, opts(20_000));
      const slow = evalRange(parsePromQL(q), 20_000, 60_000, 5_000, src, opts(20_000), true);
      expect(fast, q).toEqual(slow);
      expect(fast.result[0]!.t.length, q).toBeGreaterThan(5);
    }
  });
});

describe('sort_by_label and sort_by_label_desc (Prometheus 3 experimental)', () => {
  const hosts = ['web-10', 'web-9', 'web-100', 'db-2', 'web-9'].map((host, i) => series({ __name__: 'up', host, i: String(i) }, [[10, i]]));
  const src = (sel: VectorSelector) => hosts.filter((s) => matchLabels(s.labels, sel.matchers));
  const order = (q: string) => {
    const r = evalInstant(parsePromQL(q), 20_000, src, opts(20_000));
    if (r.resultType !== 'vector') throw new Error(r.resultType);
    return r.result.map((s) => `${s.labels.host}/${s.labels.i}`);
  };

  it('orders by the labels in natural order, digit runs as numbers, then by the whole label set; keeps __name__', () => {
    expect(order('sort_by_label(up, "host")')).toEqual(['db-2/3', 'web-9/1', 'web-9/4', 'web-10/0', 'web-100/2']);
    expect(order('sort_by_label_desc(up, "host")')).toEqual(['web-100/2', 'web-10/0', 'web-9/4', 'web-9/1', 'db-2/3']);
    expect(order('sort_by_label(up, "i", "host")')).toEqual(['web-10/0', 'web-9/1', 'web-100/2', 'db-2/3', 'web-9/4']);
    // No label named: the label sets' own order.
    expect(order('sort_by_label(up)')).toEqual(['db-2/3', 'web-10/0', 'web-100/2', 'web-9/1', 'web-9/4']);
    const r = evalInstant(parsePromQL('sort_by_label(up, "host")'), 20_000, src, opts(20_000));
    expect(r.resultType === 'vector' && r.result[0]!.labels.__name__).toBe('up');
  });

  it('natural order as Prometheus compares label values', () => {
    expect(naturalLess('a2', 'a10')).toBe(true);
    expect(naturalLess('a10', 'a2')).toBe(false);
    expect(naturalLess('a', 'a1')).toBe(true);
    expect(naturalLess('a1', 'a')).toBe(false);
    expect(naturalLess('x007', 'x7b')).toBe(true);
    expect(naturalLess('b', 'a9')).toBe(false);
    // Digit runs beyond Go's int compare as text.
    expect(naturalLess('99999999999999999999', '100000000000000000000')).toBe(false);
  });
});

describe('limitk and limit_ratio (Prometheus 3 experimental aggregations)', () => {
  // Twenty series of one name in label order (the order a selector gives them in), each with a sample every 15 s.
  const many: RawSeries[] = Array.from({ length: 20 }, (_, i) =>
    series({ __name__: 'm', grp: String(i % 2), id: String(i).padStart(2, '0') }, Array.from({ length: 10 }, (_, j): [number, number] => [1 + j * 15, i * 100 + j])),
  );
  const src = (sel: VectorSelector) => many.filter((s) => matchLabels(s.labels, sel.matchers));
  const ids = (q: string, t = 100) => {
    const r = evalInstant(parsePromQL(q), t * 1000, src, opts(t * 1000));
    if (r.resultType !== 'vector') throw new Error(r.resultType);
    return r.result.map((s) => s.labels.id!).sort();
  };

  it('limitk keeps the first k series of each group in input order; k below 1 keeps none', () => {
    expect(ids('limitk(3, m)')).toEqual(['00', '01', '02']);
    expect(ids('limitk by (grp) (2, m)')).toEqual(['00', '01', '02', '03']);
    expect(ids('limitk(2.9, m)')).toEqual(['00', '01']);
    expect(ids('limitk(0, m)')).toEqual([]);
    expect(ids('limitk(100, m)')).toHaveLength(20);
    // Samples keep their labels, __name__ included.
    const r = evalInstant(parsePromQL('limitk(1, m)'), 100_000, src, opts(100_000));
    expect(r.resultType === 'vector' && r.result[0]!.labels).toEqual(makeLabels(Object.entries({ __name__: 'm', grp: '0', id: '00' })));
    expect(() => ids('limitk(NaN, m)')).toThrow(/NaN/);
  });

  it('limit_ratio picks by label hash: r and -(1 - r) split the series, the same ones at every step', () => {
    const keep = ids('limit_ratio(0.3, m)');
    const rest = ids('limit_ratio(-0.7, m)');
    expect(keep.length).toBeGreaterThan(0);
    expect(rest.length).toBeGreaterThan(0);
    expect([...keep, ...rest].sort()).toEqual(many.map((s) => s.labels.id).sort());
    expect(ids('limit_ratio(0.3, m)', 130)).toEqual(keep);
    // A larger ratio keeps a superset.
    expect(ids('limit_ratio(0.6, m)')).toEqual(expect.arrayContaining(keep));
    expect(ids('limit_ratio(0, m)')).toEqual([]);
    const range = evalRange(parsePromQL('limit_ratio(0.3, m)'), 50_000, 140_000, 15_000, src, opts(50_000));
    expect(range.result.map((s) => s.labels.id).sort()).toEqual(keep);
    for (const s of range.result) expect(s.t).toHaveLength(7);
  });

  it('limit_ratio caps a ratio beyond ±1 with a warning; NaN is an execution error', () => {
    const annotations = new Annotations();
    const r = evalInstant(parsePromQL('limit_ratio(2, m)'), 100_000, src, { ...opts(100_000), annotations });
    expect(r.resultType === 'vector' && r.result).toHaveLength(20);
    expect(annotations.asStrings('limit_ratio(2, m)').warnings).toEqual(['PromQL warning: ratio value should be between -1 and 1, got 2, capping to 1 (1:13)']);
    expect(ids('limit_ratio(-5, m)')).toHaveLength(20);
    expect(() => ids('limit_ratio(NaN, m)')).toThrow('Ratio value is NaN');
  });

  it("hashes label sets as Prometheus's release builds do (xxHash64 of length-prefixed names and values)", async () => {
    // xxHash64 of no bytes, the published test vector.
    expect(labelsHash(makeLabels())).toBe(0xef46db3751d8e999n);
    // Names in order, whatever order the object has them in.
    expect(labelsHash(makeLabels([['b', '2'], ['a', '1']]))).toBe(labelsHash(makeLabels([['a', '1'], ['b', '2']])));
    expect(labelsHash(makeLabels([['a', '12']]))).not.toBe(labelsHash(makeLabels([['a1', '2']])));
    // The bytes hashed, spelled out: each name and value after its length as a uvarint (200 is 0xc8 0x01).
    const long = 'v'.repeat(200);
    const bytes = Uint8Array.from([1, 0x61, 2, 0x31, 0x32, 1, 0x62, 0xc8, 0x01, ...Buffer.from(long)]);
    expect(labelsHash(makeLabels([['b', long], ['a', '12']]))).toBe((await xxhash()).h64Raw(bytes));
  });
});

describe('incremental range evaluation', () => {
  // The same counter as typed arrays (as the reader hands them over).
  const typed: RawSeries[] = [{ labels: L({ __name__: 'k_total', i: '2' }), t: Float64Array.from([2, 17, 32, 47, 62], (s) => s * 1000), v: Float64Array.from([100, 110, 120, 130, 140]) }];
  const src = (sel: VectorSelector) => typed.filter((s) => matchLabels(s.labels, sel.matchers));
  const o = { startMs: 50_000, endMs: 80_000, lookbackMs: 300_000, defaultSubqueryStepMs: 15_000 };

  it('slides range windows forward: rate over typed arrays, hand-computed', () => {
    // At 50s the window (20s, 50s] holds 32s (120) and 47s (130): +10 over 15s, extrapolated by
    // 12s to the start (< 1.1 × 15s) and 3s to the end: 10 × 30/15 = 20 over 30s = 2/3 per second.
    // At 65s: 47s and 62s, the same shape. At 80s only 62s is left: no value.
    const r = evalRange(parsePromQL('rate(k_total[30s])'), 50_000, 80_000, 15_000, src, o);
    expect(r.result).toHaveLength(1);
    expect(r.result[0]!.t).toEqual([50_000, 65_000]);
    expect(r.result[0]!.v.map((x) => Math.round(x * 1e12) / 1e12)).toEqual([0.666666666667, 0.666666666667]);
  });

  it('gives every step of a range query the answer of an instant query at that time (windows moving back and forth)', () => {
    for (const q of ['rate(k_total[30s])', 'max_over_time(rate(k_total[20s])[40s:5s])', 'k_total - (k_total offset 15s)', 'sum_over_time(k_total[45s]) + count_over_time(k_total[1m])']) {
      const expr = parsePromQL(q);
      const range = evalRange(expr, 20_000, 95_000, 5_000, src, { ...o, startMs: 20_000, endMs: 95_000 });
      const byStep = new Map((range.result[0]?.t ?? []).map((t, i) => [t, range.result[0]!.v[i]]));
      for (let t = 20_000; t <= 95_000; t += 5_000) {
        const one = evalInstant(expr, t, src, { ...o, startMs: t, endMs: t });
        const v = one.resultType === 'vector' ? one.result[0]?.v : undefined;
        expect(byStep.get(t), `${q} at ${t}`).toBe(v);
      }
    }
  });
});
