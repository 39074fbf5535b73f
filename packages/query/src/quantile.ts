/**
 * Prometheus's φ-quantile with linear interpolation between the closest ranks (NaN sorts first),
 * shared by PromQL's quantile / quantile_over_time and LogQL's quantile_over_time.
 */
export function quantile(q: number, values: number[]): number {
  if (values.length === 0 || Number.isNaN(q)) return NaN;
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  const sorted = [...values].sort((a, b) => (Number.isNaN(a) ? -1 : Number.isNaN(b) ? 1 : a - b));
  const n = sorted.length;
  const rank = q * (n - 1);
  const lower = Math.max(0, Math.floor(rank));
  const upper = Math.min(n - 1, lower + 1);
  const weight = rank - Math.floor(rank);
  return sorted[lower]! * (1 - weight) + sorted[upper]! * weight;
}
