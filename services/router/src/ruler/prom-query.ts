import { parsePromQL, withFreshSamples, type EvalOptions } from '@floe/query';
import { metricsTable } from '@floe/schema';
import { CatalogCache } from '../metricquery/catalog-cache.ts';
import { DEFAULT_MAX_SAMPLES, MetricReader } from '../metricquery/data.ts';
import { DEFAULT_LOOKBACK_DELTA_MS } from '../metricquery/plugin.ts';
import { evaluateInstant } from '../metricquery/eval-thread.ts';
import { serviceCaller, type QuerierClient } from '../querier-client.ts';
import { datasetTables, type TableColumns } from '../table-columns.ts';
import type { RuleQuery } from './ruler.ts';

export interface RulerQueryOptions {
  querier: QuerierClient;
  queryTimeoutMs: number;
  maxSamples?: number;
  tableColumns?: TableColumns;
  /** Step of subqueries written without one: the evaluation interval, as in Prometheus. */
  defaultSubqueryStepMs: number;
}

/**
 * The ruler's instant PromQL queries: the same reads and evaluation as the query API's
 * /api/v1/query, for a tenant's dataset, with the internal service key standing for the tenant
 * (the querier takes it for reads only). Catalogs and table columns are cached as for the API.
 * The group's fresh samples are laid over what storage holds (withFreshSamples).
 */
export function rulerPromQuery(opts: RulerQueryOptions): RuleQuery {
  const catalogs = new CatalogCache();
  const tableOf = datasetTables(metricsTable, 'metrics', opts.tableColumns);
  return async (tenant, dataset, text, t, fresh) => {
    const deadline = performance.now() + opts.queryTimeoutMs;
    const reader = new MetricReader(opts.querier, serviceCaller(tenant, dataset), opts.queryTimeoutMs, opts.maxSamples, catalogs, undefined, () => tableOf(tenant, dataset));
    const expr = parsePromQL(text);
    const evalOpts: EvalOptions = {
      startMs: t,
      endMs: t,
      lookbackMs: DEFAULT_LOOKBACK_DELTA_MS,
      defaultSubqueryStepMs: opts.defaultSubqueryStepMs,
      maxSamples: opts.maxSamples ?? DEFAULT_MAX_SAMPLES,
      deadline,
    };
    return evaluateInstant(text, expr, t, async (windows) => withFreshSamples(await reader.selectorSource(windows), fresh), evalOpts);
  };
}
