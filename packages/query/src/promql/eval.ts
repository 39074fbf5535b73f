import { FloeError } from '@floe/errors';
import type { Aggregate, AtModifier, Binary, Call, Expr, MatrixSelector, Subquery, VectorMatching, VectorSelector } from './ast.ts';
import { isComparison, isSetOp } from './ast.ts';
import { KEEPS_METRIC_NAME } from './functions.ts';
import { compareLabels, copyLabels, labelsKey, makeLabels, omitLabels, pickLabels, type Labels } from '../labels.ts';
import { LABEL_NAME_RE, METRIC_NAME, dropMetricName, formatFloat, groupOf } from './labels.ts';
import { cachedAnchoredRe2, type Re2Matcher } from '../re2.ts';
import { expandTemplate } from '../regex-template.ts';
import { quantile } from '../quantile.ts';
import { evalSteps } from './steps.ts';
import type { Annotations } from './annotations.ts';
import { ratioKeeps } from './series-hash.ts';
import { kahanSum, mean, windowValues, type Floats } from './floats.ts';
import { COUNTER_FUNCTIONS, OVER_TIME, doubleExponentialSmoothing, goFixed, linearRegression } from './range-functions.ts';
import { bucketBound, bucketQuantile, type Bucket } from './histogram-quantile.ts';
import { DAY_FNS, MATH_FNS, arith, compare } from './scalar-ops.ts';
import { checkRangeQueryType, checkRangeSteps, checkSubquerySteps, evalTimedOut, rangeStepCount, tooManySamples } from './query-limits.ts';
import { naturalLess, ordered } from './result-order.ts';

/**
 * The PromQL evaluator: Prometheus 3 semantics over series the caller fetched, with no I/O.
 *
 * Input is, per vector selector of the query, the raw series it selects (`SeriesSource`): label
 * sets with their samples in time order, staleness markers included. Evaluation is step by step
 * as in Prometheus's engine: an instant vector selector takes each series' newest sample in
 * (t - lookback, t] unless that sample is a staleness marker; a range selector takes the samples
 * in (t - range, t] (left-open windows, Prometheus 3), staleness markers left out; offset and @
 * move t; a subquery evaluates its expression at the multiples of its step inside its window.
 * Functions, aggregations and binary operators follow Prometheus's documentation and engine
 * behaviour (value order of operations, which results keep `__name__`, the matching errors).
 *
 * Times are integer milliseconds. Errors that Prometheus reports at execution are FloeError
 * `execution` (HTTP 422).
 *
 * What has semantics of its own lives beside this file: the range-vector functions
 * (range-functions.ts), histogram_quantile (histogram-quantile.ts), operators and element-wise
 * functions (scalar-ops.ts), compensated sums (floats.ts), result order (result-order.ts), and
 * the sample budget, deadline and range-query checks (query-limits.ts). steps.ts evaluates the
 * common shapes of range queries series at a time.
 */

/** Names other modules import from here (LogQL's metric evaluation, this folder's tests). */
export { arith, compare } from './scalar-ops.ts';
export { bucketQuantile } from './histogram-quantile.ts';
export { naturalLess } from './result-order.ts';

export interface RawSeries {
  labels: Labels;
  /** Sample times, ms, ascending. */
  t: Floats;
  v: Floats;
  /** Per sample: a staleness marker (OTLP flag no-recorded-value), true or 1. Absent: none. */
  stale?: ArrayLike<boolean | number>;
}

/** The series a selector selects (already filtered by its matchers), over at least the window `selectorWindows` asked for. */
export type SeriesSource = (selector: VectorSelector) => readonly RawSeries[];

export interface EvalOptions {
  /** Query start and end (ms): `@ start()` / `@ end()`; equal for an instant query. */
  startMs: number;
  endMs: number;
  /** Lookback delta of instant selectors, ms (Prometheus default 5m). */
  lookbackMs: number;
  /** Step of subqueries written without one (Prometheus: the global evaluation interval). */
  defaultSubqueryStepMs: number;
  /** Collects the warnings and infos of the evaluation (Prometheus's annotations), when given. */
  annotations?: Annotations;
  /**
   * Most points the evaluation may produce in subqueries and steps, each subquery step counting
   * at least one (Prometheus's --query.max-samples): more is 422 "too many samples". Absent: no limit.
   */
  maxSamples?: number;
  /** performance.now() past which the evaluation gives up (504), checked as it goes. Absent: none. */
  deadline?: number;
}

export interface Sample {
  labels: Labels;
  v: number;
}

export interface SeriesPoints {
  labels: Labels;
  t: number[];
  v: number[];
}

/** A series of a range vector: the samples lo ≤ i < hi of t / v (windows share their series' arrays). */
interface WindowSeries {
  labels: Labels;
  /** The labels without __name__, when known (range selectors compute them once per series). */
  nameless?: Labels;
  t: Floats;
  v: Floats;
  lo: number;
  hi: number;
}

interface Matrix {
  series: WindowSeries[];
  /** Distinct label sets even without __name__ (then functions need not check). */
  distinctNameless?: boolean;
  /** The window the series were cut to: (start, end]. */
  start: number;
  end: number;
}

type Value =
  | { kind: 'scalar'; v: number }
  | { kind: 'string'; s: string }
  | { kind: 'vector'; samples: Sample[] }
  | { kind: 'matrix'; m: Matrix };

export type InstantResult =
  | { resultType: 'scalar'; result: [number, number] }
  | { resultType: 'string'; result: [number, string] }
  | { resultType: 'vector'; result: Array<{ labels: Labels; t: number; v: number }> }
  | { resultType: 'matrix'; result: SeriesPoints[] };

export interface RangeResult {
  resultType: 'matrix';
  result: SeriesPoints[];
}

const execError = (message: string) => new FloeError('execution', message, { code: 'FLOE_ERR_PROMQL_EXECUTION' });

// ── fetch planning ────────────────────────────────────────────────────────────────────────────

export interface SelectorWindow {
  selector: VectorSelector;
  /** Samples needed: (minMs, maxMs]. */
  minMs: number;
  maxMs: number;
}

/**
 * For each vector selector of `expr`, the sample window a query over evaluation times
 * [startMs, endMs] reads: through offsets, @, ranges, subqueries and the lookback delta.
 */
export function selectorWindows(expr: Expr, opts: EvalOptions): SelectorWindow[] {
  const out: SelectorWindow[] = [];
  const atTime = (at: AtModifier | undefined, lo: number, hi: number): [number, number] => {
    if (!at) return [lo, hi];
    const t = pinnedTime(at, opts);
    return [t, t];
  };
  const walk = (e: Expr, lo: number, hi: number, range: number | undefined): void => {
    switch (e.type) {
      case 'selector': {
        const [a, b] = atTime(e.at, lo, hi);
        const back = range ?? opts.lookbackMs;
        out.push({ selector: e, minMs: a - e.offsetMs - back, maxMs: b - e.offsetMs });
        return;
      }
      case 'matrix':
        walk(e.selector, lo, hi, e.rangeMs);
        return;
      case 'subquery': {
        const [a, b] = atTime(e.at, lo, hi);
        walk(e.expr, a - e.offsetMs - e.rangeMs, b - e.offsetMs, undefined);
        return;
      }
      case 'paren':
      case 'unary':
        walk(e.expr, lo, hi, undefined);
        return;
      case 'call':
        for (const a of e.args) walk(a, lo, hi, undefined);
        return;
      case 'aggregate':
        if (e.param) walk(e.param, lo, hi, undefined);
        walk(e.expr, lo, hi, undefined);
        return;
      case 'binary':
        walk(e.lhs, lo, hi, undefined);
        walk(e.rhs, lo, hi, undefined);
        return;
      default:
        return;
    }
  };
  walk(expr, opts.startMs, opts.endMs, undefined);
  return out;
}

// ── helpers ───────────────────────────────────────────────────────────────────────────────────

/** The evaluation time an `@` modifier pins: its time, or the query's start or end. */
const pinnedTime = (at: AtModifier, opts: EvalOptions): number => (at.kind === 'time' ? at.ms : at.kind === 'start' ? opts.startMs : opts.endMs);

/** First index whose time is > x (from `lo` on). */
function upperBound(t: Floats, x: number, lo = 0): number {
  let hi = t.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (t[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The sample with label `name` set to `value`, or without it when `value` is empty. */
function withLabel(s: Sample, name: string, value: string): Sample {
  const labels = copyLabels(s.labels);
  if (value === '') delete labels[name];
  else labels[name] = value;
  return { labels, v: s.v };
}

function checkUnique(samples: Sample[]): void {
  const seen = new Set<string>();
  for (const s of samples) {
    const k = labelsKey(s.labels);
    if (seen.has(k)) throw execError('vector cannot contain metrics with the same labelset');
    seen.add(k);
  }
}

// ── the evaluator ─────────────────────────────────────────────────────────────────────────────

class Evaluator {
  readonly #source: SeriesSource;
  readonly #opts: EvalOptions;
  readonly #series = new Map<VectorSelector, readonly RawSeries[]>();
  readonly #fresh = new WeakMap<RawSeries, { t: Floats; v: Floats }>();
  /** Sliding windows of range selectors: per series, the window of the last step (lo, hi). */
  readonly #windows = new Map<
    MatrixSelector,
    { end: number; lo: Int32Array; hi: Int32Array; fresh: Array<{ t: Floats; v: Floats }>; nameless: Labels[]; distinctNameless: boolean }
  >();
  /** Instant selectors: per series, the index after the newest sample ≤ the last reference time. */
  readonly #cursors = new Map<VectorSelector, { ref: number; at: Int32Array }>();

  /** Points produced so far (EvalOptions.maxSamples), and calls of spend (the deadline is read every 1024th). */
  #spent = 0;
  #spends = 0;

  constructor(source: SeriesSource, opts: EvalOptions) {
    this.#source = source;
    this.#opts = opts;
  }

  /**
   * Counts `points` against maxSamples and looks at the deadline now and then: the evaluation runs
   * on the router's event loop, so a query of absurd resolution (`x[30d:1ms]`) must stop early
   * instead of holding it.
   */
  spend(points: number): void {
    this.#spent += points;
    if (this.#opts.maxSamples !== undefined && this.#spent > this.#opts.maxSamples) throw tooManySamples();
    if ((++this.#spends & 1023) === 0 && this.#opts.deadline !== undefined && performance.now() > this.#opts.deadline) {
      throw evalTimedOut();
    }
  }

  get annotations(): Annotations | undefined {
    return this.#opts.annotations;
  }

  seriesOf(sel: VectorSelector): readonly RawSeries[] {
    let s = this.#series.get(sel);
    if (!s) this.#series.set(sel, (s = this.#source(sel)));
    return s;
  }

  /** A series without its staleness markers (what range selectors see). */
  fresh(s: RawSeries): { t: Floats; v: Floats } {
    const stale = s.stale;
    if (!stale) return s;
    let f = this.#fresh.get(s);
    if (!f) {
      let n = 0;
      for (let i = 0; i < s.t.length; i++) if (!stale[i]) n++;
      if (n === s.t.length) f = s;
      else {
        const t = new Float64Array(n);
        const v = new Float64Array(n);
        for (let i = 0, j = 0; i < s.t.length; i++) {
          if (stale[i]) continue;
          t[j] = s.t[i]!;
          v[j++] = s.v[i]!;
        }
        f = { t, v };
      }
      this.#fresh.set(s, f);
    }
    return f;
  }

  /** Per series of the selector, the index after its newest sample at or before `ref` (advanced, not searched, when time moves forward). */
  positions(sel: VectorSelector, ref: number): Int32Array {
    const series = this.seriesOf(sel);
    let c = this.#cursors.get(sel);
    if (!c) {
      c = { ref, at: new Int32Array(series.length) };
      for (let k = 0; k < series.length; k++) c.at[k] = upperBound(series[k]!.t, ref);
      this.#cursors.set(sel, c);
      return c.at;
    }
    if (ref === c.ref) return c.at;
    const forward = ref > c.ref;
    for (let k = 0; k < series.length; k++) {
      const t = series[k]!.t;
      let i = c.at[k]!;
      if (forward) while (i < t.length && t[i]! <= ref) i++;
      else i = upperBound(t, ref);
      c.at[k] = i;
    }
    c.ref = ref;
    return c.at;
  }

  refTime(at: AtModifier | undefined, ts: number, offsetMs: number): number {
    return (at ? pinnedTime(at, this.#opts) : ts) - offsetMs;
  }

  eval(e: Expr, ts: number): Value {
    switch (e.type) {
      case 'number':
        return { kind: 'scalar', v: e.value };
      case 'string':
        return { kind: 'string', s: e.value };
      case 'paren':
        return this.eval(e.expr, ts);
      case 'unary': {
        const v = this.eval(e.expr, ts);
        if (e.op === '+') return v;
        if (v.kind === 'scalar') return { kind: 'scalar', v: -v.v };
        if (v.kind === 'vector') return { kind: 'vector', samples: v.samples.map((s) => ({ labels: dropMetricName(s.labels), v: -s.v })) };
        throw execError('unary minus needs a scalar or an instant vector');
      }
      case 'selector':
        return { kind: 'vector', samples: this.instant(e, ts) };
      case 'matrix':
        return { kind: 'matrix', m: this.range(e, ts) };
      case 'subquery':
        return { kind: 'matrix', m: this.subquery(e, ts) };
      case 'call':
        return this.call(e, ts);
      case 'aggregate':
        return { kind: 'vector', samples: this.aggregate(e, ts) };
      case 'binary':
        return this.binary(e, ts);
    }
  }

  /** Each series' newest sample in (ref − lookback, ref]; `withTimes` adds the sample's own time (for timestamp()). */
  instant(sel: VectorSelector, ts: number): Sample[];
  instant(sel: VectorSelector, ts: number, withTimes: true): Array<Sample & { t: number }>;
  instant(sel: VectorSelector, ts: number, withTimes = false): Sample[] {
    const ref = this.refTime(sel.at, ts, sel.offsetMs);
    const out: Array<Sample & { t?: number }> = [];
    const series = this.seriesOf(sel);
    const at = this.positions(sel, ref);
    const oldest = ref - this.#opts.lookbackMs;
    for (let k = 0; k < series.length; k++) {
      const s = series[k]!;
      const i = at[k]! - 1;
      if (i < 0 || s.t[i]! <= oldest || s.stale?.[i]) continue;
      // Only timestamp() asks for times: other samples keep the two-field shape.
      out.push(withTimes ? { labels: s.labels, v: s.v[i]!, t: s.t[i]! } : { labels: s.labels, v: s.v[i]! });
    }
    return out;
  }

  /** The samples in (end − range, end] of every series: sliding windows, advanced from the previous step's when time moves forward. */
  range(m: MatrixSelector, ts: number): Matrix {
    const sel = m.selector;
    const end = this.refTime(sel.at, ts, sel.offsetMs);
    const start = end - m.rangeMs;
    const raws = this.seriesOf(sel);
    let w = this.#windows.get(m);
    if (!w) {
      const nameless = raws.map((r) => dropMetricName(r.labels));
      const distinctNameless = new Set(nameless.map(labelsKey)).size === nameless.length;
      w = { end: -Infinity, lo: new Int32Array(raws.length), hi: new Int32Array(raws.length), fresh: raws.map((r) => this.fresh(r)), nameless, distinctNameless };
      this.#windows.set(m, w);
    }
    const forward = end >= w.end;
    const series: WindowSeries[] = [];
    for (let k = 0; k < raws.length; k++) {
      const f = w.fresh[k]!;
      const t = f.t;
      let lo: number;
      let hi: number;
      if (forward) {
        lo = w.lo[k]!;
        hi = w.hi[k]!;
        while (lo < t.length && t[lo]! <= start) lo++;
        if (hi < lo) hi = lo;
        while (hi < t.length && t[hi]! <= end) hi++;
      } else {
        lo = upperBound(t, start);
        hi = upperBound(t, end, lo);
      }
      w.lo[k] = lo;
      w.hi[k] = hi;
      if (hi > lo) series.push({ labels: raws[k]!.labels, nameless: w.nameless[k], t, v: f.v, lo, hi });
    }
    w.end = end;
    return { series, start, end, distinctNameless: w.distinctNameless };
  }

  subquery(sq: Subquery, ts: number): Matrix {
    const end = this.refTime(sq.at, ts, sq.offsetMs);
    const start = end - sq.rangeMs;
    const step = sq.stepMs ?? this.#opts.defaultSubqueryStepMs;
    let t = Math.floor(start / step) * step;
    if (t <= start) t += step;
    const byKey = new Map<string, SeriesPoints>();
    for (; t <= end; t += step) {
      const samples = stepSamples(this.eval(sq.expr, t));
      this.spend(Math.max(1, samples.length));
      collectStep(byKey, t, samples);
    }
    return { series: [...byKey.values()].map((p) => ({ labels: p.labels, t: p.t, v: p.v, lo: 0, hi: p.t.length })), start, end };
  }

  scalarArg(e: Expr, ts: number): number {
    const v = this.eval(e, ts);
    if (v.kind !== 'scalar') throw execError('expected a scalar argument');
    return v.v;
  }

  vectorArg(e: Expr, ts: number): Sample[] {
    const v = this.eval(e, ts);
    if (v.kind !== 'vector') throw execError('expected an instant vector argument');
    return v.samples;
  }

  stringArg(e: Expr, ts: number): string {
    const v = this.eval(e, ts);
    if (v.kind !== 'string') throw execError('expected a string argument');
    return v.s;
  }

  matrixArg(e: Expr, ts: number): Matrix {
    const v = this.eval(e, ts);
    if (v.kind !== 'matrix') throw execError('expected a range vector argument');
    return v.m;
  }

  call(c: Call, ts: number): Value {
    const f = c.func;
    const keep = KEEPS_METRIC_NAME.has(f);
    const name = (l: Labels) => (keep ? l : dropMetricName(l));
    const vec = (samples: Sample[]): Value => ({ kind: 'vector', samples });
    const mathFn = MATH_FNS[f];
    if (mathFn) return vec(this.vectorArg(c.args[0]!, ts).map((s) => ({ labels: name(s.labels), v: mathFn(s.v) })));
    const overTime = OVER_TIME[f];
    if (overTime) {
      const m = this.matrixArg(c.args[0]!, ts);
      const out: Sample[] = [];
      const counterCheck = COUNTER_FUNCTIONS.has(f) ? this.annotations : undefined;
      for (const s of m.series) {
        const v = overTime(s.t, s.v, s.lo, s.hi, m);
        if (v === undefined) continue;
        out.push({ labels: keep ? s.labels : (s.nameless ?? dropMetricName(s.labels)), v });
        counterCheck?.counterInput(s.labels, c.args[0]!);
      }
      if (!keep && !m.distinctNameless) checkUnique(out);
      return vec(out);
    }
    const dayFn = DAY_FNS[f];
    if (dayFn) {
      const input = c.args.length === 0 ? [{ labels: makeLabels(), v: ts / 1000 }] : this.vectorArg(c.args[0]!, ts);
      return vec(
        input.map((s) => ({ labels: dropMetricName(s.labels), v: Number.isNaN(s.v) ? NaN : dayFn(new Date(Math.trunc(s.v) * 1000)) })),
      );
    }
    switch (f) {
      case 'quantile_over_time': {
        const q = this.scalarArg(c.args[0]!, ts);
        const m = this.matrixArg(c.args[1]!, ts);
        if (m.series.length > 0) this.annotations?.quantileParam(q, c.args[0]!);
        return vec(m.series.map((s) => ({ labels: name(s.labels), v: quantile(q, windowValues(s.v, s.lo, s.hi)) })));
      }
      case 'double_exponential_smoothing': {
        const m = this.matrixArg(c.args[0]!, ts);
        const sf = this.scalarArg(c.args[1]!, ts);
        const tf = this.scalarArg(c.args[2]!, ts);
        if (m.series.length === 0) return vec([]);
        // As Prometheus compares them (a NaN factor passes and makes every result NaN).
        if (sf <= 0 || sf >= 1) throw execError(`invalid smoothing factor. Expected: 0 < sf < 1, got: ${goFixed(sf)}`);
        if (tf <= 0 || tf >= 1) throw execError(`invalid trend factor. Expected: 0 < tf < 1, got: ${goFixed(tf)}`);
        const out: Sample[] = [];
        for (const s of m.series) {
          const r = doubleExponentialSmoothing(s.v, s.lo, s.hi, sf, tf);
          if (r !== undefined) out.push({ labels: name(s.labels), v: r });
        }
        return vec(out);
      }
      case 'predict_linear': {
        const m = this.matrixArg(c.args[0]!, ts);
        const d = this.scalarArg(c.args[1]!, ts);
        const out: Sample[] = [];
        for (const s of m.series) {
          if (s.hi - s.lo < 2) continue;
          const [slope, intercept] = linearRegression(s.t, s.v, s.lo, s.hi, ts);
          out.push({ labels: name(s.labels), v: intercept + slope * d });
        }
        return vec(out);
      }
      case 'absent':
      case 'absent_over_time': {
        const arg = c.args[0]!;
        const present = f === 'absent' ? this.vectorArg(arg, ts).length > 0 : this.matrixArg(arg, ts).series.length > 0;
        if (present) return vec([]);
        return vec([{ labels: absentLabels(arg), v: 1 }]);
      }
      case 'histogram_quantile': {
        const q = this.scalarArg(c.args[0]!, ts);
        const notes = this.annotations;
        notes?.quantileParam(q, c.args[0]!);
        const groups = new Map<string, { labels: Labels; buckets: Bucket[] }>();
        for (const s of this.vectorArg(c.args[1]!, ts)) {
          const upper = bucketBound(s.labels, notes, c.args[1]!);
          if (upper === undefined) continue;
          const labels = omitLabels(s.labels, ['le', METRIC_NAME]);
          const k = labelsKey(labels);
          let g = groups.get(k);
          if (!g) groups.set(k, (g = { labels, buckets: [] }));
          g.buckets.push({ upper, count: s.v });
        }
        const forced = notes && (() => notes.forcedMonotonicity('', c.args[1]!));
        return vec([...groups.values()].map((g) => ({ labels: g.labels, v: bucketQuantile(q, g.buckets, forced) })));
      }
      case 'clamp': {
        const v = this.vectorArg(c.args[0]!, ts);
        const min = this.scalarArg(c.args[1]!, ts);
        const max = this.scalarArg(c.args[2]!, ts);
        if (max < min) return vec([]);
        return vec(v.map((s) => ({ labels: name(s.labels), v: Math.max(min, Math.min(max, s.v)) })));
      }
      case 'clamp_min': {
        const v = this.vectorArg(c.args[0]!, ts);
        const min = this.scalarArg(c.args[1]!, ts);
        return vec(v.map((s) => ({ labels: name(s.labels), v: Math.max(min, s.v) })));
      }
      case 'clamp_max': {
        const v = this.vectorArg(c.args[0]!, ts);
        const max = this.scalarArg(c.args[1]!, ts);
        return vec(v.map((s) => ({ labels: name(s.labels), v: Math.min(max, s.v) })));
      }
      case 'round': {
        const v = this.vectorArg(c.args[0]!, ts);
        const to = c.args[1] ? this.scalarArg(c.args[1], ts) : 1;
        const inv = 1 / to;
        return vec(v.map((s) => ({ labels: name(s.labels), v: Math.floor(s.v * inv + 0.5) / inv })));
      }
      case 'label_replace': {
        const v = this.vectorArg(c.args[0]!, ts);
        const [dst, repl, src, re] = c.args.slice(1).map((a) => this.stringArg(a, ts)) as [string, string, string, string];
        let regex: Re2Matcher;
        try {
          regex = cachedAnchoredRe2(re);
        } catch {
          throw execError(`invalid regular expression in label_replace(): ${re}`);
        }
        if (!LABEL_NAME_RE.test(dst)) throw execError(`invalid destination label name in label_replace(): ${dst}`);
        const out = v.map((s) => {
          const m = regex.exec(s.labels[src] ?? '');
          return m ? withLabel(s, dst, expandTemplate(repl, m)) : s;
        });
        checkUnique(out);
        return vec(out);
      }
      case 'label_join': {
        const v = this.vectorArg(c.args[0]!, ts);
        const [dst, sep, ...srcs] = c.args.slice(1).map((a) => this.stringArg(a, ts)) as [string, string, ...string[]];
        if (!LABEL_NAME_RE.test(dst)) throw execError(`invalid destination label name in label_join(): ${dst}`);
        const out = v.map((s) => withLabel(s, dst, srcs.map((l) => s.labels[l] ?? '').join(sep)));
        checkUnique(out);
        return vec(out);
      }
      case 'scalar': {
        const v = this.vectorArg(c.args[0]!, ts);
        return { kind: 'scalar', v: v.length === 1 ? v[0]!.v : NaN };
      }
      case 'vector':
        return vec([{ labels: makeLabels(), v: this.scalarArg(c.args[0]!, ts) }]);
      case 'time':
        return { kind: 'scalar', v: ts / 1000 };
      case 'pi':
        return { kind: 'scalar', v: Math.PI };
      case 'timestamp': {
        let arg = c.args[0]!;
        while (arg.type === 'paren') arg = arg.expr;
        if (arg.type === 'selector') return vec(this.instant(arg, ts, true).map((s) => ({ labels: dropMetricName(s.labels), v: s.t / 1000 })));
        return vec(this.vectorArg(arg, ts).map((s) => ({ labels: dropMetricName(s.labels), v: ts / 1000 })));
      }
      case 'sort':
      case 'sort_desc': {
        const v = [...this.vectorArg(c.args[0]!, ts)];
        const dir = f === 'sort' ? 1 : -1;
        v.sort((a, b) => (Number.isNaN(a.v) ? (Number.isNaN(b.v) ? 0 : 1) : Number.isNaN(b.v) ? -1 : dir * (a.v - b.v)));
        return vec(v);
      }
      case 'sort_by_label':
      case 'sort_by_label_desc': {
        const v = [...this.vectorArg(c.args[0]!, ts)];
        const names = c.args.slice(1).map((a) => this.stringArg(a, ts));
        const dir = f === 'sort_by_label' ? 1 : -1;
        // Each named label in natural order (digit runs as numbers), then the whole label set.
        v.sort((a, b) => {
          for (const n of names) {
            const x = a.labels[n] ?? '';
            const y = b.labels[n] ?? '';
            if (x !== y) return dir * (naturalLess(x, y) ? -1 : 1);
          }
          return dir * compareLabels(a.labels, b.labels);
        });
        return vec(v);
      }
      default:
        throw new FloeError('not_implemented', `function ${f} is not supported`, { code: 'FLOE_ERR_PROMQL_UNSUPPORTED' });
    }
  }

  aggregate(a: Aggregate, ts: number): Sample[] {
    const input = this.vectorArg(a.expr, ts);
    const groups = new Map<string, { labels: Labels; samples: Sample[] }>();
    let countLabel: string | undefined;
    if (a.op === 'count_values') {
      countLabel = this.stringArg(a.param!, ts);
      if (!LABEL_NAME_RE.test(countLabel)) throw execError(`invalid label name ${JSON.stringify(countLabel)}`);
    }
    for (const s of input) {
      const group = groupOf(s.labels, a.grouping);
      let labels = group.labels;
      let k = group.key;
      if (countLabel !== undefined) {
        labels = copyLabels(labels);
        labels[countLabel] = formatFloat(s.v);
        k = labelsKey(labels);
      }
      let g = groups.get(k);
      if (!g) groups.set(k, (g = { labels, samples: [] }));
      g.samples.push(s);
    }
    const out: Sample[] = [];
    switch (a.op) {
      case 'topk':
      case 'bottomk':
      case 'limitk': {
        const kf = this.scalarArg(a.param!, ts);
        if (Number.isNaN(kf)) throw execError(`Parameter value is NaN for ${a.op}`);
        const k = Math.trunc(kf);
        if (k < 1) return [];
        // limitk: the first k of each group, in input order (Prometheus's; the order selectors give series in).
        if (a.op === 'limitk') {
          for (const g of groups.values()) for (const s of g.samples.slice(0, k)) out.push(s);
          return out;
        }
        const top = a.op === 'topk';
        for (const g of groups.values()) {
          const sorted = [...g.samples].sort((x, y) => {
            if (Number.isNaN(x.v)) return Number.isNaN(y.v) ? 0 : 1;
            if (Number.isNaN(y.v)) return -1;
            return top ? y.v - x.v : x.v - y.v;
          });
          for (const s of sorted.slice(0, k)) out.push(s);
        }
        return out;
      }
      case 'quantile': {
        const q = this.scalarArg(a.param!, ts);
        if (groups.size > 0) this.annotations?.quantileParam(q, a.param!);
        for (const g of groups.values()) out.push({ labels: g.labels, v: quantile(q, g.samples.map((s) => s.v)) });
        return out;
      }
      case 'limit_ratio': {
        const p = this.scalarArg(a.param!, ts);
        if (Number.isNaN(p)) throw execError('Ratio value is NaN');
        if (p === 0) return [];
        const r = Math.max(-1, Math.min(1, p));
        if (r !== p) this.annotations?.invalidRatio(p, r, a.param!);
        // The same series at every step: the choice depends on the labels alone (series-hash.ts).
        for (const g of groups.values()) for (const s of g.samples) if (ratioKeeps(r, s.labels)) out.push(s);
        return out;
      }
      default:
        break;
    }
    for (const g of groups.values()) {
      const vals = g.samples.map((s) => s.v);
      let v: number;
      switch (a.op) {
        case 'sum':
          v = kahanSum(vals);
          break;
        case 'avg':
          v = mean(vals);
          break;
        case 'min':
          v = vals[0]!;
          for (const x of vals) if (x < v || Number.isNaN(v)) v = x;
          break;
        case 'max':
          v = vals[0]!;
          for (const x of vals) if (x > v || Number.isNaN(v)) v = x;
          break;
        case 'count':
        case 'count_values':
          v = vals.length;
          break;
        case 'group':
          v = 1;
          break;
        case 'stddev':
        case 'stdvar': {
          let count = 0;
          let mean = 0;
          let acc = 0;
          for (const x of vals) {
            count++;
            const delta = x - mean;
            mean += delta / count;
            acc += delta * (x - mean);
          }
          v = a.op === 'stdvar' ? acc / count : Math.sqrt(acc / count);
          break;
        }
        default:
          throw new FloeError('internal', `aggregation ${a.op}`);
      }
      out.push({ labels: g.labels, v });
    }
    return out;
  }

  binary(b: Binary, ts: number): Value {
    const l = this.eval(b.lhs, ts);
    const r = this.eval(b.rhs, ts);
    if (l.kind === 'scalar' && r.kind === 'scalar') {
      if (isComparison(b.op)) return { kind: 'scalar', v: compare(b.op, l.v, r.v) ? 1 : 0 };
      return { kind: 'scalar', v: arith(b.op, l.v, r.v) };
    }
    if (l.kind === 'vector' && r.kind === 'vector') return { kind: 'vector', samples: this.vectorBinary(b, l.samples, r.samples) };
    const swap = l.kind === 'scalar';
    const vecSamples = (swap ? r : l) as { kind: 'vector'; samples: Sample[] };
    const scalar = ((swap ? l : r) as { kind: 'scalar'; v: number }).v;
    const out: Sample[] = [];
    const cmp = isComparison(b.op);
    for (const s of vecSamples.samples) {
      const lv = swap ? scalar : s.v;
      const rv = swap ? s.v : scalar;
      if (cmp) {
        const keep = compare(b.op, lv, rv);
        if (b.bool) out.push({ labels: dropMetricName(s.labels), v: keep ? 1 : 0 });
        else if (keep) out.push({ labels: s.labels, v: s.v });
      } else {
        out.push({ labels: dropMetricName(s.labels), v: arith(b.op, lv, rv) });
      }
    }
    return { kind: 'vector', samples: out };
  }

  vectorBinary(b: Binary, lhs: Sample[], rhs: Sample[]): Sample[] {
    const m: VectorMatching = b.matching ?? { card: 'one-to-one', on: false, labels: [], include: [] };
    const sig = (l: Labels) => labelsKey(m.on ? pickLabels(l, m.labels) : omitLabels(l, [...m.labels, METRIC_NAME]));
    if (isSetOp(b.op)) {
      if (b.op === 'and') {
        const right = new Set(rhs.map((s) => sig(s.labels)));
        return lhs.filter((s) => right.has(sig(s.labels)));
      }
      if (b.op === 'unless') {
        const right = new Set(rhs.map((s) => sig(s.labels)));
        return lhs.filter((s) => !right.has(sig(s.labels)));
      }
      const left = new Set(lhs.map((s) => sig(s.labels)));
      return [...lhs, ...rhs.filter((s) => !left.has(sig(s.labels)))];
    }
    const oneToMany = m.card === 'one-to-many';
    const many = oneToMany ? rhs : lhs;
    const one = oneToMany ? lhs : rhs;
    const oneBySig = new Map<string, Sample>();
    for (const s of one) {
      const k = sig(s.labels);
      if (oneBySig.has(k)) {
        const side = oneToMany ? 'left' : 'right';
        throw execError(
          `found duplicate series for the match group ${k.replaceAll('\u0000', '=').replaceAll('\u0001', ',')} on the ${side} hand-side of the operation; many-to-many matching not allowed: matching labels must be unique on one side`,
        );
      }
      oneBySig.set(k, s);
    }
    const cmp = isComparison(b.op);
    const dropName = !cmp || b.bool;
    const matched = new Set<string>();
    const outKeys = new Set<string>();
    const out: Sample[] = [];
    for (const s of many) {
      const k = sig(s.labels);
      const o = oneBySig.get(k);
      if (!o) continue;
      const lv = oneToMany ? o.v : s.v;
      const rv = oneToMany ? s.v : o.v;
      let value: number;
      if (cmp) {
        const keep = compare(b.op, lv, rv);
        if (b.bool) value = keep ? 1 : 0;
        else if (!keep) continue;
        else value = lv;
      } else {
        value = arith(b.op, lv, rv);
      }
      let labels = dropName ? dropMetricName(s.labels) : copyLabels(s.labels);
      if (m.card === 'one-to-one') {
        if (matched.has(k)) throw execError('multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)');
        matched.add(k);
        labels = m.on ? pickLabels(labels, m.labels) : omitLabels(labels, m.labels);
      } else {
        labels = copyLabels(labels);
        for (const inc of m.include) {
          const v = o.labels[inc];
          if (v !== undefined && v !== '') labels[inc] = v;
          else delete labels[inc];
        }
        const ok = labelsKey(labels);
        if (outKeys.has(ok)) throw execError('multiple matches for labels: grouping labels must ensure unique matches');
        outKeys.add(ok);
      }
      out.push({ labels, v: value });
    }
    return out;
  }
}

function absentLabels(arg: Expr): Labels {
  const sel = arg.type === 'selector' ? arg : arg.type === 'matrix' ? arg.selector : undefined;
  const out = makeLabels();
  if (!sel) return out;
  const conflicting = new Set<string>();
  for (const m of sel.matchers) {
    if (m.name === METRIC_NAME || m.op !== '=') continue;
    if (m.name in out) conflicting.add(m.name);
    else if (m.value !== '') out[m.name] = m.value;
  }
  for (const c of conflicting) delete out[c];
  return out;
}

// ── entry points ──────────────────────────────────────────────────────────────────────────────

/** An instant query at `timeMs` (opts.startMs = opts.endMs = timeMs). */
export function evalInstant(expr: Expr, timeMs: number, source: SeriesSource, opts: EvalOptions): InstantResult {
  checkSubquerySteps(expr, 1, opts);
  const ev = new Evaluator(source, opts);
  const v = ev.eval(expr, timeMs);
  switch (v.kind) {
    case 'scalar':
      return { resultType: 'scalar', result: [timeMs, v.v] };
    case 'string':
      return { resultType: 'string', result: [timeMs, v.s] };
    case 'vector':
      checkUnique(v.samples);
      return { resultType: 'vector', result: ordered(expr, v.samples).map((s) => ({ labels: s.labels, t: timeMs, v: s.v })) };
    case 'matrix':
      return {
        resultType: 'matrix',
        result: v.m.series.map((s) => ({ labels: s.labels, t: windowValues(s.t, s.lo, s.hi), v: windowValues(s.v, s.lo, s.hi) })).sort((a, b) => compareLabels(a.labels, b.labels)),
      };
  }
}

/** A step's value as samples: a scalar is one sample without labels; a string or matrix none. */
function stepSamples(v: Value): Sample[] {
  return v.kind === 'vector' ? v.samples : v.kind === 'scalar' ? [{ labels: makeLabels(), v: v.v }] : [];
}

/** Appends a step's samples to their series, keyed by label set (steps come in time order). */
function collectStep(byKey: Map<string, SeriesPoints>, t: number, samples: readonly Sample[]): void {
  for (const s of samples) {
    const k = labelsKey(s.labels);
    let p = byKey.get(k);
    if (!p) byKey.set(k, (p = { labels: s.labels, t: [], v: [] }));
    p.t.push(t);
    p.v.push(s.v);
  }
}

/** A range query: evaluation at start, start + step, …, ≤ end (`stepwise`: never series at a time, for tests). */
export function evalRange(expr: Expr, startMs: number, endMs: number, stepMs: number, source: SeriesSource, opts: EvalOptions, stepwise = false): RangeResult {
  // Again here, as a caller may not have checked: a zero step would never end.
  checkRangeSteps(startMs, endMs, stepMs);
  checkRangeQueryType(expr);
  checkSubquerySteps(expr, rangeStepCount(startMs, endMs, stepMs), opts);
  const ev = new Evaluator(source, opts);
  // The common shapes series at a time (steps.ts); the same answers, or undefined.
  if (!stepwise && startMs <= endMs) {
    const times: number[] = [];
    for (let t = startMs; t <= endMs; t += stepMs) times.push(t);
    const cx = { steps: Float64Array.from(times), lookbackMs: opts.lookbackMs, annotations: opts.annotations, seriesOf: (s: VectorSelector) => ev.seriesOf(s), fresh: (s: RawSeries) => ev.fresh(s), refTime: (a: AtModifier | undefined, ts: number, o: number) => ev.refTime(a, ts, o) };
    const fast = evalSteps(expr, cx);
    if (fast) return { resultType: 'matrix', result: fast };
  }
  const byKey = new Map<string, SeriesPoints>();
  for (let t = startMs; t <= endMs; t += stepMs) {
    const v = ev.eval(expr, t);
    if (v.kind === 'vector') checkUnique(v.samples);
    const samples = stepSamples(v);
    ev.spend(samples.length);
    collectStep(byKey, t, samples);
  }
  return { resultType: 'matrix', result: [...byKey.values()].sort((a, b) => compareLabels(a.labels, b.labels)) };
}
