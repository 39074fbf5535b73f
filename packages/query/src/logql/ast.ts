/**
 * Floe's typed LogQL syntax tree. Every node keeps its source span (offsets into the query text as
 * sent, dotted names included) so validation and lowering can point at the exact place. The AST is
 * plain data: no execute methods, nothing about storage (STYLE habit 4).
 */

/** Half-open character offsets [from, to) into the query text. */
export interface Span {
  from: number;
  to: number;
}

export type MatchOp = '=' | '!=' | '=~' | '!~';

export interface LabelMatcher {
  label: string;
  op: MatchOp;
  value: string;
  span: Span;
}

export interface Selector {
  matchers: LabelMatcher[];
  span: Span;
}

/** `|=` contains, `!=` does not contain, `|~` / `!~` regex, `|>` / `!>` pattern. */
export type LineFilterOp = '|=' | '!=' | '|~' | '!~' | '|>' | '!>';

export interface LineFilter {
  kind: 'line_filter';
  op: LineFilterOp;
  /** One value, or several chained with `or` (`|= "a" or "b"`). */
  values: string[];
  /** `|= ip("…")`. */
  ip: boolean;
  span: Span;
}

export type CompareOp = '>' | '>=' | '<' | '<=' | '==' | '!=' | '=';

export type LabelFilterExpr =
  | { kind: 'matcher'; matcher: LabelMatcher; span: Span }
  | { kind: 'number'; label: string; op: CompareOp; value: number; span: Span }
  | { kind: 'duration'; label: string; op: CompareOp; /** milliseconds */ value: number; text: string; span: Span }
  | { kind: 'bytes'; label: string; op: CompareOp; value: number; text: string; span: Span }
  | { kind: 'ip'; label: string; op: '=' | '!='; value: string; span: Span }
  | { kind: 'and' | 'or'; left: LabelFilterExpr; right: LabelFilterExpr; span: Span };

export type ParserKind = 'json' | 'logfmt' | 'regexp' | 'pattern' | 'unpack';

/** `label="expression"` of `| json a="b.c"` / `| logfmt a, b="c"`, or a bare name. */
export interface LabelExtraction {
  label: string;
  expression: string | undefined;
  span: Span;
}

export type Stage =
  | LineFilter
  | { kind: 'label_filter'; expr: LabelFilterExpr; span: Span }
  | { kind: 'parser'; parser: ParserKind; /** regexp / pattern expression */ expression?: string; extractions: LabelExtraction[]; flags: string[]; span: Span }
  | { kind: 'line_format'; template: string; span: Span }
  | { kind: 'label_format'; assignments: Array<{ label: string; value: string; template: boolean; span: Span }>; span: Span }
  | { kind: 'decolorize'; span: Span }
  | { kind: 'drop' | 'keep'; labels: Array<{ label: string; matcher?: LabelMatcher; span: Span }>; span: Span };

export interface LogExpr {
  kind: 'log';
  selector: Selector;
  pipeline: Stage[];
  span: Span;
}

export type RangeOp =
  | 'count_over_time'
  | 'rate'
  | 'rate_counter'
  | 'bytes_over_time'
  | 'bytes_rate'
  | 'avg_over_time'
  | 'sum_over_time'
  | 'min_over_time'
  | 'max_over_time'
  | 'stddev_over_time'
  | 'stdvar_over_time'
  | 'quantile_over_time'
  | 'first_over_time'
  | 'last_over_time'
  | 'absent_over_time';

export interface Unwrap {
  label: string;
  /** bytes(), duration(), duration_seconds() */
  conversion: 'bytes' | 'duration' | 'duration_seconds' | undefined;
  /** Label filters after the unwrap (`| unwrap x | __error__=""`). */
  filters: LabelFilterExpr[];
  span: Span;
}

export interface Grouping {
  without: boolean;
  labels: string[];
  span: Span;
}

export interface RangeAggregation {
  kind: 'range_aggregation';
  op: RangeOp;
  /** quantile_over_time's φ. */
  param: number | undefined;
  log: LogExpr;
  /** milliseconds */
  rangeMs: number;
  offsetMs: number | undefined;
  unwrap: Unwrap | undefined;
  grouping: Grouping | undefined;
  span: Span;
}

export type VectorOp = 'sum' | 'avg' | 'count' | 'max' | 'min' | 'stddev' | 'stdvar' | 'bottomk' | 'topk' | 'sort' | 'sort_desc' | 'approx_topk';

export interface VectorAggregation {
  kind: 'vector_aggregation';
  op: VectorOp;
  /** topk / bottomk's k. */
  param: number | undefined;
  grouping: Grouping | undefined;
  expr: MetricExpr;
  span: Span;
}

export type BinaryOp = '+' | '-' | '*' | '/' | '%' | '^' | '==' | '!=' | '>' | '>=' | '<' | '<=' | 'and' | 'or' | 'unless';

export interface VectorMatching {
  on: boolean;
  labels: string[];
  group: 'left' | 'right' | undefined;
  include: string[];
}

export interface BinaryExpr {
  kind: 'binary';
  op: BinaryOp;
  bool: boolean;
  matching: VectorMatching | undefined;
  left: Expr;
  right: Expr;
  span: Span;
}

export interface NumberLiteral {
  kind: 'number';
  value: number;
  span: Span;
}

export interface VectorLiteral {
  kind: 'vector';
  value: number;
  span: Span;
}

export interface LabelReplace {
  kind: 'label_replace';
  expr: MetricExpr;
  dst: string;
  replacement: string;
  src: string;
  regex: string;
  span: Span;
}

export type MetricExpr = RangeAggregation | VectorAggregation | BinaryExpr | NumberLiteral | VectorLiteral | LabelReplace;

export type Expr = LogExpr | MetricExpr;

export const isLogExpr = (e: Expr): e is LogExpr => e.kind === 'log';
