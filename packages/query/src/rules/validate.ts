import { isFloeError } from '@floe/errors';
import { isLogExpr } from '../logql/ast.ts';
import { parseLogQL } from '../logql/parse.ts';
import { parsePromQL } from '../promql/parse.ts';
import { parseRuleDuration } from './durations.ts';
import type { AlertingRule, Rule, RuleCheckOptions, RuleGroup } from './model.ts';
import { messageOf, rulesError, type Problem } from './problems.ts';
import type { RawGroup, RawRule } from './yaml-decode.ts';

/**
 * Raw groups → the model, with the checks of Prometheus's rulefmt Validate (and Loki's ruler for
 * LogQL), worded as `promtool check rules` words them: `group "api", rule 2, "HighLatency": …`.
 * Every problem of every rule is gathered; any problem refuses the whole file.
 */

// Prometheus's legacy (pre-UTF-8) name rules, which its rule files and remote write still assume.
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
/** A lone surrogate: the only way a JS string can fail to be UTF-8 (a YAML "\ud800" escape makes one). */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Why a text of the group cannot be kept, or undefined. A group is stored as jsonb, which holds
 * neither U+0000 nor a lone surrogate (a YAML "\0" or "\ud800" escape makes them): refused here
 * as the author's mistake rather than failing the write.
 */
function unstorable(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains a NUL character';
  if (LONE_SURROGATE.test(text)) return 'not valid UTF-8';
  return undefined;
}

export function checkGroups(raw: readonly RawGroup[], opts: RuleCheckOptions, oneFile: boolean): RuleGroup[] {
  const problems: Problem[] = [];
  const seen = new Set<string>();
  const groups = raw.map((g, i) => {
    const badName = unstorable(g.name);
    if (g.name === '') problems.push({ message: `group ${i + 1}: Groupname must not be empty`, at: g.at });
    else if (badName) problems.push({ message: `group ${i + 1}: invalid group name ${JSON.stringify(g.name)}: ${badName}`, at: g.at });
    else if (oneFile && seen.has(g.name)) problems.push({ message: `groupname: ${JSON.stringify(g.name)} is repeated in the same file`, at: g.at });
    seen.add(g.name);
    return checkGroup(g, opts, problems);
  });
  if (problems.length > 0) throw rulesError(problems);
  return groups;
}

function checkGroup(g: RawGroup, opts: RuleCheckOptions, problems: Problem[]): RuleGroup {
  const report = (message: string) => problems.push({ message: `group ${JSON.stringify(g.name)}: ${message}`, at: g.at });
  const group: RuleGroup = { name: g.name, labels: checkLabels(g.labels, report), rules: [] };
  if (g.interval !== undefined) {
    // 0 is Prometheus's "the default interval": left absent so no evaluator divides by it.
    const ms = duration(g.interval, 'interval', report);
    if (ms !== 0) group.intervalMs = ms;
    group.intervalText = g.interval;
  }
  if (g.queryOffset !== undefined) {
    group.queryOffsetMs = duration(g.queryOffset, 'query_offset', report);
    group.queryOffsetText = g.queryOffset;
  }
  if (g.limit !== undefined) {
    // Prometheus takes any int and treats a negative one as none; refused here so it means one thing.
    if (g.limit < 0) report(`invalid limit ${g.limit}: must be a non-negative integer (0 is no limit)`);
    group.limit = g.limit;
  }
  g.rules.forEach((r, i) => {
    const name = r.alert !== '' ? r.alert : r.record;
    const rule = checkRule(r, opts, (message) => problems.push({ message: `group ${JSON.stringify(g.name)}, rule ${i + 1}, ${JSON.stringify(name)}: ${message}`, at: r.at }));
    if (rule) group.rules.push(rule);
  });
  return group;
}

/** In rulefmt's order, so the problems of one rule read as promtool lists them. */
function checkRule(r: RawRule, opts: RuleCheckOptions, report: (message: string) => void): Rule | undefined {
  if (r.record !== '' && r.alert !== '') report(`only one of 'record' and 'alert' must be set`);
  if (r.record === '' && r.alert === '') report(`one of 'record' or 'alert' must be set`);
  const badAlert = unstorable(r.alert);
  if (badAlert) report(`invalid alert name ${JSON.stringify(r.alert)}: ${badAlert}`);
  const badExpr = unstorable(r.expr);
  if (r.expr === '') report(`field 'expr' must be set in rule`);
  // A comment may hold what a string literal may not; the parser would pass it.
  else if (badExpr) report(`invalid expression: ${badExpr}`);
  else checkExpr(r.expr, opts.language, report);
  const forMs = r.for === undefined ? 0 : duration(r.for, 'for', report);
  const keepFiringForMs = r.keepFiringFor === undefined ? 0 : duration(r.keepFiringFor, 'keep_firing_for', report);
  if (r.record !== '') {
    // Prometheus refuses these only when they would do something: `for: 0s` and `annotations: {}` pass.
    if (r.annotations.length > 0) report(`invalid field 'annotations' in recording rule`);
    if (forMs !== 0) report(`invalid field 'for' in recording rule`);
    if (keepFiringForMs !== 0) report(`invalid field 'keep_firing_for' in recording rule`);
    if (!METRIC_NAME.test(r.record)) report(`invalid recording rule name: ${r.record}`);
  }
  const labels = checkLabels(r.labels, report);
  for (const [name, value] of r.annotations) {
    if (!LABEL_NAME.test(name)) report(`invalid annotation name: ${name}`);
    const bad = unstorable(value);
    if (bad) report(`invalid annotation value: ${JSON.stringify(value)} (${bad})`);
  }
  const annotations = Object.fromEntries(r.annotations);
  if (r.alert !== '' && opts.checkTemplate) {
    // Only alerting rules expand templates (a recording rule's labels are used as they are).
    for (const [where, entries] of [['label', r.labels], ['annotation', r.annotations]] as const) {
      for (const [name, text] of entries) {
        const at = `${where} ${JSON.stringify(name)}`;
        try {
          opts.checkTemplate(text, at);
        } catch (err) {
          report(`${at}: ${messageOf(err)}`);
        }
      }
    }
  }
  if (r.alert !== '') {
    const rule: AlertingRule = { kind: 'alerting', alert: r.alert, expr: r.expr, forMs, keepFiringForMs, labels, annotations };
    if (r.for !== undefined) rule.forText = r.for;
    if (r.keepFiringFor !== undefined) rule.keepFiringForText = r.keepFiringFor;
    return rule;
  }
  return r.record !== '' ? { kind: 'recording', record: r.record, expr: r.expr, labels } : undefined;
}

function checkExpr(expr: string, language: RuleCheckOptions['language'], report: (message: string) => void): void {
  try {
    if (language === 'promql') {
      parsePromQL(expr);
      return;
    }
    // Loki's ruler evaluates a rule as an instant metric query; a log query yields lines, not samples.
    if (isLogExpr(parseLogQL(expr))) {
      report(`could not parse expression: only sample expression supported: a Loki rule must be a metric query such as sum(rate({app="api"} |= "error" [5m])), not a log query`);
    }
  } catch (err) {
    if (!isFloeError(err)) throw err;
    report(`could not parse expression: ${err.message}`);
  }
}

/** Label names and values as Prometheus checks them, `__name__` refused: a rule cannot rename its series. */
function checkLabels(entries: readonly [string, string][], report: (message: string) => void): Record<string, string> {
  for (const [name, value] of entries) {
    if (name === '__name__') report(`invalid label name: __name__ (a rule's labels cannot set the metric name)`);
    else if (!LABEL_NAME.test(name)) report(`invalid label name: ${name}`);
    const bad = unstorable(value);
    if (bad) report(`invalid label value: ${JSON.stringify(value)} (${bad})`);
  }
  // fromEntries defines own properties, so even a label named __proto__ is an ordinary entry.
  return Object.fromEntries(entries);
}

function duration(text: string, field: string, report: (message: string) => void): number {
  const ms = parseRuleDuration(text);
  if (ms === undefined) report(`invalid '${field}': not a valid duration string: ${JSON.stringify(text)}`);
  return ms ?? 0;
}
