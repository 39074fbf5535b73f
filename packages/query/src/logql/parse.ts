import { parser } from '@grafana/lezer-logql';
import { FloeError } from '@floe/errors';
import type {
  BinaryExpr,
  BinaryOp,
  CompareOp,
  Expr,
  Grouping,
  LabelExtraction,
  LabelFilterExpr,
  LabelMatcher,
  LineFilter,
  LineFilterOp,
  LogExpr,
  MatchOp,
  MetricExpr,
  ParserKind,
  RangeAggregation,
  RangeOp,
  Selector,
  Span,
  Stage,
  Unwrap,
  VectorMatching,
  VectorOp,
} from './ast.ts';
import { maskDistinctStages } from './distinct.ts';
import { maskDottedNames } from './dotted.ts';
import { parseBytes, parseDuration } from './durations.ts';
import { positionOf, syntaxError } from './errors.ts';
import { checkRegex, toJsRegexSource, unquote } from './strings.ts';
import { firstErrorNode, parseWithinStack, syntaxDepth } from '../syntax-tree.ts';

/**
 * LogQL text → Floe's typed AST, through the official `@grafana/lezer-logql` grammar (DESIGN.md
 * "Query surfaces"). Dotted names are masked before parsing (dotted.ts) and `distinct` stages
 * blanked (distinct.ts), both length-preserving, and names are read back from the original text by
 * position. Syntax errors, bad string escapes, invalid regular expressions and
 * selectors Loki also refuses are FloeError bad_data with the line and column; whether a valid
 * query can run is decided later, when it is lowered (lower.ts: not_implemented).
 */

type Node = ReturnType<typeof parser.parse>['topNode'];

/** Loki refuses a query longer than this too (max_query_length is about its size in bytes). */
export const MAX_QUERY_LENGTH = 64 * 1024;
/**
 * Deepest syntax tree a query may have (about three levels per binary operator, one per pair of
 * parentheses; real queries stay under 50): lowering and evaluation recurse as deep as the tree.
 */
export const MAX_SYNTAX_DEPTH = 1000;

export function parseLogQL(query: string): Expr {
  if (query.trim() === '') throw syntaxError(query, 0, 'empty query');
  if (query.length > MAX_QUERY_LENGTH) throw new FloeError('bad_data', `query longer than ${MAX_QUERY_LENGTH} characters`, { code: 'FLOE_ERR_LOGQL_PARSE' });
  return parseWithinStack(
    () => {
      const tree = parser.parse(maskDottedNames(maskDistinctStages(query)));
      const failure = firstErrorNode(tree.topNode);
      if (failure) throw describeSyntaxError(query, failure);
      if (syntaxDepth(tree.topNode) > MAX_SYNTAX_DEPTH) throw syntaxError(query, 0, 'the query is nested too deeply');
      const top = tree.topNode.getChild('Expr');
      if (!top) throw syntaxError(query, 0, 'unexpected end of query');
      return new Lowerer(query).expr(top);
    },
    () => syntaxError(query, 0, 'the query is nested too deeply'),
  );
}

const EXPECTING: Record<string, string> = {
  Selector: 'expecting "," or "}" after a label matcher',
  Matchers: 'expecting a label matcher such as {service_name="checkout"}',
  Range: 'expecting a range duration such as [5m]',
  LogRangeExpr: 'expecting a range duration such as [5m]',
  Grouping: 'expecting a list of label names',
  Labels: 'expecting a label name',
  LabelFilter: 'expecting a label filter such as level="error" or status >= 400',
};

function describeSyntaxError(query: string, err: Node): FloeError {
  const skipped = query.slice(err.from, err.to).trim();
  const ahead = skipped || /^\s*(\S{1,24})/.exec(query.slice(err.from))?.[1] || '';
  const what = ahead === '' ? 'unexpected end of query' : `unexpected ${JSON.stringify(ahead.length > 24 ? `${ahead.slice(0, 24)}…` : ahead)}`;
  const offset = skipped ? err.from + (query.slice(err.from, err.to).length - query.slice(err.from, err.to).trimStart().length) : err.from;
  if (unterminated(query.slice(offset))) return syntaxError(query, offset, 'unterminated string (missing closing quote)');
  const parent = err.parent;
  let hint = parent ? EXPECTING[parent.name] : undefined;
  if (parent?.name === 'Matcher' || parent?.name === 'LabelFormatMatcher' || parent?.name === 'LabelExtractionExpression') {
    const hasOp = ['Eq', 'Neq', 'Re', 'Nre'].some((op) => parent.getChild(op));
    hint = hasOp ? 'expecting a quoted string (label values are always quoted)' : 'expecting one of =, !=, =~, !~ and a quoted value';
  }
  if (parent?.name === 'Selector' && query.slice(parent.from, err.to).replace(/\s/g, '').startsWith('{}')) {
    hint = 'a stream selector needs at least one label matcher, such as {service_name="checkout"}';
  }
  return syntaxError(query, offset, hint ? `${what}, ${hint}` : what);
}

/** Whether text starting at a quote has no closing quote (on its line, for "…"). */
function unterminated(rest: string): boolean {
  const q = rest[0];
  if (q === '`') return rest.indexOf('`', 1) < 0;
  if (q !== '"') return false;
  for (let i = 1; i < rest.length; i++) {
    if (rest[i] === '\\') i++;
    else if (rest[i] === '"') return false;
    else if (rest[i] === '\n') return true;
  }
  return true;
}

const MATCH_OPS: Record<string, MatchOp> = { Eq: '=', Neq: '!=', Re: '=~', Nre: '!~' };
const COMPARE_OPS: Record<string, CompareOp> = { Gtr: '>', Gte: '>=', Lss: '<', Lte: '<=', Eql: '==', Neq: '!=', Eq: '=' };
const LINE_OPS: Record<string, LineFilterOp> = { PipeExact: '|=', Neq: '!=', PipeMatch: '|~', Nre: '!~', PipePattern: '|>', Npa: '!>' };
const BINARY_OPS: Record<string, BinaryOp> = {
  Add: '+', Sub: '-', Mul: '*', Div: '/', Mod: '%', Pow: '^',
  Eql: '==', Neq: '!=', Gtr: '>', Gte: '>=', Lss: '<', Lte: '<=',
  And: 'and', Or: 'or', Unless: 'unless',
};
const RANGE_OPS: Record<string, RangeOp> = {
  CountOverTime: 'count_over_time', Rate: 'rate', RateCounter: 'rate_counter', BytesOverTime: 'bytes_over_time', BytesRate: 'bytes_rate',
  AvgOverTime: 'avg_over_time', SumOverTime: 'sum_over_time', MinOverTime: 'min_over_time', MaxOverTime: 'max_over_time',
  StddevOverTime: 'stddev_over_time', StdvarOverTime: 'stdvar_over_time', QuantileOverTime: 'quantile_over_time',
  FirstOverTime: 'first_over_time', LastOverTime: 'last_over_time', AbsentOverTime: 'absent_over_time',
};
const VECTOR_OPS: Record<string, VectorOp> = {
  Sum: 'sum', Avg: 'avg', Count: 'count', Max: 'max', Min: 'min', Stddev: 'stddev', Stdvar: 'stdvar',
  Bottomk: 'bottomk', Topk: 'topk', Sort: 'sort', Sort_Desc: 'sort_desc', Approx_Topk: 'approx_topk',
};

/**
 * Binary operator precedence as Prometheus and Loki define it (higher binds tighter). The lezer
 * grammar's own precedence table differs (it ranks + above *), so chains of binary operators
 * that were not parenthesised are re-associated here; `^` is right-associative.
 */
const PRECEDENCE: Record<BinaryOp, number> = {
  or: 1, and: 2, unless: 2,
  '==': 3, '!=': 3, '>': 3, '>=': 3, '<': 3, '<=': 3,
  '+': 4, '-': 4,
  '*': 5, '/': 5, '%': 5,
  '^': 6,
};

const span = (n: Node): Span => ({ from: n.from, to: n.to });

/** Items of a left-recursive list rule (`Matchers { Matcher | Matchers "," Matcher }`), in order. */
function listItems(list: Node, item: string): Node[] {
  const out: Node[] = [];
  for (let c = list.firstChild; c; c = c.nextSibling) {
    if (c.name === list.name) out.push(...listItems(c, item));
    else if (c.name === item) out.push(c);
  }
  return out;
}

function children(n: Node): Node[] {
  const out: Node[] = [];
  for (let c = n.firstChild; c; c = c.nextSibling) out.push(c);
  return out;
}

interface BinaryOperand {
  kind: 'operand';
  expr: Expr;
}
interface BinaryOperator {
  kind: 'operator';
  op: BinaryOp;
  bool: boolean;
  matching: VectorMatching | undefined;
}

class Lowerer {
  readonly #src: string;

  constructor(src: string) {
    this.#src = src;
  }

  text(n: Node): string {
    return this.#src.slice(n.from, n.to);
  }

  need(n: Node | null, what: string, at: Node): Node {
    if (!n) throw syntaxError(this.#src, at.to, `expecting ${what}`);
    return n;
  }

  string(n: Node): string {
    return unquote(this.#src, n.from, this.text(n));
  }

  number(n: Node, negative = false): number {
    const raw = this.text(n);
    const v = Number(raw);
    if (!Number.isFinite(v)) throw syntaxError(this.#src, n.from, `invalid number ${JSON.stringify(raw)}`);
    return negative ? -v : v;
  }

  /** A LiteralExpr (`-3.5`) or a bare Number node. */
  literal(n: Node): number {
    if (n.name === 'Number') return this.number(n);
    const num = this.need(n.getChild('Number'), 'a number', n);
    return this.number(num, n.getChild('Sub') !== null);
  }

  duration(n: Node): number {
    const ms = parseDuration(this.text(n));
    if (ms === undefined || ms <= 0) throw syntaxError(this.#src, n.from, `invalid duration ${JSON.stringify(this.text(n))}`);
    return ms;
  }

  expr(n: Node): Expr {
    const inner = this.need(n.firstChild, 'an expression', n);
    if (inner.name === 'LogExpr') return this.logExpr(inner);
    if (inner.name === 'MetricExpr') return this.metricExpr(inner);
    throw syntaxError(this.#src, inner.from, `unexpected ${inner.name}`);
  }

  logExpr(n: Node): LogExpr {
    const nested = n.getChild('LogExpr');
    if (nested) return { ...this.logExpr(nested), span: span(n) };
    const selector = this.selector(this.need(n.getChild('Selector'), 'a stream selector', n));
    const pipeline = n.getChildren('PipelineExpr').flatMap((p) => this.pipeline(p));
    return { kind: 'log', selector, pipeline, span: span(n) };
  }

  selector(n: Node): Selector {
    const list = n.getChild('Matchers');
    const matchers = list ? listItems(list, 'Matcher').map((m) => this.matcher(m)) : [];
    const selector = { matchers, span: span(n) };
    checkSelector(this.#src, selector);
    return selector;
  }

  matcher(n: Node): LabelMatcher {
    const id = this.need(n.getChild('Identifier'), 'a label name', n);
    const opNode = children(n).find((c) => c.name in MATCH_OPS);
    const op = MATCH_OPS[this.need(opNode ?? null, 'a matcher operator', n).name]!;
    const str = this.need(n.getChild('String'), 'a quoted string', n);
    const value = this.string(str);
    if (op === '=~' || op === '!~') checkRegex(this.#src, str.from, value);
    return { label: this.text(id), op, value, span: span(n) };
  }

  pipeline(n: Node): Stage[] {
    const out: Stage[] = [];
    for (const c of children(n)) {
      if (c.name === 'PipelineExpr') out.push(...this.pipeline(c));
      else if (c.name === 'PipelineStage') out.push(...this.stage(c));
    }
    return out;
  }

  stage(n: Node): Stage[] {
    const lineFilters = n.getChild('LineFilters');
    if (lineFilters) return listItems(lineFilters, 'LineFilter').map((f) => this.lineFilter(f));
    const body = children(n).find((c) => c.name !== 'Pipe');
    if (!body) throw syntaxError(this.#src, n.to, 'expecting a pipeline stage');
    const s = span(n);
    switch (body.name) {
      case 'LabelFilter':
        return [{ kind: 'label_filter', expr: this.labelFilter(body), span: s }];
      case 'LabelParser':
      case 'LogfmtParser':
      case 'JsonExpressionParser':
      case 'LogfmtExpressionParser':
        return [this.parserStage(body, s)];
      case 'LineFormatExpr':
        return [{ kind: 'line_format', template: this.string(this.need(body.getChild('String'), 'a template string', body)), span: s }];
      case 'LabelFormatExpr': {
        const list = this.need(body.getChild('LabelsFormat'), 'label assignments', body);
        const assignments = listItems(list, 'LabelFormatMatcher').map((m) => {
          const [dst, src] = m.getChildren('Identifier');
          const str = m.getChild('String');
          const target = this.need(dst ?? null, 'a label name', m);
          if (str) return { label: this.text(target), value: this.string(str), template: true, span: span(m) };
          return { label: this.text(target), value: this.text(this.need(src ?? null, 'a label name or template', m)), template: false, span: span(m) };
        });
        return [{ kind: 'label_format', assignments, span: s }];
      }
      case 'DecolorizeExpr':
        return [{ kind: 'decolorize', span: s }];
      case 'DropLabelsExpr':
      case 'KeepLabelsExpr': {
        const drop = body.name === 'DropLabelsExpr';
        const list = body.getChild(drop ? 'DropLabels' : 'KeepLabels');
        const labels = list
          ? listItems(list, drop ? 'DropLabel' : 'KeepLabel').map((l) => {
              const m = l.getChild('Matcher');
              if (m) {
                const matcher = this.matcher(m);
                return { label: matcher.label, matcher, span: span(l) };
              }
              return { label: this.text(this.need(l.getChild('Identifier'), 'a label name', l)), span: span(l) };
            })
          : [];
        return [{ kind: drop ? 'drop' : 'keep', labels, span: s }];
      }
      default:
        throw syntaxError(this.#src, body.from, `unexpected pipeline stage ${JSON.stringify(this.text(body))}`);
    }
  }

  lineFilter(n: Node): LineFilter {
    const filter = this.need(n.getChild('Filter'), 'a line filter operator', n);
    const opNode = this.need(filter.firstChild, 'a line filter operator', filter);
    const op = LINE_OPS[opNode.name];
    if (!op) throw syntaxError(this.#src, opNode.from, `unexpected line filter operator ${JSON.stringify(this.text(opNode))}`);
    const strings: Node[] = [];
    const collect = (x: Node) => {
      for (const c of children(x)) {
        if (c.name === 'String') strings.push(c);
        else if (c.name === 'OrFilter') collect(c);
      }
    };
    collect(n);
    const values = strings.map((s) => this.string(s));
    if (op === '|~' || op === '!~') strings.forEach((s, i) => checkRegex(this.#src, s.from, values[i]!));
    const ip = n.getChild('FilterOp') !== null;
    return { kind: 'line_filter', op, values, ip, span: span(n) };
  }

  labelFilter(n: Node): LabelFilterExpr {
    const subs = n.getChildren('LabelFilter');
    if (subs.length === 2) {
      const kind = n.getChild('Or') ? 'or' : 'and';
      return { kind, left: this.labelFilter(subs[0]!), right: this.labelFilter(subs[1]!), span: span(n) };
    }
    if (subs.length === 1) return this.labelFilter(subs[0]!);
    const body = this.need(n.firstChild, 'a label filter', n);
    const s = span(n);
    if (body.name === 'Matcher') return { kind: 'matcher', matcher: this.matcher(body), span: s };
    if (body.name === 'IpLabelFilter') {
      const op = body.getChild('Neq') ? '!=' : '=';
      return { kind: 'ip', label: this.text(this.need(body.getChild('Identifier'), 'a label name', body)), op, value: this.string(this.need(body.getChild('String'), 'an address', body)), span: s };
    }
    const cmp = body.name === 'UnitFilter' ? this.need(body.firstChild, 'a comparison', body) : body;
    const label = this.text(this.need(cmp.getChild('Identifier'), 'a label name', cmp));
    const opNode = children(cmp).find((c) => c.name in COMPARE_OPS);
    const op = COMPARE_OPS[this.need(opNode ?? null, 'a comparison operator', cmp).name]!;
    if (cmp.name === 'NumberFilter') {
      const lit = this.need(cmp.getChild('LiteralExpr') ?? cmp.getChild('Number'), 'a number', cmp);
      return { kind: 'number', label, op, value: this.literal(lit), span: s };
    }
    if (cmp.name === 'DurationFilter') {
      const d = this.need(cmp.getChild('Duration'), 'a duration', cmp);
      return { kind: 'duration', label, op, value: this.duration(d), text: this.text(d), span: s };
    }
    if (cmp.name === 'BytesFilter') {
      const b = this.need(cmp.getChild('Bytes'), 'a byte size', cmp);
      const bytes = parseBytes(this.text(b));
      if (bytes === undefined) throw syntaxError(this.#src, b.from, `invalid byte size ${JSON.stringify(this.text(b))}`);
      return { kind: 'bytes', label, op, value: bytes, text: this.text(b), span: s };
    }
    throw syntaxError(this.#src, body.from, `unexpected label filter ${JSON.stringify(this.text(body))}`);
  }

  parserStage(n: Node, s: Span): Stage {
    const kindNode = this.need(n.firstChild, 'a parser', n);
    const parserKind = (n.name === 'LabelParser' ? kindNode.name : n.getChild('Json') ? 'Json' : 'Logfmt').toLowerCase() as ParserKind;
    const str = n.getChild('String');
    const expression = str ? this.string(str) : undefined;
    if (parserKind === 'regexp' && expression !== undefined) checkRegex(this.#src, str!.from, expression);
    const list = n.getChild('LabelExtractionExpressionList');
    const extractions: LabelExtraction[] = list
      ? listItems(list, 'LabelExtractionExpression').map((e) => {
          const v = e.getChild('String');
          return { label: this.text(this.need(e.getChild('Identifier'), 'a label name', e)), expression: v ? this.string(v) : undefined, span: span(e) };
        })
      : [];
    const flagsNode = n.getChild('LogfmtParserFlags');
    const flags = flagsNode ? listItems(flagsNode, 'ParserFlag').map((f) => this.text(f)) : [];
    return { kind: 'parser', parser: parserKind, ...(expression !== undefined ? { expression } : {}), extractions, flags, span: s };
  }

  metricExpr(n: Node): MetricExpr {
    const body = this.need(n.firstChild, 'an expression', n);
    switch (body.name) {
      case 'MetricExpr':
        return { ...this.metricExpr(body), span: span(n) };
      case 'RangeAggregationExpr':
        return this.rangeAggregation(body);
      case 'VectorAggregationExpr':
        return this.vectorAggregation(body);
      case 'BinOpExpr':
        return this.binary(body);
      case 'LiteralExpr':
        return { kind: 'number', value: this.literal(body), span: span(body) };
      case 'VectorExpr':
        return { kind: 'vector', value: this.literal(this.need(body.getChild('Number'), 'a number', body)), span: span(body) };
      case 'LabelReplaceExpr': {
        const strs = body.getChildren('String').map((x) => this.string(x));
        if (strs.length !== 4) throw syntaxError(this.#src, body.to, 'label_replace needs a vector and four strings');
        const [dst, replacement, src, regex] = strs as [string, string, string, string];
        checkRegex(this.#src, body.getChildren('String')[3]!.from, regex);
        return { kind: 'label_replace', expr: this.metricExpr(this.need(body.getChild('MetricExpr'), 'a vector expression', body)), dst, replacement, src, regex, span: span(body) };
      }
      default:
        throw syntaxError(this.#src, body.from, `unexpected ${JSON.stringify(this.text(body))}`);
    }
  }

  rangeAggregation(n: Node): RangeAggregation {
    const opNode = this.need(this.need(n.getChild('RangeOp'), 'a range function', n).firstChild, 'a range function', n);
    const op = RANGE_OPS[opNode.name];
    if (!op) throw syntaxError(this.#src, opNode.from, `unknown range function ${JSON.stringify(this.text(opNode))}`);
    const num = n.getChild('Number');
    const rangeExpr = this.need(n.getChild('LogRangeExpr'), 'a log range expression', n);
    // LogRangeExpr spells selector, pipeline, range, offset and unwrap in many orders (and nests
    // in parentheses): gather its parts in document order.
    let selector: Node | undefined;
    const stages: Stage[] = [];
    let range: Node | undefined;
    let offset: Node | undefined;
    let unwrapNode: Node | undefined;
    const gather = (x: Node) => {
      for (const c of children(x)) {
        if (c.name === 'LogRangeExpr') gather(c);
        else if (c.name === 'Selector') selector = c;
        else if (c.name === 'PipelineExpr') stages.push(...this.pipeline(c));
        else if (c.name === 'Range') range = c;
        else if (c.name === 'OffsetExpr') offset = c;
        else if (c.name === 'Offset') offset = x;
        else if (c.name === 'UnwrapExpr') unwrapNode = c;
      }
    };
    gather(rangeExpr);
    const sel = this.selector(this.need(selector ?? null, 'a stream selector', rangeExpr));
    const rangeMs = this.duration(this.need(this.need(range ?? null, 'a range such as [5m]', rangeExpr).getChild('Duration'), 'a duration', range!));
    const offsetMs = offset ? this.duration(this.need(offset.getChild('Duration'), 'a duration', offset)) : undefined;
    const groupingNode = n.getChild('Grouping');
    return {
      kind: 'range_aggregation',
      op,
      param: num ? this.number(num) : undefined,
      log: { kind: 'log', selector: sel, pipeline: stages, span: span(rangeExpr) },
      rangeMs,
      offsetMs,
      unwrap: unwrapNode ? this.unwrap(unwrapNode) : undefined,
      grouping: groupingNode ? this.grouping(groupingNode) : undefined,
      span: span(n),
    };
  }

  unwrap(n: Node): Unwrap {
    const nested = n.getChild('UnwrapExpr');
    if (nested) {
      const inner = this.unwrap(nested);
      const f = n.getChild('LabelFilter');
      return { ...inner, filters: f ? [...inner.filters, this.labelFilter(f)] : inner.filters, span: span(n) };
    }
    const conv = n.getChild('ConvOp')?.firstChild;
    const conversion = conv ? ({ BytesConv: 'bytes', DurationConv: 'duration', DurationSecondsConv: 'duration_seconds' } as const)[conv.name as 'BytesConv'] : undefined;
    return { label: this.text(this.need(n.getChild('Identifier'), 'a label name', n)), conversion, filters: [], span: span(n) };
  }

  grouping(n: Node): Grouping {
    const labels = n.getChild('Labels');
    return { without: n.getChild('Without') !== null, labels: labels ? listItems(labels, 'Identifier').map((l) => this.text(l)) : [], span: span(n) };
  }

  vectorAggregation(n: Node): MetricExpr {
    const opNode = this.need(this.need(n.getChild('VectorOp'), 'an aggregation', n).firstChild, 'an aggregation', n);
    const op = VECTOR_OPS[opNode.name];
    if (!op) throw syntaxError(this.#src, opNode.from, `unknown aggregation ${JSON.stringify(this.text(opNode))}`);
    const num = n.getChild('Number');
    const groupingNode = n.getChild('Grouping');
    return {
      kind: 'vector_aggregation',
      op,
      param: num ? this.number(num) : undefined,
      grouping: groupingNode ? this.grouping(groupingNode) : undefined,
      expr: this.metricExpr(this.need(n.getChild('MetricExpr'), 'a vector expression', n)),
      span: span(n),
    };
  }

  /** Flattens an unparenthesised chain of binary operators, then re-associates by PRECEDENCE. */
  binary(n: Node): MetricExpr {
    const items: Array<BinaryOperand | BinaryOperator> = [];
    const flatten = (b: Node) => {
      for (const c of children(b)) {
        if (c.name === 'Expr') {
          const inner = c.firstChild?.name === 'MetricExpr' ? c.firstChild.firstChild : null;
          if (inner?.name === 'BinOpExpr') flatten(inner);
          else items.push({ kind: 'operand', expr: this.expr(c) });
        } else if (c.name in BINARY_OPS) {
          items.push({ kind: 'operator', op: BINARY_OPS[c.name]!, ...this.binModifier(b.getChild('BinOpModifier')) });
        }
      }
    };
    flatten(n);
    let pos = 0;
    const parseLevel = (minPrec: number): Expr => {
      let left = (items[pos++] as BinaryOperand).expr;
      while (pos < items.length) {
        const op = items[pos] as BinaryOperator;
        const prec = PRECEDENCE[op.op];
        if (prec < minPrec) break;
        pos++;
        const right = parseLevel(op.op === '^' ? prec : prec + 1);
        left = { kind: 'binary', op: op.op, bool: op.bool, matching: op.matching, left, right, span: { from: left.span.from, to: right.span.to } } satisfies BinaryExpr;
      }
      return left;
    };
    return parseLevel(0) as MetricExpr;
  }

  binModifier(n: Node | null): { bool: boolean; matching: VectorMatching | undefined } {
    if (!n) return { bool: false, matching: undefined };
    const onOrIgnoring = n.getChild('OnOrIgnoringModifier');
    const labelsOf = (g: Node | null) => {
      const list = g?.getChild('GroupingLabelList');
      return list ? listItems(list, 'GroupingLabel').map((l) => this.text(l)) : [];
    };
    const matching: VectorMatching | undefined = onOrIgnoring
      ? {
          on: onOrIgnoring.getChild('On') !== null,
          labels: labelsOf(onOrIgnoring.getChild('GroupingLabels')),
          group: n.getChild('GroupLeft') ? 'left' : n.getChild('GroupRight') ? 'right' : undefined,
          include: labelsOf(n.getChild('GroupingLabels')),
        }
      : undefined;
    return { bool: n.getChild('Bool') !== null, matching };
  }
}

/**
 * Loki refuses a selector whose every matcher also matches an empty value (`{app=~".*"}`,
 * `{app=""}`): it would select every stream.
 */
function checkSelector(src: string, sel: Selector): void {
  const selective = sel.matchers.some((m) => {
    if (m.op === '=') return m.value !== '';
    if (m.op === '=~') return !regexMatchesEmpty(m.value);
    return false;
  });
  if (!selective) {
    const pos = positionOf(src, sel.span.from);
    throw new FloeError(
      'bad_data',
      `parse error at line ${pos.line}, col ${pos.column}: queries require at least one regexp or equality matcher that does not have an empty-compatible value. For instance, app=~".*" does not meet this requirement, but app=~".+" will`,
      { code: 'FLOE_ERR_LOGQL_PARSE', position: pos },
    );
  }
}

/** Whether an RE2 pattern fully matches "" (best effort through JavaScript's engine: false when unsure). */
function regexMatchesEmpty(pattern: string): boolean {
  try {
    return new RegExp(`^(?:${toJsRegexSource(pattern)})$`).test('');
  } catch {
    return false;
  }
}
