import { copyLabels, labelsKey, makeLabels, omitLabels, pickLabels, type Labels } from '../labels.ts';
import type { Grouping } from './ast.ts';

/** PromQL's own label helpers; label sets themselves (key, order, pick / omit) are ../labels.ts, shared with LogQL. */

export const METRIC_NAME = '__name__';

/* Label sets are never changed once made (every change copies), so their copy without __name__ is remembered per object. */
const withoutName = new WeakMap<Labels, Labels>();

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

/** An aggregation group: its labels and their key. */
export interface GroupOf {
  labels: Labels;
  key: string;
}

/*
 * Group of a label set per grouping, remembered per label set object: series labels outlive a query
 * (the router caches them), so a dashboard's aggregations find their groups already made.
 */
const groupsOf = new WeakMap<Labels, Map<string, GroupOf>>();
/** Each grouping's key in groupsOf, made once per query's AST node, not once per series and step. */
const specs = new WeakMap<Grouping, string>();
const NO_GROUPING: GroupOf = { labels: makeLabels(), key: labelsKey(makeLabels()) };

/** The group of `l` under an aggregation's `by` / `without` (none: the one group of everything). */
export function groupOf(l: Labels, grouping: Grouping | undefined): GroupOf {
  if (!grouping) return NO_GROUPING;
  let spec = specs.get(grouping);
  if (spec === undefined) specs.set(grouping, (spec = `${grouping.without ? '-' : '+'}${grouping.labels.join('\u0000')}`));
  let byLabels = groupsOf.get(l);
  if (!byLabels) groupsOf.set(l, (byLabels = new Map()));
  let g = byLabels.get(spec);
  if (!g) {
    const labels = grouping.without ? omitLabels(l, [...grouping.labels, METRIC_NAME]) : pickLabels(l, grouping.labels);
    g = { labels, key: labelsKey(labels) };
    byLabels.set(spec, g);
  }
  return g;
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
