import {
  evaluateMetricQuery,
  formatPromFloat as formatSampleValue,
  gridSteps,
  planLogSample,
  sampleWindows,
  type MetricQuery,
  type MetricResult,
  type PlannedQuery,
  type PlannerTable,
  type StepGrid,
} from '@floe/query';
import { FloeError } from '@floe/errors';
import { secondsOf, type MatrixSeries, type Row, type VectorSample } from './results.ts';

/** Most series one LogQL metric query may answer (Loki's max_query_series; drilldown-limits publishes it). */
export const MAX_QUERY_SERIES = 5000;

/**
 * A metric query's result, or the 400 Loki answers when it has more than `max` series: an
 * unaggregated query over a high-cardinality selector would otherwise build and send a response
 * without bound.
 */
export function withinSeriesLimit(result: MetricResult, max = MAX_QUERY_SERIES): MetricResult {
  if (result.kind === 'matrix' && result.series.length > max) {
    throw new FloeError('bad_data', `maximum number of series (${max}) reached for a single query; narrow the selector or aggregate, e.g. sum by (level) (…)`, { code: 'FLOE_ERR_LOGQL_SERIES' });
  }
  return result;
}

/**
 * Runs a lowered LogQL metric query: one SQL call per leaf (in parallel, each with the request's
 * deadline through `run`), then @floe/query's pure evaluator, then Loki's matrix / vector / scalar
 * shapes (reference/api-contracts.md §1.2).
 */

export type RunPlan = (plan: PlannedQuery) => Promise<Row[]>;

/** `table`: the caller's logs table as the planner sees it (its materialized label columns included). */
export async function runMetricQuery(run: RunPlan, table: PlannerTable, query: MetricQuery, grid: StepGrid): Promise<MetricResult> {
  const steps = gridSteps(grid);
  const leaves = await Promise.all(
    query.leaves.map(async (leaf) => {
      const windows = sampleWindows(grid, leaf.rangeNs, leaf.offsetNs);
      return { windows, rows: await run(planLogSample(leaf.sample, windows, table)) };
    }),
  );
  return evaluateMetricQuery(query, steps, leaves);
}

const timeOf = (grid: StepGrid, k: number) => grid.startNs + BigInt(k) * grid.stepNs;

/** A range query's `matrix` result; a scalar becomes one series without labels at every step. */
export function toMatrix(result: MetricResult, grid: StepGrid): MatrixSeries[] {
  if (result.kind === 'scalar') {
    const steps = gridSteps(grid);
    const values: Array<[number, string]> = [];
    for (let k = 0; k < steps; k++) values.push([secondsOf(timeOf(grid, k)), formatSampleValue(result.value)]);
    return [{ metric: {}, values }];
  }
  return result.series.map((s) => ({
    metric: s.labels,
    values: [...s.points].sort(([a], [b]) => a - b).map(([k, v]) => [secondsOf(timeOf(grid, k)), formatSampleValue(v)] as [number, string]),
  }));
}

/** An instant query's `data`: a `vector` of the samples at `timeNs`, or a `scalar`. */
export function toInstant(result: MetricResult, timeNs: bigint): { resultType: 'vector'; result: VectorSample[] } | { resultType: 'scalar'; result: [number, string] } {
  const t = secondsOf(timeNs);
  if (result.kind === 'scalar') return { resultType: 'scalar', result: [t, formatSampleValue(result.value)] };
  const samples: VectorSample[] = [];
  for (const s of result.series) {
    const v = s.points.get(0);
    if (v !== undefined) samples.push({ metric: s.labels, value: [t, formatSampleValue(v)] });
  }
  return { resultType: 'vector', result: samples };
}
