import { FloeError } from '@floe/errors';
import type { Direction, LabelMatch, LabelPredicate, LogDeletion, LogSelect, NumericOp, RowFilter, TimeRange } from '../ir/logs.ts';
import type { Expr, LabelFilterExpr, LabelMatcher, LogExpr, Stage } from './ast.ts';
import { positionOf, unsupported } from './errors.ts';
import { toJsRegexSource } from './strings.ts';
import { parseLogQL } from './parse.ts';

/**
 * Typed AST → Query IR for log queries. This is where "parses but cannot run yet" is decided:
 * such constructs are FloeError not_implemented (501) pointing at their position, never a 500.
 *
 * What lowering keeps and drops (spec 1, "Log queries"):
 * - stream matchers and line filters (|=, !=, |~, !~, chained, with `or`) become predicates;
 * - label filters (matchers, numeric comparisons, and / or / comma) filter wherever they stand;
 * - parser and formatter stages (json, logfmt, regexp, pattern, unpack, line_format,
 *   label_format, decolorize, drop, keep) pass rows through unchanged;
 * - `__error__` / `__error_details__` are always empty, since no stage here ever fails.
 */

export interface LogQueryOptions {
  range: TimeRange;
  direction: Direction;
  limit: number;
}

/** The labels the pipeline stages would set when a parser fails; nothing here ever fails. */
const ERROR_LABELS = new Set(['__error__', '__error_details__']);

export function lowerLogQuery(expr: Expr, source: string, opts: LogQueryOptions): LogSelect {
  const log = requireLogExpr(expr, source);
  return {
    kind: 'log_select',
    table: 'logs',
    range: opts.range,
    streams: log.selector.matchers.map(toMatch),
    filters: lowerPipeline(log.pipeline, source),
    direction: opts.direction,
    limit: opts.limit,
  };
}

/**
 * The stream matchers of a selector (label browser `query`, series `match[]`). Like Loki, a
 * pipeline after the selector is accepted and ignored here.
 */
export function lowerStreamSelector(expr: Expr, source: string): LabelMatch[] {
  if (expr.kind !== 'log') {
    const pos = positionOf(source, expr.span.from);
    throw new FloeError('bad_data', `parse error at line ${pos.line}, col ${pos.column}: expecting a log stream selector such as {service_name="checkout"}, got a metric query`, {
      code: 'FLOE_ERR_LOGQL_PARSE',
      position: pos,
    });
  }
  return expr.selector.matchers.map(toMatch);
}

/**
 * A delete request's query → the rows it deletes within `range`: exactly what the same log query
 * answers over that window (Loki: a stream selector with optional filters), so running the query
 * first shows what will go. A metric query is refused.
 */
export function lowerLogDeletion(expr: Expr, source: string, range: TimeRange): LogDeletion {
  if (expr.kind !== 'log') {
    throw new FloeError('bad_data', 'a delete request takes a log query (a stream selector with optional filters), not a metric query', { code: 'FLOE_ERR_LOGQL_PARAM' });
  }
  return { range, streams: expr.selector.matchers.map(toMatch), filters: lowerPipeline(expr.pipeline, source) };
}

/**
 * A recorded delete request (LogQL text and a window of unix milliseconds, both ends included, as
 * Loki's) as the rows it deletes: what the router filters from queries and the compactor rewrites
 * away, from this one definition.
 */
export function logDeletionOfRequest(query: string, startMs: number, endMs: number): LogDeletion {
  return lowerLogDeletion(parseLogQL(query), query, { startNs: BigInt(startMs) * 1_000_000n, endNs: (BigInt(endMs) + 1n) * 1_000_000n });
}

/**
 * Why a text is not a bare stream selector (a retention_stream rule's), or undefined when it is:
 * it must parse, lower, and carry no pipeline.
 */
export function streamSelectorProblem(text: string): string | undefined {
  try {
    const expr = parseLogQL(text);
    if (expr.kind !== 'log' || expr.pipeline.length > 0) return 'expected a stream selector such as {service_name="debug"}, without filters';
    lowerStreamSelector(expr, text);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** What is wrong with retention_stream rules, one line per bad selector naming `<path>[i].selector` (empty: nothing). */
export function retentionStreamProblems(rules: ReadonlyArray<{ selector: string }>, path: string): string[] {
  return rules.flatMap((r, i) => {
    const problem = streamSelectorProblem(r.selector);
    return problem ? [`${path}[${i}].selector: ${problem}`] : [];
  });
}

function requireLogExpr(expr: Expr, source: string): LogExpr {
  if (expr.kind === 'log') return expr;
  throw unsupported(source, expr.span.from, 'metric queries (count_over_time, rate, sum by, vector, …)');
}

export const toMatch = (m: LabelMatcher): LabelMatch => ({ label: m.label, op: m.op, value: m.value });

/** The pipeline's filters in order (parser and formatter stages pass rows through). */
export function lowerPipeline(stages: Stage[], source: string): RowFilter[] {
  const out: RowFilter[] = [];
  let lineRewritten = false;
  for (const stage of stages) {
    switch (stage.kind) {
      case 'line_filter': {
        if (stage.ip) throw unsupported(source, stage.span.from, 'the ip() line filter');
        if (stage.op === '|>' || stage.op === '!>') throw unsupported(source, stage.span.from, `the pattern line filter ${stage.op}`);
        // A formatter is a pass-through here, so a later line filter would test the wrong text.
        if (lineRewritten) throw unsupported(source, stage.span.from, 'a line filter after line_format');
        const op = ({ '|=': 'contains', '!=': 'not_contains', '|~': 'match', '!~': 'not_match' } as const)[stage.op];
        out.push({ kind: 'line', line: { op, values: stage.values } });
        break;
      }
      case 'label_filter':
        out.push({ kind: 'labels', predicate: lowerLabelFilter(stage.expr, source) });
        break;
      case 'line_format':
        lineRewritten = true;
        break;
      case 'parser':
      case 'label_format':
      case 'decolorize':
      case 'drop':
      case 'keep':
        break;
    }
  }
  return out;
}

export function lowerLabelFilter(e: LabelFilterExpr, source: string): LabelPredicate {
  switch (e.kind) {
    case 'and':
    case 'or':
      return { kind: e.kind, left: lowerLabelFilter(e.left, source), right: lowerLabelFilter(e.right, source) };
    case 'matcher': {
      const m = e.matcher;
      if (ERROR_LABELS.has(m.label)) return { kind: 'const', value: matchesEmpty(m) };
      return { kind: 'match', match: toMatch(m) };
    }
    case 'number': {
      const op: NumericOp = e.op === '=' ? '==' : e.op;
      if (ERROR_LABELS.has(e.label)) return { kind: 'const', value: false };
      return { kind: 'compare', label: e.label, op, value: e.value };
    }
    case 'duration':
      throw unsupported(source, e.span.from, `the duration comparison ${e.label} ${e.op} ${e.text}`);
    case 'bytes':
      throw unsupported(source, e.span.from, `the byte-size comparison ${e.label} ${e.op} ${e.text}`);
    case 'ip':
      throw unsupported(source, e.span.from, 'the ip() label filter');
  }
}

/** How a matcher judges a label that is absent (empty). */
function matchesEmpty(m: LabelMatcher): boolean {
  switch (m.op) {
    case '=':
      return m.value === '';
    case '!=':
      return m.value !== '';
    case '=~':
    case '!~': {
      let hit: boolean;
      try {
        hit = new RegExp(`^(?:${toJsRegexSource(m.value)})$`).test('');
      } catch {
        hit = false;
      }
      return m.op === '=~' ? hit : !hit;
    }
  }
}
