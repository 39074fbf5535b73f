/**
 * How a Prometheus API answer is compared with Floe's (the PromQL differential test and
 * bench/promql): the same result type, identical label sets and timestamps, values within 1e-9
 * relative (1e-12 absolute near zero, where the two engines' summation orders leave different
 * rounding residue; NaN equals NaN), the order of series only for sort() / sort_desc(); two
 * refusals agree.
 */
export type PromApiBody = { status: string; data?: { resultType: string; result: unknown }; errorType?: string; error?: string };

const parseValue = (v: string) => (v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v));
const close = (a: number, b: number) =>
  (Number.isNaN(a) && Number.isNaN(b)) || a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b)) || Math.abs(a - b) <= 1e-12;
const key = (m: Record<string, string>) => JSON.stringify(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : 1)));

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
    const [pt, pv] = p.result as [number, string];
    const [ft, fv] = f.result as [number, string];
    if (pt !== ft) return `time ${ft} vs ${pt}`;
    return p.resultType === 'scalar' ? (close(parseValue(pv), parseValue(fv)) ? undefined : `value ${fv} vs ${pv}`) : pv === fv ? undefined : `string ${fv} vs ${pv}`;
  }
  if (p.resultType === 'vector') {
    const pr = p.result as Array<{ metric: Record<string, string>; value: [number, string] }>;
    const fr = f.result as Array<{ metric: Record<string, string>; value: [number, string] }>;
    if (/^sort(_desc)?\(/.test(query)) {
      const order = (r: typeof pr) => r.map((s) => key(s.metric)).join('|');
      if (order(pr) !== order(fr)) return 'sort order differs';
    }
    const fm = new Map(fr.map((s) => [key(s.metric), s]));
    if (pr.length !== fr.length) return `${fr.length} series, Prometheus ${pr.length}`;
    for (const s of pr) {
      const o = fm.get(key(s.metric));
      if (!o) return `series ${key(s.metric)} missing`;
      if (o.value[0] !== s.value[0]) return `time of ${key(s.metric)}: ${o.value[0]} vs ${s.value[0]}`;
      if (!close(parseValue(o.value[1]), parseValue(s.value[1]))) return `value of ${key(s.metric)}: ${o.value[1]} vs ${s.value[1]}`;
    }
    return undefined;
  }
  const pr = p.result as Array<{ metric: Record<string, string>; values: Array<[number, string]> }>;
  const fr = f.result as Array<{ metric: Record<string, string>; values: Array<[number, string]> }>;
  if (pr.length !== fr.length) return `${fr.length} series, Prometheus ${pr.length}`;
  const fm = new Map(fr.map((s) => [key(s.metric), s]));
  for (const s of pr) {
    const o = fm.get(key(s.metric));
    if (!o) return `series ${key(s.metric)} missing`;
    if (o.values.length !== s.values.length) return `${key(s.metric)}: ${o.values.length} points vs ${s.values.length}`;
    for (let i = 0; i < s.values.length; i++) {
      if (o.values[i]![0] !== s.values[i]![0]) return `${key(s.metric)}: time ${o.values[i]![0]} vs ${s.values[i]![0]}`;
      if (!close(parseValue(o.values[i]![1]), parseValue(s.values[i]![1]))) return `${key(s.metric)} at ${s.values[i]![0]}: ${o.values[i]![1]} vs ${s.values[i]![1]}`;
    }
  }
  return undefined;
}
