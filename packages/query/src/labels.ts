/**
 * Label sets of the PromQL and LogQL evaluators: plain objects without a prototype (so
 * `__proto__`, `valueOf`, … are ordinary label names, never inherited values), compared by a
 * canonical key and ordered as Prometheus orders them.
 */
export type Labels = Record<string, string>;

/** A label set of the non-empty entries (an empty value is an absent label, as in Prometheus). */
export function makeLabels(entries: Iterable<readonly [string, string]> = []): Labels {
  const out = Object.create(null) as Labels;
  for (const [k, v] of entries) if (v !== '') out[k] = v;
  return out;
}

export function copyLabels(l: Labels): Labels {
  return Object.assign(Object.create(null) as Labels, l);
}

/*
 * Label sets are never changed once keyed (every change copies), so their key is remembered per
 * object: a range query meets the same series' labels at every step.
 */
const keys = new WeakMap<Labels, string>();

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

/** Only the named labels (those present). */
export function pickLabels(l: Labels, names: readonly string[]): Labels {
  const out = Object.create(null) as Labels;
  for (const n of names) if (Object.hasOwn(l, n)) out[n] = l[n]!;
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
