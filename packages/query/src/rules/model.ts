/**
 * The ruler's rule-group model: a Prometheus rule file's groups (rulefmt), which are also what
 * the Cortex/Mimir and Loki ruler APIs take and return one group at a time. Durations are held in
 * milliseconds for evaluation, and as written (`90s` stays `90s`, not `1m30s`) so a group read and
 * written back reads as its author wrote it.
 */

export type RuleLanguage = 'promql' | 'logql';

export interface RecordingRule {
  kind: 'recording';
  record: string;
  expr: string;
  labels: Record<string, string>;
}

export interface AlertingRule {
  kind: 'alerting';
  alert: string;
  expr: string;
  forMs: number;
  /** `for` as written, absent when the rule had none. */
  forText?: string;
  keepFiringForMs: number;
  /** `keep_firing_for` as written, absent when the rule had none. */
  keepFiringForText?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export type Rule = RecordingRule | AlertingRule;

export interface RuleGroup {
  name: string;
  /** Absent: the ruler's default evaluation interval, which `interval: 0s` also means (as in Prometheus). Never 0. */
  intervalMs?: number;
  intervalText?: string;
  /** Prometheus 3's per-group `query_offset`; absent: the ruler's default. */
  queryOffsetMs?: number;
  queryOffsetText?: string;
  /** At most this many series or alerts per rule (0 or absent: no limit), as Prometheus's `limit`. */
  limit?: number;
  /** Prometheus 3's group labels, added to every rule's result (a rule's own label wins). */
  labels: Record<string, string>;
  rules: Rule[];
}

export interface RuleCheckOptions {
  language: RuleLanguage;
  /**
   * Checks one label or annotation value of an alerting rule as a template, throwing when it is
   * not one. `where` is `label "severity"` or `annotation "summary"`; the thrown message is
   * reported after it (`group "g", rule 1, "A": annotation "summary": <message>`), as promtool
   * reports a template that does not parse.
   */
  checkTemplate?: (text: string, where: string) => void;
}

/** Refused above this many bytes (UTF-8): a whole file or one group's request body. */
export const MAX_RULE_TEXT_BYTES = 1024 * 1024;

/** Refused above this many rules in one group (Cortex's ruler has a like per-tenant limit). */
export const MAX_RULES_PER_GROUP = 1000;
