import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { FloeError } from '@floe/errors';
import { formatDurationMs } from '@floe/config';
import type { TenantLimits } from '@floe/limits';
import {
  detectedFieldsOf,
  filterDemand,
  isLogExpr,
  lowerLogQuery,
  lowerMetricQuery,
  lowerStreamSelector,
  formatLogQL,
  parseLogQL,
  planDetectedFieldValues,
  planDetectedFields,
  planDetectedLabels,
  planIndexStats,
  planLabelNames,
  planLabelValues,
  planLogSelect,
  planPatternLines,
  LogPatternMiner,
  planSeries,
  volumeQuery,
  type Expr,
  type LabelMatch,
  type LogQueryOptions as LowerLogOptions,
  type PlannedQuery,
  type PlannerTable,
  type RowFilter,
  type StepGrid,
  type TimeRange,
} from '@floe/query';
import { logsTable } from '@floe/schema';
import { eachAtMost } from '@floe/storage';
import { callerCredentials } from '../auth-plugin.ts';
import type { QuerierClient } from '../querier-client.ts';
import type { QueryDemand } from '../query-demand.ts';
import { MAX_QUERY_SERIES, runMetricQuery, toInstant, toMatrix, withinSeriesLimit } from './metrics.ts';
import { HOUR_NS, LOG_PARAMS as P, LOG_WINDOW, LOKI_PREFIXES, MAX_LIMIT, NS_PER_SECOND, RequestParams, countParam, nowNs, parseCount, parseDirection, parseInterval, parseLimit, parseRange, parseStep, parseTime, requireQuery } from './params.ts';
import { spacedLines } from './interval.ts';
import { rowsOf, secondsOf, toStreams, type MatrixSeries, type Row, type VectorSample } from './results.ts';
import { mayUseLabelColumn } from './table.ts';
import { exclusionFilter, type PendingDeletions } from './pending-deletions.ts';
import { createTableCache, type TableColumns } from '../table-columns.ts';
import { acceptFormBodies, getAndPost, type ParamsRequest } from '../request-params.ts';
import { queryRouteSchema, type ParameterDoc, type QueryRouteDoc } from '../openapi.ts';
import { buildInfo } from '../build-info.ts';
import { ruleConfigRoutes, ruleStateRoutes, type RuleRoutesOptions } from '../ruler/routes.ts';

/**
 * The Loki-compatible log query API (spec 1, "Log query API"; reference/api-contracts.md §1),
 * served under both `/api/v1` and `/loki/api/v1` of the /logquery mount, since Grafana's Loki
 * data source appends `/loki/api/v1/...` to its URL. Each request goes parse → lower → plan
 * (@floe/query) → SQL calls to a querier with the request's deadline → Loki's JSON. A log query
 * is one call (streams); a metric query is one call per range aggregation, evaluated by
 * @floe/query's pure evaluator into a matrix (query_range) or a vector / scalar (query).
 * index/volume(_range) are metric queries too (bytes grouped by labels); index/stats and the
 * detected_* endpoints answer unenveloped, as Loki does. patterns mines the newest lines; tail is 501.
 *
 * Auth and the per-tenant query budget come from the enclosing scope (app.ts), as for /tracequery.
 */
export interface LogQueryOptions {
  querier: QuerierClient;
  queryTimeoutMs: number;
  /** Where the attribute keys that queries filter on are counted (absent: not counted). */
  demand?: QueryDemand;
  /**
   * The columns of a dataset's table as the catalog records them (its materialized label columns
   * included, with their attribute keys), or none when it does not exist yet; absent: plan
   * against logsTable.
   */
  tableColumns?: TableColumns;
  /** A tenant's limits, whose logs retention drilldown-limits shows (absent: shown as 0s, forever). */
  tenantLimits?: (tenant: string) => Promise<Pick<TenantLimits, 'retentionMs'>>;
  /** The dataset's delete requests not processed yet, whose lines queries leave out (absent: none). */
  pendingDeletions?: PendingDeletions;
  /** The ruler's config and state routes (absent: /prometheus/api/v1/rules and /alerts answer empty lists). */
  rules?: Omit<RuleRoutesOptions, 'language' | 'tag'> & { evaluationIntervalMs: number };
}

/**
 * Loki's build information: the Loki 3 API this log API answers (detected fields and labels,
 * volume, drilldown-limits), as the PromQL API names Prometheus 3.
 */
const LOKI_BUILD_INFO = buildInfo('3.5.0');


/** Request header that asks for the categorized (three-element) `values` encoding. */
export const ENCODING_FLAGS_HEADER = 'x-loki-response-encoding-flags';
const CATEGORIZE_LABELS = 'categorize-labels';

/** Endpoints of Loki's API that Floe does not serve yet: 501 in the error envelope, not a 404 (path → operation id, summary). */
const NOT_YET = { tail: ['tail_logs', 'Live tail of log lines'] } as const;

/**
 * patterns: the newest lines of the window mined (Loki's pattern ingester sees every line; here a
 * request reads at most this many, so counts are those of the lines read).
 */
export const PATTERN_LINE_LIMIT = 20_000;
/** Lines mined between two turns of the event loop. */
const PATTERN_CHUNK = 1000;

/** detected_fields: lines sampled (`line_limit`), fields returned (`limit`, alias `field_limit`: spec 1, Limits). */
const DETECTED_LINE_LIMIT = 1000;
const DETECTED_FIELD_LIMIT = 100;
/** detected_field/{name}/values: values returned (the data source asks for 1000). */
const DETECTED_VALUES_LIMIT = 1000;
/** index/volume: series returned (Loki's default). */
const VOLUME_LIMIT = 100;
const VOLUME_DOCS = {
  targetLabels: { name: 'targetLabels', description: 'Comma-separated labels to aggregate by (default: the selector’s labels).' },
  aggregateBy: { name: 'aggregateBy', schema: { type: 'string', enum: ['series', 'labels'] }, description: 'Bytes per label set (series, the default) or per label name (labels).' },
} satisfies Record<string, ParameterDoc>;
/** index/volume by label name: querier calls in flight at once for one request. */
const VOLUME_PARALLEL = 8;

const ENCODING_FLAGS_DOC: ParameterDoc = { name: 'X-Loki-Response-Encoding-Flags', description: '`categorize-labels`: each entry carries its structured metadata and parsed labels as a third element.' };
const LOKI_ENVELOPE = '`{"status":"success","data":…}`';

const categorize = (req: FastifyRequest) => {
  const raw = req.headers[ENCODING_FLAGS_HEADER];
  const flags = (Array.isArray(raw) ? raw.join(',') : (raw ?? '')).split(',').map((f) => f.trim().toLowerCase());
  return flags.includes(CATEGORIZE_LABELS);
};

export const logQueryPlugin: FastifyPluginAsync<LogQueryOptions> = async (app, opts) => {
  acceptFormBodies(app, 256 * 1024);

  const params = (req: FastifyRequest) => new RequestParams(req.url, req.body);
  const run = async (req: FastifyRequest, plan: PlannedQuery): Promise<Row[]> => {
    const table = await opts.querier.query(callerCredentials(req), { sql: plan.sql, params: plan.params, hints: plan.hints }, opts.queryTimeoutMs);
    return rowsOf(table);
  };

  /**
   * The caller's logs table as the planner sees it: logsTable plus the materialized label columns
   * the table recorded at creation (from the catalog, cached: ../table-columns.ts).
   */
  const tables = createTableCache(logsTable);
  const tableOf = async (req: FastifyRequest, ...irs: unknown[]): Promise<PlannerTable> => {
    // Only a label that no fixed column backs can resolve to a materialized label column.
    if (!irs.some(mayUseLabelColumn)) return logsTable;
    const columns = opts.tableColumns;
    if (!columns) return logsTable;
    const { tenant, dataset } = req.tenant!;
    return tables.get(tenant, dataset, () => columns(tenant, dataset, 'logs'));
  };
  const planFor = async <I,>(req: FastifyRequest, plan: (ir: I, table: PlannerTable) => PlannedQuery, ir: I): Promise<PlannedQuery> => plan(ir, await tableOf(req, ir));

  /** Counts the query's filter keys that have no column (spec 1: query demand). */
  const noteDemand = (req: FastifyRequest, parts: Parameters<typeof filterDemand>[0], table: PlannerTable) => {
    if (opts.demand) opts.demand.note(req.tenant!.tenant, req.tenant!.dataset, 'logs', filterDemand(parts, table));
  };

  /** The filter leaving out the lines of the caller's pending delete requests that meet `range` (all when absent). */
  const exclusion = async (req: FastifyRequest, range?: TimeRange): Promise<RowFilter | undefined> => {
    if (!opts.pendingDeletions) return undefined;
    return exclusionFilter(await opts.pendingDeletions.of(req.tenant!.tenant, req.tenant!.dataset), range);
  };

  const success = (reply: FastifyReply, data: unknown) => reply.type('application/json').send({ status: 'success', data });

  /** A log query over `range`, shaped as a `streams` result. */
  /**
   * A log query's selection as the caller's table plans it: lowered, its filter keys counted as
   * demand, and the lines of pending delete requests left out (log queries and patterns).
   */
  const logSelect = async (req: FastifyRequest, expr: Expr, query: string, opts: LowerLogOptions) => {
    const ir = lowerLogQuery(expr, query, opts);
    const table = await tableOf(req, ir);
    noteDemand(req, [ir], table);
    const excluded = await exclusion(req, opts.range);
    if (excluded) ir.filters.push(excluded);
    return { ir, table };
  };

  const streamsQuery = async (req: FastifyRequest, reply: FastifyReply, expr: Expr, query: string, range: TimeRange, p: RequestParams) => {
    const { ir, table } = await logSelect(req, expr, query, { range, direction: parseDirection(p.get('direction')), limit: parseLimit(p.get('limit')) });
    const categorized = categorize(req);
    const interval = parseInterval(p.get('interval'));
    // Both encodings carry the metadata: as a third element per entry, or in the stream labels.
    const rows = interval === undefined ? await run(req, planLogSelect(ir, table, { metadata: true })) : await spacedLines(ir, interval, (page) => run(req, planLogSelect(page, table, { metadata: true })));
    const data: Record<string, unknown> = { resultType: 'streams', result: toStreams(rows, categorized), stats: {} };
    if (categorized) data.encodingFlags = [CATEGORIZE_LABELS];
    return success(reply, data);
  };

  /** A metric query evaluated over the step grid. */
  const metricQuery = async (req: FastifyRequest, expr: Expr, query: string, grid: StepGrid) => {
    const metric = lowerMetricQuery(expr, query);
    const table = await tableOf(req, metric);
    noteDemand(req, metric.leaves.map((l) => l.sample), table);
    const excluded = await exclusion(req);
    if (excluded) for (const leaf of metric.leaves) leaf.sample.filters.push(excluded);
    return withinSeriesLimit(await runMetricQuery((plan) => run(req, plan), table, metric, grid));
  };

  /** The stream matchers of an optional `query` selector (none: every stream). */
  const optionalStreams = (p: RequestParams): LabelMatch[] => {
    const q = p.get('query');
    return q === undefined ? [] : lowerStreamSelector(parseLogQL(q), q);
  };

  /**
   * The stream matchers and filters a discovery endpoint reads: a log query's own, or those of a
   * metric query's first range aggregation.
   */
  const selection = (query: string): { streams: LabelMatch[]; filters: RowFilter[] } => {
    const expr = parseLogQL(query);
    if (isLogExpr(expr)) {
      const ir = lowerLogQuery(expr, query, { range: { startNs: 0n, endNs: 0n }, direction: 'backward', limit: 1 });
      return { streams: ir.streams, filters: ir.filters };
    }
    const leaf = lowerMetricQuery(expr, query).leaves[0];
    if (!leaf) throw new FloeError('bad_data', 'the query selects no log lines', { code: 'FLOE_ERR_LOGQL_PARAM' });
    return { streams: leaf.sample.streams, filters: leaf.sample.filters };
  };

  /** The selection of the lines the detected_* endpoints sample: the query's, less pending deletions. */
  const sampled = async (req: FastifyRequest, query: string, range: TimeRange) => {
    const s = selection(query);
    const excluded = await exclusion(req, range);
    return excluded ? { streams: s.streams, filters: [...s.filters, excluded] } : s;
  };

  /** Loki's index/volume and index/volume_range: bytes per label set (aggregateBy=series) or per label name (aggregateBy=labels). */
  const volume = async (req: FastifyRequest, reply: FastifyReply, ranged: boolean) => {
    const p = params(req);
    const query = requireQuery(p);
    const range = parseRange(p, nowNs(), HOUR_NS);
    const limit = Math.min(parseCount('limit', p.get('limit'), VOLUME_LIMIT), MAX_LIMIT);
    const streams = lowerStreamSelector(parseLogQL(query), query);
    const target = p.get('targetLabels')?.split(',').map((l) => l.trim()).filter((l) => l !== '');
    const labels = target && target.length > 0 ? target : [...new Set(streams.map((m) => m.label))];
    const aggregateBy = p.get('aggregateBy') ?? 'series';
    if (aggregateBy !== 'series' && aggregateBy !== 'labels') throw new FloeError('bad_data', `invalid aggregateBy ${JSON.stringify(aggregateBy.slice(0, 32))}: expected series or labels`, { code: 'FLOE_ERR_LOGQL_PARAM' });
    const step = ranged ? parseStep(p.get('step'), range) : 0n;
    // Instant: one window (start, end]; range: step-wide windows ending at start, start + step, … <= end.
    const grid = ranged ? { startNs: range.startNs, endNs: range.endNs, stepNs: step } : { startNs: range.endNs, endNs: range.endNs, stepNs: NS_PER_SECOND };
    const rangeNs = ranged ? step : range.endNs > range.startNs ? range.endNs - range.startNs : 1n;
    const runPlan = (plan: PlannedQuery) => run(req, plan);
    const table = await tableOf(req, streams, labels);
    const series: MatrixSeries[] = [];
    if (aggregateBy === 'series') {
      for (const s of toMatrix(await runMetricQuery(runPlan, table, volumeQuery(streams, labels, rangeNs), grid), grid)) series.push(s);
    } else {
      // One query per label (the bytes of the lines that carry it), a few at a time.
      const perLabel: MatrixSeries[][] = [];
      await eachAtMost(labels, VOLUME_PARALLEL, async (label, i) => {
        const present: RowFilter = { kind: 'labels', predicate: { kind: 'match', match: { label, op: '!=', value: '' } } };
        const result = await runMetricQuery(runPlan, table, volumeQuery(streams, [], rangeNs, [present]), grid);
        perLabel[i] = toMatrix(result, grid).map((s) => ({ metric: { [label]: '' }, values: s.values }));
      });
      for (const s of perLabel.flat()) series.push(s);
    }
    const total = (s: MatrixSeries) => s.values.reduce((a, [, v]) => a + Number(v), 0);
    const top = series.sort((a, b) => total(b) - total(a)).slice(0, limit);
    if (ranged) return success(reply, { resultType: 'matrix', result: top, stats: {} });
    const result: VectorSample[] = top.map((s) => ({ metric: s.metric, value: [secondsOf(range.endNs), s.values[s.values.length - 1]![1]] }));
    return success(reply, { resultType: 'vector', result, stats: {} });
  };

  const routes = (scope: FastifyInstance, idPrefix: string) => {
    const both = (path: string, [id, summary, doc]: [string, string, QueryRouteDoc?], handler: (req: ParamsRequest, reply: FastifyReply) => Promise<unknown>) =>
      getAndPost(scope, path, queryRouteSchema('logs', `${idPrefix}${id}`, idPrefix ? `${summary} (Loki's path)` : summary, doc), handler);
    const streamsOrMatrix = { headerParameters: [ENCODING_FLAGS_DOC], returns: { description: `${LOKI_ENVELOPE} with a streams result (log query) or a matrix (metric query).` } };

    both('/query_range', ['logql_query_range', 'LogQL range query', { queryParameters: [P.query, ...LOG_WINDOW, P.step, P.interval, P.limit, P.direction], ...streamsOrMatrix }], async (req, reply) => {
      const p = params(req);
      const query = requireQuery(p);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const step = parseStep(p.get('step'), range);
      const expr = parseLogQL(query);
      if (isLogExpr(expr)) return streamsQuery(req, reply, expr, query, range, p);
      // A metric query: values at start, start + step, … <= end (spec 1, "Metric queries").
      const grid = { startNs: range.startNs, endNs: range.endNs, stepNs: step };
      const result = await metricQuery(req, expr, query, grid);
      return success(reply, { resultType: 'matrix', result: toMatrix(result, grid), stats: {} });
    });

    // Instant: a metric query is evaluated at `time` (Grafana's health check is vector(1)+vector(1));
    // a log query gives the most recent lines over the hour ending at `time` (spec 1, Limits).
    both('/query', ['logql_query', 'LogQL instant query', { queryParameters: [P.query, P.time, P.limit, P.direction], headerParameters: [ENCODING_FLAGS_DOC], returns: { description: `${LOKI_ENVELOPE} with a vector or scalar (metric query) or streams (log query).` } }], async (req, reply) => {
      const p = params(req);
      const query = requireQuery(p);
      const time = parseTime('time', p.get('time'), nowNs());
      const expr = parseLogQL(query);
      if (isLogExpr(expr)) return streamsQuery(req, reply, expr, query, { startNs: time - HOUR_NS, endNs: time + 1n }, p);
      const grid = { startNs: time, endNs: time, stepNs: NS_PER_SECOND };
      const result = await metricQuery(req, expr, query, grid);
      return success(reply, { ...toInstant(result, time), stats: {} });
    });

    both('/index/stats', ['get_log_index_stats', 'Streams, entries and bytes a selector matches', { queryParameters: [P.query, ...LOG_WINDOW], returns: { description: '`{streams, chunks, entries, bytes}` (not enveloped, as Loki answers).' } }], async (req, reply) => {
      const p = params(req);
      const query = requireQuery(p);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const streams = lowerStreamSelector(parseLogQL(query), query);
      const [row] = await run(req, await planFor(req, planIndexStats, { kind: 'index_stats', table: 'logs', range, streams }));
      const n = (k: string) => Number(row?.[k] ?? 0);
      // Not enveloped, as Loki answers it.
      return reply.type('application/json').send({ streams: n('streams'), chunks: n('chunks'), entries: n('entries'), bytes: n('bytes') });
    });

    const volumeParams = [P.query, ...LOG_WINDOW, countParam('limit', 'Most series returned', VOLUME_LIMIT), VOLUME_DOCS.targetLabels, VOLUME_DOCS.aggregateBy];
    both('/index/volume', ['get_log_volume', 'Bytes of log lines per label set or label name', { queryParameters: volumeParams, returns: { description: `${LOKI_ENVELOPE} with a vector.` } }], async (req, reply) => volume(req, reply, false));
    both('/index/volume_range', ['get_log_volume_range', 'Bytes of log lines per label set or label name, per step', { queryParameters: [...volumeParams, P.step], returns: { description: `${LOKI_ENVELOPE} with a matrix.` } }], async (req, reply) =>
      volume(req, reply, true),
    );

    const lineLimit = countParam('line_limit', 'Log lines sampled', DETECTED_LINE_LIMIT);
    both('/detected_fields', ['list_detected_fields', 'Fields of the sampled log lines, with type and cardinality', { queryParameters: [P.query, ...LOG_WINDOW, countParam('limit', 'Most fields returned; alias field_limit', DETECTED_FIELD_LIMIT), lineLimit], returns: { description: '`{fields, limit}` (not enveloped).' } }], async (req, reply) => {
      const p = params(req);
      const query = requireQuery(p);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const limit = parseCount('limit', p.get('limit') ?? p.get('field_limit'), DETECTED_FIELD_LIMIT);
      const sampleLimit = Math.min(parseCount('line_limit', p.get('line_limit'), DETECTED_LINE_LIMIT), MAX_LIMIT);
      const rows = await run(req, await planFor(req, planDetectedFields, { kind: 'detected_fields', table: 'logs', range, ...(await sampled(req, query, range)), sampleLimit }));
      return reply.type('application/json').send({ fields: detectedFieldsOf(rows, limit), limit });
    });

    both('/detected_field/:name/values', ['list_detected_field_values', 'Values of one detected field in the sampled log lines', { queryParameters: [P.query, ...LOG_WINDOW, countParam('limit', 'Most values returned', DETECTED_VALUES_LIMIT), lineLimit], returns: { description: '`{values, limit}` (not enveloped).' } }], async (req, reply) => {
      const p = params(req);
      const query = requireQuery(p);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const field = req.params.name ?? '';
      if (field === '') throw new FloeError('bad_data', 'missing field name', { code: 'FLOE_ERR_LOGQL_PARAM' });
      const limit = Math.min(parseCount('limit', p.get('limit'), DETECTED_VALUES_LIMIT), MAX_LIMIT);
      const sampleLimit = Math.min(parseCount('line_limit', p.get('line_limit'), DETECTED_LINE_LIMIT), MAX_LIMIT);
      const rows = await run(req, await planFor(req, planDetectedFieldValues, { kind: 'detected_field_values', table: 'logs', range, ...(await sampled(req, query, range)), field, sampleLimit, limit }));
      return reply.type('application/json').send({ values: rows.map((r) => String(r.value)), limit });
    });

    both('/detected_labels', ['list_detected_labels', 'Stream labels with their cardinality', { queryParameters: [P.selector, ...LOG_WINDOW], returns: { description: '`{detectedLabels: [{label, cardinality}]}` (not enveloped).' } }], async (req, reply) => {
      const p = params(req);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const streams = optionalStreams(p);
      const rows = await run(req, await planFor(req, planDetectedLabels, { kind: 'detected_labels', table: 'logs', range, streams }));
      return reply.type('application/json').send({ detectedLabels: rows.map((r) => ({ label: String(r.name), cardinality: Number(r.cardinality) })) });
    });

    both('/labels', ['list_log_labels', 'Label names in the window', { queryParameters: [P.selector, ...LOG_WINDOW], returns: { description: `${LOKI_ENVELOPE} with a list of names.` } }], async (req, reply) => {
      const p = params(req);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const streams = optionalStreams(p);
      const rows = await run(req, await planFor(req, planLabelNames, { kind: 'label_names', table: 'logs', range, streams }));
      return success(reply, rows.map((r) => String(r.name)));
    });

    both('/label/:name/values', ['list_log_label_values', 'Values of one label in the window', { queryParameters: [P.selector, ...LOG_WINDOW], returns: { description: `${LOKI_ENVELOPE} with a list of values.` } }], async (req, reply) => {
      const p = params(req);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const label = req.params.name ?? '';
      if (label === '') throw new FloeError('bad_data', 'missing label name');
      const streams = optionalStreams(p);
      const rows = await run(req, await planFor(req, planLabelValues, { kind: 'label_values', table: 'logs', range, label, streams }));
      return success(reply, rows.map((r) => String(r.value)));
    });

    const match = { name: 'match[]', schema: { type: 'array', items: { type: 'string' } }, description: 'Stream selectors; at least one (or `match`).' };
    const single = { name: 'match', description: 'One stream selector, when no match[] is given.' };
    both('/series', ['list_log_series', 'Label sets of the streams matching selectors', { queryParameters: [match, single, ...LOG_WINDOW], returns: { description: `${LOKI_ENVELOPE} with a list of label sets.` } }], async (req, reply) => {
      const p = params(req);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const matches = p.getAll('match[]');
      if (matches.length === 0) {
        // Loki also takes a single `match`; a request with neither is refused like Loki refuses it.
        const single = p.get('match');
        if (single === undefined) throw new FloeError('bad_data', 'at least one match[] selector is required', { code: 'FLOE_ERR_LOGQL_PARAM' });
        matches.push(single);
      }
      const selectors = matches.map((m) => lowerStreamSelector(parseLogQL(m), m));
      const rows = await run(req, await planFor(req, planSeries, { kind: 'series', table: 'logs', range, selectors }));
      const data = rows.map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => typeof v === 'string' && v !== '')));
      return success(reply, data);
    });

    both('/format_query', ['format_logql_query', 'A LogQL expression in canonical form', { queryParameters: [P.query], returns: { description: `${LOKI_ENVELOPE} with the formatted expression.` } }], async (req, reply) => {
      const query = requireQuery(params(req));
      return success(reply, formatLogQL(parseLogQL(query)));
    });

    scope.get('/status/buildinfo', { schema: queryRouteSchema('logs', `${idPrefix}get_log_build_info`, 'Loki build information', { returns: { description: '`{version, revision, branch, buildUser, buildDate, goVersion}` (not enveloped).' } }) }, async (_req, reply) =>
      reply.type('application/json').send(LOKI_BUILD_INFO),
    );

    // What Grafana's Logs Drilldown app reads first (Loki 3.5): the tenant's limits as Loki names
    // them, and that patterns are served (the app then shows its Patterns tab).
    scope.get('/drilldown-limits', { schema: queryRouteSchema('logs', `${idPrefix}get_log_drilldown_limits`, 'Limits of the log API, as Grafana\'s Logs Drilldown reads them', { returns: { description: '`{limits, pattern_ingester_enabled, version}` (not enveloped).' } }) }, async (req, reply) => {
      const retentionMs = opts.tenantLimits ? (await opts.tenantLimits(req.tenant!.tenant)).retentionMs('logs') : 0;
      return reply.type('application/json').send({
        limits: {
          discover_log_levels: false,
          discover_service_name: ['service.name'],
          log_level_fields: [],
          max_entries_limit_per_query: MAX_LIMIT,
          max_line_size_truncate: false,
          max_query_bytes_read: '0B',
          max_query_length: '0s',
          max_query_lookback: '0s',
          max_query_range: '0s',
          max_query_series: MAX_QUERY_SERIES,
          metric_aggregation_enabled: false,
          otlp_config: { ResourceAttributes: { AttributesConfig: [], IgnoreDefaults: false }, ScopeAttributes: null, LogAttributes: null, SeverityTextAsLabel: false },
          pattern_persistence_enabled: false,
          query_timeout: formatDurationMs(opts.queryTimeoutMs),
          retention_period: formatDurationMs(retentionMs),
          volume_enabled: true,
          volume_max_series: MAX_LIMIT,
        },
        pattern_ingester_enabled: true,
        version: LOKI_BUILD_INFO.version,
      });
    });

    // Loki's patterns (Grafana's Logs Drilldown): templates of the newest lines a log query selects
    // in the window, mined per detected level (@floe/query LogPatternMiner), with lines per step.
    both('/patterns', ['list_log_patterns', 'Patterns detected in log lines, with their counts per step', { queryParameters: [P.query, ...LOG_WINDOW, P.step], returns: { description: `${LOKI_ENVELOPE} with \`[{pattern, level, samples: [[unix seconds, lines], …]}]\`, most lines first, of the newest ${PATTERN_LINE_LIMIT} lines of the window.` } }], async (req, reply) => {
      const p = params(req);
      const query = requireQuery(p);
      const range = parseRange(p, nowNs(), HOUR_NS);
      const step = parseStep(p.get('step'), range);
      const expr = parseLogQL(query);
      if (!isLogExpr(expr)) throw new FloeError('bad_data', 'patterns takes a log query (a stream selector with optional filters), not a metric query', { code: 'FLOE_ERR_LOGQL_PARAM' });
      const { ir, table } = await logSelect(req, expr, query, { range, direction: 'backward', limit: PATTERN_LINE_LIMIT });
      const miner = new LogPatternMiner(Number(step / NS_PER_SECOND));
      const rows = await run(req, planPatternLines(ir, table));
      for (let i = 0; i < rows.length; i++) {
        // Mining lines that share little can take a while: other requests get the event loop between chunks.
        if (i > 0 && i % PATTERN_CHUNK === 0) await new Promise((resolve) => setImmediate(resolve));
        const row = rows[i]!;
        miner.add(typeof row.line === 'string' ? row.line : '', Number(BigInt(String(row.ts)) / NS_PER_SECOND), String(row.level ?? ''));
      }
      return success(reply, miner.patterns());
    });

    for (const [path, [id, summary]] of Object.entries(NOT_YET)) {
      both(`/${path}`, [id, `${summary}: not implemented (501)`, { unimplemented: true }], async () => {
        throw new FloeError('not_implemented', `/${path.replace(':name', '{name}')} is not implemented yet`, { code: 'FLOE_ERR_LOGQL_ENDPOINT' });
      });
    }
  };

  for (const [prefix, idPrefix] of Object.entries(LOKI_PREFIXES)) await app.register(async (scope) => routes(scope, idPrefix), { prefix });

  // Loki's Prometheus-style rules API, which Grafana's alerting lists for a Loki data source: the
  // ruler's rules and alerts (ruler/routes.ts), or empty lists where no rules are kept.
  const rules = opts.rules;
  await app.register(
    async (scope) => {
      if (rules) return ruleStateRoutes(scope, { ...rules, language: 'logql', tag: 'logs' });
      const empty = (path: string, id: string, summary: string, data: Record<string, unknown>) =>
        scope.get(path, { schema: queryRouteSchema('logs', id, summary, { returns: { description: `${LOKI_ENVELOPE} with ${JSON.stringify(data)}.` } }) }, async (_req, reply) => success(reply, data));
      empty('/rules', 'list_log_rules', 'LogQL recording and alerting rules: none kept here', { groups: [] });
      empty('/alerts', 'list_log_alerts', 'Active LogQL alerts: none kept here', { alerts: [] });
    },
    { prefix: '/prometheus/api/v1' },
  );
  // Loki's ruler config API (/loki/api/v1/rules, and /api/prom/rules, Grafana's path for it).
  if (rules) await app.register(async (scope) => ruleConfigRoutes(scope, { ...rules, language: 'logql', tag: 'logs' }));
};
