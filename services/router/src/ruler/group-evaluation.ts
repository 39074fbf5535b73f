import { makePromLabels, promLabelsKey, STALE_NAN, type TemplateQuery, type AlertingRule, type InstantResult, type RecordingRule, type Rule, type RuleGroup } from '@floe/query';

/**
 * One evaluation of a rule group, as Prometheus's rules manager does it, without I/O: each rule's
 * query at the evaluation time (through `query`), the samples the group writes (recording
 * results, ALERTS and ALERTS_FOR_STATE, stale markers for series that went away), the alerts'
 * state machine (inactive → pending → firing → resolved, with `for` and `keep_firing_for`) and
 * which alerts are due to be sent to the Alertmanagers. The state it carries between evaluations
 * is plain JSON (GroupState), so the ruler can save it and a new evaluator restore it.
 */

export type Labels = Record<string, string>;

/** How long a resolved alert is remembered (and re-sent as resolved), as Prometheus. */
export const RESOLVED_RETENTION_MS = 15 * 60_000;

export type AlertState = 'pending' | 'firing' | 'inactive';

export interface ActiveAlert {
  labels: Labels;
  annotations: Labels;
  state: AlertState;
  /** The query's value for it at the last evaluation that returned it. */
  value: number;
  activeAt: number;
  firedAt?: number;
  resolvedAt?: number;
  lastSentAt?: number;
  validUntil?: number;
  keepFiringSince?: number;
}

export type RuleHealth = 'ok' | 'err' | 'unknown';

export interface RuleState {
  /** The rule's name (record or alert) when the state was saved: a restore checks it still matches. */
  name: string;
  health: RuleHealth;
  lastError: string;
  lastEvaluation?: number;
  /** Seconds. */
  evaluationTime: number;
  /** Alerting rules: the active alerts, by fingerprint. */
  alerts: ActiveAlert[];
  /** The series this rule wrote last time (stale markers end the ones that go away). */
  series: Labels[];
}

export interface GroupState {
  lastEvaluation?: number;
  /** Seconds. */
  evaluationTime: number;
  rules: RuleState[];
}

/** A sample to write: labels include __name__; `t` in ms. */
export interface OutputSample {
  labels: Labels;
  t: number;
  v: number;
}

/** An alert for the notifier, in Prometheus's notifier terms. */
export interface DueAlert {
  labels: Labels;
  annotations: Labels;
  startsAt: number;
  endsAt: number;
}

export interface EvaluationContext {
  /**
   * The instant query of `expr` at `t` (ms). `fresh` holds what the group's earlier rules wrote
   * at this evaluation: Prometheus commits each rule's results before the next rule runs, so the
   * query must see them although storage may not have them yet.
   */
  query(expr: string, t: number, fresh: readonly OutputSample[]): Promise<InstantResult>;
  /** Expands an alert's label or annotation template (never throws). */
  expand(template: string, labels: Labels, value: number, query: TemplateQuery): Promise<string>;
  /** The group's interval (ms), for the alerts' validity. */
  intervalMs: number;
  resendDelayMs: number;
}

export interface GroupEvaluation {
  state: GroupState;
  samples: OutputSample[];
  /** Alerts to send now, with the labels they are sent with (external labels not yet added). */
  due: DueAlert[];
}

export function emptyGroupState(group: RuleGroup): GroupState {
  return { evaluationTime: 0, rules: group.rules.map((r) => emptyRuleState(ruleName(r))) };
}

const emptyRuleState = (name: string): RuleState => ({ name, health: 'unknown', lastError: '', evaluationTime: 0, alerts: [], series: [] });

export const ruleName = (r: Rule) => (r.kind === 'recording' ? r.record : r.alert);

/**
 * The state a saved group state holds for the group's rule at `index`: the saved one where the
 * rule there still has the same name (rules are kept by position, as Prometheus keeps them
 * across a reload), a fresh one otherwise.
 */
export function ruleStateAt(saved: GroupState | null | undefined, rule: Rule, index: number): RuleState {
  const s = saved?.rules[index];
  return s && s.name === ruleName(rule) ? s : emptyRuleState(ruleName(rule));
}

/**
 * The saved state of a group as the starting point of its next evaluation (ruleStateAt for each
 * rule), alerts kept only when the state is recent enough (`toleranceMs` since its last
 * evaluation), as Prometheus restores `for` state within --rules.alert.for-outage-tolerance.
 */
export function restoreGroupState(group: RuleGroup, saved: GroupState | null | undefined, now: number, toleranceMs: number): GroupState {
  if (!saved) return emptyGroupState(group);
  const recent = saved.lastEvaluation !== undefined && now - saved.lastEvaluation <= toleranceMs;
  return {
    ...(saved.lastEvaluation !== undefined ? { lastEvaluation: saved.lastEvaluation } : {}),
    evaluationTime: saved.evaluationTime,
    rules: group.rules.map((rule, i) => {
      const s = ruleStateAt(saved, rule, i);
      return recent || s.alerts.length === 0 ? s : { ...s, alerts: [] };
    }),
  };
}

/** Evaluates every rule of the group at `ts` (ms), in order, from `prev`. */
export async function evaluateGroup(group: RuleGroup, ts: number, prev: GroupState, ctx: EvaluationContext): Promise<GroupEvaluation> {
  const started = performance.now();
  const samples: OutputSample[] = [];
  const due: DueAlert[] = [];
  const rules: RuleState[] = [];
  for (let i = 0; i < group.rules.length; i++) {
    const rule = group.rules[i]!;
    const before = ruleStateAt(prev, rule, i);
    const ruleStarted = performance.now();
    let out: { samples: OutputSample[]; alerts: ActiveAlert[] };
    let error = '';
    try {
      out = rule.kind === 'recording' ? await evalRecording(rule, group, ts, samples, ctx) : await evalAlerting(rule, group, ts, before.alerts, samples, ctx);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      // A failed alerting rule keeps its alerts as they were (Prometheus: the evaluation is
      // abandoned, not taken as "no alerts"); a failed recording rule writes nothing.
      out = { samples: [], alerts: before.alerts };
    }
    for (const s of out.samples) samples.push(s);
    // Series of the last evaluation that this one did not write end with a staleness marker,
    // unless the rule failed: then nothing is known about them.
    if (error === '') {
      const written = new Set(out.samples.map((x) => promLabelsKey(x.labels)));
      for (const labels of before.series) if (!written.has(promLabelsKey(labels))) samples.push({ labels, t: ts, v: STALE_NAN });
    }
    if (rule.kind === 'alerting' && error === '') due.push(...dueAlerts(out.alerts, ts, ctx));
    rules.push({
      name: ruleName(rule),
      health: error === '' ? 'ok' : 'err',
      lastError: error,
      lastEvaluation: ts,
      evaluationTime: (performance.now() - ruleStarted) / 1000,
      alerts: out.alerts,
      series: error === '' ? out.samples.map((x) => x.labels) : before.series,
    });
  }
  return { state: { lastEvaluation: ts, evaluationTime: (performance.now() - started) / 1000, rules }, samples, due };
}

/** The result as samples: a scalar becomes one sample without labels, as Prometheus's rules see it. */
async function vectorOf(expr: string, ts: number, fresh: readonly OutputSample[], ctx: EvaluationContext): Promise<Array<{ labels: Labels; v: number }>> {
  const r = await ctx.query(expr, ts, fresh);
  switch (r.resultType) {
    case 'vector':
      return r.result.map((s) => ({ labels: s.labels, v: s.v }));
    case 'scalar':
      return [{ labels: makePromLabels(), v: r.result[1] }];
    default:
      throw new Error(`rule result is not a vector or scalar: ${r.resultType}`);
  }
}

/**
 * Rule (or group) labels applied over a label set: they override, and an empty value removes the
 * label, as in Prometheus. The result has no prototype (@floe/query's label sets), so a label
 * named `__proto__` is an ordinary one.
 */
function withLabels(base: Labels, ...overrides: Labels[]): Labels {
  const merged = new Map(Object.entries(base));
  for (const o of overrides) for (const [k, v] of Object.entries(o)) merged.set(k, v);
  return makePromLabels(merged);
}

function checkLimit(limit: number | undefined, n: number, what: string): void {
  if (limit !== undefined && limit > 0 && n > limit) throw new Error(`exceeded limit of ${limit} with ${n} ${what}`);
}

async function evalRecording(rule: RecordingRule, group: RuleGroup, ts: number, fresh: readonly OutputSample[], ctx: EvaluationContext) {
  const vector = await vectorOf(rule.expr, ts, fresh, ctx);
  const seen = new Set<string>();
  const samples: OutputSample[] = [];
  for (const s of vector) {
    const labels = withLabels(s.labels, group.labels, rule.labels, { __name__: rule.record });
    const key = promLabelsKey(labels);
    if (seen.has(key)) throw new Error('vector contains metrics with the same labelset after applying rule labels');
    seen.add(key);
    samples.push({ labels, t: ts, v: s.v });
  }
  checkLimit(group.limit, samples.length, 'series');
  return { samples, alerts: [] };
}

async function evalAlerting(rule: AlertingRule, group: RuleGroup, ts: number, before: readonly ActiveAlert[], fresh: readonly OutputSample[], ctx: EvaluationContext) {
  const vector = await vectorOf(rule.expr, ts, fresh, ctx);
  // A template's `query` runs at the evaluation's time, as Prometheus's; one run per distinct
  // query for all of this rule's alerts (Prometheus would run it per alert, with the same answer).
  const asked = new Map<string, Promise<Array<{ labels: Labels; v: number }>>>();
  const templateQuery: TemplateQuery = (expr) => {
    let answer = asked.get(expr);
    if (!answer) asked.set(expr, (answer = vectorOf(expr, ts, fresh, ctx)));
    return answer;
  };
  const found = new Map<string, ActiveAlert>();
  for (const s of vector) {
    const sampleLabels = withLabels(s.labels, { __name__: '' });
    const expand = async (templates: Labels) => {
      const out: Labels = makePromLabels();
      for (const [k, v] of Object.entries(templates)) out[k] = await ctx.expand(v, sampleLabels, s.v, templateQuery);
      return out;
    };
    const labels = withLabels(sampleLabels, group.labels, await expand(rule.labels), { alertname: rule.alert });
    const annotations = await expand(rule.annotations);
    const key = promLabelsKey(labels);
    if (found.has(key)) throw new Error('vector contains metrics with the same labelset after applying alert labels');
    found.set(key, { labels, annotations, state: 'pending', value: s.v, activeAt: ts });
  }

  const active = new Map(before.map((a) => [promLabelsKey(a.labels), { ...a }]));
  for (const [key, next] of found) {
    const a = active.get(key);
    if (a && a.state !== 'inactive') {
      a.value = next.value;
      a.annotations = next.annotations;
      continue;
    }
    active.set(key, next);
  }
  for (const [key, a] of active) {
    if (!found.has(key)) {
      // Pending alerts that lost their series go away; resolved ones once past their retention.
      if (a.state === 'pending' || (a.resolvedAt !== undefined && ts - a.resolvedAt > RESOLVED_RETENTION_MS)) {
        active.delete(key);
        continue;
      }
      if (a.state !== 'inactive') {
        if (a.state === 'firing' && rule.keepFiringForMs > 0) {
          a.keepFiringSince ??= ts;
          if (ts - a.keepFiringSince < rule.keepFiringForMs) continue;
        }
        a.state = 'inactive';
        a.resolvedAt = ts;
      }
      continue;
    }
    delete a.keepFiringSince;
    if (a.state === 'pending' && ts - a.activeAt >= rule.forMs) {
      a.state = 'firing';
      a.firedAt = ts;
    }
  }
  const alerts = [...active.values()];
  // Over the limit, no alert is kept (Prometheus drops them all and reports the error).
  checkLimit(group.limit, alerts.filter((a) => a.state !== 'inactive').length, 'alerts');

  const samples: OutputSample[] = [];
  for (const a of alerts) {
    if (a.state === 'inactive') continue;
    samples.push({ labels: withLabels(a.labels, { __name__: 'ALERTS', alertstate: a.state }), t: ts, v: 1 });
    samples.push({ labels: withLabels(a.labels, { __name__: 'ALERTS_FOR_STATE' }), t: ts, v: a.activeAt / 1000 });
  }
  return { samples, alerts };
}

/**
 * The alerts to send now (Prometheus's needsSending): firing ones not sent for `resendDelay`,
 * resolved ones not sent since they resolved; never pending ones. Resolved alerts are sent again
 * every resendDelay while remembered, as Prometheus does, so an Alertmanager that missed one
 * still learns of it. Marks them sent.
 */
function dueAlerts(alerts: ActiveAlert[], ts: number, ctx: EvaluationContext): DueAlert[] {
  const out: DueAlert[] = [];
  const delta = Math.max(ctx.resendDelayMs, ctx.intervalMs);
  for (const a of alerts) {
    if (a.state === 'pending') continue;
    const resolvedSinceSent = a.resolvedAt !== undefined && (a.lastSentAt === undefined || a.resolvedAt > a.lastSentAt);
    const resendDue = a.lastSentAt === undefined || a.lastSentAt + ctx.resendDelayMs < ts;
    if (!resolvedSinceSent && !resendDue) continue;
    a.lastSentAt = ts;
    a.validUntil = ts + 4 * delta;
    out.push({ labels: a.labels, annotations: a.annotations, startsAt: a.firedAt ?? a.activeAt, endsAt: a.resolvedAt ?? a.validUntil });
  }
  return out;
}
