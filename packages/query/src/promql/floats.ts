/**
 * Sample values as arrays (`Floats`) and the float arithmetic the range functions and the
 * aggregations share. Sums are Kahan-compensated and a mean whose sum overflows is taken
 * incrementally instead, as Prometheus 3 computes them, so that a sum or an average rounds as
 * Prometheus's does instead of drifting from it over many samples.
 */

/** Sample times or values: plain arrays or typed arrays (Float64Array straight from Arrow). */
export type Floats = ArrayLike<number>;

export function kahanInc(inc: number, sum: number, c: number): [number, number] {
  const t = sum + inc;
  if (Number.isFinite(t)) {
    c += Math.abs(sum) >= Math.abs(inc) ? sum - t + inc : inc - t + sum;
  }
  return [t, c];
}

export function kahanSum(values: Floats, lo = 0, hi = values.length): number {
  let sum = 0;
  let c = 0;
  for (let i = lo; i < hi; i++) {
    const inc = values[i]!;
    const t = sum + inc;
    if (Number.isFinite(t)) c += Math.abs(sum) >= Math.abs(inc) ? sum - t + inc : inc - t + sum;
    sum = t;
  }
  return Number.isFinite(sum) ? sum + c : sum;
}

/** Kahan-summed mean; an incremental mean when the sum overflows (as Prometheus 3 does). */
export function mean(v: Floats, lo = 0, hi = v.length): number {
  let sum = 0;
  let c = 0;
  for (let i = lo; i < hi; i++) [sum, c] = kahanInc(v[i]!, sum, c);
  if (Number.isFinite(sum)) return (sum + c) / (hi - lo);
  let m = 0;
  for (let i = lo; i < hi; i++) m += v[i]! / (i - lo + 1) - m / (i - lo + 1);
  return m;
}

export function variance(v: Floats, lo: number, hi: number): number {
  let count = 0;
  let mean = 0, cMean = 0, aux = 0, cAux = 0;
  for (let i = lo; i < hi; i++) {
    const x = v[i]!;
    count++;
    const delta = x - (mean + cMean);
    [mean, cMean] = kahanInc(delta / count, mean, cMean);
    [aux, cAux] = kahanInc(delta * (x - (mean + cMean)), aux, cAux);
  }
  return (aux + cAux) / count;
}

/**
 * A copy of a window's values as an array, for what must own them (quantile sorts its input; a
 * matrix result outlives the evaluation). A loop, not Array.prototype.slice.call, which reads a
 * typed array element by element through the generic path.
 */
export function windowValues(v: Floats, lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let i = lo; i < hi; i++) out.push(v[i]!);
  return out;
}
