import type { AlertingRule, InstantResult, RecordingRule, RuleGroup } from '@floe/query';

/**
 * One evaluation of a rule group, as Prometheus's rules manager does it, without I/O: each rule's
 * query at the evaluation time (through `query`), the samples the group writes (recording
 * results, ALERTS and ALERTS_FOR_STATE, stale markers for series that went away), the alerts'
 * state machine (inactive → pending → firing → resolved, with `for` and `keep_firing_for`) and
 * which alerts are due to be sent to the Alertmanagers. The state it carries between evaluations
 * is plain JSON (GroupState), so the ruler can save it and a new evaluator restore it.
 */

export type Labels = Record<string, string>;

/** Prometheus's staleness marker: a NaN with this bit pattern ends a series. */
export const STALE_NAN = new Float64Array(new BigUint64Array([0x7ff0000000000002n]).buffer)[0]!;

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
  /** Keys of the series this rule wrote last time (stale markers end the ones that go away). */
  series: string[];
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
  /** The instant query of `expr` at `t` (ms). */
  query(expr: string, t: number): Promise<InstantResult>;
  /** Expands an alert's label or annotation template (never throws). */
  expand(template: string, labels: Labels, value: number): string;
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

/** A label set's identity: names sorted, unambiguous for any values. */
export function labelsKey(labels: Labels): string {
  return JSON.stringify(Object.keys(labels).sort().map((k) => [k, labels[k]]));
}

/** The label set a labelsKey names. */
export function labelsOfKey(key: string): Labels {
  return Object.fromEntries(JSON.parse(key) as Array<[string, string]>);
}

export function emptyGroupState(group: RuleGroup): GroupState {
  return { evaluationTime: 0, rules: group.rules.map((r) => emptyRuleState(ruleName(r))) };
}

const emptyRuleState = (name: string): RuleState => ({ name, health: 'unknown', lastError: '', evaluationTime: 0, alerts: [], series: [] });

export const ruleName = (r: RecordingRule | AlertingRule) => (r.kind === 'recording' ? r.record : r.alert);

/**
 * The saved state of a group as the starting point of its next evaluation: the rules' states by
 * position where the rule there still has the same name, fresh otherwise; alerts kept only when
 * the state is recent enough (`toleranceMs` since its last evaluation), as Prometheus restores
 * `for` state within --rules.alert.for-outage-tolerance.
 */
export function restoreGroupState(group: RuleGroup, saved: GroupState | undefined, now: number, toleranceMs: number): GroupState {
  if (!saved || !Array.isArray(saved.rules)) return emptyGroupState(group);
  const recent = saved.lastEvaluation !== undefined && now - saved.lastEvaluation <= toleranceMs;
  return {
    ...(saved.lastEvaluation !== undefined ? { lastEvaluation: saved.lastEvaluation } : {}),
    evaluationTime: saved.evaluationTime ?? 0,
    rules: group.rules.map((rule, i) => {
      const s = saved.rules[i];
      if (!s || s.name !== ruleName(rule)) return emptyRuleState(ruleName(rule));
      return { ...s, alerts: recent && rule.kind === 'alerting' ? s.alerts : [], series: s.series ?? [] };
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
    const before = prev.rules[i]?.name === ruleName(rule) ? prev.rules[i]! : emptyRuleState(ruleName(rule));
    const ruleStarted = performance.now();
    let out: { samples: OutputSample[]; alerts: ActiveAlert[] };
    let error = '';
    try {
      out = rule.kind === 'recording' ? await evalRecording(rule, group, ts, ctx) : await evalAlerting(rule, group, ts, before.alerts, ctx);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      // A failed alerting rule keeps its alerts as they were (Prometheus: the evaluation is
      // abandoned, not taken as "no alerts"); a failed recording rule writes nothing.
      out = { samples: [], alerts: before.alerts };
    }
    const written = new Set<string>();
    for (const s of out.samples) {
      written.add(labelsKey(s.labels));
      samples.push(s);
    }
    // Series of the last evaluation that this one did not write end with a staleness marker,
    // unless the rule failed: then nothing is known about them.
    if (error === '') {
      for (const key of before.series) {
        if (written.has(key)) continue;
        samples.push({ labels: labelsOfKey(key), t: ts, v: STALE_NAN });
      }
    }
    if (rule.kind === 'alerting' && error === '') due.push(...dueAlerts(out.alerts, ts, ctx));
    rules.push({
      name: ruleName(rule),
      health: error === '' ? 'ok' : 'err',
      lastError: error,
      lastEvaluation: ts,
      evaluationTime: (performance.now() - ruleStarted) / 1000,
      alerts: out.alerts,
      series: error === '' ? [...written] : before.series,
    });
  }
  return { state: { lastEvaluation: ts, evaluationTime: (performance.now() - started) / 1000, rules }, samples, due };
}

/** The result as samples: a scalar becomes one sample without labels, as Prometheus's rules see it. */
async function vectorOf(expr: string, ts: number, ctx: EvaluationContext): Promise<Array<{ labels: Labels; v: number }>> {
  const r = await ctx.query(expr, ts);
  switch (r.resultType) {
    case 'vector':
      return r.result.map((s) => ({ labels: s.labels, v: s.v }));
    case 'scalar':
      return [{ labels: {}, v: r.result[1] }];
    default:
      throw new Error(`rule result is not a vector or scalar: ${r.resultType}`);
  }
}

/** Sets a label as an own property, so that even one named `__proto__` is an ordinary label. */
const setLabel = (labels: Labels, name: string, value: string) => Object.defineProperty(labels, name, { value, enumerable: true, writable: true, configurable: true });

/** Applies rule labels over a label set: an empty value removes the label. */
function withLabels(base: Labels, extra: Labels): Labels {
  const out: Labels = { ...base };
  for (const [k, v] of Object.entries(extra)) {
    if (v === '') delete out[k];
    else setLabel(out, k, v);
  }
  return out;
}

function checkLimit(limit: number | undefined, n: number, what: string): void {
  if (limit !== undefined && limit > 0 && n > limit) throw new Error(`exceeded limit of ${limit} with ${n} ${what}`);
}

async function evalRecording(rule: RecordingRule, group: RuleGroup, ts: number, ctx: EvaluationContext) {
  const vector = await vectorOf(rule.expr, ts, ctx);
  const seen = new Set<string>();
  const samples: OutputSample[] = [];
  for (const s of vector) {
    const labels = withLabels(withLabels(s.labels, group.labels ?? {}), rule.labels);
    labels.__name__ = rule.record;
    const key = labelsKey(labels);
    if (seen.has(key)) throw new Error('vector contains metrics with the same labelset after applying rule labels');
    seen.add(key);
    samples.push({ labels, t: ts, v: s.v });
  }
  checkLimit(group.limit, samples.length, 'series');
  return { samples, alerts: [] };
}

async function evalAlerting(rule: AlertingRule, group: RuleGroup, ts: number, before: readonly ActiveAlert[], ctx: EvaluationContext) {
  const vector = await vectorOf(rule.expr, ts, ctx);
  const found = new Map<string, ActiveAlert>();
  for (const s of vector) {
    const { __name__: _dropped, ...sampleLabels } = s.labels;
    const expand = (text: string) => ctx.expand(text, sampleLabels, s.v);
    const ruleLabels: Labels = {};
    for (const [k, v] of Object.entries(rule.labels)) setLabel(ruleLabels, k, expand(v));
    const labels = withLabels(withLabels(sampleLabels, group.labels ?? {}), ruleLabels);
    labels.alertname = rule.alert;
    const annotations: Labels = {};
    for (const [k, v] of Object.entries(rule.annotations)) setLabel(annotations, k, expand(v));
    const key = labelsKey(labels);
    if (found.has(key)) throw new Error('vector contains metrics with the same labelset after applying alert labels');
    found.set(key, { labels, annotations, state: 'pending', value: s.v, activeAt: ts });
  }

  const active = new Map(before.map((a) => [labelsKey(a.labels), { ...a }]));
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
    samples.push({ labels: { ...a.labels, __name__: 'ALERTS', alertstate: a.state }, t: ts, v: 1 });
    samples.push({ labels: { ...a.labels, __name__: 'ALERTS_FOR_STATE' }, t: ts, v: a.activeAt / 1000 });
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
    out.push({ labels: { ...a.labels }, annotations: { ...a.annotations }, startsAt: a.firedAt ?? a.activeAt, endsAt: a.resolvedAt ?? a.validUntil });
  }
  return out;
}
