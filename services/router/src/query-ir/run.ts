import type { FastifyRequest } from 'fastify';
import {
  PromAnnotations,
  formatPromFloat,
  listedProfileSummaryOf,
  mergedStacksOf,
  parsePromQL,
  planLogSelect,
  planProfileList,
  planProfileStacks,
  planTraceSearch,
  singleFlamebearer,
  traceSearchResults,
  type EvalOptions,
  type FoundTrace,
  type PlannerTable,
} from '@floe/query';
import { logsTable, metricsTable, profilesTable, tracesTable } from '@floe/schema';
import { callerTables, type TableColumns } from '../table-columns.ts';
import { callerCredentials } from '../auth-plugin.ts';
import { exclusionFilter, type PendingDeletions } from '../logquery/pending-deletions.ts';
import { rowsOf, streamLabels, structuredMetadata, type Row } from '../logquery/results.ts';
import { DEFAULT_MAX_SAMPLES, MetricReader } from '../metricquery/data.ts';
import { evaluateRange } from '../metricquery/eval-thread.ts';
import { DEFAULT_LOOKBACK_DELTA_MS, DEFAULT_SUBQUERY_STEP_MS } from '../metricquery/plugin.ts';
import type { QuerierClient, QueryRequest } from '../querier-client.ts';
import { MAX_SERIES, type LogsQuery, type MetricsQuery, type ProfilesQuery, type QueryIrBody, type TracesQuery } from './schema.ts';
import { DEFAULT_LOG_LIMIT, DEFAULT_MAX_NODES, DEFAULT_PROFILE_LIST, DEFAULT_TOP_FUNCTIONS, DEFAULT_TRACE_LIMIT, logSelectOf, metricGridOf, profileSelectionOf, traceSearchOf } from './to-ir.ts';

/**
 * Runs one Query IR request: JSON → IR (to-ir.ts) → the planners of @floe/query → the querier
 * with the caller's credentials and the router's deadline → plain JSON. Lists are read one past
 * their cap so `truncated` is exact rather than a guess from a full page.
 */

export interface RunDeps {
  querier: QuerierClient;
  queryTimeoutMs: number;
  /** router.max_query_samples for PromQL (absent: the metric reader's default). */
  maxSamples?: number;
  /** A dataset's table columns from the catalog (materialized labels): label matchers read their columns. */
  tableColumns?: TableColumns;
  /** The dataset's log delete requests not processed yet, whose lines reads leave out (absent: none). */
  pendingDeletions?: PendingDeletions;
}

/** RunDeps with the callers' tables resolved (query-ir/plugin.ts makes them once). */
export interface RunContext extends RunDeps {
  tables: SignalTables;
}

/** The caller's planner table of each signal whose plans read label columns (materialized labels included, cached). */
export type SignalTables = Record<'logs' | 'metrics' | 'profiles', (req: FastifyRequest) => Promise<PlannerTable>>;

/** Made once per plugin, so each signal's cache lives as long as the routes. */
export function signalTables(columns: TableColumns | undefined): SignalTables {
  return {
    logs: callerTables(logsTable, 'logs', columns),
    metrics: callerTables(metricsTable, 'metrics', columns),
    profiles: callerTables(profilesTable, 'profiles', columns),
  };
}

type Answer = { source: QueryIrBody['source']; truncated: boolean } & Record<string, unknown>;

const NS_PER_MS = 1_000_000n;

export async function runQuery(deps: RunContext, req: FastifyRequest, body: QueryIrBody): Promise<Answer> {
  switch (body.source) {
    case 'logs':
      return logs(deps, req, body);
    case 'traces':
      return traces(deps, req, body);
    case 'metrics':
      return metrics(deps, req, body);
    case 'profiles':
      return profiles(deps, req, body);
  }
}

const run = async (deps: RunContext, req: FastifyRequest, plan: QueryRequest): Promise<Row[]> =>
  rowsOf(await deps.querier.query(callerCredentials(req), plan, deps.queryTimeoutMs));

/** Keeps `limit` items; the one read past the cap only says there were more. */
const capped = <T>(items: T[], limit: number) => ({ items: items.slice(0, limit), truncated: items.length > limit });

async function logs(deps: RunContext, req: FastifyRequest, q: LogsQuery): Promise<Answer> {
  const ir = logSelectOf(q);
  const deletions = deps.pendingDeletions ? await deps.pendingDeletions.of(req.tenant!.tenant, req.tenant!.dataset) : [];
  const excluded = exclusionFilter(deletions, ir.range);
  if (excluded) ir.filters.push(excluded);
  const { items, truncated } = capped(await run(deps, req, planLogSelect(ir, await deps.tables.logs(req), { metadata: true })), q.limit ?? DEFAULT_LOG_LIMIT);
  const rows = items.map((r) => ({ time: String(r.ts), line: typeof r.line === 'string' ? r.line : '', labels: streamLabels(r), metadata: structuredMetadata(r) }));
  return { source: 'logs', rows, truncated };
}

/** A typed attribute as plain JSON: ints as numbers while exact, as decimal text beyond 2^53. */
const attributeJson = (v: FoundTrace['spans'][number]['attributes'][number]['value']) =>
  v.type === 'int' ? (v.value >= BigInt(Number.MIN_SAFE_INTEGER) && v.value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v.value) : v.value.toString()) : v.value;

async function traces(deps: RunContext, req: FastifyRequest, q: TracesQuery): Promise<Answer> {
  const ir = traceSearchOf(q);
  const found = traceSearchResults(ir, await run(deps, req, planTraceSearch(ir, tracesTable)));
  const { items, truncated } = capped(found, q.limit ?? DEFAULT_TRACE_LIMIT);
  const out = items.map((t) => ({
    trace_id: t.traceId,
    ...(t.rootServiceName !== undefined ? { root_service_name: t.rootServiceName } : {}),
    ...(t.rootTraceName !== undefined ? { root_name: t.rootTraceName } : {}),
    start: t.startNs.toString(),
    duration_ns: t.durationNs.toString(),
    matched: t.matched,
    spans: t.spans.map((s) => ({
      span_id: s.spanId,
      ...(s.name !== undefined ? { name: s.name } : {}),
      start: s.startNs.toString(),
      duration_ns: s.durationNs.toString(),
      attributes: Object.fromEntries(s.attributes.map((a) => [a.key, attributeJson(a.value)])),
    })),
  }));
  return { source: 'traces', traces: out, truncated };
}

/** PromQL over the range through the same reader and evaluator as /metricquery query_range. */
async function metrics(deps: RunContext, req: FastifyRequest, q: MetricsQuery): Promise<Answer> {
  const { startMs, endMs, stepMs } = metricGridOf(q);
  const expr = parsePromQL(q.promql);
  const reader = new MetricReader(deps.querier, callerCredentials(req), deps.queryTimeoutMs, deps.maxSamples, undefined, undefined, () => deps.tables.metrics(req));
  const annotations = new PromAnnotations();
  // The sample budget and the deadline of /metricquery's query_range hold here too.
  const deadline = performance.now() + deps.queryTimeoutMs;
  const evalOpts: EvalOptions = { startMs, endMs, lookbackMs: DEFAULT_LOOKBACK_DELTA_MS, defaultSubqueryStepMs: DEFAULT_SUBQUERY_STEP_MS, annotations, maxSamples: deps.maxSamples ?? DEFAULT_MAX_SAMPLES, deadline };
  const result = (await evaluateRange(q.promql, expr, startMs, endMs, stepMs, (windows) => reader.selectorSource(windows), evalOpts)).result;
  const { items, truncated } = capped(result, MAX_SERIES);
  const series = items.map((s) => ({
    labels: Object.fromEntries(Object.keys(s.labels).sort().map((k) => [k, s.labels[k]!])),
    points: s.t.map((t, i) => ({ time: (BigInt(t) * NS_PER_MS).toString(), value: formatPromFloat(s.v[i]!) })),
  }));
  const { warnings } = annotations.asStrings(q.promql);
  return { source: 'metrics', series, truncated, ...(warnings.length > 0 ? { warnings } : {}) };
}

async function profiles(deps: RunContext, req: FastifyRequest, q: ProfilesQuery): Promise<Answer> {
  const selection = profileSelectionOf(q);
  if (q.view === 'profiles') {
    // One row more than asked tells a cut list from a complete one.
    const limit = q.limit ?? DEFAULT_PROFILE_LIST;
    const rows = await run(deps, req, planProfileList({ kind: 'profile_list', selection, limit: limit + 1 }, await deps.tables.profiles(req)));
    const { items, truncated } = capped(rows, limit);
    return { source: 'profiles', profiles: items.map(listedProfileSummaryOf), truncated };
  }
  const stacks = mergedStacksOf(await run(deps, req, planProfileStacks({ kind: 'profile_stacks', selection }, await deps.tables.profiles(req))));
  if (q.view === 'flamegraph') return { source: 'profiles', flamegraph: singleFlamebearer(stacks, selection.profileType, null, q.max_nodes ?? DEFAULT_MAX_NODES), truncated: false };
  const { items, truncated } = capped(topFunctions(stacks), q.limit ?? DEFAULT_TOP_FUNCTIONS);
  return { source: 'profiles', functions: items, truncated };
}

/**
 * Functions by self value (the leaf frame's samples), then total (every stack the function is
 * on, counted once per stack so recursion does not inflate it).
 */
export function topFunctions(stacks: ReadonlyArray<{ stack: readonly string[]; value: number }>): Array<{ name: string; self: number; total: number }> {
  const byName = new Map<string, { name: string; self: number; total: number }>();
  const entry = (name: string) => byName.get(name) ?? byName.set(name, { name, self: 0, total: 0 }).get(name)!;
  for (const { stack, value } of stacks) {
    if (stack.length === 0) continue;
    entry(stack[0]!).self += value;
    for (const name of new Set(stack)) entry(name).total += value;
  }
  return [...byName.values()].sort((a, b) => b.self - a.self || b.total - a.total || (a.name < b.name ? -1 : 1));
}
