/**
 * Label sets of the PromQL evaluator: plain objects without a prototype (so `__proto__` is an
 * ordinary label name), compared by a canonical key.
 */
export type Labels = Record<string, string>;

export const METRIC_NAME = '__name__';

export function makeLabels(entries: Iterable<readonly [string, string]> = []): Labels {
  const out = Object.create(null) as Labels;
  for (const [k, v] of entries) if (v !== '') out[k] = v;
  return out;
}

export function copyLabels(l: Labels): Labels {
  return Object.assign(Object.create(null) as Labels, l);
}

/*
 * Label sets are never changed once made (every change copies), so their key and their copy
 * without __name__ are remembered per object: a range query meets the same series' labels at
 * every step.
 */
const keys = new WeakMap<Labels, string>();
const withoutName = new WeakMap<Labels, Labels>();

/** A canonical, collision-free key of a label set (names sorted). */
export function labelsKey(l: Labels): string {
  let out = keys.get(l);
  if (out !== undefined) return out;
  const names = Object.keys(l).sort();
  out = '';
  for (const n of names) out += `${n}\u0000${l[n]}\u0001`;
  keys.set(l, out);
  return out;
}

export function dropMetricName(l: Labels): Labels {
  if (!(METRIC_NAME in l)) return l;
  let out = withoutName.get(l);
  if (!out) {
    out = copyLabels(l);
    delete out[METRIC_NAME];
    withoutName.set(l, out);
  }
  return out;
}

/** Only the named labels (those present). */
export function pickLabels(l: Labels, names: readonly string[]): Labels {
  const out = Object.create(null) as Labels;
  for (const n of names) if (n in l) out[n] = l[n]!;
  return out;
}

/** Every label but the named ones. */
export function omitLabels(l: Labels, names: readonly string[]): Labels {
  const out = copyLabels(l);
  for (const n of names) delete out[n];
  return out;
}

/** Prometheus's label order: by name, then value; label sets compared name by name. */
export function compareLabels(a: Labels, b: Labels): number {
  const an = Object.keys(a).sort();
  const bn = Object.keys(b).sort();
  for (let i = 0; i < Math.min(an.length, bn.length); i++) {
    if (an[i] !== bn[i]) return an[i]! < bn[i]! ? -1 : 1;
    const av = a[an[i]!]!;
    const bv = b[bn[i]!]!;
    if (av !== bv) return av < bv ? -1 : 1;
  }
  return an.length - bn.length;
}

export const LABEL_NAME_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Go's strconv.FormatFloat(v, 'f', -1, 64): the shortest decimal that round-trips, never an exponent. */
export function formatFloat(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  const s = String(v);
  if (!s.includes('e')) return s;
  const [mant, expText] = s.split('e') as [string, string];
  const exp = Number(expText);
  const neg = mant.startsWith('-');
  const digits = mant.replace('-', '').replace('.', '');
  const pointAt = (mant.replace('-', '').indexOf('.') < 0 ? mant.replace('-', '').length : mant.replace('-', '').indexOf('.')) + exp;
  let out: string;
  if (pointAt <= 0) out = `0.${'0'.repeat(-pointAt)}${digits}`;
  else if (pointAt >= digits.length) out = digits + '0'.repeat(pointAt - digits.length);
  else out = `${digits.slice(0, pointAt)}.${digits.slice(pointAt)}`;
  return neg ? `-${out}` : out;
}
