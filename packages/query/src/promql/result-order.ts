import type { Expr } from './ast.ts';
import { compareLabels, type Labels } from '../labels.ts';

/**
 * The order of a query's result. Prometheus orders an instant query's vector by label set, unless
 * the expression orders it itself: sort, sort_desc, sort_by_label(_desc), topk and bottomk at its
 * top. sort_by_label compares label values in natural order (runs of digits as numbers).
 */

const ORDERING_FUNCTIONS: ReadonlySet<string> = new Set(['sort', 'sort_desc', 'sort_by_label', 'sort_by_label_desc']);

/**
 * Prometheus's natural order of label values (the facette/natsort rule it uses): the strings as
 * runs of digits and of non-digits, compared run by run, two digit runs as numbers. True when `a`
 * comes before `b`; a string whose runs all equal the other's first ones comes first.
 */
export function naturalLess(a: string, b: string): boolean {
  const ra = a.match(/\d+|\D+/g) ?? [];
  const rb = b.match(/\d+|\D+/g) ?? [];
  for (let i = 0; i < ra.length; i++) {
    if (i >= rb.length) return false;
    const x = ra[i]!;
    const y = rb[i]!;
    // As numbers when both fit Go's int (strconv.Atoi), as text otherwise.
    const nx = int64Of(x);
    const ny = int64Of(y);
    const numeric = nx !== undefined && ny !== undefined;
    const same = numeric ? nx === ny : x === y;
    if (same) {
      if (i === ra.length - 1) return true;
      if (i === rb.length - 1) return false;
      continue;
    }
    return numeric ? nx < ny : x < y;
  }
  return false;
}

const INT64_MAX = 2n ** 63n - 1n;
const int64Of = (run: string): bigint | undefined => {
  if (!/^\d+$/.test(run)) return undefined;
  const n = BigInt(run);
  return n <= INT64_MAX ? n : undefined;
};

/** Result order: sort, sort_desc and sort_by_label(_desc) keep theirs, anything else is ordered by labels (as a selector's). */
export function ordered<S extends { labels: Labels }>(expr: Expr, samples: S[]): S[] {
  let top = expr;
  while (top.type === 'paren') top = top.expr;
  if (top.type === 'call' && ORDERING_FUNCTIONS.has(top.func)) return samples;
  if (top.type === 'aggregate' && (top.op === 'topk' || top.op === 'bottomk')) return samples;
  return [...samples].sort((a, b) => compareLabels(a.labels, b.labels));
}
