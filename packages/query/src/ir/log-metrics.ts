import { FloeError } from '@floe/errors';
import type { LabelMatch, LogTable, RowFilter, TimeRange } from './logs.ts';

/**
 * Floe's Query IR for LogQL metric queries (spec 1, "Metric queries"), storage-neutral like
 * ir/logs.ts. A metric query is a tree whose leaves are range aggregations over log lines
 * (`RangeNode`, each reading one `LogSample`) and whose inner nodes work across series (vector
 * aggregations, binary operators, label_replace). The split of the work:
 *
 * - per leaf, the planner prints one SQL query (sql/log-metrics.ts) that groups the selected rows
 *   by the leaf's series labels and by *sub-bucket* of the step grid, and returns one row of
 *   partial aggregates (count, bytes, sum, min, …) per (series, sub-bucket);
 * - the evaluator (logql/evaluate.ts, pure, no I/O) merges the sub-buckets of each evaluation
 *   window, finishes the range function, and runs every cross-series operation.
 *
 * Time bucketing (spec 1: "fixed, step-aligned windows"), precisely: a range query evaluates at
 * t_k = start + k·step for k = 0, 1, … while t_k <= end; the value at t_k aggregates the rows whose
 * time lies in the window (t_k − offset − range, t_k − offset], left-open and right-closed as in
 * Loki. The sub-bucket width g is gcd(step, range) (range for an instant query), so every window is
 * a whole number of sub-buckets and the result is exact, for step = range (one sub-bucket per
 * window, date_bin on the step) and otherwise. Only when that would make more than
 * MAX_SUB_BUCKETS sub-buckets is g the step and the range rounded up to a whole number of steps:
 * an approximation (windowSeconds is then the rounded range). A window without rows has no point.
 */

/** Range functions Floe runs (absent_over_time and rate_counter are not_implemented). */
export type RangeFn =
  | 'count_over_time'
  | 'rate'
  | 'bytes_over_time'
  | 'bytes_rate'
  | 'sum_over_time'
  | 'avg_over_time'
  | 'min_over_time'
  | 'max_over_time'
  | 'stddev_over_time'
  | 'stdvar_over_time'
  | 'first_over_time'
  | 'last_over_time'
  | 'quantile_over_time';

/**
 * What the SQL aggregates per (series, sub-bucket); the evaluator merges these across a window.
 * count: n; bytes: b; sum: s; avg: s, c; min: mn; max: mx; moments (stddev, stdvar): c, s, q (sum
 * of squares) and Welford's mean and m2 (sum of squared deviations); first: fv at ft; last: lv at
 * lt; values (quantile): vals. Sums are compensated (DuckDB's fsum), which makes them exact for
 * whole numbers: a plain sum of doubles, and Welford's running mean, depend on the order in
 * which DuckDB's threads meet the rows, and the same data answered differently from run to run.
 */
export type PartialKind = 'count' | 'bytes' | 'sum' | 'avg' | 'min' | 'max' | 'moments' | 'first' | 'last' | 'values';

/** Output column names of a planned sample query: the planner's own fixed names. */
export const SAMPLE_COLUMNS = {
  /** Sub-bucket index j >= 0: the row lies in (origin + j·width, origin + (j+1)·width]. */
  bucket: 'j',
  /**
   * The i-th series label of `groupBy` is column `l<i>` ('' or NULL when the row does not carry
   * it). Several rows may share one (labels, bucket): their partials are merged like sub-buckets.
   */
  label: (i: number) => `l${i}`,
  count: 'n',
  bytes: 'b',
  sum: 's',
  valueCount: 'c',
  min: 'mn',
  max: 'mx',
  sumSquares: 'q',
  mean: 'mean',
  m2: 'm2',
  firstValue: 'fv',
  firstTime: 'ft',
  lastValue: 'lv',
  lastTime: 'lt',
  values: 'vals',
} as const;

/** The rows one leaf reads and how they are grouped: one SQL query per leaf. */
export interface LogSample {
  kind: 'log_sample';
  table: LogTable;
  /** Stream selector: every matcher must hold. */
  streams: LabelMatch[];
  /** Pipeline filters (and label filters after unwrap) in order; all must hold. */
  filters: RowFilter[];
  /** `| unwrap <label>`: the label's numeric value is the sample; rows where it is not a number are skipped. */
  unwrap: string | undefined;
  partial: PartialKind;
  /**
   * The series labels, in order (no duplicates). `detected_level` is the level Loki derives
   * (trace, debug, info, warn, error, fatal or unknown), not the raw severity text.
   */
  groupBy: string[];
}

export interface RangeNode {
  kind: 'range';
  /** Index of this leaf in MetricQuery.leaves. */
  id: number;
  fn: RangeFn;
  /** quantile_over_time's φ. */
  param: number | undefined;
  rangeNs: bigint;
  offsetNs: bigint;
  sample: LogSample;
}

export type AggregateOp = 'sum' | 'avg' | 'min' | 'max' | 'count' | 'stddev' | 'stdvar' | 'topk' | 'bottomk' | 'sort' | 'sort_desc';

export interface AggregateNode {
  kind: 'aggregate';
  op: AggregateOp;
  /** Group by these labels; undefined: keep every label (`without ()`, or topk/sort without by). */
  by: string[] | undefined;
  /** topk / bottomk's k. */
  param: number | undefined;
  expr: MetricNode;
}

export type ArithmeticOp = '+' | '-' | '*' | '/' | '%' | '^';
export type ComparisonOp = '==' | '!=' | '>' | '>=' | '<' | '<=';
export type SetOp = 'and' | 'or' | 'unless';

export interface BinaryNode {
  kind: 'binary';
  op: ArithmeticOp | ComparisonOp | SetOp;
  /** Comparisons: `bool` turns each matched pair into 1 or 0 instead of filtering. */
  bool: boolean;
  /** on (…) / ignoring (…); group_left / group_right only allow (but never enable) many-to-one. */
  matching: { on: boolean; labels: string[]; group: 'left' | 'right' | undefined } | undefined;
  left: MetricNode;
  right: MetricNode;
}

export interface LabelReplaceNode {
  kind: 'label_replace';
  expr: MetricNode;
  dst: string;
  replacement: string;
  src: string;
  /** RE2 source, anchored to the whole value when evaluated. */
  regex: string;
}

export type MetricNode =
  | RangeNode
  | AggregateNode
  | BinaryNode
  | LabelReplaceNode
  /** A scalar literal. */
  | { kind: 'scalar'; value: number }
  /** vector(N): one series without labels, N at every step. */
  | { kind: 'vector'; value: number };

export interface MetricQuery {
  kind: 'metric_query';
  root: MetricNode;
  /** Every range node of the tree, by id: one SQL query each. */
  leaves: RangeNode[];
}

/** Evaluation times start + k·step for k = 0 … steps − 1 (the last one <= end). */
export interface StepGrid {
  startNs: bigint;
  endNs: bigint;
  stepNs: bigint;
}

/** Loki's limit: a range query has at most this many points per series. */
const MAX_STEPS = 11_000;
/** Above this many sub-buckets per series the windows fall back to whole steps (an approximation). */
const MAX_SUB_BUCKETS = 100_000;

export function gridSteps(grid: StepGrid): number {
  if (grid.stepNs <= 0n) throw new FloeError('bad_data', 'zero or negative query resolution step widths are not accepted. Try a positive integer', { code: 'FLOE_ERR_LOGQL_PARAM' });
  if (grid.endNs < grid.startNs) throw new FloeError('bad_data', 'invalid time range: end timestamp must not be before start time', { code: 'FLOE_ERR_LOGQL_PARAM' });
  const steps = (grid.endNs - grid.startNs) / grid.stepNs + 1n;
  if (steps > BigInt(MAX_STEPS)) {
    throw new FloeError('bad_data', `exceeded maximum resolution of ${MAX_STEPS.toLocaleString('en-US')} points per timeseries. Try increasing the value of the step parameter`, { code: 'FLOE_ERR_LOGQL_PARAM' });
  }
  return Number(steps);
}

/** How one leaf's rows fall into sub-buckets, and which sub-buckets make up each window. */
export interface SampleWindows {
  /** Sub-bucket j is (originNs + j·widthNs, originNs + (j+1)·widthNs]. */
  originNs: bigint;
  widthNs: bigint;
  /** Rows read: [originNs + 1, last window end + 1), half-open like every IR range. */
  scan: TimeRange;
  /** Window k is sub-buckets [k·perStep, k·perStep + perWindow − 1]. */
  perStep: number;
  perWindow: number;
  /** The window length the rates divide by, in seconds. */
  windowSeconds: number;
}

const gcd = (a: bigint, b: bigint): bigint => {
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
};

export function sampleWindows(grid: StepGrid, rangeNs: bigint, offsetNs: bigint): SampleWindows {
  const steps = gridSteps(grid);
  if (rangeNs <= 0n) throw new FloeError('bad_data', 'the range of a range aggregation must be positive', { code: 'FLOE_ERR_LOGQL_PARAM' });
  let width = steps === 1 ? rangeNs : gcd(grid.stepNs, rangeNs);
  let range = rangeNs;
  const lastEnd = grid.startNs + BigInt(steps - 1) * grid.stepNs - offsetNs;
  if ((lastEnd - (grid.startNs - offsetNs - range)) / width > BigInt(MAX_SUB_BUCKETS)) {
    width = grid.stepNs;
    range = ((rangeNs + grid.stepNs - 1n) / grid.stepNs) * grid.stepNs;
  }
  const originNs = grid.startNs - offsetNs - range;
  return {
    originNs,
    widthNs: width,
    scan: { startNs: originNs + 1n, endNs: lastEnd + 1n },
    perStep: steps === 1 ? 0 : Number(grid.stepNs / width),
    perWindow: Number(range / width),
    windowSeconds: Number(range) / 1e9,
  };
}

/** The partial a range function needs per sub-bucket. */
export function partialOf(fn: RangeFn, unwrapped: boolean): PartialKind {
  switch (fn) {
    case 'count_over_time':
      return 'count';
    case 'rate':
      return unwrapped ? 'sum' : 'count';
    case 'bytes_over_time':
    case 'bytes_rate':
      return 'bytes';
    case 'sum_over_time':
      return 'sum';
    case 'avg_over_time':
      return 'avg';
    case 'min_over_time':
      return 'min';
    case 'max_over_time':
      return 'max';
    case 'stddev_over_time':
    case 'stdvar_over_time':
      return 'moments';
    case 'first_over_time':
      return 'first';
    case 'last_over_time':
      return 'last';
    case 'quantile_over_time':
      return 'values';
  }
}
