import { isLogExpr, lowerMetricQuery, parseLogQL, type PlannedQuery, type PlannerTable } from '@floe/query';
import { logsTable } from '@floe/schema';
import { runMetricQuery, withinSeriesLimit } from '../logquery/metrics.ts';
import { exclusionFilter, type PendingDeletions } from '../logquery/pending-deletions.ts';
import { rowsOf } from '../logquery/results.ts';
import { mayUseLabelColumn } from '../logquery/table.ts';
import { serviceCaller, type QuerierClient } from '../querier-client.ts';
import { datasetTables, type TableColumns } from '../table-columns.ts';
import type { RuleQuery } from './ruler.ts';

export interface RulerLogQueryOptions {
  querier: QuerierClient;
  queryTimeoutMs: number;
  tableColumns?: TableColumns;
  /** Lines of pending delete requests are left out, as from the query API's answers. */
  pendingDeletions?: PendingDeletions;
}

const NS_PER_MS = 1_000_000n;

/**
 * The ruler's instant LogQL metric queries (Loki's ruler evaluates only those): the query API's
 * lowering, SQL and evaluation at one step, for a tenant's dataset, with the internal service key
 * standing for the tenant. A log query (no range aggregation) is an error, as in Loki. Earlier
 * rules' fresh samples are metrics, which LogQL does not read.
 */
export function rulerLogQuery(opts: RulerLogQueryOptions): RuleQuery {
  const tableOf = datasetTables(logsTable, 'logs', opts.tableColumns);
  return async (tenant, dataset, text, t) => {
    const caller = serviceCaller(tenant, dataset);
    const expr = parseLogQL(text);
    if (isLogExpr(expr)) throw new Error('rule expression is a log query; a LogQL rule needs a metric query');
    const metric = lowerMetricQuery(expr, text);
    // Only a label no fixed column backs can resolve to a label column (as the log API plans).
    const table: PlannerTable = mayUseLabelColumn(metric) ? await tableOf(tenant, dataset) : logsTable;
    if (opts.pendingDeletions) {
      const excluded = exclusionFilter(await opts.pendingDeletions.of(tenant, dataset));
      if (excluded) for (const leaf of metric.leaves) leaf.sample.filters.push(excluded);
    }
    const timeNs = BigInt(t) * NS_PER_MS;
    const run = async (plan: PlannedQuery) => rowsOf(await opts.querier.query(caller, { sql: plan.sql, params: plan.params, hints: plan.hints }, opts.queryTimeoutMs));
    const result = withinSeriesLimit(await runMetricQuery(run, table, metric, { startNs: timeNs, endNs: timeNs, stepNs: 1_000_000_000n }));
    if (result.kind === 'scalar') return { resultType: 'scalar', result: [t, result.value] };
    const samples: Array<{ labels: Record<string, string>; t: number; v: number }> = [];
    for (const s of result.series) {
      const v = s.points.get(0);
      if (v !== undefined) samples.push({ labels: s.labels, t, v });
    }
    return { resultType: 'vector', result: samples };
  };
}
