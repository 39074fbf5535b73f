import { FloeError } from '@floe/errors';
import type { AggregateNode, AggregateOp, BinaryNode, MetricNode, MetricQuery, RangeFn, RangeNode } from '../ir/log-metrics.ts';
import { partialOf } from '../ir/log-metrics.ts';
import type { LabelMatch, RowFilter } from '../ir/logs.ts';
import type { Expr, MetricExpr, RangeAggregation, VectorAggregation } from './ast.ts';
import { positionOf, unsupported } from './errors.ts';
import { isComparison, isSetOp } from '../promql/ast.ts';
import { lowerLabelFilter, lowerPipeline, toMatch } from './lower.ts';

/**
 * Typed AST → metric-query IR (ir/log-metrics.ts) for LogQL metric queries (spec 1, "Metric
 * queries"). Decided here, with the position of the construct:
 *
 * - not_implemented (501): absent_over_time, rate_counter, unwrap conversions (bytes(),
 *   duration(), duration_seconds()), approx_topk, `without (…)` with a non-empty list, and the
 *   `or vector(N)` fallback; many-to-one matching is refused when it happens (logql/evaluate.ts);
 * - bad_data (400): an unwrap range function without `| unwrap`, count_over_time and the byte
 *   functions with one, `bool` on a non-comparison, a comparison of two scalars without `bool`,
 *   a log query where a metric one is needed, an invalid label_replace destination.
 *
 * Which labels each range aggregation groups its rows by (its series labels) is also decided here,
 * since a series only carries labels the SQL returned:
 *
 * - `<fn>(…) by (L)`: exactly L (Loki: the aggregation runs over every sample of the group);
 * - directly under `sum by (L)` (or a plain `sum`), for the additive functions (count_over_time,
 *   rate, bytes_over_time, bytes_rate, sum_over_time): L, so the SQL does the sum;
 * - otherwise the stream identity (service_name, level: spec 1, label resolution rule 6) plus
 *   every label an enclosing operation names: `by (…)` of an aggregation, `on (…)` of a binary
 *   operator, label_replace's source and destination. A label no row carries is simply absent.
 */

/** The stream identity of bare range aggregations (spec 1, label resolution rule 6). */
const SERIES_IDENTITY: readonly string[] = ['service_name', 'level'];

const UNWRAP_FNS = new Set<RangeFn>(['sum_over_time', 'avg_over_time', 'min_over_time', 'max_over_time', 'stddev_over_time', 'stdvar_over_time', 'first_over_time', 'last_over_time', 'quantile_over_time']);
const ADDITIVE_FNS = new Set<RangeFn>(['count_over_time', 'rate', 'bytes_over_time', 'bytes_rate', 'sum_over_time']);
/** A label name label_replace may write: Prometheus's rule, plus dots (Floe's attribute labels). */
const LABEL_NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;

const MS_NS = 1_000_000n;

const bad = (source: string, offset: number, reason: string) => {
  const position = positionOf(source, offset);
  return new FloeError('bad_data', `parse error at line ${position.line}, col ${position.column}: ${reason}`, { code: 'FLOE_ERR_LOGQL_PARSE', position });
};

const union = (...lists: ReadonlyArray<readonly string[]>): string[] => [...new Set(lists.flat())];

interface Context {
  /** Labels enclosing operations read. */
  needed: string[];
  /** Set when the parent is `sum by (L)` / `sum`: L. */
  sumBy: string[] | undefined;
}

export function lowerMetricQuery(expr: Expr, source: string): MetricQuery {
  const leaves: RangeNode[] = [];
  const root = new MetricLowerer(source, leaves).node(expr, { needed: [], sumBy: undefined });
  return { kind: 'metric_query', root, leaves };
}

class MetricLowerer {
  readonly #src: string;
  readonly #leaves: RangeNode[];

  constructor(src: string, leaves: RangeNode[]) {
    this.#src = src;
    this.#leaves = leaves;
  }

  node(e: Expr, ctx: Context): MetricNode {
    switch (e.kind) {
      case 'log':
        throw bad(this.#src, e.span.from, 'expecting a metric expression (such as count_over_time({…}[5m])), got a log query');
      case 'number':
        return { kind: 'scalar', value: e.value };
      case 'vector':
        return { kind: 'vector', value: e.value };
      case 'range_aggregation':
        return this.range(e, ctx);
      case 'vector_aggregation':
        return this.aggregate(e, ctx);
      case 'binary':
        return this.binary(e, ctx);
      case 'label_replace': {
        if (!LABEL_NAME.test(e.dst)) throw bad(this.#src, e.span.from, `invalid destination label name in label_replace(): ${JSON.stringify(e.dst)}`);
        const expr = this.node(e.expr, { needed: union(ctx.needed, [e.src, e.dst]), sumBy: undefined });
        return { kind: 'label_replace', expr, dst: e.dst, replacement: e.replacement, src: e.src, regex: e.regex };
      }
    }
  }

  range(e: RangeAggregation, ctx: Context): RangeNode {
    if (e.op === 'absent_over_time' || e.op === 'rate_counter') throw unsupported(this.#src, e.span.from, `the range function ${e.op}`);
    const fn: RangeFn = e.op;
    if (UNWRAP_FNS.has(fn) && !e.unwrap) throw bad(this.#src, e.span.from, `invalid aggregation ${fn} without unwrap`);
    if (!UNWRAP_FNS.has(fn) && fn !== 'rate' && e.unwrap) throw bad(this.#src, e.span.from, `invalid aggregation ${fn} with unwrap`);
    if (e.unwrap?.conversion) throw unsupported(this.#src, e.unwrap.span.from, `the unwrap conversion ${e.unwrap.conversion}()`);
    if (fn === 'quantile_over_time' && (e.param === undefined || Number.isNaN(e.param))) throw bad(this.#src, e.span.from, 'quantile_over_time needs a quantile parameter');

    let groupBy: string[];
    if (e.grouping && e.grouping.without && e.grouping.labels.length > 0) throw unsupported(this.#src, e.grouping.span.from, `without (…) with a non-empty label list`);
    if (e.grouping && !e.grouping.without) groupBy = union(e.grouping.labels);
    else if (ctx.sumBy && ADDITIVE_FNS.has(fn)) groupBy = union(ctx.sumBy);
    else groupBy = union(SERIES_IDENTITY, ctx.needed);

    const filters: RowFilter[] = lowerPipeline(e.log.pipeline, this.#src);
    for (const f of e.unwrap?.filters ?? []) filters.push({ kind: 'labels', predicate: lowerLabelFilter(f, this.#src) });
    const leaf: RangeNode = {
      kind: 'range',
      id: this.#leaves.length,
      fn,
      param: e.param,
      rangeNs: BigInt(e.rangeMs) * MS_NS,
      offsetNs: BigInt(e.offsetMs ?? 0) * MS_NS,
      sample: {
        kind: 'log_sample',
        table: 'logs',
        streams: e.log.selector.matchers.map(toMatch),
        filters,
        unwrap: e.unwrap?.label,
        partial: partialOf(fn, e.unwrap !== undefined),
        groupBy,
      },
    };
    this.#leaves.push(leaf);
    return leaf;
  }

  aggregate(e: VectorAggregation, ctx: Context): AggregateNode {
    if (e.op === 'approx_topk') throw unsupported(this.#src, e.span.from, 'approx_topk');
    const op: AggregateOp = e.op;
    const g = e.grouping;
    if (g?.without && g.labels.length > 0) throw unsupported(this.#src, g.span.from, `${op} without (…) with a non-empty label list`);
    const keepAll = g?.without === true;
    switch (op) {
      case 'topk':
      case 'bottomk': {
        if (e.param === undefined || !Number.isFinite(e.param)) throw bad(this.#src, e.span.from, `${op} needs a numeric parameter`);
        if (keepAll) throw unsupported(this.#src, g!.span.from, `${op} without ()`);
        const by = g ? union(g.labels) : undefined;
        return { kind: 'aggregate', op, by, param: e.param, expr: this.node(e.expr, { needed: union(ctx.needed, by ?? []), sumBy: undefined }) };
      }
      case 'sort':
      case 'sort_desc':
        if (g) throw bad(this.#src, g.span.from, `${op} does not take a grouping`);
        return { kind: 'aggregate', op, by: undefined, param: undefined, expr: this.node(e.expr, { needed: ctx.needed, sumBy: undefined }) };
      default: {
        const by = keepAll ? undefined : union(g?.labels ?? []);
        const child: Context = keepAll ? { needed: ctx.needed, sumBy: undefined } : { needed: by!, sumBy: op === 'sum' ? by : undefined };
        return { kind: 'aggregate', op, by, param: undefined, expr: this.node(e.expr, child) };
      }
    }
  }

  binary(e: Extract<MetricExpr, { kind: 'binary' }>, ctx: Context): BinaryNode {
    const comparison = isComparison(e.op);
    if (e.bool && !comparison) throw bad(this.#src, e.span.from, `bool modifier can only be used on comparison operators, not ${e.op}`);
    if (e.op === 'or' && (e.left.kind === 'vector' || e.right.kind === 'vector')) throw unsupported(this.#src, e.span.from, 'the `or vector(…)` fallback');
    const isSet = isSetOp(e.op);
    const scalar = (x: Expr) => x.kind === 'number';
    if (isSet && (scalar(e.left) || scalar(e.right))) throw bad(this.#src, e.span.from, `set operator ${e.op} not allowed in binary scalar expression`);
    if (comparison && !e.bool && scalar(e.left) && scalar(e.right)) throw bad(this.#src, e.span.from, 'comparisons between scalars must use BOOL modifier');
    const m = e.matching;
    const child: Context = { needed: union(ctx.needed, m?.on ? m.labels : []), sumBy: undefined };
    return {
      kind: 'binary',
      op: e.op,
      bool: e.bool,
      matching: m ? { on: m.on, labels: union(m.labels), group: m.group } : undefined,
      left: this.node(e.left, child),
      right: this.node(e.right, child),
    };
  }
}

/**
 * Log volume (Loki's index/volume and index/volume_range) as a metric query: the bytes of the
 * selected lines per window, grouped by `groupBy`, with optional extra filters (volume by label
 * name filters on the label being present).
 */
export function volumeQuery(streams: LabelMatch[], groupBy: string[], rangeNs: bigint, filters: RowFilter[] = []): MetricQuery {
  const leaf: RangeNode = {
    kind: 'range',
    id: 0,
    fn: 'bytes_over_time',
    param: undefined,
    rangeNs,
    offsetNs: 0n,
    sample: { kind: 'log_sample', table: 'logs', streams, filters, unwrap: undefined, partial: 'bytes', groupBy: union(groupBy) },
  };
  return { kind: 'metric_query', root: leaf, leaves: [leaf] };
}
