import { FloeError } from '@floe/errors';
import {
  SAMPLE_COLUMNS as C,
  type AggregateNode,
  type BinaryNode,
  type LabelReplaceNode,
  type MetricNode,
  type MetricQuery,
  type PartialKind,
  type RangeNode,
  type SampleWindows,
} from '../ir/log-metrics.ts';
import { cachedAnchoredRe2 } from '../re2.ts';
import { expandTemplate } from '../regex-template.ts';
import { compareLabels, copyLabels, labelsKey, makeLabels, omitLabels, pickLabels, type Labels } from '../labels.ts';
import { quantile } from '../quantile.ts';
import { isComparison, isSetOp } from '../promql/ast.ts';
import { arith as arithOp, compare as compareOp } from '../promql/eval.ts';

/**
 * Evaluation of a LogQL metric query over the partial aggregates its leaves' SQL returned
 * (ir/log-metrics.ts explains the split). Pure: no I/O, no clock; the router runs the SQL and
 * hands the rows in. A series is a label set and its points by step index k (time start + k·step);
 * a step without a value has no point. What happens here:
 *
 * - range functions: each window's sub-buckets are merged (sums, counts, min/max, Chan's merge of
 *   count/mean/M2 for stddev/stdvar, earliest/latest for first/last, value lists for quantiles)
 *   and finished (rate and bytes_rate divide by the window length in seconds). Windows slide
 *   over each series' sub-buckets, so the work grows with sub-buckets plus windows, not their
 *   product; quantiles, which gather every value of each window, have a budget
 *   (MAX_QUANTILE_VALUES, 422 above it);
 * - vector aggregations per step: sum, avg, min, max, count, stddev and stdvar (population), over
 *   the `by` labels (none: one group; `without ()`: every label set its own group); topk/bottomk
 *   keep the k highest/lowest series of each group at each step; sort/sort_desc order series by
 *   the value at each series' latest step;
 * - binary operators with Prometheus's rules: scalar/vector arithmetic keeps operand order;
 *   vector/vector operands match one-to-one per step on all labels, on (…) or ignoring (…), the
 *   result keeps the left labels (only the `on` labels with on, without the `ignoring` ones with
 *   ignoring; whole under group_left, the right series' whole under group_right); unmatched
 *   series are dropped; comparisons filter (keeping the left value, or the
 *   vector's value against a scalar) or with `bool` give 1/0; and / or / unless match the same
 *   way and carry values through. A many-to-one match is bad_data, or not_implemented when
 *   group_left / group_right asked for it (spec 1: accepted, never enabled);
 * - label_replace: the regex is anchored to the whole source value (`.` matches newlines, as in
 *   Prometheus), `$1`, `${1}`, `$name`, `${name}` expand, `$$` is a dollar; no match leaves the
 *   series unchanged; an empty result deletes the label.
 */

export type SampleRow = Record<string, unknown>;

export interface Series {
  /** Without a prototype (../labels.ts): a label named like an Object method is an ordinary label. */
  labels: Labels;
  /** Value by step index. */
  points: Map<number, number>;
}

export type MetricResult = { kind: 'scalar'; value: number } | { kind: 'matrix'; series: Series[] };

/** One leaf's windows and the rows its SQL returned. */
export interface LeafData {
  windows: SampleWindows;
  rows: SampleRow[];
}

type Value = { kind: 'scalar'; value: number } | { kind: 'matrix'; series: Series[]; ordered: boolean };

/**
 * Evaluates the query over `steps` evaluation times. `leaves[i]` holds the data of
 * `query.leaves[i]`. Series come out ordered by their labels, unless the outermost operation is
 * sort / sort_desc.
 */
export function evaluateMetricQuery(query: MetricQuery, steps: number, leaves: ReadonlyArray<LeafData>, maxQuantileValues = MAX_QUANTILE_VALUES): MetricResult {
  if (leaves.length !== query.leaves.length) throw new FloeError('internal', `metric query has ${query.leaves.length} leaves, got data for ${leaves.length}`);
  const v = new Evaluator(steps, leaves, maxQuantileValues).eval(query.root);
  if (v.kind === 'scalar') return v;
  const series = v.series.filter((s) => s.points.size > 0);
  if (!v.ordered) series.sort((a, b) => compareLabels(a.labels, b.labels));
  return { kind: 'matrix', series };
}

const num = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : v === null || v === undefined ? NaN : Number(v));
/** A label value from the querier: a string, else absent (''). */
const text = (v: unknown): string => (typeof v === 'string' ? v : '');
const big = (v: unknown): bigint => (typeof v === 'bigint' ? v : BigInt(Math.trunc(num(v))));

/** A list value from the querier (a JS array, or an Arrow vector). */
function numbers(v: unknown): number[] {
  if (v === null || v === undefined) return [];
  if (Array.isArray(v)) return v.map(num);
  const it = v as { toArray?: () => ArrayLike<unknown> } & Iterable<unknown>;
  if (typeof it.toArray === 'function') return Array.from(it.toArray(), num);
  if (typeof (it as Iterable<unknown>)[Symbol.iterator] === 'function') return Array.from(it, num);
  return [];
}

/** Partials merged so far: one sub-bucket's, or a run of sub-buckets'. Only the fields of the leaf's PartialKind are used. */
interface Acc {
  n: number;
  b: number;
  s: number;
  c: number;
  mn: number;
  mx: number;
  mean: number;
  m2: number;
  ft: bigint | undefined;
  fv: number;
  lt: bigint | undefined;
  lv: number;
  vals: number[];
}

const newAcc = (): Acc => ({ n: 0, b: 0, s: 0, c: 0, mn: Infinity, mx: -Infinity, mean: 0, m2: 0, ft: undefined, fv: NaN, lt: undefined, lv: NaN, vals: [] });

/** The partials of one row the SQL returned. */
function accOfRow(kind: PartialKind, row: SampleRow): Acc {
  const acc = newAcc();
  switch (kind) {
    case 'count':
      acc.n = num(row[C.count]);
      break;
    case 'bytes':
      acc.b = num(row[C.bytes]);
      break;
    case 'sum':
      acc.s = num(row[C.sum]);
      break;
    case 'avg':
      acc.s = num(row[C.sum]);
      acc.c = num(row[C.valueCount]);
      break;
    case 'min':
      acc.mn = num(row[C.min]);
      break;
    case 'max':
      acc.mx = num(row[C.max]);
      break;
    case 'moments': {
      acc.c = num(row[C.valueCount]);
      const s = num(row[C.sum]);
      const q = num(row[C.sumSquares]);
      const m2 = q - (s * s) / acc.c;
      // The compensated sums are exact for whole numbers (and within an ulp or so otherwise),
      // whatever order DuckDB's threads took; Welford's running mean is not. Their difference
      // loses about log2(q / m2) bits, so it is taken while at most 10 are lost (relative error
      // < 1e-12); values that barely vary around a large mean take Welford's accurate, if not
      // bit-stable, moments.
      if (Number.isFinite(m2) && m2 >= q / 1024) {
        acc.mean = s / acc.c;
        acc.m2 = m2;
      } else {
        acc.mean = num(row[C.mean]);
        acc.m2 = num(row[C.m2]);
      }
      break;
    }
    case 'first':
      acc.ft = big(row[C.firstTime]);
      acc.fv = num(row[C.firstValue]);
      break;
    case 'last':
      acc.lt = big(row[C.lastTime]);
      acc.lv = num(row[C.lastValue]);
      break;
    case 'values':
      acc.vals = numbers(row[C.values]);
      break;
  }
  return acc;
}

/** Merges the partials of `from` into `into` (disjoint sets of rows). */
function mergeInto(kind: PartialKind, into: Acc, from: Acc): void {
  switch (kind) {
    case 'count':
      into.n += from.n;
      break;
    case 'bytes':
      into.b += from.b;
      break;
    case 'sum':
      into.s += from.s;
      break;
    case 'avg':
      into.s += from.s;
      into.c += from.c;
      break;
    case 'min':
      into.mn = Math.min(into.mn, from.mn);
      break;
    case 'max':
      into.mx = Math.max(into.mx, from.mx);
      break;
    case 'moments': {
      // Chan et al.: merge (count, mean, M2) of two disjoint sets.
      const c2 = from.c;
      if (c2 === 0) break;
      const c = into.c + c2;
      const delta = from.mean - into.mean;
      into.m2 = into.m2 + from.m2 + (delta * delta * into.c * c2) / c;
      into.mean = into.mean + (delta * c2) / c;
      into.c = c;
      break;
    }
    case 'first':
      if (from.ft !== undefined && (into.ft === undefined || from.ft < into.ft)) {
        into.ft = from.ft;
        into.fv = from.fv;
      }
      break;
    case 'last':
      if (from.lt !== undefined && (into.lt === undefined || from.lt > into.lt)) {
        into.lt = from.lt;
        into.lv = from.lv;
      }
      break;
    case 'values':
      for (const x of from.vals) into.vals.push(x);
      break;
  }
}

const merged = (kind: PartialKind, a: Acc, b: Acc): Acc => {
  const out = { ...a };
  mergeInto(kind, out, b);
  return out;
};

/**
 * The merged partials of a window sliding forward over sub-buckets, at O(1) amortized cost per
 * sub-bucket entering or leaving (a queue as two stacks: the front one holds, for each entry,
 * the merge of it and every newer front entry). A merge of all sub-buckets per window would cost
 * sub-buckets × windows: a day's range at a 1s step is ~10⁹ merges. Merges only add, never
 * subtract, so a large value leaving the window cannot cancel the small ones that remain.
 */
class SlidingAcc {
  readonly #kind: PartialKind;
  /** Oldest last. */
  readonly #front: Acc[] = [];
  /** Oldest first. */
  #back: Acc[] = [];
  #backTotal: Acc | undefined;

  constructor(kind: PartialKind) {
    this.#kind = kind;
  }

  push(acc: Acc): void {
    this.#back.push(acc);
    this.#backTotal = this.#backTotal ? merged(this.#kind, this.#backTotal, acc) : acc;
  }

  /** Drops the oldest sub-bucket. */
  shift(): void {
    if (this.#front.length === 0) {
      let total: Acc | undefined;
      for (let i = this.#back.length - 1; i >= 0; i--) {
        total = total ? merged(this.#kind, this.#back[i]!, total) : this.#back[i]!;
        this.#front.push(total);
      }
      this.#back = [];
      this.#backTotal = undefined;
    }
    this.#front.pop();
  }

  /** The merge of every sub-bucket in the window (not to be modified). */
  total(): Acc | undefined {
    const f = this.#front[this.#front.length - 1];
    const b = this.#backTotal;
    return f && b ? merged(this.#kind, f, b) : (f ?? b);
  }
}

/**
 * Calls `visit(k, a, b)` for each window k with at least one of the sub-buckets `js` (ascending):
 * js[a], …, js[b − 1] are its sub-buckets. Windows come in increasing k, so a and b never
 * decrease; windows without a sub-bucket are skipped, not stepped through.
 */
function forEachWindow(js: readonly number[], w: SampleWindows, steps: number, visit: (k: number, a: number, b: number) => void): void {
  const p = w.perStep;
  const width = w.perWindow;
  // Window k is sub-buckets [k·p, k·p + width − 1]; with p = 0 (one evaluation time) there is one.
  const last = p === 0 ? 0 : steps - 1;
  const firstCovering = (j: number) => (p === 0 ? (j < width ? 0 : last + 1) : Math.max(0, Math.ceil((j - width + 1) / p)));
  let a = 0;
  let b = 0;
  let k = js.length > 0 ? firstCovering(js[0]!) : last + 1;
  while (k <= last) {
    const lo = k * p;
    const hi = lo + width - 1;
    while (b < js.length && js[b]! <= hi) b++;
    while (a < b && js[a]! < lo) a++;
    if (a < b) {
      visit(k, a, b);
      k++;
    } else if (b < js.length) k = Math.max(k + 1, firstCovering(js[b]!));
    else break;
  }
}

/**
 * Above this many values gathered into quantile_over_time's windows (each value once per window
 * holding it, for the whole query) the query is refused (422): the router would spend seconds
 * on it. About a second of work.
 */
const MAX_QUANTILE_VALUES = 5_000_000;

function finish(node: RangeNode, acc: Acc, seconds: number): number {
  switch (node.fn) {
    case 'count_over_time':
      return acc.n;
    case 'rate':
      return (node.sample.partial === 'sum' ? acc.s : acc.n) / seconds;
    case 'bytes_over_time':
      return acc.b;
    case 'bytes_rate':
      return acc.b / seconds;
    case 'sum_over_time':
      return acc.s;
    case 'avg_over_time':
      return acc.s / acc.c;
    case 'min_over_time':
      return acc.mn;
    case 'max_over_time':
      return acc.mx;
    case 'stddev_over_time':
      return Math.sqrt(acc.m2 / acc.c);
    case 'stdvar_over_time':
      return acc.m2 / acc.c;
    case 'first_over_time':
      return acc.fv;
    case 'last_over_time':
      return acc.lv;
    case 'quantile_over_time':
      return quantile(node.param ?? NaN, acc.vals);
  }
}

/** Series a and b by their values x and y: ascending (dir 1) or descending (-1), NaN last, ties by labels. */
function byValue(x: number, y: number, a: Series, b: Series, dir: number): number {
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : 1) : -1;
  return x === y ? compareLabels(a.labels, b.labels) : (x - y) * dir;
}

/** Series by label set, points of equal label sets merged. */
class SeriesSet {
  readonly #byKey = new Map<string, Series>();

  add(labels: Labels, k: number, v: number): void {
    const key = labelsKey(labels);
    let s = this.#byKey.get(key);
    if (!s) this.#byKey.set(key, (s = { labels, points: new Map() }));
    s.points.set(k, v);
  }

  list(): Series[] {
    return [...this.#byKey.values()];
  }
}

class Evaluator {
  readonly #steps: number;
  readonly #leaves: ReadonlyArray<LeafData>;
  readonly #maxQuantileValues: number;
  /** Values gathered into quantile windows so far, across the query's leaves. */
  #quantileValues = 0;

  constructor(steps: number, leaves: ReadonlyArray<LeafData>, maxQuantileValues: number) {
    this.#steps = steps;
    this.#leaves = leaves;
    this.#maxQuantileValues = maxQuantileValues;
  }

  eval(node: MetricNode): Value {
    switch (node.kind) {
      case 'scalar':
        return { kind: 'scalar', value: node.value };
      case 'vector': {
        const points = new Map<number, number>();
        for (let k = 0; k < this.#steps; k++) points.set(k, node.value);
        return { kind: 'matrix', series: [{ labels: makeLabels(), points }], ordered: false };
      }
      case 'range':
        return { kind: 'matrix', series: this.range(node), ordered: false };
      case 'aggregate':
        return this.aggregate(node);
      case 'binary':
        return this.binary(node);
      case 'label_replace':
        return this.labelReplace(node);
    }
  }

  vector(node: MetricNode, what: string): Series[] {
    const v = this.eval(node);
    if (v.kind === 'scalar') throw new FloeError('bad_data', `${what} expects a vector, got a scalar`, { code: 'FLOE_ERR_LOGQL_PARSE' });
    return v.series;
  }

  range(node: RangeNode): Series[] {
    const data = this.#leaves[node.id];
    if (!data) throw new FloeError('internal', `no data for metric leaf ${node.id}`);
    const kind = node.sample.partial;
    const names = node.sample.groupBy;
    // Per series, the partials by sub-bucket; several rows of one (series, sub-bucket) merge.
    const series = new Map<string, { labels: Labels; buckets: Map<number, Acc> }>();
    for (const row of data.rows) {
      const labels = makeLabels(names.map((name, i) => [name, text(row[C.label(i)])] as const));
      const key = labelsKey(labels);
      let s = series.get(key);
      if (!s) series.set(key, (s = { labels, buckets: new Map() }));
      const j = num(row[C.bucket]);
      const acc = accOfRow(kind, row);
      const prev = s.buckets.get(j);
      if (prev) mergeInto(kind, prev, acc);
      else s.buckets.set(j, acc);
    }
    const seconds = data.windows.windowSeconds;
    const sorted = [...series.values()].map(({ labels, buckets }) => {
      const js = [...buckets.keys()].sort((a, b) => a - b);
      return { labels, js, accs: js.map((j) => buckets.get(j)!) };
    });
    if (kind === 'values') {
      // An order statistic does not slide cheaply: each window gathers its values, within a
      // budget checked first, from the counts alone.
      for (const { js, accs } of sorted) {
        const before = [0];
        for (const acc of accs) before.push(before[before.length - 1]! + acc.vals.length);
        forEachWindow(js, data.windows, this.#steps, (_k, a, b) => (this.#quantileValues += before[b]! - before[a]!));
      }
      if (this.#quantileValues > this.#maxQuantileValues) {
        throw new FloeError('execution', `quantile_over_time would gather more than ${this.#maxQuantileValues.toLocaleString('en-US')} values across its windows: use a larger step, a shorter range or fewer series`, {
          code: 'FLOE_ERR_LOGQL_TOO_MANY_SAMPLES',
        });
      }
    }
    const out: Series[] = [];
    for (const { labels, js, accs } of sorted) {
      const points = new Map<number, number>();
      if (kind === 'values') {
        forEachWindow(js, data.windows, this.#steps, (k, a, b) => {
          const vals: number[] = [];
          for (let i = a; i < b; i++) for (const x of accs[i]!.vals) vals.push(x);
          points.set(k, finish(node, { ...newAcc(), vals }, seconds));
        });
      } else {
        const window = new SlidingAcc(kind);
        let entered = 0;
        let left = 0;
        forEachWindow(js, data.windows, this.#steps, (k, a, b) => {
          for (; entered < b; entered++) window.push(accs[entered]!);
          for (; left < a; left++) window.shift();
          points.set(k, finish(node, window.total()!, seconds));
        });
      }
      // A series whose rows fall in no window (range shorter than step) has no points and is left out.
      if (points.size > 0) out.push({ labels, points });
    }
    return out;
  }

  aggregate(node: AggregateNode): Value {
    const input = this.vector(node.expr, node.op);
    switch (node.op) {
      case 'sort':
      case 'sort_desc': {
        const latest = new Map<Series, number>();
        for (const s of input) {
          let k = -1;
          for (const x of s.points.keys()) k = Math.max(k, x);
          latest.set(s, k < 0 ? NaN : s.points.get(k)!);
        }
        const dir = node.op === 'sort' ? 1 : -1;
        const sorted = [...input].sort((a, b) => byValue(latest.get(a)!, latest.get(b)!, a, b, dir));
        return { kind: 'matrix', series: sorted, ordered: true };
      }
      case 'topk':
      case 'bottomk':
        return { kind: 'matrix', series: this.select(node, input), ordered: false };
      default:
        return { kind: 'matrix', series: this.combine(node, input), ordered: false };
    }
  }

  /** sum, avg, min, max, count, stddev, stdvar of each group at each step. */
  combine(node: AggregateNode, input: Series[]): Series[] {
    const groups = new Map<string, { labels: Labels; values: Map<number, number[]> }>();
    for (const s of input) {
      const labels = node.by === undefined ? s.labels : pickLabels(s.labels, node.by);
      const key = labelsKey(labels);
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { labels, values: new Map() }));
      for (const [k, v] of s.points) {
        const list = g.values.get(k);
        if (list) list.push(v);
        else g.values.set(k, [v]);
      }
    }
    const out: Series[] = [];
    for (const g of groups.values()) {
      const points = new Map<number, number>();
      for (const k of [...g.values.keys()].sort((a, b) => a - b)) points.set(k, reduce(node.op, g.values.get(k)!));
      out.push({ labels: g.labels, points });
    }
    return out;
  }

  /** topk / bottomk: the k highest / lowest series of each group, step by step. */
  select(node: AggregateNode, input: Series[]): Series[] {
    const k = Math.floor(node.param ?? 0);
    if (k < 1) return [];
    const groups = new Map<string, Series[]>();
    for (const s of input) {
      const key = node.by === undefined ? '' : labelsKey(pickLabels(s.labels, node.by));
      const g = groups.get(key);
      if (g) g.push(s);
      else groups.set(key, [s]);
    }
    const kept = new Map<Series, Map<number, number>>();
    const dir = node.op === 'topk' ? -1 : 1;
    for (const members of groups.values()) {
      const steps = new Set<number>();
      for (const s of members) for (const x of s.points.keys()) steps.add(x);
      for (const step of steps) {
        const present = members.filter((s) => s.points.has(step));
        present.sort((a, b) => byValue(a.points.get(step)!, b.points.get(step)!, a, b, dir));
        for (const s of present.slice(0, k)) {
          let m = kept.get(s);
          if (!m) kept.set(s, (m = new Map()));
          m.set(step, s.points.get(step)!);
        }
      }
    }
    return [...kept].map(([s, points]) => ({ labels: s.labels, points: new Map([...points].sort(([a], [b]) => a - b)) }));
  }

  binary(node: BinaryNode): Value {
    const l = this.eval(node.left);
    const r = this.eval(node.right);
    // PromQL's operators (Go's float semantics, e.g. math.Pow for `^`), as Loki uses them.
    const op = node.op;
    const cmp = isComparison(op) ? (a: number, b: number) => compareOp(op, a, b) : undefined;
    const arith = !cmp && !isSetOp(op) ? (a: number, b: number) => arithOp(op, a, b) : undefined;
    if (l.kind === 'scalar' && r.kind === 'scalar') {
      if (arith) return { kind: 'scalar', value: arith(l.value, r.value) };
      if (cmp) return { kind: 'scalar', value: cmp(l.value, r.value) ? 1 : 0 };
      throw new FloeError('bad_data', `set operator ${node.op} not allowed in binary scalar expression`, { code: 'FLOE_ERR_LOGQL_PARSE' });
    }
    if (l.kind === 'scalar' || r.kind === 'scalar') {
      const vec = (l.kind === 'matrix' ? l : r) as Extract<Value, { kind: 'matrix' }>;
      const scalar = l.kind === 'scalar' ? l.value : (r as { value: number }).value;
      const scalarLeft = l.kind === 'scalar';
      const out: Series[] = [];
      for (const s of vec.series) {
        const points = new Map<number, number>();
        for (const [k, v] of s.points) {
          const [a, b] = scalarLeft ? [scalar, v] : [v, scalar];
          if (arith) points.set(k, arith(a, b));
          else if (cmp) {
            const hit = cmp(a, b);
            if (node.bool) points.set(k, hit ? 1 : 0);
            else if (hit) points.set(k, v);
          }
        }
        out.push({ labels: s.labels, points });
      }
      return { kind: 'matrix', series: out, ordered: false };
    }
    const left = l.series;
    const right = (r as Extract<Value, { kind: 'matrix' }>).series;
    const m = node.matching;
    const matching = (labels: Labels) => (m === undefined ? labels : m.on ? pickLabels(labels, m.labels) : omitLabels(labels, m.labels));
    const signature = (labels: Labels) => labelsKey(matching(labels));
    const out = new SeriesSet();

    if (node.op === 'and' || node.op === 'unless' || node.op === 'or') {
      const sigsAt = (series: Series[]) => {
        const at = new Map<number, Set<string>>();
        for (const s of series) {
          const sig = signature(s.labels);
          for (const k of s.points.keys()) {
            let set = at.get(k);
            if (!set) at.set(k, (set = new Set()));
            set.add(sig);
          }
        }
        return at;
      };
      if (node.op === 'or') {
        const leftAt = sigsAt(left);
        for (const s of left) for (const [k, v] of s.points) out.add(s.labels, k, v);
        for (const s of right) {
          const sig = signature(s.labels);
          for (const [k, v] of s.points) if (!leftAt.get(k)?.has(sig)) out.add(s.labels, k, v);
        }
      } else {
        const rightAt = sigsAt(right);
        const want = node.op === 'and';
        for (const s of left) {
          const sig = signature(s.labels);
          for (const [k, v] of s.points) if ((rightAt.get(k)?.has(sig) ?? false) === want) out.add(s.labels, k, v);
        }
      }
      return { kind: 'matrix', series: out.list(), ordered: false };
    }

    const rightBySig = new Map<string, Series[]>();
    for (const s of right) {
      const sig = signature(s.labels);
      const list = rightBySig.get(sig);
      if (list) list.push(s);
      else rightBySig.set(sig, [s]);
    }
    const usedBy = new Map<string, Series>();
    const many = (side: 'left' | 'right', sig: string) =>
      m?.group
        ? new FloeError('not_implemented', `many-to-one vector matching (group_${m.group}) is not supported: several ${side}-hand series match ${sig}`, { code: 'FLOE_ERR_LOGQL_UNSUPPORTED' })
        : new FloeError('bad_data', `multiple matches for labels ${sig} on the ${side}-hand side: many-to-one matching must be explicit (and is not supported)`, { code: 'FLOE_ERR_LOGQL_EXEC' });
    for (const s of left) {
      const matched = matching(s.labels);
      const sig = labelsKey(matched);
      const candidates = rightBySig.get(sig);
      if (!candidates) continue;
      for (const [k, lv] of s.points) {
        let match: Series | undefined;
        for (const c of candidates) {
          if (!c.points.has(k)) continue;
          if (match) throw many('right', sig);
          match = c;
        }
        if (!match) continue;
        const slot = `${k}\u0000${sig}`;
        const prev = usedBy.get(slot);
        if (prev && prev !== s) throw many('left', sig);
        usedBy.set(slot, s);
        const rv = match.points.get(k)!;
        // Prometheus's result labels: one-to-one keeps the matching labels (on) or drops the
        // ignored ones; under group_left / group_right the "many" side's labels stay whole.
        const labels = m?.group === 'left' ? s.labels : m?.group === 'right' ? match.labels : matched;
        if (arith) out.add(labels, k, arith(lv, rv));
        else if (cmp) {
          const hit = cmp(lv, rv);
          if (node.bool) out.add(labels, k, hit ? 1 : 0);
          else if (hit) out.add(labels, k, lv);
        }
      }
    }
    return { kind: 'matrix', series: out.list(), ordered: false };
  }

  labelReplace(node: LabelReplaceNode): Value {
    const input = this.vector(node.expr, 'label_replace');
    // parse.ts already refused a regex RE2 would refuse.
    const re = cachedAnchoredRe2(node.regex);
    const seen = new Set<string>();
    const out: Series[] = [];
    for (const s of input) {
      const m = re.exec(s.labels[node.src] ?? '');
      let labels = s.labels;
      if (m) {
        const value = expandTemplate(node.replacement, m);
        labels = copyLabels(s.labels);
        if (value === '') delete labels[node.dst];
        else labels[node.dst] = value;
      }
      const key = labelsKey(labels);
      if (seen.has(key)) throw new FloeError('bad_data', 'label_replace: vector cannot contain metrics with the same labelset', { code: 'FLOE_ERR_LOGQL_EXEC' });
      seen.add(key);
      out.push({ labels, points: s.points });
    }
    return { kind: 'matrix', series: out, ordered: false };
  }
}

function reduce(op: AggregateNode['op'], values: number[]): number {
  switch (op) {
    case 'sum':
      return values.reduce((a, b) => a + b, 0);
    case 'avg':
      return values.reduce((a, b) => a + b, 0) / values.length;
    case 'min':
      return values.reduce((a, b) => (Number.isNaN(a) || b < a ? b : a));
    case 'max':
      return values.reduce((a, b) => (Number.isNaN(a) || b > a ? b : a));
    case 'count':
      return values.length;
    case 'stddev':
    case 'stdvar': {
      const mean = values.reduce((a, b) => a + b, 0) / values.length;
      const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length;
      return op === 'stddev' ? Math.sqrt(variance) : variance;
    }
    default:
      throw new FloeError('internal', `not a combining aggregation: ${op}`);
  }
}

