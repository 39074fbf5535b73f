import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { FloeError, badData, notFound } from '@floe/errors';
import {
  ResourceSpansSchema,
  TempoTraceByIDResponseSchema,
  TempoTraceSchema,
  create,
  toBinary,
  toJson,
  type ResourceSpans,
} from '@floe/proto';
import { TRACE_SEARCH_DEFAULTS, planTraceSearch, planTraceTagNames, planTraceTagValues, traceSearchResults, type PlannerTable } from '@floe/query';
import { tracesTable } from '@floe/schema';
import type { QuerierClient } from './querier-client.ts';
import { callerCredentials } from './auth-plugin.ts';
import { profilesOfTrace } from './profilequery/by-trace.ts';
import { rowsOf, type Row } from './logquery/results.ts';
import { RequestParams } from './request-params.ts';
import { buildInfo } from './build-info.ts';
import { queryRouteSchema, type ParameterDoc, type QueryRouteDoc } from './openapi.ts';
import {
  MAX_TAG_VALUES,
  TAG_SAMPLE_ROWS,
  TAG_SCOPES,
  TRACE_ID_PARAM,
  TAG_WINDOW_NS,
  parseTagScope,
  parseUnixSeconds,
  searchRequest,
  searchResponse,
  secondsWindow,
  storedTraceId,
  tagConditions,
  tagField,
  tagNamesByScope,
} from './trace-search.ts';

/**
 * Tempo-compatible trace API under /tracequery. Grafana's Tempo data source asks
 * /api/v2/traces/{id} with `Accept: application/protobuf` and falls back to /api/traces/{id} on
 * 404 (reference/api-contracts.md §0 S4, §3.2), so both answer protobuf or JSON by Accept.
 */
export interface TraceQueryOptions {
  querier: QuerierClient;
  queryTimeoutMs: number;
}


/** Optional start/end in unix seconds; they only prune the hour partitions scanned. */
function parseSeconds(name: string, raw: unknown): bigint | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') throw badData(`invalid ${name}: expected unix seconds`);
  return parseUnixSeconds(name, raw);
}

/** include_profiles: true or false (absent: false); anything else is a mistake worth telling. */
function parseIncludeProfiles(raw: string | undefined): boolean {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw badData(`invalid include_profiles: expected true or false, got ${JSON.stringify(raw.slice(0, 32))}`);
}

const PROFILE_LEAD_NS = 3600n * 1_000_000_000n;
const nowNs = () => BigInt(Date.now()) * 1_000_000n;
const TRACES: PlannerTable = tracesTable;

const wantsProtobuf = (req: FastifyRequest) => (req.headers.accept ?? '').includes('application/protobuf');

/** The documentation of a route (openapi.ts). */
const doc = (id: string, summary: string, returns: string, more: QueryRouteDoc = {}, mediaTypes?: readonly string[]) => ({ schema: queryRouteSchema('traces', id, summary, { ...more, returns: { description: returns, mediaTypes } }) });
const seconds = (name: 'start' | 'end', what: string): ParameterDoc => ({ name, schema: { type: 'integer', minimum: 0 }, description: `${what} (unix seconds).` });
/** start and end of the search and tag routes (secondsWindow). */
const WINDOW = [seconds('start', 'Start of the window; default an hour before end'), seconds('end', 'End of the window, inclusive; default now')];
const BY_ID: QueryRouteDoc = {
  pathParameters: [TRACE_ID_PARAM],
  queryParameters: [
    seconds('start', 'Earliest span start; with end, prunes the partitions scanned'),
    seconds('end', 'Latest span start'),
    { name: 'include_profiles', schema: { type: 'boolean' }, description: 'JSON only: attach the summaries of the profiles linked to the trace (default false).' },
  ],
};
const JSON_OR_PROTOBUF = ['application/json', 'application/protobuf'];
/** The Tempo release whose HTTP API this one follows (search v2 tags, TraceByIDResponse). */
const TEMPO_BUILD_INFO = buildInfo('2.8.0');

export const traceQueryPlugin: FastifyPluginAsync<TraceQueryOptions> = async (app, opts) => {
  app.get('/api/echo', doc('get_trace_echo', 'Liveness of the trace query API (Grafana’s connection test)', 'The text `echo`.', {}, ['text/plain']), async (_req, reply) => reply.type('text/plain').send('echo'));
  app.get('/api/status/buildinfo', doc('get_trace_build_info', 'Tempo build information', '`{version, revision, branch, buildUser, buildDate, goVersion}` (not enveloped).'), async (_req, reply) =>
    reply.type('application/json').send(TEMPO_BUILD_INFO),
  );

  const lookup = async (req: FastifyRequest<{ Params: { trace_id: string }; Querystring: Record<string, string | undefined> }>) => {
    const traceId = storedTraceId(req.params.trace_id);
    const start = parseSeconds('start', req.query.start);
    const end = parseSeconds('end', req.query.end);
    if (start !== undefined && end !== undefined && end < start) throw badData('invalid range: end is before start');
    const endNs = end === undefined ? undefined : end + 999_999_999n;
    const includeProfiles = parseIncludeProfiles(req.query.include_profiles);
    const creds = callerCredentials(req);
    const res = await opts.querier.traceById(creds, { traceId, startNs: start, endNs }, opts.queryTimeoutMs);
    const batches = res.trace?.resourceSpans ?? [];
    if (batches.length === 0) throw notFound('trace not found');
    // Spec 1, profile rule 4: the trace answer carries the same summaries as /api/profiles/trace/{id}.
    // Only JSON can: Tempo's protobuf messages have no field for them.
    // A profile is stamped with the start of its collection window, which may open before the
    // trace's first span: the profiles' range reaches an hour further back.
    const range = start === undefined && endNs === undefined ? undefined : { startNs: start === undefined ? 0n : start - PROFILE_LEAD_NS, endNs: endNs === undefined ? 2n ** 63n - 1n : endNs + 1n };
    const profiles = includeProfiles && !wantsProtobuf(req) ? await profilesOfTrace(opts, creds, traceId, range) : undefined;
    return { batches, profiles };
  };

  app.get<{ Params: { trace_id: string }; Querystring: Record<string, string | undefined> }>('/api/traces/:trace_id', doc('get_trace', 'A trace by id', 'Tempo’s Trace: `{"batches": [ResourceSpans…]}` in JSON (with `profiles` on include_profiles=true), or protobuf when Accept asks for it.', BY_ID, JSON_OR_PROTOBUF), async (req, reply) => {
    const { batches, profiles } = await lookup(req);
    if (wantsProtobuf(req)) return sendProto(reply, toBinary(TempoTraceSchema, create(TempoTraceSchema, { resourceSpans: batches })));
    return reply.type('application/json').send({ batches: batches.map(spanJson), ...(profiles ? { profiles } : {}) });
  });

  const v2 = doc('get_trace_response', 'A trace by id (v2)', 'Tempo’s TraceByIDResponse: `{"trace": {"resourceSpans": […]}}` in JSON (with `profiles` on include_profiles=true), or protobuf when Accept asks for it.', BY_ID, JSON_OR_PROTOBUF);
  app.get<{ Params: { trace_id: string }; Querystring: Record<string, string | undefined> }>('/api/v2/traces/:trace_id', v2, async (req, reply) => {
    const { batches, profiles } = await lookup(req);
    if (wantsProtobuf(req)) {
      return sendProto(reply, toBinary(TempoTraceByIDResponseSchema, create(TempoTraceByIDResponseSchema, { trace: { resourceSpans: batches } })));
    }
    return reply.type('application/json').send({ trace: { resourceSpans: batches.map(spanJson) }, ...(profiles ? { profiles } : {}) });
  });

  registerSearch(app, opts);
};

/**
 * Search and tag discovery (spec 1, "Trace query API"; reference/api-contracts.md §3.3-3.5): SQL
 * over the caller's traces table, planned by @floe/query. TraceQL metrics are not implemented
 * (501, as the spec says).
 */
function registerSearch(app: Parameters<FastifyPluginAsync<TraceQueryOptions>>[0], opts: TraceQueryOptions): void {
  const params = (req: FastifyRequest) => new RequestParams(req.url);
  const run = async (req: FastifyRequest, plan: { sql: string; params: Array<string | number | boolean | null>; hints: { start_ns: string; end_ns: string } }): Promise<Row[]> =>
    rowsOf(await opts.querier.query(callerCredentials(req), { sql: plan.sql, params: plan.params, hints: plan.hints }, opts.queryTimeoutMs));

  const limit = (what: string, fallback: number, max: number): ParameterDoc => ({ name: 'limit', schema: { type: 'integer', minimum: 1 }, description: `${what} (default ${fallback}, at most ${max}).` });
  const duration = (name: string, what: string): ParameterDoc => ({ name, description: `${what} span set duration, such as 100ms or 1.5s.` });
  const searchParams = [
    { name: 'q', description: 'TraceQL: one spanset of equality matchers joined by &&; `{}` selects everything.' },
    { name: 'tags', description: 'Instead of q: logfmt attribute matches, such as service.name=api http.method="GET".' },
    duration('minDuration', 'Shortest'),
    duration('maxDuration', 'Longest'),
    { name: 'spss', schema: { type: 'integer', minimum: 0 }, description: 'Spans per span set (0 or absent: all; `matched` still counts every span).' },
    limit('Most traces returned', TRACE_SEARCH_DEFAULTS.limit, TRACE_SEARCH_DEFAULTS.maxLimit),
    ...WINDOW,
  ];
  app.get('/api/search', doc('search_traces', 'Traces matching a TraceQL query or tags', '`{"traces": [TraceSearchMetadata…], "metrics": {…}}`.', { queryParameters: searchParams }), async (req, reply) => {
    const ir = searchRequest(params(req), nowNs());
    const rows = await run(req, planTraceSearch(ir, TRACES));
    return reply.type('application/json').send(searchResponse(traceSearchResults(ir, rows)));
  });

  const tagNames = async (req: FastifyRequest) => {
    const p = params(req);
    const scope = parseTagScope(p.get('scope'));
    const limit = positiveLimit(p.get('limit'));
    const range = secondsWindow(p, nowNs(), TAG_WINDOW_NS);
    const conditions = tagConditions(p.get('q'));
    const rows = scope === 'none' || scope === 'intrinsic' ? [] : await run(req, planTraceTagNames({ table: 'traces', range, conditions, sampleLimit: TAG_SAMPLE_ROWS }, TRACES));
    const byScope = tagNamesByScope(rows, limit);
    const scopes = scope === 'none' ? [] : scope ? [scope] : [...TAG_SCOPES];
    return { scopes, byScope };
  };
  const tagLimit = limit('Most names or values per scope', MAX_TAG_VALUES, MAX_TAG_VALUES);
  const scopeParam = { name: 'scope', schema: { type: 'string', enum: [...TAG_SCOPES, 'event', 'link', 'instrumentation', 'all'] }, description: 'Only this scope (default all; event, link and instrumentation are always empty).' };
  const tagNameQ = { name: 'q', description: 'TraceQL: only keys of the spans it matches (ignored when it does not parse).' };
  const tagNameParams = { queryParameters: [scopeParam, tagNameQ, tagLimit, ...WINDOW] };
  app.get('/api/search/tags', doc('list_trace_tags', 'Attribute keys and intrinsics observed in the window', '`{"tagNames": […]}`, sorted.', tagNameParams), async (req, reply) => {
    const { scopes, byScope } = await tagNames(req);
    const names = [...new Set(scopes.flatMap((s) => byScope[s]))].sort();
    return reply.type('application/json').send({ tagNames: names });
  });
  app.get('/api/v2/search/tags', doc('list_trace_tags_by_scope', 'Attribute keys and intrinsics observed in the window, by scope (v2)', '`{"scopes": [{"name", "tags": […]}]}`.', tagNameParams), async (req, reply) => {
    const { scopes, byScope } = await tagNames(req);
    return reply.type('application/json').send({ scopes: scopes.map((name) => ({ name, tags: byScope[name] })) });
  });

  const tagValues = async (req: FastifyRequest<{ Params: { tag: string } }>) => {
    const p = params(req);
    const limit = positiveLimit(p.get('limit'));
    const range = secondsWindow(p, nowNs(), TAG_WINDOW_NS);
    const target = tagField(req.params.tag);
    if (!target) return [];
    const plan = planTraceTagValues({ table: 'traces', range, ...target, conditions: tagConditions(p.get('q')), sampleLimit: TAG_SAMPLE_ROWS, limit }, TRACES);
    return (await run(req, plan)).map((r) => ({ type: String(r.type), value: String(r.value) }));
  };
  const tagValueDoc: QueryRouteDoc = {
    pathParameters: [{ name: 'tag', description: 'Attribute or intrinsic: resource.x, span.x, .x or x.' }],
    queryParameters: [{ name: 'q', description: 'TraceQL narrowing the spans sampled (ignored when it does not parse).' }, { ...tagLimit, description: `Most values (default and at most ${MAX_TAG_VALUES}).` }, ...WINDOW],
  };
  app.get<{ Params: { tag: string } }>('/api/search/tag/:tag/values', doc('list_trace_tag_values', 'Values of one tag observed in the window', '`{"tagValues": […]}`; an unknown tag has none.', tagValueDoc), async (req, reply) => {
    const values = await tagValues(req);
    return reply.type('application/json').send({ tagValues: [...new Set(values.map((v) => v.value))] });
  });
  const typedValues = doc('list_trace_tag_values_typed', 'Values of one tag observed in the window, typed (v2)', '`{"tagValues": [{"type", "value"}]}`.', tagValueDoc);
  app.get<{ Params: { tag: string } }>('/api/v2/search/tag/:tag/values', typedValues, async (req, reply) => reply.type('application/json').send({ tagValues: await tagValues(req) }));

  const metricsUnimplemented = async () => {
    throw new FloeError('not_implemented', 'TraceQL metrics are not implemented', { code: 'FLOE_ERR_TRACEQL_METRICS' });
  };
  const unimplemented = (id: string, summary: string) => ({ schema: queryRouteSchema('traces', id, `${summary}: not implemented (501)`, { unimplemented: true }) });
  app.get('/api/metrics/query', unimplemented('traceql_metrics_query', 'TraceQL metrics instant query'), metricsUnimplemented);
  app.get('/api/metrics/query_range', unimplemented('traceql_metrics_query_range', 'TraceQL metrics range query'), metricsUnimplemented);
}

/** The tag endpoints' `limit`: at most (and by default) 1000, spec 1's cap per tag. */
function positiveLimit(raw: string | undefined): number {
  if (raw === undefined) return MAX_TAG_VALUES;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) === 0) throw badData(`invalid limit: expected a positive integer, got ${JSON.stringify(raw.slice(0, 32))}`);
  return Math.min(Number(raw), MAX_TAG_VALUES);
}

const sendProto = (reply: FastifyReply, bytes: Uint8Array) => reply.type('application/protobuf').send(Buffer.from(bytes));

/**
 * OTLP JSON of a ResourceSpans, plus the span fields of the spec (spanID, parentSpanID,
 * serviceName, durationNanos) that Tempo's search spans carry, so clients of either shape work.
 */
function spanJson(rs: ResourceSpans) {
  const json = toJson(ResourceSpansSchema, rs) as { resource?: { attributes?: Array<{ key: string; value: { stringValue?: string } }> }; scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> };
  const serviceName = json.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue;
  rs.scopeSpans.forEach((ss, i) => {
    ss.spans.forEach((span, j) => {
      const target = json.scopeSpans?.[i]?.spans?.[j];
      if (!target) return;
      target.spanID = Buffer.from(span.spanId).toString('hex');
      if (span.parentSpanId.length) target.parentSpanID = Buffer.from(span.parentSpanId).toString('hex');
      target.durationNanos = (span.endTimeUnixNano - span.startTimeUnixNano).toString();
      if (serviceName) target.serviceName = serviceName;
    });
  });
  return json;
}
