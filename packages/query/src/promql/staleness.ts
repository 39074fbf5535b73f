/**
 * Prometheus's staleness marker: the NaN with bits 0x7ff0000000000002, written where a series
 * ends (a target or a rule stopped producing it). Any other NaN is an ordinary value.
 */
export const STALE_NAN = new Float64Array(new BigUint64Array([0x7ff0_0000_0000_0002n]).buffer)[0]!;

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** Whether `v` is the staleness marker (V8 may have set its quiet bit on the way). */
export function isStaleNaN(v: number): boolean {
  if (!Number.isNaN(v)) return false;
  f64[0] = v;
  return (u64[0]! & 0x7ff7_ffff_ffff_ffffn) === 0x7ff0_0000_0000_0002n;
}
