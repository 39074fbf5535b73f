import { FloeError } from '@floe/errors';
import type { AlertingRule, RecordingRule, Rule, RuleGroup } from './model.ts';

/**
 * The model's storage form in the metadata DB (a jsonb `definition`): the model's own fields plus a
 * format version `v`, keys in a fixed order and label maps sorted, so an unchanged group always
 * stores as the same JSON. Reading it back checks every field's type, refusing unknown fields and
 * other versions: a row that does not read is Floe's fault (`internal`), not the client's, since
 * only groups that passed parseRuleFile / parseRuleGroup are stored.
 */

export const RULE_GROUP_JSON_VERSION = 1;

export type RuleGroupJson = { v: typeof RULE_GROUP_JSON_VERSION } & RuleGroup;

export function ruleGroupToJson(g: RuleGroup): RuleGroupJson {
  return {
    v: RULE_GROUP_JSON_VERSION,
    name: g.name,
    ...(g.intervalMs !== undefined ? { intervalMs: g.intervalMs } : {}),
    ...(g.intervalText !== undefined ? { intervalText: g.intervalText } : {}),
    ...(g.queryOffsetMs !== undefined ? { queryOffsetMs: g.queryOffsetMs } : {}),
    ...(g.queryOffsetText !== undefined ? { queryOffsetText: g.queryOffsetText } : {}),
    ...(g.limit !== undefined ? { limit: g.limit } : {}),
    labels: sorted(g.labels),
    rules: g.rules.map(ruleToJson),
  };
}

function ruleToJson(r: Rule): Rule {
  if (r.kind === 'recording') return { kind: 'recording', record: r.record, expr: r.expr, labels: sorted(r.labels) };
  return {
    kind: 'alerting',
    alert: r.alert,
    expr: r.expr,
    forMs: r.forMs,
    ...(r.forText !== undefined ? { forText: r.forText } : {}),
    keepFiringForMs: r.keepFiringForMs,
    ...(r.keepFiringForText !== undefined ? { keepFiringForText: r.keepFiringForText } : {}),
    labels: sorted(r.labels),
    annotations: sorted(r.annotations),
  };
}

/** A stored group back, from the parsed JSON value (as a jsonb column reads) or its text. */
export function ruleGroupFromJson(stored: unknown): RuleGroup {
  const value = typeof stored === 'string' ? parseJson(stored) : stored;
  const o = object(value, 'rule group', ['v', 'name', 'intervalMs', 'intervalText', 'queryOffsetMs', 'queryOffsetText', 'limit', 'labels', 'rules']);
  if (o.v !== RULE_GROUP_JSON_VERSION) throw malformed(`rule group: unknown version ${JSON.stringify(o.v)} (this Floe reads ${RULE_GROUP_JSON_VERSION})`);
  const g: RuleGroup = { name: str(o.name, 'name'), labels: strings(o.labels, 'labels'), rules: [] };
  if (o.intervalMs !== undefined) {
    // The model never holds 0 (the default interval is absent): an evaluator divides by it.
    g.intervalMs = ms(o.intervalMs, 'intervalMs');
    if (g.intervalMs === 0) throw malformed('intervalMs: 0 (the default interval is no intervalMs)');
  }
  if (o.intervalText !== undefined) g.intervalText = str(o.intervalText, 'intervalText');
  if (o.queryOffsetMs !== undefined) g.queryOffsetMs = ms(o.queryOffsetMs, 'queryOffsetMs');
  if (o.queryOffsetText !== undefined) g.queryOffsetText = str(o.queryOffsetText, 'queryOffsetText');
  if (o.limit !== undefined) g.limit = ms(o.limit, 'limit');
  if (!Array.isArray(o.rules)) throw malformed('rule group: rules is not an array');
  g.rules = o.rules.map((r: unknown, i) => ruleFromJson(r, `rules[${i}]`));
  return g;
}

function ruleFromJson(value: unknown, where: string): Rule {
  const kind = (value as { kind?: unknown } | null)?.kind;
  if (kind === 'recording') {
    const o = object(value, where, ['kind', 'record', 'expr', 'labels']);
    const r: RecordingRule = { kind, record: str(o.record, `${where}.record`), expr: str(o.expr, `${where}.expr`), labels: strings(o.labels, `${where}.labels`) };
    return r;
  }
  if (kind === 'alerting') {
    const o = object(value, where, ['kind', 'alert', 'expr', 'forMs', 'forText', 'keepFiringForMs', 'keepFiringForText', 'labels', 'annotations']);
    const r: AlertingRule = {
      kind,
      alert: str(o.alert, `${where}.alert`),
      expr: str(o.expr, `${where}.expr`),
      forMs: ms(o.forMs, `${where}.forMs`),
      keepFiringForMs: ms(o.keepFiringForMs, `${where}.keepFiringForMs`),
      labels: strings(o.labels, `${where}.labels`),
      annotations: strings(o.annotations, `${where}.annotations`),
    };
    if (o.forText !== undefined) r.forText = str(o.forText, `${where}.forText`);
    if (o.keepFiringForText !== undefined) r.keepFiringForText = str(o.keepFiringForText, `${where}.keepFiringForText`);
    return r;
  }
  throw malformed(`${where}: kind is neither "recording" nor "alerting"`);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw malformed(`not JSON (${(err as Error).message})`);
  }
}

function object(value: unknown, where: string, known: readonly string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw malformed(`${where}: not an object`);
  for (const k of Object.keys(value)) if (!known.includes(k)) throw malformed(`${where}: unknown field ${JSON.stringify(k)}`);
  return value as Record<string, unknown>;
}

function str(value: unknown, where: string): string {
  if (typeof value !== 'string') throw malformed(`${where}: not a string`);
  return value;
}

function ms(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw malformed(`${where}: not a non-negative integer`);
  return value;
}

function strings(value: unknown, where: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw malformed(`${where}: not an object`);
  const entries = Object.entries(value);
  for (const [k, v] of entries) if (typeof v !== 'string') throw malformed(`${where}.${k}: not a string`);
  return Object.fromEntries(entries) as Record<string, string>;
}

function sorted(m: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function malformed(detail: string): FloeError {
  return new FloeError('internal', `stored rule group is malformed: ${detail}`, { code: 'FLOE_ERR_RULES_STORED' });
}
