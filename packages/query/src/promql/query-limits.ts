import { FloeError } from '@floe/errors';
import type { Expr } from './ast.ts';
import { typeOf } from './parse.ts';

/**
 * The limits a PromQL evaluation runs under and the errors past them, in Prometheus's words (users
 * and dashboards search for those texts): the budget of points (Prometheus's --query.max-samples,
 * EvalOptions.maxSamples), against which subqueries are counted before any series is read; the
 * deadline; and a range query's checks of its steps and its expression's type, which Prometheus
 * makes before it evaluates anything.
 */

export const MAX_POINTS_PER_SERIES = 11_000;

/** The answer past EvalOptions.maxSamples (and past the reader's own limit of loaded samples), in Prometheus's words. */
export const tooManySamples = () =>
  new FloeError('execution', 'query processing would load too many samples into memory in query execution', { code: 'FLOE_ERR_PROMQL_TOO_MANY_SAMPLES' });

/** An evaluation past its deadline, in Prometheus's words. */
export const evalTimedOut = () => new FloeError('timeout', 'query timed out in expression evaluation', { code: 'FLOE_ERR_PROMQL_TIMEOUT' });

const badRange = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_PROMQL_PARAM' });

/**
 * The subquery steps an evaluation of `e` at `outer` times takes at least: a subquery of range R
 * and step S takes floor(R / S) steps or one more at each time it is evaluated at, and its inner
 * expression is evaluated at each of them. Every step counts at least one sample against
 * maxSamples (Evaluator.subquery), so a query whose count passes the budget is refused before
 * it runs, instead of holding the event loop for the time it takes to find out step by step
 * (`sum_over_time(vector(1)[1d:1ms])`: 86 million steps).
 */
export function leastSubquerySteps(e: Expr, outer: number, defaultStepMs: number): number {
  switch (e.type) {
    case 'subquery': {
      const steps = outer * Math.floor(e.rangeMs / (e.stepMs ?? defaultStepMs));
      return steps + leastSubquerySteps(e.expr, steps, defaultStepMs);
    }
    case 'paren':
    case 'unary':
      return leastSubquerySteps(e.expr, outer, defaultStepMs);
    case 'call':
      return e.args.reduce((n, a) => n + leastSubquerySteps(a, outer, defaultStepMs), 0);
    case 'aggregate':
      return (e.param ? leastSubquerySteps(e.param, outer, defaultStepMs) : 0) + leastSubquerySteps(e.expr, outer, defaultStepMs);
    case 'binary':
      return leastSubquerySteps(e.lhs, outer, defaultStepMs) + leastSubquerySteps(e.rhs, outer, defaultStepMs);
    default:
      return 0;
  }
}

/** Refuses an evaluation at `outer` times whose subquery steps alone pass opts.maxSamples: callers check before reading any series. */
export function checkSubquerySteps(e: Expr, outer: number, opts: { maxSamples?: number; defaultSubqueryStepMs: number }): void {
  if (opts.maxSamples !== undefined && leastSubquerySteps(e, outer, opts.defaultSubqueryStepMs) > opts.maxSamples) throw tooManySamples();
}

/** The times a range query from `startMs` to `endMs` is evaluated at (start, start + step, …, ≤ end). */
export function rangeStepCount(startMs: number, endMs: number, stepMs: number): number {
  return stepMs > 0 && endMs >= startMs ? Math.floor((endMs - startMs) / stepMs) + 1 : 1;
}

/** Prometheus's checks of a range query's steps, in its words (it makes them before parsing the query): a positive step, at most MAX_POINTS_PER_SERIES steps. */
export function checkRangeSteps(startMs: number, endMs: number, stepMs: number): void {
  if (!(stepMs > 0)) throw badRange('invalid parameter "step": zero or negative query resolution step widths are not accepted. Try a positive integer');
  if ((endMs - startMs) / stepMs > MAX_POINTS_PER_SERIES) throw badRange('exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)');
}

/** A range query's expression must be a scalar or an instant vector. */
export function checkRangeQueryType(expr: Expr): void {
  const type = typeOf(expr);
  if (type !== 'scalar' && type !== 'vector') throw badRange(`invalid expression type "${type === 'matrix' ? 'range vector' : type}" for range query, must be Scalar or instant Vector`);
}
