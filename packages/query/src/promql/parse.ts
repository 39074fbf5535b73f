import { parser } from '@prometheus-io/lezer-promql';
import { FloeError, isFloeError } from '@floe/errors';
import type {
  AggregateOp,
  AtModifier,
  BinaryOp,
  Expr,
  Grouping,
  LabelMatcher,
  MatchOp,
  ValueType,
  VectorMatching,
  VectorSelector,
} from './ast.ts';
import { isComparison, isSetOp } from './ast.ts';
import { FUNCTIONS } from './functions.ts';
import { positionOf } from '../logql/errors.ts';
import { parseWithinStack } from '../syntax-tree.ts';
import { parseDuration } from '../logql/durations.ts';
import { unquote } from '../logql/strings.ts';
import { cachedAnchoredRe2 } from '../re2.ts';

/**
 * PromQL text → Floe's typed AST, through Prometheus's own grammar (`@prometheus-io/lezer-promql`,
 * STYLE habit 4). The grammar accepts more than Prometheus's parser does (it is built for editor
 * highlighting), so the checks Prometheus makes after parsing are made here: value types of
 * operands and function arguments, the non-empty matcher rule, bool on scalar comparisons, and
 * matching clauses only between vectors. Every refusal is FloeError bad_data
 * `parse error at line L, col C: <reason>` with `position`, as logql/parse.ts reports.
 */

type Node = ReturnType<typeof parser.parse>['topNode'];

const MAX_PROMQL_LENGTH = 64 * 1024;

const PARSE_ERROR_CODE = 'FLOE_ERR_PROMQL_PARSE';

// logql/errors.ts syntaxError words the message the same way but fixes LogQL's error code.
function promSyntaxError(src: string, offset: number, reason: string): FloeError {
  const position = positionOf(src, offset);
  return new FloeError('bad_data', `parse error at line ${position.line}, col ${position.column}: ${reason}`, { code: PARSE_ERROR_CODE, position });
}

/**
 * Prometheus's "min time" / "max time" (ms): the ends of the time range it stores, which clients
 * send for "everything"; times beyond them are taken as them.
 */
export const PROM_MIN_TIME_MS = -9_223_372_036_854;
export const PROM_MAX_TIME_MS = 9_223_372_036_854;

export function parsePromQL(query: string): Expr {
  if (query.trim() === '') throw promSyntaxError(query, 0, 'no expression found in input');
  if (query.length > MAX_PROMQL_LENGTH) throw new FloeError('bad_data', `query longer than ${MAX_PROMQL_LENGTH} characters`, { code: PARSE_ERROR_CODE });
  return parseWithinStack(
    () => {
      const tree = parser.parse(query);
      const top = tree.topNode;
      let error: Node | undefined;
      top.cursor().iterate((n) => {
        if (error) return false;
        if (n.type.isError) {
          error = n.node;
          return false;
        }
        return undefined;
      });
      if (error) {
        const ahead = /^\s*(\S{1,24})/.exec(query.slice(error.from))?.[1];
        throw promSyntaxError(query, error.from, ahead === undefined ? 'unexpected end of input' : `unexpected ${JSON.stringify(ahead)}`);
      }
      const exprs = children(top).filter((c) => c.name !== 'LineComment');
      if (exprs.length !== 1) throw promSyntaxError(query, exprs[1]?.from ?? 0, 'expected exactly one expression');
      const p = new Lowering(query);
      const expr = p.expr(exprs[0]!);
      p.checkTypes(expr);
      return expr;
    },
    () => promSyntaxError(query, 0, 'the query is nested too deeply'),
  );
}

function children(n: Node): Node[] {
  const out: Node[] = [];
  for (let c = n.firstChild; c; c = c.nextSibling) out.push(c);
  return out;
}

const BINARY: Record<string, BinaryOp> = {
  Add: '+', Sub: '-', Mul: '*', Div: '/', Mod: '%', Pow: '^', Atan2: 'atan2',
  Eql: '==', Neq: '!=', Gtr: '>', Lss: '<', Gte: '>=', Lte: '<=',
  And: 'and', Or: 'or', Unless: 'unless',
};
const MATCH: Record<string, MatchOp> = { EqlSingle: '=', Neq: '!=', EqlRegex: '=~', NeqRegex: '!~' };
const AGGREGATES: ReadonlySet<string> = new Set(['sum', 'avg', 'min', 'max', 'count', 'group', 'stddev', 'stdvar', 'topk', 'bottomk', 'quantile', 'count_values', 'limitk', 'limit_ratio']);
const WITH_PARAM: ReadonlySet<string> = new Set(['topk', 'bottomk', 'quantile', 'count_values', 'limitk', 'limit_ratio']);

/**
 * A Prometheus duration (`5m`, `1h30m`, `250ms`, units in order and each at most once) or, as
 * Prometheus 3 and its API allow, a number of seconds; in ms, undefined when it is neither or does
 * not fit a safe integer.
 */
export function parsePromDuration(text: string): number | undefined {
  if (/^(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/.test(text)) {
    const ms = Math.round(Number(text) * 1000);
    return Number.isSafeInteger(ms) ? ms : undefined;
  }
  return parseDuration(text);
}

/** A PromQL number literal: decimal, hex, exponent, Inf/NaN, or a duration read as seconds. */
function parseNumber(text: string): number | undefined {
  const t = text.trim();
  let sign = 1;
  let body = t;
  if (body.startsWith('-') || body.startsWith('+')) {
    sign = body.startsWith('-') ? -1 : 1;
    body = body.slice(1);
  }
  const lower = body.toLowerCase();
  if (lower === 'inf') return sign * Infinity;
  if (lower === 'nan') return NaN;
  if (/^0x[0-9a-f]+$/.test(lower)) return sign * Number.parseInt(lower.slice(2), 16);
  if (/^(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/.test(lower)) return sign * Number(lower);
  const d = parsePromDuration(body);
  return d === undefined ? undefined : (sign * d) / 1000;
}

class Lowering {
  readonly #src: string;

  constructor(src: string) {
    this.#src = src;
  }

  error(at: number, reason: string): FloeError {
    return promSyntaxError(this.#src, at, reason);
  }

  text(n: Node): string {
    return this.#src.slice(n.from, n.to);
  }

  expr(n: Node): Expr {
    const span = { from: n.from, to: n.to };
    switch (n.name) {
      case 'NumberDurationLiteral': {
        const value = parseNumber(this.text(n));
        if (value === undefined) throw this.error(n.from, `bad number or duration syntax: ${JSON.stringify(this.text(n))}`);
        return { type: 'number', value, ...span };
      }
      case 'StringLiteral':
        return { type: 'string', value: this.string(n), ...span };
      case 'ParenExpr':
        return { type: 'paren', expr: this.expr(this.only(n)), ...span };
      case 'UnaryExpr': {
        const op = this.text(n.getChild('UnaryOp')!).trim() as '-' | '+';
        const inner = children(n).find((c) => c.name !== 'UnaryOp')!;
        return { type: 'unary', op, expr: this.expr(inner), ...span };
      }
      case 'VectorSelector':
        return this.selector(n);
      case 'MatrixSelector': {
        const sel = n.getChild('VectorSelector');
        if (!sel) throw this.error(n.from, 'ranges only allowed for vector selectors');
        const rangeMs = this.duration(n.getChild('DurationExpr')!);
        if (rangeMs <= 0) throw this.error(n.from, 'range must be positive');
        return { type: 'matrix', selector: this.selector(sel), rangeMs, ...span };
      }
      case 'SubqueryExpr': {
        const parts = children(n);
        const inner = this.expr(parts[0]!);
        const durations = parts.filter((c) => c.name === 'DurationExpr');
        const rangeMs = this.duration(durations[0]!);
        const stepMs = durations[1] ? this.duration(durations[1]) : undefined;
        if (rangeMs <= 0) throw this.error(n.from, 'subquery range must be positive');
        if (stepMs !== undefined && stepMs <= 0) throw this.error(durations[1]!.from, 'subquery step must be positive');
        return { type: 'subquery', expr: inner, rangeMs, stepMs, offsetMs: 0, at: undefined, ...span };
      }
      case 'OffsetExpr': {
        const parts = children(n);
        const target = this.expr(parts[0]!);
        const d = n.getChild('OffsetDurationExpr');
        if (!d) throw this.error(n.from, 'expected a duration after offset');
        this.modify(target, n.from, { offsetMs: this.offsetDuration(d) });
        return { ...target, from: n.from, to: n.to };
      }
      case 'StepInvariantExpr': {
        const parts = children(n);
        const target = this.expr(parts[0]!);
        const pre = n.getChild('AtModifierPreprocessors');
        let at: AtModifier;
        if (pre) {
          at = pre.getChild('AtStart') ? { kind: 'start' } : { kind: 'end' };
        } else {
          const lit = parts.find((c, i) => i > 0 && c.name === 'NumberDurationLiteral');
          const v = lit ? parseNumber(this.text(lit)) : undefined;
          if (v === undefined || !Number.isFinite(v)) throw this.error(n.from, 'the @ modifier takes a finite unix time, start() or end()');
          // Prometheus refuses what an int64 of milliseconds cannot hold; within that, times past
          // the stored range read as its end (no sample is there either way).
          if (Math.abs(v) >= 9_223_372_036_854_775) throw this.error(n.from, `timestamp out of bounds for @ modifier: ${v}`);
          at = { kind: 'time', ms: Math.min(PROM_MAX_TIME_MS, Math.max(PROM_MIN_TIME_MS, Math.round(v * 1000))) };
        }
        this.modify(target, n.from, { at });
        return { ...target, from: n.from, to: n.to };
      }
      case 'FunctionCall':
        return this.call(n);
      case 'AggregateExpr':
        return this.aggregate(n);
      case 'BinaryExpr':
        return this.binary(n);
      default:
        throw this.error(n.from, `unexpected ${JSON.stringify(this.text(n).slice(0, 24))}`);
    }
  }

  only(n: Node): Node {
    const c = children(n).filter((x) => x.name !== 'LineComment');
    if (c.length !== 1) throw this.error(n.from, 'expected one expression in parentheses');
    return c[0]!;
  }

  string(n: Node): string {
    try {
      return unquote(this.#src, n.from, this.text(n));
    } catch (err) {
      // unquote reports under LogQL's code; its text and position hold for PromQL as they are.
      if (isFloeError(err)) throw new FloeError(err.kind, err.message, { code: PARSE_ERROR_CODE, position: err.position });
      throw err;
    }
  }

  duration(n: Node): number {
    const ms = parsePromDuration(this.text(n).trim());
    if (ms === undefined) throw this.error(n.from, `bad duration ${JSON.stringify(this.text(n))} (duration expressions are not supported)`);
    return ms;
  }

  offsetDuration(n: Node): number {
    const unary = n.getChild('UnaryOp');
    if (unary) {
      const inner = n.getChild('OffsetDurationExpr');
      const v = inner ? this.offsetDuration(inner) : this.duration(n.lastChild!);
      return this.text(unary).trim() === '-' ? -v : v;
    }
    const lit = n.firstChild;
    return this.duration(lit && lit.name !== 'OffsetDurationExpr' ? lit : n);
  }

  /**
   * Applies offset / @ to the selector or subquery they follow; Prometheus allows them nowhere
   * else. The lezer grammar binds a trailing modifier looser than a binary or unary operator
   * (`a - b offset 1m` parses as an OffsetExpr over the whole BinaryExpr), where Prometheus's own
   * parser binds it to the operand it follows: so it goes to the rightmost operand (a
   * parenthesised expression stops the descent and stays an error, as in Prometheus).
   */
  modify(target: Expr, at: number, mod: { offsetMs?: number; at?: AtModifier }): void {
    if (target.type === 'binary') return this.modify(target.rhs, at, mod);
    if (target.type === 'unary') return this.modify(target.expr, at, mod);
    const t = target.type === 'matrix' ? target.selector : target;
    if (t.type !== 'selector' && t.type !== 'subquery') throw this.error(at, 'offset and @ modifiers must follow a vector selector, range vector selector or subquery');
    if (mod.offsetMs !== undefined) {
      if (t.offsetMs !== 0) throw this.error(at, 'offset may not be set multiple times');
      t.offsetMs = mod.offsetMs;
    }
    if (mod.at !== undefined) {
      if (t.at !== undefined) throw this.error(at, '@ <timestamp> may not be set multiple times');
      t.at = mod.at;
    }
  }

  selector(n: Node): VectorSelector {
    const ident = n.getChild('Identifier');
    const name = ident ? this.text(ident) : undefined;
    const matchers: LabelMatcher[] = [];
    if (name !== undefined) matchers.push({ name: '__name__', op: '=', value: name });
    const lm = n.getChild('LabelMatchers');
    if (lm) {
      for (const c of children(lm)) {
        if (c.name === 'QuotedLabelName') {
          if (name !== undefined || matchers.some((m) => m.name === '__name__')) throw this.error(c.from, 'metric name must not be set twice');
          matchers.push({ name: '__name__', op: '=', value: this.string(c.getChild('StringLiteral')!) });
        } else if (c.name === 'UnquotedLabelMatcher' || c.name === 'QuotedLabelMatcher') {
          const ln = c.getChild('LabelName');
          const qn = c.getChild('QuotedLabelName');
          const label = ln ? this.text(ln) : this.string(qn!.getChild('StringLiteral')!);
          const opNode = c.getChild('MatchOp')!.firstChild!;
          const op = MATCH[opNode.name];
          if (!op) throw this.error(opNode.from, `unknown match operator ${this.text(opNode)}`);
          const value = this.string(c.getChild('StringLiteral')!);
          if (op === '=~' || op === '!~') {
            try {
              cachedAnchoredRe2(value);
            } catch (err) {
              throw this.error(c.from, `invalid regular expression ${JSON.stringify(value)}: ${(err as Error).message}`);
            }
          }
          if (label === '__name__' && name !== undefined) throw this.error(c.from, `metric name must not be set twice: ${JSON.stringify(name)} or ${JSON.stringify(value)}`);
          matchers.push({ name: label, op, value });
        }
      }
    }
    const matchesEmpty = (m: LabelMatcher) =>
      m.op === '=' ? m.value === '' : m.op === '!=' ? m.value !== '' : m.op === '=~' ? cachedAnchoredRe2(m.value).test('') : !cachedAnchoredRe2(m.value).test('');
    if (matchers.every(matchesEmpty)) throw this.error(n.from, 'vector selector must contain at least one non-empty matcher');
    return { type: 'selector', name, matchers, offsetMs: 0, at: undefined, from: n.from, to: n.to };
  }

  args(body: Node | null): Node[] {
    return body ? children(body).filter((c) => c.name !== 'LineComment') : [];
  }

  call(n: Node): Expr {
    const func = this.text(n.getChild('FunctionIdentifier')!);
    const sig = FUNCTIONS.get(func);
    if (!sig) throw this.error(n.from, `unknown or unsupported function ${JSON.stringify(func)}`);
    const args = this.args(n.getChild('FunctionCallBody')).map((a) => this.expr(a));
    const min = sig.args.length - (sig.optional ?? 0);
    if (args.length < min || (!sig.variadic && args.length > sig.args.length)) {
      throw this.error(n.from, `expected ${min === sig.args.length ? min : `${min} to ${sig.args.length}`} argument(s) in call to ${JSON.stringify(func)}, got ${args.length}`);
    }
    args.forEach((a, i) => this.expectType(a, sig.args[Math.min(i, sig.args.length - 1)]!, `call to function ${JSON.stringify(func)}`));
    return { type: 'call', func, args, from: n.from, to: n.to };
  }

  aggregate(n: Node): Expr {
    const op = this.text(n.getChild('AggregateOp')!) as AggregateOp;
    if (!AGGREGATES.has(op)) throw this.error(n.from, `unknown aggregation ${op}`);
    const args = this.args(n.getChild('FunctionCallBody'));
    const want = WITH_PARAM.has(op) ? 2 : 1;
    if (args.length !== want) throw this.error(n.from, `wrong number of arguments for aggregate expression provided, expected ${want}, got ${args.length}`);
    const param = want === 2 ? this.expr(args[0]!) : undefined;
    const expr = this.expr(args[want - 1]!);
    let grouping: Grouping | undefined;
    const mod = n.getChild('AggregateModifier');
    if (mod) grouping = { without: !!mod.getChild('Without'), labels: this.labels(mod.getChild('GroupingLabels')) };
    if (param) this.expectType(param, op === 'count_values' ? 'string' : 'scalar', `aggregation ${op}`);
    this.expectType(expr, 'vector', `aggregation ${op}`);
    return { type: 'aggregate', op, param, expr, grouping, from: n.from, to: n.to };
  }

  labels(n: Node | null): string[] {
    if (!n) return [];
    return children(n)
      .filter((c) => c.name === 'LabelName' || c.name === 'QuotedLabelName')
      .map((c) => (c.name === 'LabelName' ? this.text(c) : this.string(c.getChild('StringLiteral')!)));
  }

  binary(n: Node): Expr {
    const parts = children(n).filter((c) => c.name !== 'LineComment');
    const opIndex = parts.findIndex((c, i) => i > 0 && c.name in BINARY);
    const opNode = parts[opIndex]!;
    const op = BINARY[opNode.name]!;
    const operands = parts.filter((c, i) => i !== opIndex && c.name !== 'BoolModifier' && c.name !== 'MatchingModifierClause');
    let lhsNode = operands[0]!;
    const rhsNode = operands[operands.length - 1]!;
    // The grammar reads `-2 ^ 2` as (-2)^2; Prometheus's unary minus binds looser than ^.
    const lhsText = this.text(lhsNode);
    if (op === '^' && lhsNode.name === 'NumberDurationLiteral' && /^[-+]/.test(lhsText)) {
      const inner = parseNumber(lhsText.slice(1))!;
      const pow: Expr = {
        type: 'binary', op, lhs: { type: 'number', value: inner, from: lhsNode.from + 1, to: lhsNode.to }, rhs: this.expr(rhsNode), bool: false, matching: undefined, from: lhsNode.from + 1, to: n.to,
      };
      this.checkBinary(pow, n.from);
      return lhsText.startsWith('-') ? { type: 'unary', op: '-', expr: pow, from: n.from, to: n.to } : pow;
    }
    lhsNode = operands[0]!;
    const lhs = this.expr(lhsNode);
    const rhs = this.expr(rhsNode);
    const bool = parts.some((c) => c.name === 'BoolModifier');
    const clause = parts.find((c) => c.name === 'MatchingModifierClause');
    let matching: VectorMatching | undefined;
    if (clause) {
      const groups = children(clause).filter((c) => c.name === 'GroupingLabels');
      const on = !!clause.getChild('On');
      const hasOnOrIgnoring = on || !!clause.getChild('Ignoring');
      const left = !!clause.getChild('GroupLeft');
      const right = !!clause.getChild('GroupRight');
      const labels = hasOnOrIgnoring ? this.labels(groups[0] ?? null) : [];
      const include = left || right ? this.labels(groups[hasOnOrIgnoring ? 1 : 0] ?? null) : [];
      matching = { card: left ? 'many-to-one' : right ? 'one-to-many' : 'one-to-one', on, labels, include };
    }
    const expr: Expr = { type: 'binary', op, lhs, rhs, bool, matching, from: n.from, to: n.to };
    this.checkBinary(expr, opNode.from);
    return expr;
  }

  checkBinary(e: Expr & { type: 'binary' }, at: number): void {
    const lt = typeOf(e.lhs);
    const rt = typeOf(e.rhs);
    for (const t of [lt, rt]) if (t !== 'scalar' && t !== 'vector') throw this.error(at, `binary expression must contain only scalar and instant vector types`);
    if (e.bool && !isComparison(e.op)) throw this.error(at, 'bool modifier can only be used on comparison operators');
    if (isComparison(e.op) && !e.bool && lt === 'scalar' && rt === 'scalar') throw this.error(at, 'comparisons between scalars must use BOOL modifier');
    if (isSetOp(e.op)) {
      if (lt !== 'vector' || rt !== 'vector') throw this.error(at, `set operator ${JSON.stringify(e.op)} not allowed in binary scalar expression`);
      if (e.matching && e.matching.card !== 'one-to-one') throw this.error(at, 'no grouping allowed for "and", "or", "unless" operations');
      e.matching = { card: 'many-to-many', on: e.matching?.on ?? false, labels: e.matching?.labels ?? [], include: [] };
      return;
    }
    if (e.matching && (lt !== 'vector' || rt !== 'vector')) throw this.error(at, 'vector matching only allowed between instant vectors');
    if (lt === 'vector' && rt === 'vector') {
      e.matching ??= { card: 'one-to-one', on: false, labels: [], include: [] };
      if (e.matching.on) {
        for (const l of e.matching.include) if (e.matching.labels.includes(l)) throw this.error(at, `label ${JSON.stringify(l)} must not occur in ON and GROUP clause at once`);
      }
    }
  }

  expectType(e: Expr, want: ValueType, context: string): void {
    const got = typeOf(e);
    if (got !== want) throw this.error(e.from, `expected type ${typeName(want)} in ${context}, got ${typeName(got)}`);
  }

  checkTypes(e: Expr): void {
    if (e.type === 'subquery') this.expectType(e.expr, 'vector', 'subquery');
    for (const c of childExprs(e)) this.checkTypes(c);
  }
}

const typeName = (t: ValueType) => (t === 'vector' ? 'instant vector' : t === 'matrix' ? 'range vector' : t);

function childExprs(e: Expr): Expr[] {
  switch (e.type) {
    case 'paren':
    case 'unary':
      return [e.expr];
    case 'subquery':
      return [e.expr];
    case 'matrix':
      return [e.selector];
    case 'call':
      return e.args;
    case 'aggregate':
      return e.param ? [e.param, e.expr] : [e.expr];
    case 'binary':
      return [e.lhs, e.rhs];
    default:
      return [];
  }
}

/** Every vector selector of an expression, range selectors' included, in source order. */
export function vectorSelectors(e: Expr, out: VectorSelector[] = []): VectorSelector[] {
  if (e.type === 'selector') out.push(e);
  else for (const c of childExprs(e)) vectorSelectors(c, out);
  return out;
}

/** The value type an expression evaluates to. */
export function typeOf(e: Expr): ValueType {
  switch (e.type) {
    case 'number':
      return 'scalar';
    case 'string':
      return 'string';
    case 'selector':
      return 'vector';
    case 'matrix':
    case 'subquery':
      return 'matrix';
    case 'call':
      return FUNCTIONS.get(e.func)!.returns;
    case 'aggregate':
      return 'vector';
    case 'binary':
      return typeOf(e.lhs) === 'scalar' && typeOf(e.rhs) === 'scalar' ? 'scalar' : 'vector';
    case 'unary':
    case 'paren':
      return typeOf(e.expr);
  }
}
