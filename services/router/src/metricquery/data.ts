import {
  buildPlainSeries,
  buildPromSeries,
  buildTargetInfo,
  planMetricTargetInfo,
  selectsTargetInfo,
  type TargetInfoRow,
  matchLabels,
  planMetricCatalog,
  planMetricExemplars,
  planMetricPoints,
  planMetricSeries,
  planMetricSeriesPoints,
  storedNamesFor,
  type CatalogEntry,
  type PlannedQuery,
  type PointRow,
  type PromLabelMatcher,
  type PromVectorSelector,
  type RawSeries,
  type SelectorWindow,
  type SeriesRow,
  type SeriesPointsRow,
  type MetricSelect,
} from '@floe/query';
import { metricExemplarsTable, metricsTable } from '@floe/schema';
import type { FastifyRequest } from 'fastify';
import { FloeError } from '@floe/errors';
import { callerCredentials } from '../auth-plugin.ts';
import type { QuerierClient } from '../querier-client.ts';
import { rowsOf, type Row } from '../logquery/results.ts';

/**
 * The router's reads of stored metrics for PromQL: the name catalog of the window, the series of
 * the stored metrics a query's selectors can match (labels read once per series), their points,
 * and exemplars. Three querier calls per query at most, each under what is left of the request's
 * deadline; everything after the SQL (Prometheus names, label matching, evaluation) is
 * @floe/query's pure code.
 */

const msToNs = (ms: number) => BigInt(Math.trunc(ms)) * 1_000_000n;

/** Stored types read as one Prometheus series per stored series, points as lists. */
const PLAIN_TYPES = ['gauge', 'sum'];
/** Stored types that make several Prometheus series per point (buckets, quantiles, _sum, _count). */
const DISTRIBUTION_TYPES = ['histogram', 'exponential_histogram', 'summary'];

/** Prometheus's default --query.max-samples. */
export const DEFAULT_MAX_SAMPLES = 50_000_000;

const tooManySamples = () =>
  new FloeError('execution', 'query processing would load too many samples into memory in query execution', { code: 'FLOE_ERR_PROMQL_TOO_MANY_SAMPLES' });

/** How long query evaluation reuses a (tenant, dataset)'s metric-name catalog. */
export const CATALOG_TTL_MS = 5_000;

/**
 * Metric-name catalogs per (tenant, dataset), reused by query evaluation for a few seconds (the
 * panels of a dashboard ask for the same window at once): a catalog of a window that contains the
 * asked one is a superset of its catalog, and a superset only adds stored names that have no rows
 * in the window to the reads, so the answers are the same. Only queries use it (labels, label
 * values and metadata list the catalog itself and always read it); empty catalogs are not kept,
 * so the first data is seen at once; a new metric name may take up to the TTL to be seen.
 */
export class CatalogCache {
  readonly #ttlMs: number;
  readonly #entries = new Map<string, Array<{ at: number; startMs: number; endMs: number; catalog: CatalogEntry[] }>>();

  constructor(ttlMs = CATALOG_TTL_MS) {
    this.#ttlMs = ttlMs;
  }

  get(scope: string, startMs: number, endMs: number, now = Date.now()): CatalogEntry[] | undefined {
    const list = this.#entries.get(scope);
    if (!list) return undefined;
    const fresh = list.filter((e) => now - e.at <= this.#ttlMs);
    if (fresh.length === 0) this.#entries.delete(scope);
    else if (fresh.length !== list.length) this.#entries.set(scope, fresh);
    return fresh.find((e) => e.startMs <= startMs && e.endMs >= endMs)?.catalog;
  }

  set(scope: string, startMs: number, endMs: number, catalog: CatalogEntry[], now = Date.now()): void {
    if (catalog.length === 0) return;
    const list = (this.#entries.get(scope) ?? []).filter((e) => now - e.at <= this.#ttlMs);
    list.push({ at: now, startMs, endMs, catalog });
    // A handful of windows per scope (panels with different ranges), the newest kept.
    this.#entries.set(scope, list.slice(-8));
    if (this.#entries.size > 1000) this.#entries.delete(this.#entries.keys().next().value!);
  }
}

export class MetricReader {
  readonly #querier: QuerierClient;
  readonly #req: FastifyRequest;
  readonly #deadline: number;

  readonly #maxSamples: number;
  readonly #catalogs: CatalogCache | undefined;

  constructor(querier: QuerierClient, req: FastifyRequest, timeoutMs: number, maxSamples = DEFAULT_MAX_SAMPLES, catalogs?: CatalogCache) {
    this.#querier = querier;
    this.#req = req;
    this.#deadline = Date.now() + timeoutMs;
    this.#maxSamples = maxSamples;
    this.#catalogs = catalogs;
  }

  /** The catalog of a window or a cached superset of it (query evaluation only: see CatalogCache). */
  async queryCatalog(startMs: number, endMs: number): Promise<CatalogEntry[]> {
    const scope = this.#req.tenant ? `${this.#req.tenant.tenant}\u0000${this.#req.tenant.dataset}` : undefined;
    if (!this.#catalogs || scope === undefined) return this.catalog(startMs, endMs);
    const hit = this.#catalogs.get(scope, startMs, endMs);
    if (hit) return hit;
    const catalog = await this.catalog(startMs, endMs);
    this.#catalogs.set(scope, startMs, endMs, catalog);
    return catalog;
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
   * returns the per-selector source the evaluator calls. Each selector's stored metric names
   * and label matchers are pushed down (remote-written rows are filtered by label in SQL, but for
   * histograms and summaries not on the labels they derive, sql/metrics.ts selectsSql); plain
   * metrics come as one row per series with its points as lists, histograms and summaries as
   * rows per point. More than `maxSamples` points in all is Prometheus's 422.
   */
  async selectorSource(windows: readonly SelectorWindow[]): Promise<(sel: PromVectorSelector) => RawSeries[]> {
    if (windows.length === 0) return () => [];
    const lo = Math.min(...windows.map((w) => w.minMs));
    const hi = Math.max(...windows.map((w) => w.maxMs));
    const catalog = await this.queryCatalog(lo, hi);
    const byType = (types: string[]): MetricSelect[] =>
      windows.map((w) => {
        const names = storedNamesFor(
          catalog.filter((e) => types.includes(e.metricType)),
          [w.selector.matchers],
        );
        return { metricNames: names, matchers: w.selector.matchers.map((m) => ({ label: m.name, op: m.op, value: m.value })) };
      });
    const plain = byType(PLAIN_TYPES).filter((s) => s.metricNames.length > 0);
    const dist = byType(DISTRIBUTION_TYPES).filter((s) => s.metricNames.length > 0);
    const wantsTargetInfo =
      catalog.some((e) => !e.rw) && windows.some((w) => selectsTargetInfo(w.selector.matchers));
    if (plain.length === 0 && dist.length === 0 && !wantsTargetInfo) return () => [];
    const window = { startNs: msToNs(lo), endNs: msToNs(hi) };
    const plainNames = new Set(plain.flatMap((s) => s.metricNames));
    const otelLabels = catalog.some((e) => !e.rw && plainNames.has(e.metricName) && PLAIN_TYPES.includes(e.metricType));
    const readPlain = async (): Promise<RawSeries[]> => {
      if (plain.length === 0) return [];
      const rows = await this.run(planMetricSeriesPoints({ kind: 'metric_series_points', window, selects: plain, metricTypes: PLAIN_TYPES, otelLabels }, metricsTable));
      const series = buildPlainSeries(rows as unknown as SeriesPointsRow[]);
      let n = 0;
      for (const r of series) n += r.t.length;
      if (n > this.#maxSamples) throw tooManySamples();
      return series;
    };
    const readDistributions = async (): Promise<RawSeries[]> => {
      if (dist.length === 0) return [];
      const names = [...new Set(dist.flatMap((s) => s.metricNames))].sort();
      const read = { window, metricNames: names, selects: dist, metricTypes: DISTRIBUTION_TYPES };
      // The same filters on both reads: the points need nothing from the series rows, so neither waits.
      const [seriesRows, points] = await Promise.all([
        this.run(planMetricSeries({ kind: 'metric_series', ...read }, metricsTable)),
        this.run(planMetricPoints({ kind: 'metric_points', ...read, distributions: true }, metricsTable)),
      ]);
      if (points.length > this.#maxSamples) throw tooManySamples();
      return buildPromSeries(seriesRows as unknown as SeriesRow[], points as unknown as PointRow[]);
    };
    const readTargetInfo = async (): Promise<RawSeries[]> => (wantsTargetInfo ? this.targetInfo(lo, hi) : []);
    const [a, b, c] = await Promise.all([readPlain(), readDistributions(), readTargetInfo()]);
    // Series that came after the deadline are not evaluated. (A query that selects nothing, such
    // as Grafana's `1+1` connection test, read nothing and has no deadline to miss.)
    this.remainingMs();
    const all = b.length === 0 && c.length === 0 ? a : [...a, ...b, ...c];
    // No cache here: the evaluator asks once per selector (Evaluator.seriesOf keeps the answer).
    return (sel) => all.filter((s) => matchLabels(s.labels, sel.matchers));
  }

  /** `target_info` series of the OpenTelemetry resources with points in (startMs, endMs]. */
  async targetInfo(startMs: number, endMs: number): Promise<RawSeries[]> {
    const rows = await this.run(planMetricTargetInfo({ kind: 'metric_target_info', window: { startNs: msToNs(startMs), endNs: msToNs(endMs) } }, metricsTable));
    return buildTargetInfo(rows as unknown as TargetInfoRow[]);
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
