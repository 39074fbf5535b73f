import type { AtModifier, Expr, LabelMatcher, VectorSelector } from './ast.ts';
import { formatDuration as duration } from '../logql/durations.ts';
import { LABEL_NAME_RE, METRIC_NAME, formatFloat } from './labels.ts';

/**
 * format_query: a parsed expression printed back in Prometheus's canonical one-line spelling
 * (spaces around binary operators, `by (…)` before the aggregated expression, durations in
 * their largest units, strings double-quoted).
 */
export function formatPromQL(e: Expr): string {
  switch (e.type) {
    case 'number':
      return Number.isNaN(e.value) ? 'NaN' : e.value === Infinity ? 'Inf' : e.value === -Infinity ? '-Inf' : formatFloat(e.value);
    case 'string':
      return JSON.stringify(e.value);
    case 'selector':
      return `${selector(e)}${modifiers(e.offsetMs, e.at)}`;
    case 'matrix':
      return `${selector(e.selector)}[${duration(e.rangeMs)}]${modifiers(e.selector.offsetMs, e.selector.at)}`;
    case 'subquery':
      return `${formatPromQL(e.expr)}[${duration(e.rangeMs)}:${e.stepMs === undefined ? '' : duration(e.stepMs)}]${modifiers(e.offsetMs, e.at)}`;
    case 'call':
      return `${e.func}(${e.args.map(formatPromQL).join(', ')})`;
    case 'aggregate': {
      const g = e.grouping ? ` ${e.grouping.without ? 'without' : 'by'} (${e.grouping.labels.join(', ')}) ` : '';
      const args = e.param ? `${formatPromQL(e.param)}, ${formatPromQL(e.expr)}` : formatPromQL(e.expr);
      return `${e.op}${g}(${args})`;
    }
    case 'binary': {
      let mod = e.bool ? ' bool' : '';
      const m = e.matching;
      if (m && (m.labels.length > 0 || m.on)) mod += ` ${m.on ? 'on' : 'ignoring'} (${m.labels.join(', ')})`;
      if (m && m.card === 'many-to-one') mod += ` group_left (${m.include.join(', ')})`;
      if (m && m.card === 'one-to-many') mod += ` group_right (${m.include.join(', ')})`;
      return `${formatPromQL(e.lhs)} ${e.op}${mod} ${formatPromQL(e.rhs)}`;
    }
    case 'unary':
      return `${e.op}${formatPromQL(e.expr)}`;
    case 'paren':
      return `(${formatPromQL(e.expr)})`;
  }
}

/** The metric name and the matchers other than the name's own. */
function selector(s: VectorSelector): string {
  const rest = s.matchers.filter((m) => !(s.name !== undefined && m.name === METRIC_NAME && m.op === '='));
  const body = rest.length > 0 || s.name === undefined ? `{${rest.map(matcher).join(', ')}}` : '';
  return `${s.name ?? ''}${body}`;
}

function matcher(m: LabelMatcher): string {
  const name = LABEL_NAME_RE.test(m.name) ? m.name : JSON.stringify(m.name);
  return `${name}${m.op}${JSON.stringify(m.value)}`;
}

function modifiers(offsetMs: number, at: AtModifier | undefined): string {
  let out = '';
  if (at) out += at.kind === 'time' ? ` @ ${formatFloat(at.ms / 1000)}` : ` @ ${at.kind}()`;
  if (offsetMs !== 0) out += ` offset ${offsetMs < 0 ? '-' : ''}${duration(Math.abs(offsetMs))}`;
  return out;
}

