/**
 * How a Prometheus API answer is compared with Floe's (the PromQL differential test and
 * bench/promql): the same result type, identical label sets and timestamps, values within 1e-9
 * relative (1e-12 absolute near zero, where the two engines' summation orders leave different
 * rounding residue; NaN equals NaN, an infinity only the same infinity), the order of series only
 * for sort() / sort_desc(); two refusals agree.
 */
export type PromApiBody = { status: string; data?: { resultType: string; result: unknown }; errorType?: string; error?: string };

type Point = [number, string];
type Series = { metric: Record<string, string>; points: Point[] };

const parseValue = (v: string) => (v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v));
function close(a: number, b: number): boolean {
  // The tolerance below is infinite when either side is (+Inf would match 5 and -Inf); Object.is
  // also makes NaN equal NaN.
  if (!Number.isFinite(a) || !Number.isFinite(b)) return Object.is(a, b);
  return a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b)) || Math.abs(a - b) <= 1e-12;
}
const key = (m: Record<string, string>) => JSON.stringify(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : 1)));

/** Floe's series against Prometheus's, paired by label set (a vector sample is a one-point series). */
function compareSeries(prom: Series[], floe: Series[]): string | undefined {
  if (prom.length !== floe.length) return `${floe.length} series, Prometheus ${prom.length}`;
  const byKey = new Map(floe.map((s) => [key(s.metric), s]));
  for (const s of prom) {
    const k = key(s.metric);
    const o = byKey.get(k);
    if (!o) return `series ${k} missing`;
    if (o.points.length !== s.points.length) return `${k}: ${o.points.length} points vs ${s.points.length}`;
    for (let i = 0; i < s.points.length; i++) {
      const [pt, pv] = s.points[i]!;
      const [ft, fv] = o.points[i]!;
      if (ft !== pt) return `${k}: time ${ft} vs ${pt}`;
      if (!close(parseValue(fv), parseValue(pv))) return `${k} at ${pt}: ${fv} vs ${pv}`;
    }
  }
  return undefined;
}

/** Why Floe's answer to `query` differs from Prometheus's, or undefined when they agree. */
export function comparePromAnswers(query: string, prom: PromApiBody, floe: PromApiBody): string | undefined {
  if (prom.status !== 'success' || floe.status !== 'success') {
    if (prom.status !== 'success' && floe.status !== 'success') return undefined;
    return prom.status !== 'success' ? `Prometheus refused (${prom.error}), Floe answered` : `Floe refused (${floe.errorType}: ${floe.error}), Prometheus answered`;
  }
  const p = prom.data!;
  const f = floe.data!;
  if (p.resultType !== f.resultType) return `result type ${f.resultType}, Prometheus ${p.resultType}`;
  if (p.resultType === 'scalar' || p.resultType === 'string') {
    const [pt, pv] = p.result as Point;
    const [ft, fv] = f.result as Point;
    if (pt !== ft) return `time ${ft} vs ${pt}`;
    return p.resultType === 'scalar' ? (close(parseValue(pv), parseValue(fv)) ? undefined : `value ${fv} vs ${pv}`) : pv === fv ? undefined : `string ${fv} vs ${pv}`;
  }
  if (p.resultType === 'vector') {
    type Sample = { metric: Record<string, string>; value: Point };
    const pr = p.result as Sample[];
    const fr = f.result as Sample[];
    // Only sort() and sort_desc() give a vector's order a meaning.
    if (/^sort(_desc)?\(/.test(query)) {
      const order = (r: Sample[]) => r.map((s) => key(s.metric)).join('|');
      if (order(pr) !== order(fr)) return 'sort order differs';
    }
    const asSeries = (r: Sample[]) => r.map((s) => ({ metric: s.metric, points: [s.value] }));
    return compareSeries(asSeries(pr), asSeries(fr));
  }
  type Range = { metric: Record<string, string>; values: Point[] };
  const asSeries = (r: Range[]) => r.map((s) => ({ metric: s.metric, points: s.values }));
  return compareSeries(asSeries(p.result as Range[]), asSeries(f.result as Range[]));
}
