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
  planMetricSeriesIds,
  planMetricSeriesLabels,
  planMetricSeriesPoints,
  plainSeriesLabels,
  storedNamesFor,
  tooManySamples,
  type CatalogEntry,
  type PlannedQuery,
  type PointRow,
  type PromLabelMatcher,
  type PromLabels,
  type PromVectorSelector,
  type RawSeries,
  type SelectorWindow,
  type SeriesRow,
  type PointLists,
  type MetricSelect,
  type MetricWindow,
  type PlannerTable,
} from '@floe/query';
import { metricExemplarsTable, metricsTable } from '@floe/schema';
import { FloeError } from '@floe/errors';
import { Lru } from '@floe/storage';
import type { CallerCredentials, QuerierClient } from '../querier-client.ts';
import { rowsOf, type Row } from '../logquery/results.ts';
import { pointListsRows, seriesIdList } from './results.ts';
import { CATALOG_TTL_MS, type CatalogCache } from './catalog-cache.ts';
import type { Table } from 'apache-arrow';

/**
 * The router's reads of stored metrics for PromQL: the name catalog of the window, the series of
 * the stored metrics a query's selectors can match (labels read once per series), their points,
 * and exemplars. Each querier call runs under what is left of the request's deadline; everything
 * after the SQL (Prometheus names, label matching, evaluation) is @floe/query's pure code.
 */

const msToNs = (ms: number) => BigInt(Math.trunc(ms)) * 1_000_000n;

/** Stored types read as one Prometheus series per stored series, points as lists. */
const PLAIN_TYPES = ['gauge', 'sum'];
/** Stored types that make several Prometheus series per point (buckets, quantiles, _sum, _count). */
const DISTRIBUTION_TYPES = ['histogram', 'exponential_histogram', 'summary'];

/** Plain series over longer windows are read series first (MetricReader #plainSeries). */
const SERIES_FIRST_WINDOW_NS = 3n * 3_600_000_000_000n;
/** Where series-first reads look for labels first: the window's last hour. */
const LABEL_WINDOW_NS = 3_600_000_000_000n;
/** How long a long window's series ids stand in for a new listing of the same names (late series may be missed that long). */
const WINDOW_IDS_TTL_MS = 30_000;
/** How far before the last listed window's end a new listing starts (points arriving late). */
const WINDOW_IDS_SLACK_NS = 10n * 60_000_000_000n;

/** Series picked by id in SQL at most; a read of more filters by name, and the rest is dropped here. */
const MAX_ID_PARAMS = 2_000;

/** Prometheus's default --query.max-samples. */
export const DEFAULT_MAX_SAMPLES = 50_000_000;

/**
 * A plain series' stored metric name and Prometheus labels (never modified). Plain strings only:
 * no Arrow values, which would keep their whole record batch alive in the cache.
 */
interface SeriesLabels {
  metricName: string;
  labels: PromLabels;
}

/** The series ids listed over a window (startNs, endNs], at `at` (ms). */
interface WindowIds {
  at: number;
  /** When the ids were last listed (in full or their recent part). */
  listedAt: number;
  startNs: bigint;
  endNs: bigint;
  ids: string[];
}

/** Plain series rows with their points, and each one's Prometheus labels. */
interface PlainRead {
  rows: PointLists[];
  labelsOf: (row: PointLists) => PromLabels;
}

/**
 * Prometheus labels of plain series by (tenant, dataset, series id), for series-first reads: a
 * series id is a hash of its name, resource, scope and labels, so what it names never changes.
 * Bounded by entries, least recently used out first. The labels objects are shared by every query
 * that reads the series: the evaluator never modifies labels (it copies). Also keeps the series
 * ids listed over recent long windows (windowIds).
 */
export class SeriesLabelCache {
  readonly #rows: Lru<string, SeriesLabels>;
  readonly #maxSeries: number;
  /** Scopes whose labels have been read at least once. */
  readonly #known = new Lru<string, true>(10_000);
  /** Series ids of recent long windows, by scope and metric names. */
  readonly #windowIds = new Lru<string, WindowIds>(1_000, (w) => 1 + Math.floor(w.ids.length / 1_000));
  /** Ids of the cached series by scope and metric name: hints (entries may have been evicted since). */
  #byName = new Map<string, Set<string>>();
  #indexed = 0;

  constructor(maxSeries = 200_000) {
    this.#maxSeries = maxSeries;
    this.#rows = new Lru(maxSeries);
  }

  /** `prefix`: the scope part of the keys (the key of a series is prefix + id). */
  get(prefix: string, id: string): SeriesLabels | undefined {
    return this.#rows.get(prefix + id);
  }

  set(prefix: string, id: string, entry: SeriesLabels): void {
    this.#rows.set(prefix + id, entry);
    const nameKey = prefix + entry.metricName;
    let ids = this.#byName.get(nameKey);
    if (!ids) this.#byName.set(nameKey, (ids = new Set()));
    if (ids.has(id)) return;
    ids.add(id);
    // The index outgrowing the cache twice over holds mostly evicted series: start it again.
    if (++this.#indexed > 2 * this.#maxSeries) {
      this.#byName = new Map();
      this.#indexed = 0;
    }
  }

  /** The cached series of the names (their entries), dropping the index's evicted ids. */
  seriesOf(prefix: string, names: readonly string[]): Array<[string, SeriesLabels]> {
    const out: Array<[string, SeriesLabels]> = [];
    for (const name of names) {
      const ids = this.#byName.get(prefix + name);
      if (!ids) continue;
      for (const id of ids) {
        const entry = this.#rows.get(prefix + id);
        if (entry) out.push([id, entry]);
        else {
          ids.delete(id);
          this.#indexed--;
        }
      }
    }
    return out;
  }

  /** Series ids listed for a key (scope, names) over a window starting at or before `startNs`, within WINDOW_IDS_TTL_MS. */
  windowIds(key: string, startNs: bigint, now = Date.now()): WindowIds | undefined {
    const w = this.#windowIds.get(key);
    return w && now - w.at <= WINDOW_IDS_TTL_MS && w.startNs <= startNs ? w : undefined;
  }

  /**
   * The ids of a listing that covers all of (startNs, endNs] and was made within the catalog's
   * few seconds: the panels of one dashboard refresh ask for the same window at once, and stand
   * on one listing (a new series may take that long to be seen).
   */
  currentWindowIds(key: string, startNs: bigint, endNs: bigint, now = Date.now()): string[] | undefined {
    const w = this.windowIds(key, startNs, now);
    return w && w.endNs >= endNs && now - w.listedAt <= CATALOG_TTL_MS ? w.ids : undefined;
  }

  setWindowIds(key: string, w: Omit<WindowIds, 'at' | 'listedAt'>, now = Date.now()): void {
    // Kept from the first full listing: extending by the recent part keeps its age, so a series
    // that arrived late is listed by a full read again within the TTL.
    const old = this.#windowIds.get(key);
    this.#windowIds.set(key, { ...w, at: old && old.startNs === w.startNs ? old.at : now, listedAt: now });
  }

  knows(scope: string): boolean {
    return this.#known.get(scope) !== undefined;
  }

  markKnown(scope: string): void {
    this.#known.set(scope, true);
  }
}

export class MetricReader {
  readonly #querier: QuerierClient;
  readonly #caller: CallerCredentials;
  readonly #deadline: number;

  readonly #maxSamples: number;
  readonly #catalogs: CatalogCache | undefined;
  readonly #labels: SeriesLabelCache | undefined;
  readonly #table: () => Promise<PlannerTable>;

  /**
   * `table`: the caller's metrics table as the planner sees it, its materialized label columns
   * included (../table-columns.ts); absent: @floe/schema's metricsTable.
   */
  constructor(
    querier: QuerierClient,
    caller: CallerCredentials,
    timeoutMs: number,
    maxSamples = DEFAULT_MAX_SAMPLES,
    catalogs?: CatalogCache,
    labels?: SeriesLabelCache,
    table: () => Promise<PlannerTable> = async () => metricsTable,
  ) {
    this.#querier = querier;
    this.#caller = caller;
    this.#deadline = Date.now() + timeoutMs;
    this.#maxSamples = maxSamples;
    this.#catalogs = catalogs;
    this.#labels = labels;
    this.#table = table;
  }

  /** The caller's (tenant, dataset), the key of its cached catalogs and labels. */
  #scope(): string | undefined {
    return `${this.#caller.tenant}\u0000${this.#caller.dataset ?? ''}`;
  }

  /** The catalog of a window or a cached superset of it (query evaluation only: see CatalogCache). */
  async queryCatalog(startMs: number, endMs: number): Promise<CatalogEntry[]> {
    const scope = this.#scope();
    if (!this.#catalogs || scope === undefined) return this.catalog(startMs, endMs);
    return this.#catalogs.catalog(scope, startMs, endMs, (from, to) => this.catalog(from, to));
  }

  remainingMs(): number {
    const left = this.#deadline - Date.now();
    if (left <= 0) throw new FloeError('timeout', 'query timed out in query execution', { code: 'FLOE_ERR_QUERY_TIMEOUT' });
    return left;
  }

  async run(plan: PlannedQuery): Promise<Row[]> {
    return rowsOf(await this.runTable(plan));
  }

  runTable(plan: PlannedQuery): Promise<Table> {
    return this.#querier.query(this.#caller, { sql: plan.sql, params: plan.params, hints: plan.hints }, this.remainingMs());
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
   * returns the per-selector source the evaluator calls. Plain metrics (gauges, sums) are read
   * series first (#plainSeries): their labels once per series, their points, as lists, only of the
   * series a selector matches. Histograms and summaries come as rows per point, their stored names
   * and label matchers pushed down (remote-written rows are filtered by label in SQL, but not on
   * the labels they derive, sql/metrics.ts selectsSql). More than `maxSamples` points in all is
   * Prometheus's 422.
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
    // Label matchers are pushed down on remote-written rows: on a label column where the table has one.
    const table = [...plain, ...dist].some((s) => s.matchers.some((m) => m.label !== '__name__')) ? await this.#table() : metricsTable;
    const plainNames = new Set(plain.flatMap((s) => s.metricNames));
    const otelLabels = catalog.some((e) => !e.rw && plainNames.has(e.metricName) && PLAIN_TYPES.includes(e.metricType));
    const readPlain = async (): Promise<RawSeries[]> => {
      if (plain.length === 0) return [];
      const read = await this.#plainSeries(windows, window, plain, otelLabels, table);
      const series = buildPlainSeries(read.rows, read.labelsOf);
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
        this.run(planMetricSeries({ kind: 'metric_series', ...read }, table)),
        this.run(planMetricPoints({ kind: 'metric_points', ...read, distributions: true }, table)),
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

  /**
   * Plain (gauge, sum) series of the stored names with their points, and each one's Prometheus
   * labels. The first read of a (tenant, dataset) over a window of a few hours is one query:
   * labels once per series, points as lists, label matchers on remote-written rows in SQL. Once
   * labels are cached, a read over a few hours is the same query without the label maps, which
   * cost more to read, send and decode than the points (see the package README of @floe/query).
   * Over a longer window, matchers on every point cost too: the read is series first, the
   * window's series ids (or, when some selector takes every series of its names, their points at
   * once), then the points of the series whose labels match. Labels not cached come from the
   * window's last hour (every series still reporting has points there), by id over the whole
   * window for the others; every labels read fills the cache.
   */
  async #plainSeries(windows: readonly SelectorWindow[], window: MetricWindow, plain: MetricSelect[], otelLabels: boolean, table: PlannerTable): Promise<PlainRead> {
    const types = PLAIN_TYPES;
    const scope = this.#scope();
    // Only remote-written series' labels are cached: an OpenTelemetry series' Prometheus name
    // also depends on its type and unit (the _total and unit suffixes), which its id does not
    // hash, so a unit changed under the same id would keep its old name.
    const cache = scope === undefined || otelLabels ? undefined : this.#labels;
    const prefix = `${scope}\u0000`;
    const known = new Map<string, SeriesLabels>();
    const learn = (rows: Row[]) => {
      for (const r of rows) {
        const id = String(r.series_id);
        if (known.has(id)) continue;
        const entry = { metricName: String(r.metric_name), labels: plainSeriesLabels(r as unknown as SeriesRow) };
        known.set(id, entry);
        cache?.set(prefix, id, entry);
      }
    };
    const labelsFrom = (rows: PointLists[]): PlainRead => ({ rows, labelsOf: (r) => known.get(r.series_id)!.labels });
    const warm = cache !== undefined && cache.knows(scope!);
    const long = window.endNs - window.startNs > SERIES_FIRST_WINDOW_NS;
    // Every selector picks among its series by a label.
    const picks = windows.every((w) => w.selector.matchers.some((m) => m.name !== '__name__'));
    const plan = (selects: MetricSelect[], labels: boolean, seriesIds?: string[]) =>
      planMetricSeriesPoints({ kind: 'metric_series_points', window, selects, metricTypes: types, otelLabels, labels, ...(seriesIds ? { seriesIds } : {}) }, table);
    const points = async (selects: MetricSelect[], seriesIds?: string[]) => pointListsRows(await this.runTable(plan(selects, false, seriesIds)));
    if (!warm && !long) {
      const rows = await this.run(plan(plain, true));
      learn(rows);
      if (cache) cache.markKnown(scope!);
      return labelsFrom(rows as unknown as PointLists[]);
    }
    const names = [...new Set(plain.flatMap((s) => s.metricNames))].sort();
    const byName: MetricSelect[] = [{ metricNames: names, matchers: [] }];
    const byIds = (ids: Set<string>) => points(byName, ids.size <= MAX_ID_PARAMS ? [...ids] : undefined);
    const labelsOf = (w: MetricWindow, seriesIds?: string[]) =>
      this.run(planMetricSeriesLabels({ kind: 'metric_series_labels', window: w, metricNames: names, metricTypes: types, otelLabels, ...(seriesIds ? { seriesIds } : {}) }, metricsTable));
    const recent = { startNs: window.endNs - LABEL_WINDOW_NS > window.startNs ? window.endNs - LABEL_WINDOW_NS : window.startNs, endNs: window.endNs };
    const matches = (labels: PromLabels) => windows.some((w) => matchLabels(labels, w.selector.matchers));
    // Over a long window with labels cached, the points of the cached series that match are read
    // beside the window's ids; only series new to the cache wait for the ids.
    const early = new Set<string>();
    if (long && picks && warm) {
      for (const [id, entry] of cache!.seriesOf(prefix, names)) {
        known.set(id, entry);
        if (matches(entry.labels)) early.add(id);
      }
    }
    // The first read: over a few hours with labels known, the points of the series the matchers
    // pick in SQL (a lookup per point is cheap there) without their labels; else the window's
    // series ids when selectors pick, or every series' points when one takes them all. A scope
    // whose labels were never read reads the last hour's at once, beside it.
    const [first, recentRows, earlyLists] = await Promise.all([
      !long ? points(plain) : picks ? this.#windowSeriesIds(prefix, window, names) : points(byName),
      warm ? Promise.resolve([]) : labelsOf(recent),
      early.size > 0 ? byIds(early) : Promise.resolve([]),
    ]);
    learn(recentRows);
    if (cache) cache.markKnown(scope!);
    let missing: string[] = [];
    for (const r of first) {
      const id = r.series_id;
      if (known.has(id)) continue;
      const hit = cache?.get(prefix, id);
      if (hit) known.set(id, hit);
      else missing.push(id);
    }
    if (missing.length > MAX_ID_PARAMS && warm) {
      learn(await labelsOf(recent));
      missing = missing.filter((id) => !known.has(id));
    }
    if (missing.length > 0) learn(await labelsOf(window, missing.length <= MAX_ID_PARAMS ? missing : undefined));
    const matching = new Set<string>();
    for (const r of first) {
      const id = r.series_id;
      const entry = known.get(id);
      if (entry && matches(entry.labels)) matching.add(id);
    }
    let lists = first as PointLists[];
    if (long && picks) {
      const late = new Set([...matching].filter((id) => !early.has(id)));
      lists = late.size === 0 ? earlyLists : [...earlyLists, ...(await byIds(late))];
    }
    return labelsFrom(lists.filter((p) => matching.has(p.series_id)));
  }

  /** The distinct plain series of the names in the window (their ids, read column-wise). */
  async #seriesIds(window: MetricWindow, names: string[]): Promise<string[]> {
    return seriesIdList(await this.runTable(planMetricSeriesIds({ kind: 'metric_series_ids', window, metricNames: names, metricTypes: PLAIN_TYPES }, metricsTable)));
  }

  /**
   * The series of the names in a long window (a superset is fine: series without points there
   * read none). A dashboard asks for the same window again and again, a little later each time:
   * when the same names were listed over a window starting no later within the last
   * WINDOW_IDS_TTL_MS, only the part after that window's end (less WINDOW_IDS_SLACK_NS, for points
   * that arrive late) is listed again, and added to those ids.
   */
  async #windowSeriesIds(prefix: string, window: MetricWindow, names: string[]): Promise<Array<{ series_id: string }>> {
    const cache = this.#labels;
    const key = `${prefix}${names.join('\u0000')}`;
    const current = cache?.currentWindowIds(key, window.startNs, window.endNs);
    if (current) return current.map((series_id) => ({ series_id }));
    const seen = cache?.windowIds(key, window.startNs);
    let ids: string[];
    if (seen) {
      const from = seen.endNs - WINDOW_IDS_SLACK_NS > window.startNs ? seen.endNs - WINDOW_IDS_SLACK_NS : window.startNs;
      const recent = from < window.endNs ? await this.#seriesIds({ startNs: from, endNs: window.endNs }, names) : [];
      ids = [...new Set([...seen.ids, ...recent])];
    } else {
      ids = await this.#seriesIds(window, names);
    }
    cache?.setWindowIds(key, { startNs: seen ? seen.startNs : window.startNs, endNs: window.endNs, ids });
    return ids.map((series_id) => ({ series_id }));
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
