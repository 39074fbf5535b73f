import type { LabelMatcher } from './ast.ts';
import type { RawSeries } from './eval.ts';
import { labelsKey, makeLabels, type Labels } from '../labels.ts';
import { METRIC_NAME, formatFloat } from './labels.ts';
import { cachedAnchoredRe2 } from '../re2.ts';
import { DERIVED_LABELS } from '../ir/metrics.ts';
import { otelLabelName, otelPromName } from '@floe/proto';

/**
 * Stored metrics as Prometheus series (issue 6, deliverable 3; spec 1 Ingest rules 2-4), pure.
 *
 * - Remote-written rows (scope `floe.prometheus.remote_write`) are Prometheus series already:
 *   `{__name__ = metric_name} ∪ point_attr_str`, verbatim.
 * - OpenTelemetry metrics are translated as Prometheus's OTLP receiver does with its default
 *   (underscore escaping, with suffixes): the name's runs of characters other than letters,
 *   digits and `:` become single `_`; the unit becomes a suffix (`s` → `_seconds`, `By/s` →
 *   `_bytes_per_second`, `{…}` annotations dropped, `1` → `_ratio` on gauges) unless the name
 *   already has that word; monotonic sums end in `_total`. Label names: invalid characters → `_`,
 *   a leading digit gets `key_`; keys that collide are joined with `;` (by original key order).
 *   `job` is `service.namespace/service.name` (or service.name), `instance` is
 *   `service.instance.id`.
 * - gauge → gauge, sum → counter (monotonic) or gauge, histogram → `_bucket{le}` (cumulative, +Inf
 *   = count), `_count`, `_sum`; summary → `{quantile}` series plus `_sum` and `_count`;
 *   exponential histogram → classic `_bucket` series whose `le` bounds come from the scale
 *   (negative buckets, zero bucket, positive buckets, cumulated in that order), `_count`, `_sum`.
 * - A point flagged no-recorded-value (bit 0) is a staleness marker on every series it makes.
 */

export interface CatalogEntry {
  metricName: string;
  metricType: string;
  unit: string;
  description: string;
  isMonotonic: boolean;
  temporality: string;
  /** Remote-written (a Prometheus series already). */
  rw: boolean;
}

export type PromType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'unknown';

export interface PromFamily {
  /** The family name (without _bucket/_sum/_count). */
  family: string;
  type: PromType;
  /** Every `__name__` the stored metric produces. */
  names: string[];
}

export function promFamily(e: CatalogEntry): PromFamily {
  if (e.rw) {
    const type: PromType = e.metricType === 'sum' ? 'counter' : e.metricType === 'gauge' ? 'gauge' : e.metricType === 'exponential_histogram' ? 'histogram' : 'unknown';
    if (e.metricType === 'exponential_histogram') return { family: e.metricName, type, names: [`${e.metricName}_bucket`, `${e.metricName}_count`, `${e.metricName}_sum`] };
    return { family: e.metricName, type, names: [e.metricName] };
  }
  const base = otelPromName(e.metricName, e.unit, e.metricType, e.isMonotonic);
  // Delta temporality: served as stored, each point the change over its own interval (as
  // Prometheus 3's native delta ingestion keeps them), so neither a counter nor a cumulative
  // histogram: metadata says `unknown`; sum_over_time(x[d]) is the increase over d.
  const delta = e.temporality === 'delta';
  switch (e.metricType) {
    case 'histogram':
    case 'exponential_histogram':
      return { family: base, type: delta ? 'unknown' : 'histogram', names: [`${base}_bucket`, `${base}_count`, `${base}_sum`] };
    case 'summary':
      return { family: base, type: 'summary', names: [base, `${base}_count`, `${base}_sum`] };
    case 'sum':
      return { family: base, type: delta ? 'unknown' : e.isMonotonic ? 'counter' : 'gauge', names: [base] };
    default:
      return { family: base, type: 'gauge', names: [base] };
  }
}

export function matchValue(m: LabelMatcher, value: string): boolean {
  switch (m.op) {
    case '=':
      return value === m.value;
    case '!=':
      return value !== m.value;
    case '=~':
      return cachedAnchoredRe2(m.value).test(value);
    case '!~':
      return !cachedAnchoredRe2(m.value).test(value);
  }
}

/** Prometheus matcher semantics: an absent label is the empty string. */
export function matchLabels(labels: Labels, matchers: readonly LabelMatcher[]): boolean {
  return matchers.every((m) => matchValue(m, labels[m.name] ?? ''));
}

/** Prometheus names per catalog entry: the router reuses a catalog across queries (and selectors). */
const familyNames = new WeakMap<CatalogEntry, string[]>();

/** Stored metric names of the catalog whose Prometheus names the selectors' name matchers accept. */
export function storedNamesFor(catalog: readonly CatalogEntry[], selectors: ReadonlyArray<readonly LabelMatcher[]>): string[] {
  const out = new Set<string>();
  const nameMatchers = selectors.map((matchers) => matchers.filter((m) => m.name === METRIC_NAME));
  for (const e of catalog) {
    let names = familyNames.get(e);
    if (!names) familyNames.set(e, (names = promFamily(e).names));
    for (const matchers of nameMatchers) {
      if (names.some((n) => matchers.every((m) => matchValue(m, n)))) {
        out.add(e.metricName);
        break;
      }
    }
  }
  return [...out].sort();
}

/**
 * Labels a PromQL query filters on that have no dedicated column (spec 1: query demand): every
 * matcher name of the selectors but `__name__` (metric_name), `job` (service_name: remote write
 * and OpenTelemetry both fill it from the job's service), and `le` / `quantile` (the bucket
 * bounds and quantile columns of histograms and summaries). Once per query, sorted.
 */
export function selectorDemand(selectors: ReadonlyArray<readonly LabelMatcher[]>): string[] {
  const keys = new Set<string>();
  for (const matchers of selectors) for (const m of matchers) if (!COLUMN_LABELS.has(m.name)) keys.add(m.name);
  return [...keys].sort();
}
const COLUMN_LABELS: ReadonlySet<string> = new Set([...DERIVED_LABELS, 'job']);

// ── target_info ──

export const TARGET_INFO = 'target_info';
const IDENTIFYING = new Set(['service.name', 'service.namespace', 'service.instance.id']);

/** Whether a selector's name matchers accept `target_info` (so its resources must be read). */
export function selectsTargetInfo(matchers: readonly LabelMatcher[]): boolean {
  return matchers.every((m) => m.name !== METRIC_NAME || matchValue(m, TARGET_INFO));
}

/** A row of planMetricTargetInfo. */
export interface TargetInfoRow {
  resource_attr_str?: unknown;
  resource_attr_int?: unknown;
  resource_attr_double?: unknown;
  resource_attr_bool?: unknown;
  /** The distinct times (integer milliseconds) of the resource's points, in any order. */
  times: unknown;
}

/**
 * Prometheus's `target_info` series of OpenTelemetry resources, as its OTLP receiver makes them:
 * value 1, labels the resource attributes other than service.name / service.namespace /
 * service.instance.id (names translated as other labels; colliding keys joined with `;`), plus
 * job and instance from those; none for a resource with only identifying attributes or with
 * neither job nor instance. The receiver writes one sample per export at its newest point time;
 * Floe does not keep export boundaries, so a sample stands at every time the resource has points
 * (what periodic exports, one point time each, make).
 */
export function buildTargetInfo(rows: Iterable<TargetInfoRow>): RawSeries[] {
  const out = new Map<string, { labels: Labels; times: Set<number> }>();
  for (const r of rows) {
    const resource = new Map<string, string>();
    const others: Array<[string, string]> = [];
    for (const col of ['resource_attr_str', 'resource_attr_int', 'resource_attr_double', 'resource_attr_bool'] as const) {
      for (const [k, v] of mapEntries(r[col])) {
        const text = attributeText(v);
        resource.set(k, text);
        if (!IDENTIFYING.has(k)) others.push([k, text]);
      }
    }
    if (others.length === 0) continue;
    const labels = otelLabels(others, resource);
    if (labels.job === undefined && labels.instance === undefined) continue;
    labels[METRIC_NAME] = TARGET_INFO;
    const key = labelsKey(labels);
    let e = out.get(key);
    if (!e) out.set(key, (e = { labels, times: new Set() }));
    for (const t of floatList(r.times)) e.times.add(t);
  }
  return [...out.values()].map((e) => {
    const t = Float64Array.from(e.times).sort();
    return { labels: e.labels, t, v: new Float64Array(t.length).fill(1) };
  });
}

// ── rows ──────────────────────────────────────────────────────────────────────────────────────

/** A row of planMetricSeries, values as they come (Arrow maps and lists are read generically). */
export interface SeriesRow {
  series_id: string;
  metric_name: string;
  metric_type: string;
  unit: string;
  is_monotonic: boolean;
  rw: boolean;
  point_attr_str?: unknown;
  point_attr_int?: unknown;
  point_attr_double?: unknown;
  point_attr_bool?: unknown;
  resource_attr_str?: unknown;
  explicit_bounds?: unknown;
  quantiles?: unknown;
  exp_scale?: unknown;
  exp_zero_threshold?: unknown;
  exp_positive_offset?: unknown;
  exp_positive_bucket_counts?: unknown;
  exp_negative_offset?: unknown;
  exp_negative_bucket_counts?: unknown;
}

/** A row of planMetricPoints. */
export interface PointRow {
  series_id: string;
  t: number;
  value: unknown;
  flags: unknown;
  count?: unknown;
  sum?: unknown;
  explicit_bounds?: unknown;
  bucket_counts?: unknown;
  quantiles?: unknown;
  exp_scale?: unknown;
  exp_zero_count?: unknown;
  exp_zero_threshold?: unknown;
  exp_positive_offset?: unknown;
  exp_positive_bucket_counts?: unknown;
  exp_negative_offset?: unknown;
  exp_negative_bucket_counts?: unknown;
}

/** Entries of a map value: an Arrow MapRow (toJSON), a Map or a plain object. */
export function mapEntries(v: unknown): Array<[string, unknown]> {
  if (v === null || v === undefined) return [];
  if (v instanceof Map) return [...v.entries()] as Array<[string, unknown]>;
  const json = typeof (v as { toJSON?: unknown }).toJSON === 'function' ? (v as { toJSON(): unknown }).toJSON() : v;
  if (json === null || typeof json !== 'object') return [];
  if (Array.isArray(json)) return json.filter((x): x is [string, unknown] => Array.isArray(x) && x.length === 2).map(([k, val]) => [String(k), val]);
  return Object.entries(json as Record<string, unknown>);
}

/** A list value (Arrow Vector, typed array or array) as numbers. */
function numberList(v: unknown): number[] {
  if (v === null || v === undefined) return [];
  const arr = typeof (v as { toArray?: unknown }).toArray === 'function' ? (v as { toArray(): ArrayLike<unknown> }).toArray() : (v as ArrayLike<unknown>);
  return Array.from(arr as ArrayLike<unknown>, (x) => Number(x));
}

function structList(v: unknown): Array<Record<string, unknown>> {
  if (v === null || v === undefined) return [];
  const arr = typeof (v as { toArray?: unknown }).toArray === 'function' ? (v as { toArray(): ArrayLike<unknown> }).toArray() : (v as ArrayLike<unknown>);
  return Array.from(arr as ArrayLike<unknown>, (x) => {
    const j = x !== null && typeof (x as { toJSON?: unknown }).toJSON === 'function' ? (x as { toJSON(): unknown }).toJSON() : x;
    return (j ?? {}) as Record<string, unknown>;
  });
}

const num = (v: unknown): number => (v === null || v === undefined ? NaN : Number(v));

function attributeText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return formatFloat(v);
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return v === null || v === undefined ? '' : String(v);
}

/**
 * Prometheus labels of OpenTelemetry attributes (key, value as text): names translated, the
 * non-empty values of keys that translate to one name joined with `;` in key order; then `job`
 * and `instance` from the resource's service attributes.
 */
function otelLabels(attributes: Iterable<[string, string]>, resource: ReadonlyMap<string, string>): Labels {
  const byName = new Map<string, Array<[string, string]>>();
  for (const [k, text] of attributes) {
    const name = otelLabelName(k);
    let list = byName.get(name);
    if (!list) byName.set(name, (list = []));
    list.push([k, text]);
  }
  const labels = makeLabels();
  for (const [name, list] of byName) {
    list.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const value = list.map(([, v]) => v).filter((v) => v !== '').join(';');
    if (value !== '') labels[name] = value;
  }
  const service = resource.get('service.name');
  const namespace = resource.get('service.namespace');
  if (service) labels.job = namespace ? `${namespace}/${service}` : service;
  const instance = resource.get('service.instance.id');
  if (instance) labels.instance = instance;
  return labels;
}

/** The Prometheus labels of a stored series (without `__name__`). */
function baseLabels(row: SeriesRow): Labels {
  const text = (col: 'point_attr_str' | 'point_attr_int' | 'point_attr_double' | 'point_attr_bool' | 'resource_attr_str') =>
    mapEntries(row[col]).map(([k, v]): [string, string] => [k, attributeText(v)]);
  if (row.rw) return makeLabels(text('point_attr_str'));
  const attributes = (['point_attr_str', 'point_attr_int', 'point_attr_double', 'point_attr_bool'] as const).flatMap(text);
  return otelLabels(attributes, new Map(text('resource_attr_str')));
}

/** The family of a stored series (its catalog entry's, from the series row). */
const rowFamily = (r: SeriesRow): PromFamily =>
  promFamily({ metricName: r.metric_name, metricType: r.metric_type, unit: r.unit, description: '', isMonotonic: r.is_monotonic, temporality: '', rw: r.rw });

interface Bound {
  le: string;
  cumulative: number;
}

/** Classic buckets of a histogram point: explicit bounds, or downsampled exponential buckets. */
function classicBuckets(metricType: string, p: PointRow | SeriesRow, counts: number[] | undefined): Bound[] {
  const out: Bound[] = [];
  if (metricType === 'histogram') {
    const bounds = numberList(p.explicit_bounds);
    let cum = 0;
    bounds.forEach((b, i) => {
      cum += counts?.[i] ?? 0;
      out.push({ le: formatFloat(b), cumulative: cum });
    });
    return out;
  }
  const scale = num(p.exp_scale);
  if (Number.isNaN(scale)) return out;
  const factor = Math.pow(2, -scale);
  const bound = (k: number) => Math.pow(2, k * factor);
  const pp = p as PointRow;
  const neg = numberList(p.exp_negative_bucket_counts);
  const negOffset = num(p.exp_negative_offset) || 0;
  const pos = numberList(p.exp_positive_bucket_counts);
  const posOffset = num(p.exp_positive_offset) || 0;
  const zeroCount = num(pp.exp_zero_count) || 0;
  const threshold = num(p.exp_zero_threshold) || 0;
  let cum = 0;
  for (let i = neg.length - 1; i >= 0; i--) {
    cum += counts ? neg[i]! : 0;
    out.push({ le: formatFloat(-bound(negOffset + i)), cumulative: cum });
  }
  if (neg.length > 0 || zeroCount > 0 || threshold > 0) {
    cum += counts ? zeroCount : 0;
    out.push({ le: formatFloat(threshold), cumulative: cum });
  }
  for (let i = 0; i < pos.length; i++) {
    cum += counts ? pos[i]! : 0;
    out.push({ le: formatFloat(bound(posOffset + i + 1)), cumulative: cum });
  }
  // Equal bounds (rounding at extreme scales) keep the later, larger count.
  const dedup = new Map<string, Bound>();
  for (const b of out) dedup.set(b.le, b);
  return [...dedup.values()];
}

/** Label sets of a stored series, without points (for /series, /labels, /label/…/values). */
export function seriesLabelSets(row: SeriesRow): Labels[] {
  const base = baseLabels(row);
  const fam = rowFamily(row);
  const named = (name: string, extra: Record<string, string> = {}) => Object.assign(makeLabels(), base, extra, { [METRIC_NAME]: name });
  switch (fam.type === 'histogram' || fam.type === 'summary' ? row.metric_type : 'plain') {
    case 'histogram':
    case 'exponential_histogram': {
      const bounds = classicBuckets(row.metric_type, row, undefined).map((b) => b.le);
      return [...[...bounds, '+Inf'].map((le) => named(`${fam.family}_bucket`, { le })), named(`${fam.family}_count`), named(`${fam.family}_sum`)];
    }
    case 'summary':
      return [
        ...structList(row.quantiles).map((q) => named(fam.family, { quantile: formatFloat(num(q.quantile)) })),
        named(`${fam.family}_count`),
        named(`${fam.family}_sum`),
      ];
    default:
      return [named(fam.names[0]!)];
  }
}

/**
 * Points of the given stored series as Prometheus series (one stored histogram or summary makes
 * many). `rows` are ordered by series and time.
 */
export function buildPromSeries(seriesRows: readonly SeriesRow[], points: Iterable<PointRow>): RawSeries[] {
  const meta = new Map<string, { row: SeriesRow; base: Labels; family: PromFamily }>();
  for (const r of seriesRows) {
    meta.set(r.series_id, {
      row: r,
      base: baseLabels(r),
      family: rowFamily(r),
    });
  }
  const out = new Map<string, { labels: Labels; t: number[]; v: number[]; stale: boolean[] }>();
  const push = (seriesId: string, suffixKey: string, makeLabelsFn: () => Labels, t: number, v: number, stale: boolean) => {
    const k = `${seriesId}\u0000${suffixKey}`;
    let s = out.get(k);
    if (!s) out.set(k, (s = { labels: makeLabelsFn(), t: [], v: [], stale: [] }));
    // Two points at one millisecond: the later row wins, as a Prometheus append would refuse it.
    if (s.t.length > 0 && s.t[s.t.length - 1] === t) {
      s.v[s.v.length - 1] = v;
      s.stale![s.stale!.length - 1] = stale;
      return;
    }
    s.t.push(t);
    s.v.push(v);
    s.stale!.push(stale);
  };
  for (const p of points) {
    const m = meta.get(p.series_id);
    if (!m) continue;
    const stale = (Number(p.flags ?? 0) & 1) === 1;
    const t = Number(p.t);
    const { row, base, family } = m;
    const named = (name: string, extra?: Record<string, string>) => () => Object.assign(makeLabels(), base, extra ?? {}, { [METRIC_NAME]: name });
    const type = row.rw ? (row.metric_type === 'exponential_histogram' ? 'exponential_histogram' : 'plain') : row.metric_type;
    switch (type) {
      case 'histogram':
      case 'exponential_histogram': {
        const counts = type === 'histogram' ? numberList(p.bucket_counts) : [];
        for (const b of classicBuckets(type, p, counts)) push(p.series_id, `b${b.le}`, named(`${family.family}_bucket`, { le: b.le }), t, stale ? NaN : b.cumulative, stale);
        push(p.series_id, 'b+Inf', named(`${family.family}_bucket`, { le: '+Inf' }), t, stale ? NaN : num(p.count), stale);
        push(p.series_id, 'count', named(`${family.family}_count`), t, stale ? NaN : num(p.count), stale);
        if (p.sum !== null && p.sum !== undefined) push(p.series_id, 'sum', named(`${family.family}_sum`), t, stale ? NaN : num(p.sum), stale);
        break;
      }
      case 'summary': {
        for (const q of structList(p.quantiles)) {
          const label = formatFloat(num(q.quantile));
          push(p.series_id, `q${label}`, named(family.family, { quantile: label }), t, stale ? NaN : num(q.value), stale);
        }
        push(p.series_id, 'count', named(`${family.family}_count`), t, stale ? NaN : num(p.count), stale);
        if (p.sum !== null && p.sum !== undefined) push(p.series_id, 'sum', named(`${family.family}_sum`), t, stale ? NaN : num(p.sum), stale);
        break;
      }
      default:
        push(p.series_id, '', named(family.names[0]!), t, num(p.value), stale);
    }
  }
  return [...out.values()].map((s) => (s.stale.includes(true) ? s : { labels: s.labels, t: s.t, v: s.v }));
}

/** A series' points as lists (planMetricSeriesPoints; without its labels when read with `labels: false`). */
export interface PointLists {
  series_id: string;
  /** Times (integer milliseconds), in any order. */
  t: unknown;
  /** Values, in the order of `t`. */
  v: unknown;
  /** Times of staleness markers, or null. */
  stale_t: unknown;
}

/** A row of planMetricSeriesPoints: a plain series' labels and its points as lists in matching order. */
export interface SeriesPointsRow extends SeriesRow, PointLists {}

/**
 * The first index in [from, to) whose time is not below `x` (`orEqual`: above `x`), given that
 * t[from] is: an exponential search from `from`, so a block of b points costs log b steps.
 */
function gallop(t: Float64Array, from: number, to: number, x: number, orEqual: boolean): number {
  const before = (y: number) => (orEqual ? y <= x : y < x);
  let lo = from;
  let step = 1;
  let hi = from + 1;
  while (hi < to && before(t[hi]!)) {
    lo = hi;
    step *= 2;
    hi = from + step;
  }
  if (hi > to) hi = to;
  // t[lo] is before x; hi is `to` or not before x.
  while (lo + 1 < hi) {
    const m = (lo + hi) >>> 1;
    if (before(t[m]!)) lo = m;
    else hi = m;
  }
  return hi;
}

/** Copies src[from, to) of both arrays to dst at k; returns the end. Short blocks by a loop: a subarray view costs more. */
function copyBlock(srcT: Float64Array, srcV: Float64Array, from: number, to: number, dstT: Float64Array, dstV: Float64Array, k: number): number {
  if (to - from <= 64) {
    for (let i = from; i < to; i++, k++) {
      dstT[k] = srcT[i]!;
      dstV[k] = srcV[i]!;
    }
    return k;
  }
  dstT.set(srcT.subarray(from, to), k);
  dstV.set(srcV.subarray(from, to), k);
  return k + (to - from);
}

/** Scratch buffers for sorting, reused from series to series (allocating them per series cost more than the sort). */
let scratchT = new Float64Array(0);
let scratchV = new Float64Array(0);

/**
 * Sorts times and values by time in place, stably (of equal times the later one stays later).
 * The lists come from an unordered aggregate over files sorted by series and time, so they are a
 * few ascending runs (one per file or row group, or several files' back to back), merged all at
 * once: a heap of the runs by their next time, and the run on top gives up the whole block that
 * comes before the next run's time. Each block moves once, so a day of hourly files costs about
 * one copy of the points and a few heap steps per file.
 */
function sortByTime(t: Float64Array, v: Float64Array): void {
  const n = t.length;
  const starts = [0];
  for (let i = 1; i < n; i++) if (t[i]! < t[i - 1]!) starts.push(i);
  const k = starts.length;
  if (k === 1) return;
  if (scratchT.length < n) {
    scratchT = new Float64Array(Math.max(n, 2 * scratchT.length));
    scratchV = new Float64Array(scratchT.length);
  }
  if (placeDisjointRuns(t, v, starts)) return;
  const pos = starts;
  const end = [...starts.slice(1), n];
  // A binary min-heap of run indexes by (next time, run index): of equal times the earlier run's first.
  const heap = Array.from({ length: k }, (_, r) => r);
  const less = (a: number, b: number) => t[pos[a]!]! < t[pos[b]!]! || (t[pos[a]!]! === t[pos[b]!]! && a < b);
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      if (l >= heap.length) return;
      const c = l + 1 < heap.length && less(heap[l + 1]!, heap[l]!) ? l + 1 : l;
      if (!less(heap[c]!, heap[i]!)) return;
      [heap[c], heap[i]] = [heap[i]!, heap[c]!];
      i = c;
    }
  };
  for (let i = (k >> 1) - 1; i >= 0; i--) down(i);
  let out = 0;
  while (heap.length > 1) {
    const r = heap[0]!;
    // The top's second-smallest rival is a child of the root.
    const next = heap.length > 2 && less(heap[2]!, heap[1]!) ? heap[2]! : heap[1]!;
    const stop = gallop(t, pos[r]!, end[r]!, t[pos[next]!]!, r < next);
    out = copyBlock(t, v, pos[r]!, stop, scratchT, scratchV, out);
    pos[r] = stop;
    if (stop === end[r]) heap[0] = heap.pop()!;
    down(0);
  }
  const last = heap[0]!;
  copyBlock(t, v, pos[last]!, end[last]!, scratchT, scratchV, out);
  t.set(scratchT.subarray(0, n));
  v.set(scratchV.subarray(0, n));
}

/** Runs at most this many are checked for being disjoint (one per hourly file over a few hours, typically). */
const MAX_DISJOINT_RUNS = 16;
const runOrder = new Int32Array(MAX_DISJOINT_RUNS);

/**
 * The common case of sortByTime: each run is one file's points, and the files hold different
 * hours, so the runs do not overlap in time. Then ordering the runs by their first time and
 * copying each whole is the sort; false (nothing moved) when some runs overlap or touch.
 */
function placeDisjointRuns(t: Float64Array, v: Float64Array, starts: readonly number[]): boolean {
  const k = starts.length;
  if (k > MAX_DISJOINT_RUNS) return false;
  const n = t.length;
  const endOf = (r: number) => (r + 1 < k ? starts[r + 1]! : n);
  // Insertion sort of the few runs by first time.
  for (let r = 0; r < k; r++) {
    let j = r;
    while (j > 0 && t[starts[runOrder[j - 1]!]!]! > t[starts[r]!]!) {
      runOrder[j] = runOrder[j - 1]!;
      j--;
    }
    runOrder[j] = r;
  }
  // Strictly after the previous run's last time: equal times across runs take the merge, which keeps their order.
  for (let j = 1; j < k; j++) if (t[starts[runOrder[j]!]!]! <= t[endOf(runOrder[j - 1]!) - 1]!) return false;
  let out = 0;
  for (let j = 0; j < k; j++) {
    const r = runOrder[j]!;
    out = copyBlock(t, v, starts[r]!, endOf(r), scratchT, scratchV, out);
  }
  t.set(scratchT.subarray(0, n));
  v.set(scratchV.subarray(0, n));
  return true;
}

const compareIds = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A series id of 16 lower-case hex digits (the stored form of every id Floe makes). */
const HEX_ID = /^[0-9a-f]{16}$/;
/** Rows sorted by a numeric key at most (their index takes the key's low 20 bits). */
const MAX_KEYED_ROWS = 1 << 20;

/**
 * Rows in the order of their series ids as strings. Ids of 16 hex digits (all of Floe's) sort by
 * their first 8 digits as a number, which is the same order, in a typed array's native sort
 * instead of a comparator called ~n log n times (~3 ms of 10,000 series); the few rows whose
 * first digits tie are then put in order by the whole id.
 */
function sortedById<R extends PointLists>(rows: Iterable<R>): R[] {
  const list = [...rows];
  const n = list.length;
  const ids = list.map((r) => String(r.series_id));
  if (n > MAX_KEYED_ROWS || !ids.every((id) => HEX_ID.test(id))) {
    const order = Array.from(ids.keys()).sort((a, b) => compareIds(ids[a]!, ids[b]!));
    return order.map((i) => list[i]!);
  }
  const keys = new Float64Array(n);
  for (let i = 0; i < n; i++) keys[i] = Number.parseInt(ids[i]!.slice(0, 8), 16) * MAX_KEYED_ROWS + i;
  keys.sort();
  const order = Array.from(keys, (k) => k % MAX_KEYED_ROWS);
  // Rows whose first 8 digits tie (next to each other now) are put in order by the whole id.
  for (let i = 0; i < n; ) {
    const hi = Math.floor(keys[i]! / MAX_KEYED_ROWS);
    let j = i + 1;
    while (j < n && Math.floor(keys[j]! / MAX_KEYED_ROWS) === hi) j++;
    if (j - i > 1) order.splice(i, j - i, ...order.slice(i, j).sort((a, b) => compareIds(ids[a]!, ids[b]!)));
    i = j;
  }
  return order.map((i) => list[i]!);
}

/** Shared by every NULL list: empty, so nothing can change it. */
const NO_FLOATS = new Float64Array(0);

/** A list value as a Float64Array (zero-copy for an Arrow Float64 vector without nulls); NULL is empty. */
function floatList(v: unknown): Float64Array {
  if (v === null || v === undefined) return NO_FLOATS;
  if (v instanceof Float64Array) return v;
  const arr = typeof (v as { toArray?: unknown }).toArray === 'function' ? (v as { toArray(): ArrayLike<unknown> }).toArray() : (v as ArrayLike<unknown>);
  if (arr instanceof Float64Array) return arr;
  return Float64Array.from(arr as ArrayLike<number>, (x) => Number(x));
}

/** The Prometheus labels of a plain (gauge or sum) stored series, from its identity and label maps. */
export function plainSeriesLabels(r: SeriesRow): Labels {
  return Object.assign(makeLabels(), baseLabels(r), { [METRIC_NAME]: rowFamily(r).names[0]! });
}

/**
 * Plain stored series (gauges and sums: one Prometheus series each) with their points as typed
 * arrays, from planMetricSeriesPoints rows. Two points at one millisecond keep the later one.
 */
export function buildPlainSeries(rows: Iterable<SeriesPointsRow>): RawSeries[];
/** Rows of points only, labelled by `labelsOf`. */
export function buildPlainSeries<R extends PointLists>(rows: Iterable<R>, labelsOf: (row: R) => Labels): RawSeries[];
export function buildPlainSeries(rows: Iterable<PointLists>, labelsOf: (row: PointLists) => Labels = (r) => plainSeriesLabels(r as SeriesPointsRow)): RawSeries[] {
  const out: RawSeries[] = [];
  // By id, so a query's series (and the order its sums add them in) do not depend on the scan.
  const ordered = sortedById(rows);
  for (const r of ordered) {
    const times = floatList(r.t);
    if (times.length === 0) continue;
    const values = floatList(r.v);
    if (values.length !== times.length) throw new Error(`series ${String(r.series_id)}: ${times.length} times but ${values.length} values`);
    // The lists are this call's own (the querier's answer is read once), so they are sorted in place.
    sortByTime(times, values);
    let t = times;
    let v = values;
    let dup = false;
    for (let i = 1; i < t.length; i++) if (t[i] === t[i - 1]) dup = true;
    const staleT = floatList(r.stale_t).sort();
    let stale: Uint8Array | undefined;
    if (staleT.length > 0) {
      stale = new Uint8Array(t.length);
      for (let i = 0, j = 0; i < t.length && j < staleT.length; i++) {
        while (j < staleT.length && staleT[j]! < t[i]!) j++;
        if (staleT[j] === t[i]) stale[i] = 1;
      }
    }
    if (dup) {
      const keep: number[] = [];
      for (let i = 0; i < t.length; i++) {
        if (i + 1 < t.length && t[i + 1] === t[i]) continue;
        keep.push(i);
      }
      const t2 = Float64Array.from(keep, (i) => t[i]!);
      const v2 = Float64Array.from(keep, (i) => v[i]!);
      if (stale) stale = Uint8Array.from(keep, (i) => stale![i]!);
      t = t2;
      v = v2;
    }
    const labels = labelsOf(r);
    out.push(stale ? { labels, t, v, stale } : { labels, t, v });
  }
  return out;
}
