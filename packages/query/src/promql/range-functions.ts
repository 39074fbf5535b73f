import { quantile } from '../quantile.ts';
import { kahanInc, kahanSum, mean, variance, windowValues, type Floats } from './floats.ts';

/**
 * The functions of a range vector (`f(x[5m])`): each maps one series' window of samples (lo ≤ i <
 * hi, never empty, staleness markers left out) to one value, or to none. The semantics are
 * Prometheus 3's: rate, increase and delta extrapolate the change between the first and last
 * sample to the window's edges, all the way when the gap is under 1.1 average sample intervals and
 * by half an interval otherwise, and a counter's start no further back than where it would have
 * been zero; a counter's decrease counts as a reset; irate and idelta look at the last two samples
 * only; deriv and predict_linear fit a least-squares line; double_exponential_smoothing is Holt's
 * linear smoothing. The step-by-step evaluator (eval.ts) and the series-at-a-time one (steps.ts)
 * both read OVER_TIME, so the two agree. The functions that take a parameter (quantile_over_time,
 * predict_linear, double_exponential_smoothing) are cases of Evaluator.call, which checks the
 * parameter; the last two compute with linearRegression and doubleExponentialSmoothing here.
 */

/** Functions of one window of samples lo ≤ i < hi (range vector → instant vector); windows are never empty. */
export const OVER_TIME: Record<string, (t: Floats, v: Floats, lo: number, hi: number, m: { start: number; end: number }) => number | undefined> = {
  sum_over_time: (_t, v, lo, hi) => kahanSum(v, lo, hi),
  avg_over_time: (_t, v, lo, hi) => mean(v, lo, hi),
  min_over_time: (_t, v, lo, hi) => {
    let min = v[lo]!;
    for (let i = lo; i < hi; i++) if (v[i]! < min || Number.isNaN(min)) min = v[i]!;
    return min;
  },
  max_over_time: (_t, v, lo, hi) => {
    let max = v[lo]!;
    for (let i = lo; i < hi; i++) if (v[i]! > max || Number.isNaN(max)) max = v[i]!;
    return max;
  },
  count_over_time: (_t, _v, lo, hi) => hi - lo,
  last_over_time: (_t, v, _lo, hi) => v[hi - 1],
  present_over_time: () => 1,
  stdvar_over_time: (_t, v, lo, hi) => variance(v, lo, hi),
  stddev_over_time: (_t, v, lo, hi) => Math.sqrt(variance(v, lo, hi)),
  changes: (_t, v, lo, hi) => {
    let n = 0;
    for (let i = lo + 1; i < hi; i++) if (v[i] !== v[i - 1] && !(Number.isNaN(v[i]!) && Number.isNaN(v[i - 1]!))) n++;
    return n;
  },
  resets: (_t, v, lo, hi) => {
    let n = 0;
    for (let i = lo + 1; i < hi; i++) if (v[i]! < v[i - 1]!) n++;
    return n;
  },
  rate: (t, v, lo, hi, m) => extrapolatedDelta(t, v, lo, hi, m.start, m.end, true, true),
  increase: (t, v, lo, hi, m) => extrapolatedDelta(t, v, lo, hi, m.start, m.end, true, false),
  delta: (t, v, lo, hi, m) => extrapolatedDelta(t, v, lo, hi, m.start, m.end, false, false),
  irate: (t, v, lo, hi) => instantDelta(t, v, lo, hi, true),
  idelta: (t, v, lo, hi) => instantDelta(t, v, lo, hi, false),
  deriv: (t, v, lo, hi) => (hi - lo < 2 ? undefined : linearRegression(t, v, lo, hi, t[lo]!)[0]),
  mad_over_time: (_t, v, lo, hi) => {
    const values = windowValues(v, lo, hi);
    const median = quantile(0.5, values);
    return quantile(0.5, values.map((x) => Math.abs(x - median)));
  },
  first_over_time: (_t, v, lo) => v[lo],
  ts_of_first_over_time: (t, _v, lo) => t[lo]! / 1000,
  ts_of_last_over_time: (t, _v, _lo, hi) => t[hi - 1]! / 1000,
  ts_of_min_over_time: (t, v, lo, hi) => timeOfExtreme(t, v, lo, hi, -1),
  ts_of_max_over_time: (t, v, lo, hi) => timeOfExtreme(t, v, lo, hi, 1),
};

/** Functions over counters, whose input Prometheus checks for a counter's name. */
export const COUNTER_FUNCTIONS: ReadonlySet<string> = new Set(['rate', 'increase']);

/** rate / increase / delta: the change over the window (samples lo ≤ i < hi), extrapolated towards its edges. */
function extrapolatedDelta(t: Floats, v: Floats, lo: number, hi: number, rangeStart: number, rangeEnd: number, isCounter: boolean, isRate: boolean): number | undefined {
  const n = hi - lo;
  if (n < 2) return undefined;
  const first = v[lo]!;
  let result = v[hi - 1]! - first;
  if (isCounter) {
    let last = first;
    for (let i = lo + 1; i < hi; i++) {
      const x = v[i]!;
      if (x < last) result += last;
      last = x;
    }
  }
  let durationToStart = (t[lo]! - rangeStart) / 1000;
  const durationToEnd = (rangeEnd - t[hi - 1]!) / 1000;
  const sampled = (t[hi - 1]! - t[lo]!) / 1000;
  const averageBetween = sampled / (n - 1);
  if (isCounter && result > 0 && first >= 0) {
    const durationToZero = sampled * (first / result);
    if (durationToZero < durationToStart) durationToStart = durationToZero;
  }
  const threshold = averageBetween * 1.1;
  let interval = sampled;
  interval += durationToStart < threshold ? durationToStart : averageBetween / 2;
  interval += durationToEnd < threshold ? durationToEnd : averageBetween / 2;
  result = result * (interval / sampled);
  if (isRate) result = result / ((rangeEnd - rangeStart) / 1000);
  return result;
}

function instantDelta(t: Floats, v: Floats, lo: number, hi: number, isRate: boolean): number | undefined {
  if (hi - lo < 2) return undefined;
  const last = v[hi - 1]!;
  const prev = v[hi - 2]!;
  let result = isRate && last < prev ? last : last - prev;
  const interval = t[hi - 1]! - t[hi - 2]!;
  if (interval === 0) return undefined;
  if (isRate) result /= interval / 1000;
  return result;
}

/** Least squares over the samples lo ≤ i < hi, x in seconds from interceptTime: [slope, intercept]. */
export function linearRegression(t: Floats, v: Floats, lo: number, hi: number, interceptTime: number): [number, number] {
  let n = 0;
  let sumX = 0, cX = 0, sumY = 0, cY = 0, sumXY = 0, cXY = 0, sumX2 = 0, cX2 = 0;
  const initY = v[lo]!;
  let constY = true;
  for (let i = lo; i < hi; i++) {
    if (constY && i > lo && v[i] !== initY) constY = false;
    n += 1;
    const x = (t[i]! - interceptTime) / 1000;
    [sumX, cX] = kahanInc(x, sumX, cX);
    [sumY, cY] = kahanInc(v[i]!, sumY, cY);
    [sumXY, cXY] = kahanInc(x * v[i]!, sumXY, cXY);
    [sumX2, cX2] = kahanInc(x * x, sumX2, cX2);
  }
  if (constY) {
    if (!Number.isFinite(initY)) return [NaN, NaN];
    return [0, initY];
  }
  sumX += cX;
  sumY += cY;
  sumXY += cXY;
  sumX2 += cX2;
  const covXY = sumXY - (sumX * sumY) / n;
  const varX = sumX2 - (sumX * sumX) / n;
  const slope = covXY / varX;
  const intercept = sumY / n - (slope * sumX) / n;
  return [slope, intercept];
}

/**
 * Seconds of the last sample that reaches the window's maximum (dir 1) or minimum (-1): ties go
 * to the later sample (>=, <=), where min/max_over_time keep the first value; a NaN gives way.
 */
function timeOfExtreme(t: Floats, v: Floats, lo: number, hi: number, dir: 1 | -1): number {
  let best = v[lo]!;
  let at = t[lo]!;
  for (let i = lo; i < hi; i++) {
    if ((dir > 0 ? v[i]! >= best : v[i]! <= best) || Number.isNaN(best)) {
      best = v[i]!;
      at = t[i]!;
    }
  }
  return at / 1000;
}

/** Go's `%f`: six decimals (Prometheus prints double_exponential_smoothing's factors so). */
export const goFixed = (x: number) => (Number.isFinite(x) ? x.toFixed(6) : Number.isNaN(x) ? 'NaN' : x > 0 ? '+Inf' : '-Inf');

/** Holt's linear smoothing of the window's samples (Prometheus's double_exponential_smoothing); undefined below two samples. */
export function doubleExponentialSmoothing(v: Floats, lo: number, hi: number, sf: number, tf: number): number | undefined {
  if (hi - lo < 2) return undefined;
  let s0 = 0;
  let s1 = v[lo]!;
  let trend = v[lo + 1]! - v[lo]!;
  for (let i = lo + 1; i < hi; i++) {
    const x = sf * v[i]!;
    if (i > lo + 1) trend = tf * (s1 - s0) + (1 - tf) * trend;
    const y = (1 - sf) * (s1 + trend);
    s0 = s1;
    s1 = x + y;
  }
  return s1;
}
