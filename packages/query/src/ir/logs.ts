/**
 * Floe's Query IR for log selection: what to read, storage-neutral. A query language lowers to
 * it (logql/lower.ts) and a planner turns it into SQL (sql/). Labels are plain names (dotted or
 * not, aliases included): which column or attribute a label resolves to is the planner's business,
 * so the IR never names a column. Times are unix nanoseconds as bigint; ranges are half-open.
 */

/** A half-open time range [startNs, endNs) in unix nanoseconds. */
export interface TimeRange {
  startNs: bigint;
  endNs: bigint;
}

export type LabelMatchOp = '=' | '!=' | '=~' | '!~';

/**
 * One label matcher with Prometheus semantics: a missing label has the value "", so a negative
 * matcher (or one that accepts "") also matches a row without the label; regexes are RE2 and
 * anchored at both ends.
 */
export interface LabelMatch {
  label: string;
  op: LabelMatchOp;
  value: string;
}

/** Ordered numeric comparison on a label whose value is read as a number (rows where it is not one never match). */
export type NumericOp = '>' | '>=' | '<' | '<=' | '==' | '!=';

export type LabelPredicate =
  | { kind: 'match'; match: LabelMatch }
  | { kind: 'compare'; label: string; op: NumericOp; value: number }
  | { kind: 'and' | 'or'; left: LabelPredicate; right: LabelPredicate }
  | { kind: 'const'; value: boolean };

/**
 * A predicate on the log line: `contains` keeps lines containing any of `values`, `not_contains`
 * lines containing none of them; `match` / `not_match` likewise with unanchored RE2 regexes.
 */
export interface LinePredicate {
  op: 'contains' | 'not_contains' | 'match' | 'not_match';
  values: string[];
}

/**
 * Rows are left out when any deletion selects them: the delete requests of the caller's dataset
 * that the compactor has not processed yet, so deleted lines vanish from answers as soon as the
 * request is recorded (as Loki's filter-and-delete mode).
 */
export type RowFilter = { kind: 'line'; line: LinePredicate } | { kind: 'labels'; predicate: LabelPredicate } | { kind: 'exclude'; deletions: LogDeletion[] };

/** The rows a log delete request removes: what its LogQL log query selects within its window. */
export interface LogDeletion {
  range: TimeRange;
  streams: LabelMatch[];
  filters: RowFilter[];
}

export type Direction = 'forward' | 'backward';

/** The log table every log query reads: the caller's `<tenant>.<dataset>.logs`. */
export type LogTable = 'logs';

/** Log lines of the streams selected by `streams`, kept by every filter, newest or oldest first. */
export interface LogSelect {
  kind: 'log_select';
  table: LogTable;
  range: TimeRange;
  /** Stream selector: every matcher must hold. */
  streams: LabelMatch[];
  /** Pipeline filters in order; all must hold. */
  filters: RowFilter[];
  direction: Direction;
  limit: number;
}

/** Names of the labels present in the window (optionally only on the selected streams). */
export interface LabelNames {
  kind: 'label_names';
  table: LogTable;
  range: TimeRange;
  streams: LabelMatch[];
}

/** Distinct non-empty values of one label in the window. */
export interface LabelValues {
  kind: 'label_values';
  table: LogTable;
  range: TimeRange;
  label: string;
  streams: LabelMatch[];
}

/** Distinct stream identities matching any of the selectors. */
export interface SeriesSelect {
  kind: 'series';
  table: LogTable;
  range: TimeRange;
  /** Alternatives: a stream matches when every matcher of one selector holds. */
  selectors: LabelMatch[][];
}

export type LogIR = LogSelect | LabelNames | LabelValues | SeriesSelect;
