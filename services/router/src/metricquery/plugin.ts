import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, FastifySchema } from 'fastify';
import { FloeError } from '@floe/errors';
import {
  checkRangeQueryType,
  checkRangeSteps,
  formatPromFloat,
  formatPromQL,
  matchLabels,
  parsePromQL,
  promSelectors,
  TARGET_INFO,
  promFamily,
  selectsTargetInfo,
  selectorDemand,
  seriesLabelSets,
  promLabelsKey,
  omitPromLabels,
  PromAnnotations,
  type EvalOptions,
  type PromLabelMatcher,
  type PromLabels,
  type SeriesPoints,
} from '@floe/query';
import { requireScope } from '@floe/auth';
import type { QuerierClient } from '../querier-client.ts';
import { evaluateInstant, evaluateRange } from './eval-thread.ts';
import { callerCredentials } from '../auth-plugin.ts';
import type { CompactorClient } from '../compactor-client.ts';
import { createDeleteRequest, deleteRequestProcessed, type Db } from '@floe/meta';
import { callerTables, type TableColumns } from '../table-columns.ts';
import { metricsTable } from '@floe/schema';
import { acceptFormBodies, getAndPost, type ParamsRequest } from '../request-params.ts';
import type { QueryDemand } from '../query-demand.ts';
import { mapLabels } from './results.ts';
import { CatalogCache } from './catalog-cache.ts';
import { tsdbStatus } from './tsdb-status.ts';
import { DEFAULT_MAX_SAMPLES, MetricReader, SeriesLabelCache } from './data.ts';
import { remoteReadRoute } from './remote-read.ts';
import { PROM_PARAMS as P, PromParams, labelWindow, parsePromDurationParam, parsePromLimit, parsePromTime, requireParam } from './params.ts';
import { queryRouteSchema, type QueryRouteDoc } from '../openapi.ts';
import { buildInfo } from '../build-info.ts';
import { ruleConfigRoutes, ruleStateRoutes, type RuleRoutesOptions } from '../ruler/routes.ts';

/**
 * The Prometheus-compatible metric query API (issue 6; spec 1 "Metric query API";
 * reference/api-contracts.md §2), under `/api/v1` of the /metricquery mount: query and
 * query_range (GET and form POST, as Grafana sends them), labels, label values, series,
 * metadata, query_exemplars, format_query and status/buildinfo, and Prometheus remote read
 * (remote-read.ts). Each query: parse (@floe/query) → the selectors' fetch windows →
 * SQL reads on a querier (data.ts) → Prometheus evaluation in process → Prometheus's JSON.
 *
 * Errors use the shared envelope through the app's error handler: 400 bad_data (with the parse
 * position), 422 execution, 504 timeout; the enclosing scope adds auth and the query budget (429).
 */
export interface MetricQueryOptions {
  querier: QuerierClient;
  queryTimeoutMs: number;
  /** Lookback delta of instant selectors (Prometheus's --query.lookback-delta), default 5m. */
  lookbackDeltaMs?: number;
  /** Step of subqueries written without one (Prometheus: global evaluation_interval), default 60s. */
  defaultSubqueryStepMs?: number;
  /** Points a query may read (Prometheus's --query.max-samples), default 50,000,000; more is 422. */
  maxSamples?: number;
  /** Samples one remote read answer may hold (remote-read.ts), default 5,000,000; more is 422. */
  remoteReadMaxSamples?: number;
  /** Counts the label names queries filter on that have no column (spec 1: query demand). */
  demand?: QueryDemand;
  /** Remote-written series whose labels reads keep (data.ts SeriesLabelCache), default 200,000; 0: none. */
  seriesLabelCacheSize?: number;
  /** A dataset's table columns from the catalog (materialized labels): label matchers read their columns. */
  tableColumns?: TableColumns;
  /** Where delete_series records its request, and the compactor it asks to apply it (absent: the periodic pass does). */
  deletes: { db: Db; compactor?: CompactorClient };
  /** The ruler's config and state routes (absent: /api/v1/rules and /alerts answer empty lists). */
  rules?: Omit<RuleRoutesOptions, 'language' | 'tag'> & { evaluationIntervalMs: number };
}

/** Series one delete_series may name: past this the selector is too wide to hold as one request. */
export const MAX_DELETE_SERIES = 100_000;
/** How long delete_series waits for the compactor's pass before answering anyway. */
const DELETE_WAIT_MS = 30_000;

/** Whether the delete request is processed within `ms` (polled, 50 ms growing to 500 ms apart). */
async function appliedWithin(db: Db, id: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (let wait = 50; ; wait = Math.min(500, wait * 2)) {
    if (await deleteRequestProcessed(db, id)) return true;
    if (Date.now() + wait > deadline) return false;
    await new Promise((r) => setTimeout(r, wait));
  }
}

/** The window delete_series reads when it names no end: a day past now, for samples stamped ahead. */
const DELETE_END_AHEAD_MS = 86_400_000;

/** Prometheus's defaults: --query.lookback-delta 5m, evaluation_interval 1m. */
export const DEFAULT_LOOKBACK_DELTA_MS = 300_000;
export const DEFAULT_SUBQUERY_STEP_MS = 60_000;

const BUILD_INFO = buildInfo('3.0.0');
/**
 * Mimir's build-info `features`: Grafana's alerting reads `ruler_config_api` to offer managing this
 * data source's rules through <url>/config/v1/rules (ruler/routes.ts).
 */
const RULER_FEATURES = { ruler_config_api: 'true', alertmanager_config_api: 'false', query_sharding: 'false', federated_rules: 'false' };

/** Prometheus's success envelope; `warnings` and `infos` only when there are some, as Prometheus omits them. */
const success = (reply: FastifyReply, data: unknown, notes?: { warnings: string[]; infos: string[] }) =>
  reply.type('application/json').send({
    status: 'success',
    data,
    ...(notes && notes.warnings.length > 0 ? { warnings: notes.warnings } : {}),
    ...(notes && notes.infos.length > 0 ? { infos: notes.infos } : {}),
  });

const seconds = (ms: number) => ms / 1000;

/** Prometheus's warning when `limit` cut a list or a result's series. */
export const TRUNCATED_WARNING = 'results truncated due to limit';

/** The first `limit` entries (all when undefined), with Prometheus's warning when any were cut. */
function truncated<T>(list: T[], limit: number | undefined, notes: { warnings: string[]; infos: string[] } = { warnings: [], infos: [] }) {
  if (limit === undefined || list.length <= limit) return { list, notes };
  return { list: list.slice(0, limit), notes: { warnings: [...notes.warnings, TRUNCATED_WARNING], infos: notes.infos } };
}

/** The documentation of a route (openapi.ts): what `data` of the success envelope holds. */
const doc = (id: string, summary: string, data: string, more: QueryRouteDoc = {}) =>
  queryRouteSchema('metrics', id, summary, { ...more, returns: { description: `\`{"status":"success","data":…}\`, data ${data}.` } });
const WINDOW = [P.start, P.end];
/** Entries per list of /status/tsdb when the request names no limit (Prometheus's). */
const TSDB_STATUS_LIMIT = 10;

/** A label set as JSON, names sorted as Prometheus prints them. */
const metric = (l: PromLabels) => Object.fromEntries(Object.keys(l).sort().map((k) => [k, l[k]!]));

/** A matrix result as Prometheus's JSON. */
const matrix = (series: readonly SeriesPoints[]) => ({
  resultType: 'matrix',
  result: series.map((s) => ({ metric: metric(s.labels), values: s.t.map((t, i) => [seconds(t), formatPromFloat(s.v[i]!)]) })),
});

function parseSelector(text: string): PromLabelMatcher[] {
  const e = parsePromQL(text);
  if (e.type !== 'selector') throw new FloeError('bad_data', `invalid parameter "match[]": ${JSON.stringify(text.slice(0, 64))} is not a series selector`, { code: 'FLOE_ERR_PROMQL_PARAM' });
  return e.matchers;
}

export const metricQueryPlugin: FastifyPluginAsync<MetricQueryOptions> = async (app, opts) => {
  acceptFormBodies(app, 1024 * 1024);
  const lookbackDefault = opts.lookbackDeltaMs ?? DEFAULT_LOOKBACK_DELTA_MS;
  const subStep = opts.defaultSubqueryStepMs ?? DEFAULT_SUBQUERY_STEP_MS;

  const params = (req: FastifyRequest) => new PromParams(req.url, req.body);
  const catalogs = new CatalogCache();
  const cacheSize = opts.seriesLabelCacheSize ?? 200_000;
  const seriesLabels = cacheSize > 0 ? new SeriesLabelCache(cacheSize) : undefined;
  /** The caller's metrics table with its materialized label columns (../table-columns.ts). */
  const tableOf = callerTables(metricsTable, 'metrics', opts.tableColumns);
  const maxSamples = opts.maxSamples ?? DEFAULT_MAX_SAMPLES;
  const openReader = (req: FastifyRequest, timeoutMs: number) => new MetricReader(opts.querier, callerCredentials(req), timeoutMs, maxSamples, catalogs, seriesLabels, () => tableOf(req));
  /**
   * Query demand: the selectors' label names without a column, table `metrics`: neither a fixed
   * column nor a materialized label column of the caller's table.
   */
  const noteDemand = async (req: FastifyRequest, selectors: ReadonlyArray<readonly PromLabelMatcher[]>) => {
    if (!opts.demand || !req.tenant) return;
    let keys = selectorDemand(selectors);
    if (keys.length > 0 && opts.tableColumns) {
      const held = new Set((await tableOf(req)).columns.map((c) => c.attributeKey));
      keys = keys.filter((k) => !held.has(k));
    }
    opts.demand.note(req.tenant.tenant, req.tenant.dataset, 'metrics', keys);
  };
  const timeoutOf = (p: PromParams) => {
    const t = p.get('timeout');
    return t === undefined ? opts.queryTimeoutMs : Math.min(opts.queryTimeoutMs, parsePromDurationParam('timeout', t));
  };
  const lookbackOf = (p: PromParams) => {
    const l = p.get('lookback_delta');
    return l === undefined ? lookbackDefault : parsePromDurationParam('lookback_delta', l);
  };

  const routes = (scope: FastifyInstance) => {
    const both = (path: string, schema: FastifySchema, handler: (req: ParamsRequest, reply: FastifyReply) => Promise<unknown>) => getAndPost(scope, path, schema, handler);

    both('/query', doc('promql_query', 'PromQL instant query', 'a vector, matrix, scalar or string result', { queryParameters: [P.query, P.time, P.timeout, P.lookbackDelta, P.seriesLimit] }), async (req, reply) => {
      const p = params(req);
      const query = requireParam(p, 'query');
      const limit = parsePromLimit(p.get('limit'));
      const expr = parsePromQL(query);
      await noteDemand(req, promSelectors(expr).map((s) => s.matchers));
      const time = parsePromTime('time', p.get('time'), Date.now());
      const timeoutMs = timeoutOf(p);
      const deadline = performance.now() + timeoutMs;
      const reader = openReader(req, timeoutMs);
      const annotations = new PromAnnotations();
      const evalOpts: EvalOptions = { startMs: time, endMs: time, lookbackMs: lookbackOf(p), defaultSubqueryStepMs: subStep, annotations, maxSamples, deadline };
      const r = await evaluateInstant(query, expr, time, (windows) => reader.selectorSource(windows), evalOpts);
      const notes = annotations.asStrings(query);
      switch (r.resultType) {
        case 'scalar':
          return success(reply, { resultType: 'scalar', result: [seconds(r.result[0]), formatPromFloat(r.result[1])] }, notes);
        case 'string':
          return success(reply, { resultType: 'string', result: [seconds(r.result[0]), r.result[1]] }, notes);
        case 'vector': {
          const cut = truncated(r.result, limit, notes);
          return success(reply, { resultType: 'vector', result: cut.list.map((s) => ({ metric: metric(s.labels), value: [seconds(s.t), formatPromFloat(s.v)] })) }, cut.notes);
        }
        case 'matrix': {
          const cut = truncated(r.result, limit, notes);
          return success(reply, matrix(cut.list), cut.notes);
        }
      }
    });

    both('/query_range', doc('promql_query_range', 'PromQL range query', 'a matrix', { queryParameters: [P.query, { ...P.start, required: true }, { ...P.end, required: true }, P.step, P.timeout, P.lookbackDelta, P.seriesLimit] }), async (req, reply) => {
      const p = params(req);
      const query = requireParam(p, 'query');
      const start = parsePromTime('start', requireParam(p, 'start'), 0);
      const end = parsePromTime('end', requireParam(p, 'end'), 0);
      if (end < start) throw new FloeError('bad_data', 'invalid parameter "end": end timestamp must not be before start time', { code: 'FLOE_ERR_PROMQL_PARAM' });
      const step = parsePromDurationParam('step', requireParam(p, 'step'));
      const limit = parsePromLimit(p.get('limit'));
      // In Prometheus's order (steps before the query), and before any read.
      checkRangeSteps(start, end, step);
      const expr = parsePromQL(query);
      checkRangeQueryType(expr);
      await noteDemand(req, promSelectors(expr).map((s) => s.matchers));
      const timeoutMs = timeoutOf(p);
      const deadline = performance.now() + timeoutMs;
      const reader = openReader(req, timeoutMs);
      const annotations = new PromAnnotations();
      const evalOpts: EvalOptions = { startMs: start, endMs: end, lookbackMs: lookbackOf(p), defaultSubqueryStepMs: subStep, annotations, maxSamples, deadline };
      const cut = truncated((await evaluateRange(query, expr, start, end, step, (windows) => reader.selectorSource(windows), evalOpts)).result, limit, annotations.asStrings(query));
      return success(reply, matrix(cut.list), cut.notes);
    });

    /** Label sets of the series in the window that match any of `match[]` (all series without one). */
    const labelSets = async (req: FastifyRequest, p: PromParams, requireMatch: boolean, window = labelWindow(p, Date.now())): Promise<PromLabels[]> => {
      const matches = p.getAll('match[]').map(parseSelector);
      if (requireMatch && matches.length === 0) throw new FloeError('bad_data', 'no match[] parameter provided', { code: 'FLOE_ERR_PROMQL_PARAM' });
      await noteDemand(req, matches);
      const { startMs, endMs } = window;
      const reader = openReader(req, opts.queryTimeoutMs);
      const { catalog, names } = await reader.namesFor(startMs, endMs, matches);
      const wantsTargetInfo =
        catalog.some((e) => !e.rw) && (matches.length === 0 || matches.some(selectsTargetInfo));
      const [rows, targetInfo] = await Promise.all([reader.series(startMs, endMs, names), wantsTargetInfo ? reader.targetInfo(startMs, endMs) : []]);
      const out = new Map<string, PromLabels>();
      for (const s of targetInfo) {
        if (matches.length > 0 && !matches.some((m) => matchLabels(s.labels, m))) continue;
        out.set(promLabelsKey(s.labels), s.labels);
      }
      for (const row of rows) {
        for (const labels of seriesLabelSets(row)) {
          if (matches.length > 0 && !matches.some((m) => matchLabels(labels, m))) continue;
          out.set(promLabelsKey(labels), labels);
        }
      }
      return [...out.values()];
    };

    const labelParams = { queryParameters: [P.match, ...WINDOW, P.limit] };
    both('/labels', doc('list_metric_labels', 'Label names of the series in the window', 'a sorted list of names', labelParams), async (req, reply) => {
      const p = params(req);
      const limit = parsePromLimit(p.get('limit'));
      const names = new Set<string>();
      for (const l of await labelSets(req, p, false)) for (const k of Object.keys(l)) names.add(k);
      const cut = truncated([...names].sort(), limit);
      return success(reply, cut.list, cut.notes);
    });

    both('/label/:name/values', doc('list_metric_label_values', 'Values of one label in the window', 'a sorted list of values', { ...labelParams, pathParameters: [{ name: 'name', description: 'Label name; U__ prefixes Prometheus’s UTF-8 escaping.' }] }), async (req, reply) => {
      const p = params(req);
      let name = req.params.name ?? '';
      // UTF-8 escaping of label names in the path (U__ prefix: `_` doubled, others `_<hex>_`).
      if (name.startsWith('U__')) name = name.slice(3).replace(/__|_([0-9a-fA-F]+)_/g, (m, hex: string | undefined) => (hex ? String.fromCodePoint(Number.parseInt(hex, 16)) : '_'));
      const limit = parsePromLimit(p.get('limit'));
      const values = new Set<string>();
      if (name === '__name__' && p.getAll('match[]').length === 0) {
        const { startMs, endMs } = labelWindow(p, Date.now());
        const reader = openReader(req, opts.queryTimeoutMs);
        const catalog = await reader.catalog(startMs, endMs);
        for (const e of catalog) for (const n of promFamily(e).names) values.add(n);
        if (catalog.some((e) => !e.rw) && (await reader.targetInfo(startMs, endMs)).length > 0) values.add(TARGET_INFO);
      } else {
        for (const l of await labelSets(req, p, false)) if (l[name] !== undefined) values.add(l[name]!);
      }
      const cut = truncated([...values].sort(), limit);
      return success(reply, cut.list, cut.notes);
    });

    both('/series', doc('list_metric_series', 'Label sets of the series matching selectors', 'a list of label sets', { queryParameters: [{ ...P.match, required: true }, ...WINDOW, P.limit] }), async (req, reply) => {
      const p = params(req);
      const limit = parsePromLimit(p.get('limit'));
      const cut = truncated((await labelSets(req, p, true)).map((l) => ({ ...l })), limit);
      return success(reply, cut.list, cut.notes);
    });

    both('/metadata', doc('list_metric_metadata', 'Type, help and unit of metric families', 'metadata by family name', { queryParameters: [{ name: 'metric', description: 'Only this metric family.' }, ...WINDOW, P.limit, P.limitPerMetric] }), async (req, reply) => {
      const p = params(req);
      const limit = parsePromLimit(p.get('limit'));
      const perMetric = parsePromLimit(p.get('limit_per_metric'), 'limit_per_metric');
      const only = p.get('metric');
      const { startMs, endMs } = labelWindow(p, Date.now());
      const reader = openReader(req, opts.queryTimeoutMs);
      const out: Record<string, Array<{ type: string; help: string; unit: string }>> = {};
      for (const e of await reader.catalog(startMs, endMs)) {
        const fam = promFamily(e);
        if (only !== undefined && fam.family !== only) continue;
        const list = (out[fam.family] ??= []);
        const entry = { type: fam.type, help: e.description, unit: e.rw ? e.unit : '' };
        if (perMetric !== undefined && list.length >= perMetric) continue;
        if (!list.some((x) => x.type === entry.type && x.help === entry.help && x.unit === entry.unit)) list.push(entry);
      }
      const keys = Object.keys(out).sort();
      const data = Object.fromEntries((limit === undefined ? keys : keys.slice(0, limit)).map((k) => [k, out[k]!]));
      return success(reply, data);
    });

    both('/query_exemplars', doc('promql_query_exemplars', 'Exemplars of the series a PromQL expression selects', 'exemplars grouped by series', { queryParameters: [P.query, ...WINDOW, P.timeout] }), async (req, reply) => {
      const p = params(req);
      const expr = parsePromQL(requireParam(p, 'query'));
      const { startMs, endMs } = labelWindow(p, Date.now());
      const selectors = promSelectors(expr).map((s) => s.matchers);
      await noteDemand(req, selectors);
      const reader = openReader(req, timeoutOf(p));
      const { names } = await reader.namesFor(startMs, endMs, selectors);
      const [rows, seriesRows] = await Promise.all([reader.exemplars(startMs, endMs, names), reader.series(startMs, endMs, names)]);
      const bySeries = new Map(seriesRows.map((r) => [r.series_id, r]));
      const withoutLe = selectors.map((m) => m.filter((x) => x.name !== 'le'));
      // The series an exemplar belongs to: the first Prometheus label set (without le) of its stored series a selector matches; once per stored series.
      const seriesLabels = new Map<string, PromLabels | undefined>();
      const seriesOf = (id: string) => {
        if (seriesLabels.has(id)) return seriesLabels.get(id);
        const row = bySeries.get(id);
        const candidates = row ? seriesLabelSets(row).map((l) => omitPromLabels(l, ['le'])) : [];
        const found = candidates.find((l) => withoutLe.some((m) => matchLabels(l, m)));
        seriesLabels.set(id, found);
        return found;
      };
      const groups = new Map<string, { seriesLabels: PromLabels; exemplars: Array<{ labels: PromLabels; value: string; timestamp: number }> }>();
      for (const r of rows) {
        const labels = seriesOf(String(r.series_id));
        if (!labels) continue;
        const key = promLabelsKey(labels);
        let g = groups.get(key);
        if (!g) groups.set(key, (g = { seriesLabels: labels, exemplars: [] }));
        const exLabels = mapLabels(r.filtered_attr_str);
        if (typeof r.trace_id === 'string' && r.trace_id !== '' && exLabels.trace_id === undefined) exLabels.trace_id = r.trace_id;
        if (typeof r.span_id === 'string' && r.span_id !== '' && exLabels.span_id === undefined) exLabels.span_id = r.span_id;
        g.exemplars.push({ labels: exLabels, value: formatPromFloat(Number(r.value)), timestamp: seconds(Number(r.t)) });
      }
      return success(reply, [...groups.values()]);
    });

    both('/format_query', doc('format_promql_query', 'A PromQL expression, formatted', 'the formatted expression', { queryParameters: [P.query] }), async (req, reply) => {
      const p = params(req);
      return success(reply, formatPromQL(parsePromQL(requireParam(p, 'query'))));
    });

    both('/parse_query', doc('parse_promql_query', 'A PromQL expression’s syntax tree', 'the syntax tree', { queryParameters: [P.query] }), async (req, reply) => {
      const p = params(req);
      return success(reply, parsePromQL(requireParam(p, 'query')));
    });

    scope.get('/status/buildinfo', { schema: doc('get_metric_build_info', 'Prometheus build information (for Grafana)', 'version and build fields') }, async (_req, reply) => success(reply, opts.rules ? { ...BUILD_INFO, features: RULER_FEATURES } : BUILD_INFO));

    // Grafana's alerting lists the rules and alerts of each Prometheus data source: the ruler's
    // (ruler/routes.ts), or empty lists where no rules are kept, since a 404 would show as an error.
    if (opts.rules) ruleStateRoutes(scope, { ...opts.rules, language: 'promql', tag: 'metrics' });
    else {
      scope.get('/rules', { schema: doc('list_metric_rules', 'Recording and alerting rules: none kept here', '`{groups: []}`') }, async (_req, reply) => success(reply, { groups: [] }));
      scope.get('/alerts', { schema: doc('list_metric_alerts', 'Active alerts: none kept here', '`{alerts: []}`') }, async (_req, reply) => success(reply, { alerts: [] }));
    }

    // Prometheus's TSDB status (its UI's cardinality page, and the first stop when a series count
    // explodes), over the series of the window rather than a head block.
    const tsdbLimit = { name: 'limit', schema: { type: 'integer', minimum: 1 }, description: `Entries per list (default ${TSDB_STATUS_LIMIT}).` };
    scope.get(
      '/status/tsdb',
      { schema: doc('get_metric_tsdb_status', 'Series cardinality: series per metric name, values per label name, series per label pair', 'headStats and the four lists, largest first', { queryParameters: [tsdbLimit, ...WINDOW] }) },
      async (req: ParamsRequest, reply) => {
        const p = params(req);
        const limit = parsePromLimit(p.get('limit')) ?? TSDB_STATUS_LIMIT;
        const window = labelWindow(p, Date.now());
        return success(reply, tsdbStatus(await labelSets(req, p, false, window), limit, window));
      },
    );

    // Prometheus's TSDB admin API. delete_series records the series its selectors match in the
    // window (resolved now, as Prometheus deletes what it holds when asked) and asks the compactor
    // for a pass over the dataset's metrics, which rewrites their files without those samples and
    // their exemplars; like Prometheus's it cannot be taken back. A stored OpenTelemetry histogram
    // or summary is one series: a selector matching any of its Prometheus series (_bucket, _sum,
    // _count) deletes all of them. Keys need the delete scope besides query.
    const deleteSeries = async (req: ParamsRequest, reply: FastifyReply) => {
      const deletes = opts.deletes;
      const { tenant, dataset, scopes } = req.tenant!;
      requireScope(scopes, 'delete');
      const p = params(req);
      const texts = p.getAll('match[]');
      if (texts.length === 0) throw new FloeError('bad_data', 'no match[] parameter provided', { code: 'FLOE_ERR_PROMQL_PARAM' });
      const matches = texts.map(parseSelector);
      const now = Date.now();
      const endMs = parsePromTime('end', p.get('end'), now + DELETE_END_AHEAD_MS);
      const startMs = Math.max(0, parsePromTime('start', p.get('start'), 0));
      if (endMs < startMs) throw new FloeError('bad_data', 'invalid parameter "end": end timestamp must not be before start time', { code: 'FLOE_ERR_PROMQL_PARAM' });
      const reader = openReader(req, opts.queryTimeoutMs);
      // The reader's windows leave their start out; the request's includes it.
      const { names } = await reader.namesFor(startMs - 1, endMs, matches);
      const ids: string[] = [];
      for (const row of await reader.series(startMs - 1, endMs, names)) {
        if (seriesLabelSets(row).some((l) => matches.some((m) => matchLabels(l, m)))) ids.push(String(row.series_id));
      }
      if (ids.length > MAX_DELETE_SERIES) {
        throw new FloeError('bad_data', `the selectors match ${ids.length} series, more than the ${MAX_DELETE_SERIES} one request may delete: narrow them or the window`, { code: 'FLOE_ERR_PROMQL_PARAM' });
      }
      if (ids.length === 0) return reply.code(204).send();
      const created = await createDeleteRequest(deletes.db, { tenantId: tenant, datasetId: dataset, table: 'metrics', query: texts.join('\n'), seriesIds: ids, startMs, endMs });
      req.log.info({ tenant, dataset, request: created.id, series: ids.length, startMs, endMs }, 'series delete request recorded');
      // As Prometheus's, the answer comes once the samples are gone: after the pass the compactor
      // was asked for, or DELETE_WAIT_MS. Without a compactor to ask, the periodic pass applies it.
      const asked = await deletes.compactor?.call('POST', '/compact', { tenant, dataset, table: 'metrics' }).catch((err: unknown) => {
        req.log.warn({ err }, 'could not ask the compactor for a pass; the next periodic pass deletes the series');
        return undefined;
      });
      const applied = asked?.status === 202 && (await appliedWithin(deletes.db, created.id, Math.min(DELETE_WAIT_MS, opts.queryTimeoutMs)));
      if (!applied) req.log.info({ tenant, dataset, request: created.id }, 'series delete request answered before the compactor applied it');
      return reply.code(204).header('x-floe-delete-request-id', created.id).send();
    };
    const deleteDoc = {
      ...doc('delete_metric_series', 'Delete the samples and exemplars of the series matching selectors in a window', 'nothing'),
      queryParameters: [{ ...P.match, required: true }, { ...P.start, description: 'Start of the window (included); default 1970.' }, { ...P.end, description: 'End of the window (included); default a day from now.' }],
      response: { 204: { type: 'null', description: 'Done: the samples are gone (or, past 30 s or without a compactor to ask, recorded for its next pass)' } },
    };
    scope.post('/admin/tsdb/delete_series', { schema: deleteDoc }, deleteSeries);
    scope.put('/admin/tsdb/delete_series', { schema: { ...deleteDoc, operationId: 'put_delete_metric_series' } }, deleteSeries);
    const cleanDoc = {
      ...doc('clean_metric_tombstones', 'Clean tombstones (nothing to do: deleted samples leave their files, no tombstones stay)', 'nothing'),
      response: { 204: { type: 'null', description: 'Done' } },
    };
    const clean = async (_req: FastifyRequest, reply: FastifyReply) => reply.code(204).send();
    scope.post('/admin/tsdb/clean_tombstones', { schema: cleanDoc }, clean);
    scope.put('/admin/tsdb/clean_tombstones', { schema: { ...cleanDoc, operationId: 'put_clean_metric_tombstones' } }, clean);
  };

  await app.register(
    async (scope) => {
      routes(scope);
      remoteReadRoute(scope, (req) => openReader(req, opts.queryTimeoutMs), opts.remoteReadMaxSamples);
    },
    { prefix: '/api/v1' },
  );
  // The ruler config API beside it (Mimir: <prefix>/config/v1/rules; Cortex: <prefix>/rules).
  const rules = opts.rules;
  if (rules) await app.register(async (scope) => ruleConfigRoutes(scope, { ...rules, language: 'promql', tag: 'metrics' }));
};
