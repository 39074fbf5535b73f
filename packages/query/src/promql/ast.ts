/**
 * Floe's typed PromQL AST (STYLE habit 4): what `parse.ts` builds from the
 * `@prometheus-io/lezer-promql` syntax tree. Every node keeps its source span; the tree has no
 * behaviour (evaluation is `eval.ts`, over series the caller fetched).
 *
 * Times are integer milliseconds (Prometheus's own resolution); offsets may be negative.
 */

export interface Span {
  /** Offsets into the query text, half-open. */
  from: number;
  to: number;
}

export type ValueType = 'scalar' | 'string' | 'vector' | 'matrix';

export type MatchOp = '=' | '!=' | '=~' | '!~';

export interface LabelMatcher {
  name: string;
  op: MatchOp;
  value: string;
}

/** `@ <time>` or `@ start()` / `@ end()`: evaluation time pinned for the subtree. */
export type AtModifier = { kind: 'time'; ms: number } | { kind: 'start' } | { kind: 'end' };

export interface NumberLiteral extends Span {
  type: 'number';
  value: number;
}

export interface StringLiteral extends Span {
  type: 'string';
  value: string;
}

export interface VectorSelector extends Span {
  type: 'selector';
  /** The metric name written before the braces (also present as a `__name__` matcher). */
  name: string | undefined;
  /** All matchers, the metric name included as `__name__ = name`. */
  matchers: LabelMatcher[];
  offsetMs: number;
  at: AtModifier | undefined;
}

export interface MatrixSelector extends Span {
  type: 'matrix';
  selector: VectorSelector;
  rangeMs: number;
}

export interface Subquery extends Span {
  type: 'subquery';
  expr: Expr;
  rangeMs: number;
  /** Absent: the query's step (instant queries: the default resolution, 60s in Prometheus's default config). */
  stepMs: number | undefined;
  offsetMs: number;
  at: AtModifier | undefined;
}

export interface Call extends Span {
  type: 'call';
  func: string;
  args: Expr[];
}

export type AggregateOp =
  | 'sum'
  | 'avg'
  | 'min'
  | 'max'
  | 'count'
  | 'group'
  | 'stddev'
  | 'stdvar'
  | 'topk'
  | 'bottomk'
  | 'quantile'
  | 'count_values'
  | 'limitk'
  | 'limit_ratio';

export interface Grouping {
  without: boolean;
  labels: string[];
}

export interface Aggregate extends Span {
  type: 'aggregate';
  op: AggregateOp;
  /** k of topk/bottomk/limitk, φ of quantile, the label name of count_values, the ratio of limit_ratio. */
  param: Expr | undefined;
  expr: Expr;
  grouping: Grouping | undefined;
}

export type ArithmeticOp = '+' | '-' | '*' | '/' | '%' | '^' | 'atan2';
export type ComparisonOp = '==' | '!=' | '>' | '<' | '>=' | '<=';
export type SetOp = 'and' | 'or' | 'unless';
export type BinaryOp = ArithmeticOp | ComparisonOp | SetOp;

export interface VectorMatching {
  card: 'one-to-one' | 'many-to-one' | 'one-to-many' | 'many-to-many';
  /** on(...) when true, ignoring(...) otherwise (an absent clause is ignoring()). */
  on: boolean;
  labels: string[];
  /** group_left / group_right's extra labels. */
  include: string[];
}

export interface Binary extends Span {
  type: 'binary';
  op: BinaryOp;
  lhs: Expr;
  rhs: Expr;
  bool: boolean;
  /** Present when both sides are vectors. */
  matching: VectorMatching | undefined;
}

export interface Unary extends Span {
  type: 'unary';
  op: '-' | '+';
  expr: Expr;
}

export interface Paren extends Span {
  type: 'paren';
  expr: Expr;
}

export type Expr = NumberLiteral | StringLiteral | VectorSelector | MatrixSelector | Subquery | Call | Aggregate | Binary | Unary | Paren;

export const isComparison = (op: BinaryOp): op is ComparisonOp => op === '==' || op === '!=' || op === '>' || op === '<' || op === '>=' || op === '<=';
export const isSetOp = (op: BinaryOp): op is SetOp => op === 'and' || op === 'or' || op === 'unless';
