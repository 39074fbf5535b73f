import {
  buildPromSeries,
  matchLabels,
  planMetricCatalog,
  planMetricExemplars,
  planMetricPoints,
  planMetricSeries,
  promFamily,
  storedNamesFor,
  type CatalogEntry,
  type PlannedQuery,
  type PointRow,
  type PromLabelMatcher,
  type PromVectorSelector,
  type RawSeries,
  type SelectorWindow,
  type SeriesRow,
} from '@floe/query';
import { metricExemplarsTable, metricsTable } from '@floe/schema';
import type { FastifyRequest } from 'fastify';
import { FloeError } from '@floe/errors';
import { callerCredentials } from '../auth-plugin.ts';
import type { QuerierClient } from '../querier-client.ts';

/**
 * The router's reads of stored metrics for PromQL: the name catalog of the window, the series of
 * the stored metrics a query's selectors can match (labels read once per series), their points,
 * and exemplars. Three querier calls per query at most, each under what is left of the request's
 * deadline; everything after the SQL (Prometheus names, label matching, evaluation) is
 * @floe/query's pure code.
 */

export type Row = Record<string, unknown>;

export function rowsOf(table: Iterable<unknown>): Row[] {
  const out: Row[] = [];
  for (const r of table) out.push((typeof (r as { toJSON?: unknown }).toJSON === 'function' ? (r as { toJSON(): unknown }).toJSON() : r) as Row);
  return out;
}

const msToNs = (ms: number) => BigInt(Math.trunc(ms)) * 1_000_000n;

export class MetricReader {
  readonly #querier: QuerierClient;
  readonly #req: FastifyRequest;
  readonly #deadline: number;

  constructor(querier: QuerierClient, req: FastifyRequest, timeoutMs: number) {
    this.#querier = querier;
    this.#req = req;
    this.#deadline = Date.now() + timeoutMs;
  }

  remainingMs(): number {
    const left = this.#deadline - Date.now();
    if (left <= 0) throw new FloeError('timeout', 'query timed out in query execution', { code: 'FLOE_ERR_QUERY_TIMEOUT' });
    return left;
  }

  async run(plan: PlannedQuery): Promise<Row[]> {
    const table = await this.#querier.query(callerCredentials(this.#req), { sql: plan.sql, params: plan.params, hints: plan.hints }, this.remainingMs());
    return rowsOf(table);
  }

  async catalog(startMs: number, endMs: number): Promise<CatalogEntry[]> {
    const rows = await this.run(planMetricCatalog({ kind: 'metric_catalog', window: { startNs: msToNs(startMs), endNs: msToNs(endMs) } }, metricsTable));
    return rows.map((r) => ({
      metricName: String(r.metric_name),
      metricType: String(r.metric_type),
      unit: String(r.unit ?? ''),
      description: String(r.description ?? ''),
      isMonotonic: r.is_monotonic === true,
      temporality: String(r.temporality ?? ''),
      rw: r.rw === true,
    }));
  }

  async series(startMs: number, endMs: number, metricNames: string[]): Promise<SeriesRow[]> {
    if (metricNames.length === 0) return [];
    const rows = await this.run(planMetricSeries({ kind: 'metric_series', window: { startNs: msToNs(startMs), endNs: msToNs(endMs) }, metricNames }, metricsTable));
    return rows as unknown as SeriesRow[];
  }

  /**
   * The Prometheus series every selector of a query reads, over the union of their windows:
   * returns the per-selector source the evaluator calls.
   */
  async selectorSource(windows: readonly SelectorWindow[]): Promise<(sel: PromVectorSelector) => RawSeries[]> {
    if (windows.length === 0) return () => [];
    const lo = Math.min(...windows.map((w) => w.minMs));
    const hi = Math.max(...windows.map((w) => w.maxMs));
    const catalog = await this.catalog(lo, hi);
    const names = storedNamesFor(
      catalog,
      windows.map((w) => w.selector.matchers),
    );
    if (names.length === 0) return () => [];
    const wanted = new Set(names);
    const distributions = catalog.some((e) => wanted.has(e.metricName) && (e.metricType === 'histogram' || e.metricType === 'summary' || e.metricType === 'exponential_histogram'));
    const window = { startNs: msToNs(lo), endNs: msToNs(hi) };
    const seriesRows = await this.series(lo, hi, names);
    const points = await this.run(planMetricPoints({ kind: 'metric_points', window, metricNames: names, distributions }, metricsTable));
    const all = buildPromSeries(seriesRows, points as unknown as PointRow[]);
    const cache = new Map<PromVectorSelector, RawSeries[]>();
    return (sel) => {
      let hit = cache.get(sel);
      if (!hit) cache.set(sel, (hit = all.filter((s) => matchLabels(s.labels, sel.matchers))));
      return hit;
    };
  }

  /** Stored metric names whose Prometheus names any of the selectors (or, with none, anything) can match. */
  async namesFor(startMs: number, endMs: number, selectors: ReadonlyArray<readonly PromLabelMatcher[]>): Promise<{ catalog: CatalogEntry[]; names: string[] }> {
    const catalog = await this.catalog(startMs, endMs);
    const names = selectors.length === 0 ? [...new Set(catalog.map((e) => e.metricName))] : storedNamesFor(catalog, selectors);
    return { catalog, names };
  }

  async exemplars(startMs: number, endMs: number, metricNames: string[]): Promise<Row[]> {
    if (metricNames.length === 0) return [];
    return this.run(planMetricExemplars({ kind: 'metric_exemplars', window: { startNs: msToNs(startMs), endNs: msToNs(endMs) }, metricNames }, metricExemplarsTable));
  }
}

export { promFamily };
