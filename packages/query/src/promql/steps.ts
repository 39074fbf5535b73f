import type { Aggregate, AtModifier, Binary, Call, Expr, VectorMatching, VectorSelector } from './ast.ts';
import { isComparison, isSetOp } from './ast.ts';
import { KEEPS_METRIC_NAME } from './functions.ts';
import { compareLabels, copyLabels, labelsKey, omitLabels, pickLabels, type Labels } from '../labels.ts';
import { METRIC_NAME, dropMetricName, groupOf } from './labels.ts';
import type { RawSeries, SeriesPoints } from './eval.ts';
import type { Floats } from './floats.ts';
import { COUNTER_FUNCTIONS, OVER_TIME } from './range-functions.ts';
import { bucketBound, bucketQuantile } from './histogram-quantile.ts';
import { arith, compare } from './scalar-ops.ts';
import type { Annotations } from './annotations.ts';

/**
 * Series-at-a-time evaluation of range queries for the common shapes: instant selectors,
 * `fn(sel[r])` over range selectors, the simple aggregations (sum, avg, min, max, count, group,
 * stddev, stdvar), histogram_quantile, and binary operators (vector–number, and vector–vector
 * one-to-one). Each series is evaluated over every step in one pass (a sliding index window,
 * values into a Float64Array with a presence mask), and aggregations map each input series to
 * its group once, then accumulate per group and step.
 *
 * The answers are the step-by-step evaluator's bit for bit: every value is computed by the same
 * arithmetic in the same order (an aggregation adds its inputs in the order the step-by-step
 * evaluator sees them, so its input must be in series order — `ordered`). Anything else, and any
 * case where the step-by-step evaluator could raise an error or merge equal label sets (duplicate
 * label sets, duplicate matching signatures, equal bucket bounds), is not handled here: `compile`
 * returns undefined, or evaluation throws FALLBACK, and the caller evaluates step by step.
 */

export const FALLBACK: unique symbol = Symbol('promql step-wise fallback');

export interface StepContext {
  /** Evaluation times, ascending. */
  steps: Float64Array;
  lookbackMs: number;
  seriesOf(sel: VectorSelector): readonly RawSeries[];
  fresh(s: RawSeries): { t: Floats; v: Floats };
  refTime(at: AtModifier | undefined, ts: number, offsetMs: number): number;
  /** Collects the evaluation's warnings and infos, when given. */
  annotations?: Annotations | undefined;
}

/** One output series over all steps; `v` and `ok` may be reused by the producer after the call returns. */
type Emit = (labels: Labels, v: Float64Array, ok: Uint8Array) => void;

interface StepNode {
  /** The series come out in the order the step-by-step evaluator gives its samples at every step. */
  ordered: boolean;
  run(emit: Emit): void;
}

const SIMPLE_AGGREGATIONS = new Set(['sum', 'avg', 'min', 'max', 'count', 'group', 'stddev', 'stdvar']);

function numberOf(e: Expr): number | undefined {
  while (e.type === 'paren') e = e.expr;
  return e.type === 'number' ? e.value : undefined;
}

/**
 * A selector's reference time at every step. They never decrease (the steps ascend, offset is
 * fixed, @ pins them), so the per-series cursors below only ever move forward.
 */
function refTimes(cx: StepContext, at: AtModifier | undefined, offsetMs: number): Float64Array {
  const out = new Float64Array(cx.steps.length);
  for (let j = 0; j < out.length; j++) out[j] = cx.refTime(at, cx.steps[j]!, offsetMs);
  return out;
}

function compile(e: Expr, cx: StepContext): StepNode | undefined {
  switch (e.type) {
    case 'paren':
      return compile(e.expr, cx);
    case 'selector':
      return instantNode(e, cx);
    case 'call':
      return callNode(e, cx);
    case 'aggregate':
      return aggregateNode(e, cx);
    case 'binary':
      return binaryNode(e, cx);
    default:
      return undefined;
  }
}

function instantNode(sel: VectorSelector, cx: StepContext): StepNode {
  return {
    ordered: true,
    run(emit) {
      const n = cx.steps.length;
      const refs = refTimes(cx, sel.at, sel.offsetMs);
      const out = new Float64Array(n);
      const ok = new Uint8Array(n);
      for (const s of cx.seriesOf(sel)) {
        const t = s.t;
        const v = s.v;
        const stale = s.stale;
        ok.fill(0);
        let i = 0;
        let any = false;
        for (let j = 0; j < n; j++) {
          const ref = refs[j]!;
          while (i < t.length && t[i]! <= ref) i++;
          const k = i - 1;
          if (k < 0 || t[k]! <= ref - cx.lookbackMs || stale?.[k]) continue;
          out[j] = v[k]!;
          ok[j] = 1;
          any = true;
        }
        if (any) emit(s.labels, out, ok);
      }
    },
  };
}

function callNode(c: Call, cx: StepContext): StepNode | undefined {
  const fn = OVER_TIME[c.func];
  if (fn) {
    const arg = c.args[0];
    if (!arg || arg.type !== 'matrix') return undefined;
    const sel = arg.selector;
    const range = arg.rangeMs;
    const keep = KEEPS_METRIC_NAME.has(c.func);
    const counterCheck = COUNTER_FUNCTIONS.has(c.func) ? cx.annotations : undefined;
    return {
      ordered: true,
      run(emit) {
        const raws = cx.seriesOf(sel);
        let nameless: Labels[] | undefined;
        if (!keep) {
          nameless = raws.map((r) => dropMetricName(r.labels));
          // Equal label sets without __name__ are an error at the steps where both have samples: step by step.
          if (new Set(nameless.map(labelsKey)).size !== nameless.length) throw FALLBACK;
        }
        const n = cx.steps.length;
        const ends = refTimes(cx, sel.at, sel.offsetMs);
        const out = new Float64Array(n);
        const ok = new Uint8Array(n);
        const win = { series: [], start: 0, end: 0 };
        for (let k = 0; k < raws.length; k++) {
          const f = cx.fresh(raws[k]!);
          const t = f.t;
          const v = f.v;
          ok.fill(0);
          let lo = 0;
          let hi = 0;
          let any = false;
          for (let j = 0; j < n; j++) {
            const end = ends[j]!;
            const start = end - range;
            while (lo < t.length && t[lo]! <= start) lo++;
            if (hi < lo) hi = lo;
            while (hi < t.length && t[hi]! <= end) hi++;
            if (hi <= lo) continue;
            win.start = start;
            win.end = end;
            const r = fn(t, v, lo, hi, win);
            if (r === undefined) continue;
            out[j] = r;
            ok[j] = 1;
            any = true;
          }
          if (!any) continue;
          counterCheck?.counterInput(raws[k]!.labels, arg);
          emit(keep ? raws[k]!.labels : nameless![k]!, out, ok);
        }
      },
    };
  }
  if (c.func === 'histogram_quantile') {
    const q = numberOf(c.args[0]!);
    const inner = c.args[1] && compile(c.args[1], cx);
    if (q === undefined || !inner) return undefined;
    const notes = cx.annotations;
    const bucketsArg = c.args[1]!;
    const forced = notes && (() => notes.forcedMonotonicity('', bucketsArg));
    return {
      ordered: false,
      run(emit) {
        const n = cx.steps.length;
        notes?.quantileParam(q, c.args[0]!);
        const groups = new Map<string, { labels: Labels; buckets: Array<{ upper: number; v: Float64Array; ok: Uint8Array }> }>();
        inner.run((labels, v, ok) => {
          const up = bucketBound(labels, notes, bucketsArg);
          if (up === undefined) return;
          const gl = omitLabels(labels, ['le', METRIC_NAME]);
          const key = labelsKey(gl);
          let g = groups.get(key);
          if (!g) groups.set(key, (g = { labels: gl, buckets: [] }));
          g.buckets.push({ upper: up, v: v.slice(), ok: ok.slice() });
        });
        const out = new Float64Array(n);
        const ok = new Uint8Array(n);
        for (const g of groups.values()) {
          // Equal (or NaN) bounds make the result depend on the order of the samples: step by step.
          const bounds = new Set<number>();
          for (const b of g.buckets) {
            if (Number.isNaN(b.upper) || bounds.has(b.upper)) throw FALLBACK;
            bounds.add(b.upper);
          }
          ok.fill(0);
          for (let j = 0; j < n; j++) {
            const present: Array<{ upper: number; count: number }> = [];
            for (const b of g.buckets) if (b.ok[j]) present.push({ upper: b.upper, count: b.v[j]! });
            if (present.length === 0) continue;
            out[j] = bucketQuantile(q, present, forced);
            ok[j] = 1;
          }
          emit(g.labels, out, ok);
        }
      },
    };
  }
  return undefined;
}

interface GroupState {
  labels: Labels;
  count: Float64Array;
  a: Float64Array;
  b: Float64Array;
  m: Float64Array | undefined;
}

function aggregateNode(a: Aggregate, cx: StepContext): StepNode | undefined {
  if (!SIMPLE_AGGREGATIONS.has(a.op)) return undefined;
  const inner = compile(a.expr, cx);
  if (!inner || !inner.ordered) return undefined;
  const op = a.op;
  const grouping = a.grouping;
  return {
    ordered: false,
    run(emit) {
      const n = cx.steps.length;
      const groups = new Map<string, GroupState>();
      let lastLabels: Labels | undefined;
      let lastGroup: GroupState | undefined;
      inner.run((labels, v, ok) => {
        let g: GroupState;
        if (labels === lastLabels) g = lastGroup!;
        else {
          const { labels: gl, key } = groupOf(labels, grouping);
          let found = groups.get(key);
          if (!found) {
            found = { labels: gl, count: new Float64Array(n), a: new Float64Array(n), b: new Float64Array(n), m: op === 'avg' ? new Float64Array(n) : undefined };
            groups.set(key, found);
          }
          g = found;
          lastLabels = labels;
          lastGroup = g;
        }
        const count = g.count;
        const A = g.a;
        const B = g.b;
        switch (op) {
          case 'sum':
          case 'avg': {
            // Kahan sum in A (compensation in B); avg also keeps the incremental mean for an overflowing sum.
            const M = g.m;
            for (let j = 0; j < n; j++) {
              if (!ok[j]) continue;
              const inc = v[j]!;
              const sum = A[j]!;
              const t = sum + inc;
              if (Number.isFinite(t)) B[j]! += Math.abs(sum) >= Math.abs(inc) ? sum - t + inc : inc - t + sum;
              A[j] = t;
              const c = ++count[j]!;
              if (M) M[j] = M[j]! + (inc / c - M[j]! / c);
            }
            break;
          }
          case 'min':
          case 'max': {
            const isMin = op === 'min';
            for (let j = 0; j < n; j++) {
              if (!ok[j]) continue;
              const x = v[j]!;
              if (count[j] === 0) A[j] = x;
              else if (isMin ? x < A[j]! || Number.isNaN(A[j]!) : x > A[j]! || Number.isNaN(A[j]!)) A[j] = x;
              count[j]!++;
            }
            break;
          }
          case 'count':
          case 'group':
            for (let j = 0; j < n; j++) if (ok[j]) count[j]!++;
            break;
          case 'stddev':
          case 'stdvar':
            for (let j = 0; j < n; j++) {
              if (!ok[j]) continue;
              const x = v[j]!;
              const c = ++count[j]!;
              const delta = x - A[j]!;
              A[j] = A[j]! + delta / c;
              B[j] = B[j]! + delta * (x - A[j]!);
            }
            break;
        }
      });
      const out = new Float64Array(n);
      const ok = new Uint8Array(n);
      for (const g of groups.values()) {
        const count = g.count;
        const A = g.a;
        const B = g.b;
        for (let j = 0; j < n; j++) {
          const c = count[j]!;
          ok[j] = c > 0 ? 1 : 0;
          if (c === 0) continue;
          switch (op) {
            case 'sum':
              out[j] = Number.isFinite(A[j]!) ? A[j]! + B[j]! : A[j]!;
              break;
            case 'avg':
              out[j] = Number.isFinite(A[j]!) ? (A[j]! + B[j]!) / c : g.m![j]!;
              break;
            case 'min':
            case 'max':
              out[j] = A[j]!;
              break;
            case 'count':
              out[j] = c;
              break;
            case 'group':
              out[j] = 1;
              break;
            case 'stdvar':
              out[j] = B[j]! / c;
              break;
            case 'stddev':
              out[j] = Math.sqrt(B[j]! / c);
              break;
          }
        }
        emit(g.labels, out, ok);
      }
    },
  };
}

function binaryNode(b: Binary, cx: StepContext): StepNode | undefined {
  if (isSetOp(b.op)) return undefined;
  const cmp = isComparison(b.op);
  const ln = numberOf(b.lhs);
  const rn = numberOf(b.rhs);
  if (ln !== undefined && rn !== undefined) return undefined;
  if (ln !== undefined || rn !== undefined) {
    const swap = ln !== undefined;
    const scalar = (swap ? ln : rn)!;
    const inner = compile(swap ? b.rhs : b.lhs, cx);
    if (!inner) return undefined;
    return {
      ordered: inner.ordered,
      run(emit) {
        const n = cx.steps.length;
        const out = new Float64Array(n);
        const ook = new Uint8Array(n);
        inner.run((labels, v, ok) => {
          let any = false;
          for (let j = 0; j < n; j++) {
            ook[j] = 0;
            if (!ok[j]) continue;
            const lv = swap ? scalar : v[j]!;
            const rv = swap ? v[j]! : scalar;
            if (cmp) {
              const keep = compare(b.op, lv, rv);
              if (b.bool) out[j] = keep ? 1 : 0;
              else if (keep) out[j] = v[j]!;
              else continue;
            } else out[j] = arith(b.op, lv, rv);
            ook[j] = 1;
            any = true;
          }
          if (any) emit(cmp && !b.bool ? labels : dropMetricName(labels), out, ook);
        });
      },
    };
  }
  const m: VectorMatching = b.matching ?? { card: 'one-to-one', on: false, labels: [], include: [] };
  if (m.card !== 'one-to-one') return undefined;
  const lhs = compile(b.lhs, cx);
  const rhs = lhs && compile(b.rhs, cx);
  if (!lhs || !rhs) return undefined;
  const ignored = [...m.labels, METRIC_NAME];
  const sig = (l: Labels) => labelsKey(m.on ? pickLabels(l, m.labels) : omitLabels(l, ignored));
  const dropName = !cmp || b.bool;
  return {
    ordered: lhs.ordered,
    run(emit) {
      const n = cx.steps.length;
      const right = new Map<string, { v: Float64Array; ok: Uint8Array }>();
      rhs.run((labels, v, ok) => {
        const k = sig(labels);
        // Duplicate signatures on the right are an error at the steps where both have samples: step by step.
        if (right.has(k)) throw FALLBACK;
        right.set(k, { v: v.slice(), ok: ok.slice() });
      });
      const matched = new Set<string>();
      const out = new Float64Array(n);
      const ook = new Uint8Array(n);
      lhs.run((labels, v, ok) => {
        const k = sig(labels);
        const r = right.get(k);
        if (!r) return;
        if (matched.has(k)) throw FALLBACK;
        matched.add(k);
        let any = false;
        for (let j = 0; j < n; j++) {
          ook[j] = 0;
          if (!ok[j] || !r.ok[j]) continue;
          const lv = v[j]!;
          const rv = r.v[j]!;
          if (cmp) {
            const keep = compare(b.op, lv, rv);
            if (b.bool) out[j] = keep ? 1 : 0;
            else if (!keep) continue;
            else out[j] = lv;
          } else out[j] = arith(b.op, lv, rv);
          ook[j] = 1;
          any = true;
        }
        if (!any) return;
        const base = dropName ? dropMetricName(labels) : copyLabels(labels);
        emit(m.on ? pickLabels(base, m.labels) : omitLabels(base, m.labels), out, ook);
      });
    },
  };
}

/**
 * A range query evaluated series at a time, or undefined when the expression (or the data) needs
 * the step-by-step evaluator. The result is evalRange's: series with at least one point, ordered
 * by labels.
 */
export function evalSteps(expr: Expr, cx: StepContext): SeriesPoints[] | undefined {
  const node = compile(expr, cx);
  if (!node) return undefined;
  const byKey = new Map<string, SeriesPoints>();
  try {
    node.run((labels, v, ok) => {
      const t: number[] = [];
      const vals: number[] = [];
      for (let j = 0; j < ok.length; j++) {
        if (!ok[j]) continue;
        t.push(cx.steps[j]!);
        vals.push(v[j]!);
      }
      if (t.length === 0) return;
      const k = labelsKey(labels);
      // Equal label sets: an error, or one series, depending on the steps: step by step.
      if (byKey.has(k)) throw FALLBACK;
      byKey.set(k, { labels, t, v: vals });
    });
  } catch (err) {
    if (err === FALLBACK) return undefined;
    throw err;
  }
  return [...byKey.values()].sort((x, y) => compareLabels(x.labels, y.labels));
}
