import { describe, expect, it } from 'vitest';
import type { AtModifier, VectorSelector } from './ast.ts';
import { evalRange, type RawSeries } from './eval.ts';
import { makeLabels } from '../labels.ts';
import { parsePromQL } from './parse.ts';
import { matchLabels } from './series.ts';
import { evalSteps } from './steps.ts';

/** Deterministic pseudo-random numbers. */
function rng(seed: number) {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

/** Counters with resets, gauges (some NaN, Inf, staleness markers, gaps), classic histograms. */
function dataset(seed: number): RawSeries[] {
  const r = rng(seed);
  const out: RawSeries[] = [];
  const points = (kind: 'counter' | 'gauge' | 'bucket', scale = 1) => {
    const t: number[] = [];
    const v: number[] = [];
    const stale: boolean[] = [];
    let ts = Math.floor(r() * 20_000);
    let acc = 0;
    while (ts < 1_800_000) {
      if (r() < 0.05) ts += 200_000 + Math.floor(r() * 400_000);
      const isStale = kind === 'gauge' && r() < 0.03;
      if (kind === 'gauge') v.push(isStale ? NaN : r() < 0.02 ? NaN : r() < 0.01 ? Infinity : Math.round((r() - 0.3) * 1000) / 7);
      else {
        acc = r() < 0.03 ? Math.floor(r() * 3) : acc + Math.floor(r() * 10 * scale);
        v.push(acc);
      }
      t.push(ts);
      stale.push(isStale);
      ts += 10_000 + Math.floor(r() * 20_000);
    }
    return { t: Float64Array.from(t), v: Float64Array.from(v), stale };
  };
  for (const job of ['a', 'b', 'c']) {
    for (let i = 0; i < 4; i++) {
      for (const code of ['200', '500']) out.push({ labels: makeLabels(Object.entries({ __name__: 'req_total', job, instance: `i${i}`, code })), ...points('counter') });
      out.push({ labels: makeLabels(Object.entries({ __name__: 'mem', job, instance: `i${i}` })), ...points('gauge') });
      if (i % 2 === 0) {
        for (const [k, le] of ['0.1', '1', '10', '+Inf'].entries()) {
          out.push({ labels: makeLabels(Object.entries({ __name__: 'lat_bucket', job, instance: `i${i}`, le })), ...points('bucket', k + 1) });
        }
      }
    }
  }
  return out;
}

const QUERIES = [
  'req_total',
  'mem',
  'mem offset 2m',
  'mem @ 600',
  'sum by (job) (rate(req_total[5m]))',
  'sum by (job) (rate(req_total{code=~"5.."}[5m])) / sum by (job) (rate(req_total[5m]))',
  'sum by (job) (rate(req_total[5m])) > bool 0.5',
  'sum by (job) (rate(req_total[5m])) > 0.5',
  'histogram_quantile(0.99, sum by (le, job) (rate(lat_bucket[5m])))',
  'histogram_quantile(0.5, sum by (le) (rate(lat_bucket{job="a"}[5m])))',
  'histogram_quantile(0.9, rate(lat_bucket[3m]))',
  'sum by (code) (rate(req_total{instance="i1", code!="200"}[5m]))',
  'avg by (job) (mem)',
  'min by (job) (mem)',
  'max without (instance) (mem)',
  'count(mem)',
  'group by (job) (mem)',
  'stddev by (job) (mem)',
  'stdvar(mem)',
  'sum(mem) * 2',
  '2 - sum by (instance) (mem)',
  'mem > 10',
  'mem < bool 10',
  'increase(req_total[10m])',
  'delta(mem[4m])',
  'irate(req_total[1m])',
  'idelta(mem[2m])',
  'deriv(mem[5m])',
  'changes(mem[5m])',
  'resets(req_total[5m])',
  'avg_over_time(mem[3m])',
  'sum_over_time(mem[3m])',
  'min_over_time(mem[3m])',
  'max_over_time(mem[3m])',
  'count_over_time(mem[3m])',
  'last_over_time(mem[3m])',
  'present_over_time(mem[3m])',
  'stddev_over_time(mem[3m])',
  'rate(req_total[5m] offset 1m)',
  'sum(rate(req_total[5m] @ 900))',
  'sum by (job) (mem) / on (job) sum by (job) (rate(req_total[5m]))',
  'sum by (job, instance) (mem) / ignoring (instance) sum by (job, instance) (mem)',
  'mem / mem',
  'mem == bool mem',
  'rate(req_total[5m]) / ignoring (code) rate(req_total[5m])',
  'sum by (job) (mem > 0)',
  'avg(rate(req_total[5m]) * 60)',
  'sum by (instance) (-mem)',
  'abs(mem)',
  'topk(2, mem)',
];

/** What steps.ts leaves to the step-by-step evaluator; every other query must take the fast path. */
const STEP_BY_STEP = new Set([
  // Shapes it does not compile: topk, unary minus, functions other than the *_over_time / rate family.
  'topk(2, mem)',
  'sum by (instance) (-mem)',
  'abs(mem)',
  // Several right-hand series per signature: Prometheus's many-to-many error, raised step by step.
  'sum by (job, instance) (mem) / ignoring (instance) sum by (job, instance) (mem)',
  'rate(req_total[5m]) / ignoring (code) rate(req_total[5m])',
]);

const STEP_MS = 15_000;
const END_MS = 1_900_000;

/** The context evalRange gives evalSteps: staleness markers dropped, @ pinned to the query's start or end. */
function stepContext(source: (sel: VectorSelector) => RawSeries[]) {
  const steps: number[] = [];
  for (let t = 0; t <= END_MS; t += STEP_MS) steps.push(t);
  return {
    steps: Float64Array.from(steps),
    lookbackMs: 300_000,
    seriesOf: source,
    fresh: (s: RawSeries) => {
      const keep = Array.from(s.t, (_t, i) => i).filter((i) => !s.stale?.[i]);
      return { t: keep.map((i) => s.t[i]!), v: keep.map((i) => s.v[i]!) };
    },
    refTime: (at: AtModifier | undefined, ts: number, offsetMs: number) =>
      (at === undefined ? ts : at.kind === 'time' ? at.ms : at.kind === 'start' ? 0 : END_MS) - offsetMs,
  };
}

describe('series-at-a-time evaluation (steps.ts)', () => {
  for (const seed of [1, 2, 3]) {
    const data = dataset(seed);
    const source = (sel: VectorSelector) => data.filter((s) => matchLabels(s.labels, sel.matchers));
    for (const q of QUERIES) {
      it(`gives the step-by-step answer, bit for bit: ${q} (seed ${seed})`, () => {
        const expr = parsePromQL(q);
        const opts = { startMs: 0, endMs: END_MS, lookbackMs: 300_000, defaultSubqueryStepMs: 60_000 };
        // Otherwise the comparison below would hold by comparing the step-by-step evaluator with itself.
        const fast = evalSteps(expr, stepContext(source));
        if (STEP_BY_STEP.has(q)) expect(fast).toBeUndefined();
        else expect(fast).toBeDefined();
        let want: unknown;
        try {
          want = evalRange(expr, 0, END_MS, STEP_MS, source, opts, true);
        } catch (err) {
          want = String(err);
        }
        let got: unknown;
        try {
          got = evalRange(expr, 0, END_MS, STEP_MS, source, opts);
        } catch (err) {
          got = String(err);
        }
        // Object.is per value: NaN equals NaN, 0 and -0 differ.
        expect(got).toEqual(want);
        if (fast) expect(fast).toEqual((want as { result: unknown }).result);
        if (typeof want === 'object') {
          const w = (want as { result: Array<{ v: number[] }> }).result;
          const g = (got as { result: Array<{ v: number[] }> }).result;
          for (let i = 0; i < w.length; i++) for (let j = 0; j < w[i]!.v.length; j++) expect(Object.is(g[i]!.v[j], w[i]!.v[j])).toBe(true);
        }
      });
    }
  }

  it('handles the common shapes without the step-by-step evaluator', () => {
    const data = dataset(4);
    const source = (sel: VectorSelector) => data.filter((s) => matchLabels(s.labels, sel.matchers));
    const cx = (steps: number[]) => ({
      steps: Float64Array.from(steps),
      lookbackMs: 300_000,
      seriesOf: source,
      fresh: (s: RawSeries) => s,
      refTime: (_a: unknown, ts: number, o: number) => ts - o,
    });
    expect(evalSteps(parsePromQL('sum by (job) (rate(req_total[5m]))'), cx([600_000, 615_000]))).toHaveLength(3);
    expect(evalSteps(parsePromQL('topk(2, mem)'), cx([600_000]))).toBeUndefined();
    // Label sets equal without __name__ at the same step: left to the step-by-step evaluator's error.
    const twins: RawSeries[] = ['a', 'b'].map((name) => ({ labels: makeLabels(Object.entries({ __name__: name, x: '1' })), t: [0, 60_000, 120_000], v: [1, 2, 3] }));
    const twinCx = { ...cx([120_000]), seriesOf: (sel: VectorSelector) => twins.filter((s) => matchLabels(s.labels, sel.matchers)) };
    const twinQuery = parsePromQL('sum(rate({__name__=~"a|b"}[5m]))');
    expect(evalSteps(twinQuery, twinCx)).toBeUndefined();
    expect(() => evalRange(twinQuery, 120_000, 120_000, 15_000, (sel) => twinCx.seriesOf(sel), { startMs: 120_000, endMs: 120_000, lookbackMs: 300_000, defaultSubqueryStepMs: 60_000 })).toThrow(
      /same labelset/,
    );
  });
});
