import { formatFloat } from '../promql/labels.ts';
import type { BinaryExpr, BinaryOp, Expr, Grouping, LabelFilterExpr, LabelMatcher, LogExpr, MetricExpr, Selector, Stage, Unwrap } from './ast.ts';
import { formatDuration as duration } from './durations.ts';

/**
 * A LogQL expression in canonical form (Loki's format_query): one line, single spaces, strings
 * double-quoted with Go escapes, durations in their largest units, `by (…)` before the
 * aggregated expression, parentheses only where precedence needs them. Parsing the output gives
 * the same syntax tree (format.test.ts checks it over a corpus of every construct).
 */
export function formatLogQL(expr: Expr): string {
  return expr.kind === 'log' ? logExpr(expr) : metricExpr(expr);
}

/** Go's strconv.Quote accepts what JSON.stringify writes (\", \\, \n, \t, \uXXXX, …). */
const quote = (s: string) => JSON.stringify(s);

const matcher = (m: LabelMatcher) => `${m.label}${m.op}${quote(m.value)}`;

const selector = (s: Selector) => `{${s.matchers.map(matcher).join(', ')}}`;

function labelFilter(e: LabelFilterExpr, parent?: 'and' | 'or'): string {
  switch (e.kind) {
    case 'matcher':
      return matcher(e.matcher);
    case 'number':
      return `${e.label} ${e.op} ${formatFloat(e.value)}`;
    case 'duration':
    case 'bytes':
      return `${e.label} ${e.op} ${e.text}`;
    case 'ip':
      return `${e.label} ${e.op} ip(${quote(e.value)})`;
    case 'and':
    case 'or': {
      const text = `${labelFilter(e.left, e.kind)} ${e.kind} ${labelFilter(e.right, e.kind)}`;
      // `and` binds tighter than `or`; an `or` inside an `and` keeps its parentheses.
      return parent === 'and' && e.kind === 'or' ? `(${text})` : text;
    }
  }
}

function stage(s: Stage): string {
  switch (s.kind) {
    case 'line_filter': {
      const value = (v: string) => (s.ip ? `ip(${quote(v)})` : quote(v));
      return `${s.op} ${s.values.map(value).join(' or ')}`;
    }
    case 'label_filter':
      return `| ${labelFilter(s.expr)}`;
    case 'parser': {
      const flags = s.flags.map((f) => ` ${f}`).join('');
      const expression = s.expression === undefined ? '' : ` ${quote(s.expression)}`;
      const extractions = s.extractions.map((x) => (x.expression === undefined ? x.label : `${x.label}=${quote(x.expression)}`)).join(', ');
      return `| ${s.parser}${flags}${expression}${extractions === '' ? '' : ` ${extractions}`}`;
    }
    case 'line_format':
      return `| line_format ${quote(s.template)}`;
    case 'label_format':
      return `| label_format ${s.assignments.map((a) => `${a.label}=${a.template ? quote(a.value) : a.value}`).join(', ')}`;
    case 'decolorize':
      return '| decolorize';
    case 'drop':
    case 'keep':
      return `| ${s.kind} ${s.labels.map((l) => (l.matcher ? matcher(l.matcher) : l.label)).join(', ')}`;
  }
}

function logExpr(e: LogExpr): string {
  return [selector(e.selector), ...e.pipeline.map(stage)].join(' ');
}

function unwrap(u: Unwrap): string {
  const label = u.conversion === undefined ? u.label : `${u.conversion}(${u.label})`;
  return [`| unwrap ${label}`, ...u.filters.map((f) => `| ${labelFilter(f)}`)].join(' ');
}

const grouping = (g: Grouping | undefined) => (g === undefined ? '' : ` ${g.without ? 'without' : 'by'} (${g.labels.join(', ')})`);

/** Binding strength of binary operators, as in Prometheus (`^` the tightest, `or` the loosest). */
const PRECEDENCE: Record<BinaryOp, number> = {
  or: 1,
  and: 2,
  unless: 2,
  '==': 3,
  '!=': 3,
  '>': 3,
  '>=': 3,
  '<': 3,
  '<=': 3,
  '+': 4,
  '-': 4,
  '*': 5,
  '/': 5,
  '%': 5,
  '^': 6,
};

function operand(e: Expr, parent: BinaryExpr, side: 'left' | 'right'): string {
  const text = formatLogQL(e);
  if (e.kind !== 'binary') return text;
  const mine = PRECEDENCE[e.op];
  const theirs = PRECEDENCE[parent.op];
  // Left-associative but for `^`: an equal operator keeps its parentheses on the other side.
  const needs = mine < theirs || (mine === theirs && (parent.op === '^' ? side === 'left' : side === 'right'));
  return needs ? `(${text})` : text;
}

function metricExpr(e: MetricExpr): string {
  switch (e.kind) {
    case 'number':
      return formatFloat(e.value);
    case 'vector':
      return `vector(${formatFloat(e.value)})`;
    case 'range_aggregation': {
      const param = e.param === undefined ? '' : `${formatFloat(e.param)}, `;
      const inner = [logExpr(e.log), ...(e.unwrap ? [unwrap(e.unwrap)] : [])].join(' ');
      const offset = e.offsetMs === undefined ? '' : ` offset ${duration(e.offsetMs)}`;
      return `${e.op}(${param}${inner} [${duration(e.rangeMs)}]${offset})${grouping(e.grouping)}`;
    }
    case 'vector_aggregation': {
      const param = e.param === undefined ? '' : `${formatFloat(e.param)}, `;
      return `${e.op}${grouping(e.grouping)} (${param}${metricExpr(e.expr)})`;
    }
    case 'label_replace':
      return `label_replace(${metricExpr(e.expr)}, ${[e.dst, e.replacement, e.src, e.regex].map(quote).join(', ')})`;
    case 'binary': {
      let modifiers = e.bool ? ' bool' : '';
      const m = e.matching;
      if (m) {
        modifiers += ` ${m.on ? 'on' : 'ignoring'} (${m.labels.join(', ')})`;
        if (m.group) modifiers += ` group_${m.group} (${m.include.join(', ')})`;
      }
      return `${operand(e.left, e, 'left')} ${e.op}${modifiers} ${operand(e.right, e, 'right')}`;
    }
  }
}
