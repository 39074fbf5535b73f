import { stringify } from 'yaml';
import { ruleDurationText } from './durations.ts';
import type { Rule, RuleGroup } from './model.ts';

/**
 * The model → rule-file YAML, field names and order as Prometheus's rulefmt writes them. Label and
 * annotation names are sorted, as Go's YAML encoder sorts map keys, so the Cortex API's output is
 * the same whatever order a group was stored in. Maps are built as JS Maps: they keep the order
 * given, where an object would put integer-like keys (a namespace called "7") first.
 */

const YAML_OPTIONS = {
  // Long expressions stay on one line (no folding), multi-line ones become `|` blocks as written.
  lineWidth: 0,
  blockQuote: 'literal',
} as const;

export function ruleGroupToYaml(group: RuleGroup): string {
  return stringify(groupNode(group), YAML_OPTIONS);
}

/** The Cortex ruler's `GET /config/v1/rules` body: each namespace (sorted) → its groups. */
export function ruleNamespacesToYaml(ns: ReadonlyMap<string, readonly RuleGroup[]> | Record<string, readonly RuleGroup[]>): string {
  const entries: [string, readonly RuleGroup[]][] = ns instanceof Map ? [...ns.entries()] : Object.entries(ns);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return stringify(new Map(entries.map(([name, groups]) => [name, groups.map(groupNode)])), YAML_OPTIONS);
}

export function groupNode(g: RuleGroup): Map<string, unknown> {
  const out = new Map<string, unknown>([['name', g.name]]);
  // An `interval: 0s` (the default) was kept as text only; it is written back as written.
  if (g.intervalMs !== undefined || g.intervalText !== undefined) out.set('interval', ruleDurationText(g.intervalMs ?? 0, g.intervalText));
  if (g.queryOffsetMs !== undefined) out.set('query_offset', ruleDurationText(g.queryOffsetMs, g.queryOffsetText));
  if (g.limit !== undefined) out.set('limit', g.limit);
  if (Object.keys(g.labels).length > 0) out.set('labels', sorted(g.labels));
  out.set('rules', g.rules.map(ruleNode));
  return out;
}

function ruleNode(r: Rule): Map<string, unknown> {
  if (r.kind === 'recording') {
    const out = new Map<string, unknown>([['record', r.record], ['expr', r.expr]]);
    if (Object.keys(r.labels).length > 0) out.set('labels', sorted(r.labels));
    return out;
  }
  const out = new Map<string, unknown>([['alert', r.alert], ['expr', r.expr]]);
  // A `for: 0s` that was written is written back; a zero that was not is left out, as rulefmt does.
  if (r.forMs !== 0 || r.forText !== undefined) out.set('for', ruleDurationText(r.forMs, r.forText));
  if (r.keepFiringForMs !== 0 || r.keepFiringForText !== undefined) out.set('keep_firing_for', ruleDurationText(r.keepFiringForMs, r.keepFiringForText));
  if (Object.keys(r.labels).length > 0) out.set('labels', sorted(r.labels));
  if (Object.keys(r.annotations).length > 0) out.set('annotations', sorted(r.annotations));
  return out;
}

function sorted(m: Record<string, string>): Map<string, string> {
  return new Map(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
