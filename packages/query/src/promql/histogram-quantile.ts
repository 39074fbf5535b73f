import type { Expr } from './ast.ts';
import type { Labels } from '../labels.ts';
import { METRIC_NAME } from './labels.ts';
import type { Annotations } from './annotations.ts';
import { parseGoFloat } from './go-strconv.ts';

/**
 * histogram_quantile over classic histograms, whose buckets are series told apart by their `le`
 * label (the bucket's upper bound) and whose counts are cumulative. As in Prometheus: buckets of
 * the same bound are merged; a count below its predecessor's is raised to it (with an info when
 * the difference is more than rounding error); the +Inf bucket must be there; the quantile is
 * interpolated linearly inside the bucket its rank falls in, and a rank in the +Inf bucket
 * answers the highest finite bound.
 */

export interface Bucket {
  upper: number;
  count: number;
}

/** Prometheus's tolerance for bucket counts that differ only by floating-point error. */
const SMALL_DELTA = 1e-12;

/** Prometheus's almost.Equal: a and b within `epsilon` of each other, relatively (absolutely near 0). */
function almostEqual(a: number, b: number, epsilon: number): boolean {
  if (a === b || (Number.isNaN(a) && Number.isNaN(b))) return true;
  const absSum = Math.abs(a) + Math.abs(b);
  const diff = Math.abs(a - b);
  const MIN_NORMAL = 2.2250738585072014e-308;
  if (a === 0 || b === 0 || absSum < MIN_NORMAL) return diff < epsilon * MIN_NORMAL;
  return diff / Math.min(absSum, Number.MAX_VALUE) < epsilon;
}

/**
 * Quantile over classic cumulative buckets (histogram_quantile). `onForced` is called when a
 * bucket's count had to be raised to its predecessor's by more than rounding error.
 */
export function bucketQuantile(q: number, input: Bucket[], onForced?: () => void): number {
  if (Number.isNaN(q)) return NaN;
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  const sorted = [...input].sort((a, b) => a.upper - b.upper);
  if (sorted.length === 0 || sorted[sorted.length - 1]!.upper !== Infinity) return NaN;
  // Buckets with the same bound are merged; counts are forced monotonic.
  const buckets: Bucket[] = [];
  for (const b of sorted) {
    const last = buckets[buckets.length - 1];
    if (last && last.upper === b.upper) last.count += b.count;
    else buckets.push({ ...b });
  }
  let max = -Infinity;
  let forced = false;
  for (const b of buckets) {
    if (b.count > max) max = b.count;
    else {
      if (b.count < max && !almostEqual(max, b.count, SMALL_DELTA)) forced = true;
      b.count = max;
    }
  }
  if (forced) onForced?.();
  if (buckets.length < 2) return NaN;
  const observations = buckets[buckets.length - 1]!.count;
  if (observations === 0 || Number.isNaN(observations)) return NaN;
  let rank = q * observations;
  let b = buckets.findIndex((x) => x.count >= rank);
  if (b < 0) b = buckets.length;
  if (b === buckets.length - 1) return buckets[buckets.length - 2]!.upper;
  if (b === buckets.length) return NaN;
  if (b === 0 && buckets[0]!.upper <= 0) return buckets[0]!.upper;
  let start = 0;
  const end = buckets[b]!.upper;
  let count = buckets[b]!.count;
  if (b > 0) {
    start = buckets[b - 1]!.upper;
    count -= buckets[b - 1]!.count;
    rank -= buckets[b - 1]!.count;
  }
  return start + (end - start) * (rank / count);
}

/** A classic bucket's upper bound from its `le`; undefined (with Prometheus's warning) when missing or malformed. */
export function bucketBound(labels: Labels, notes: Annotations | undefined, at: Expr): number | undefined {
  const le = labels.le;
  const upper = le === undefined ? undefined : parseLe(le);
  if (upper === undefined) notes?.badBucketLabel(labels[METRIC_NAME] ?? '', le ?? '', at);
  return upper;
}

export function parseLe(le: string): number | undefined {
  try {
    return parseGoFloat(le);
  } catch {
    return undefined;
  }
}
