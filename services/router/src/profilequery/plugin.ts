import type { FastifyPluginAsync, FastifyReply, FastifyRequest, FastifySchema } from 'fastify';
import { FloeError } from '@floe/errors';
import {
  buildTimeline,
  diffFlamebearer,
  dotGraph,
  mergedStacksOf,
  parseProfileSelector,
  parseTypedProfileSelector,
  planProfileLabelNames,
  planProfileLabelValues,
  planProfileStacks,
  planProfileTimeline,
  planProfileTypes,
  profileTypeInfo,
  sameProfileType,
  singleFlamebearer,
  timelineStepNs,
  type ProfilePlan,
  type PlannerTable,
  type ProfileSelection,
  type TimeRange,
  type Timeline,
} from '@floe/query';
import { profilesTable } from '@floe/schema';
import { callerCredentials } from '../auth-plugin.ts';
import { rowsOf, type Row } from '../logquery/results.ts';
import type { QuerierClient } from '../querier-client.ts';
import { RequestParams, acceptFormBodies, getAndPost } from '../request-params.ts';
import { callerTables, type TableColumns } from '../table-columns.ts';
import { connectQuerierPlugin } from './connect.ts';
import { DOT_MAX_NODES, PROFILE_PARAMS as P, nowNs, parseAggregation, parseMaxNodes, parseRenderFormat, parseWindow, requireParam } from './params.ts';
import { queryRouteSchema, type QueryRouteDoc } from '../openapi.ts';

/**
 * The profile query API under /profilequery (spec 1, "Profile query API"; reference/
 * api-contracts.md §4.1): Pyroscope's legacy HTTP routes render and render-diff (flamebearer
 * JSON), plus Floe's own discovery routes profile-types, label-names and label-values. Each
 * request goes selector → profile IR → SQL (@floe/query) → querier calls with the request's
 * deadline → JSON. GET and POST (form body) both work, as in Pyroscope.
 *
 * Windows: from/until (render-diff: leftFrom… per side) default to the hour before now, for the
 * discovery routes too (the lookback of the log and trace discovery endpoints, spec 1 Limits).
 * Answers: render and render-diff a flamebearer document; profile-types
 * `{"profileTypes":[{ID,name,sampleType,sampleUnit,periodType,periodUnit}]}` (the proto-JSON of
 * Pyroscope's ProfileTypesResponse); label-names and label-values a plain JSON array of strings,
 * as Pyroscope's label-values route answers.
 *
 * Grafana's Pyroscope data source does not call these routes but Pyroscope's Connect API, which
 * connect.ts serves under the same prefix.
 *
 * Auth and the per-tenant query budget come from the enclosing scope (app.ts).
 */
export interface ProfileQueryOptions {
  querier: QuerierClient;
  queryTimeoutMs: number;
  /** A dataset's table columns from the catalog (materialized labels): label matchers and groupings read their columns. */
  tableColumns?: TableColumns;
}

/** What the Connect API under the same prefix needs: the options, and the caller's profiles table (one cache for both surfaces). */
export interface ProfileSurfaceOptions extends ProfileQueryOptions {
  tableOf: (req: FastifyRequest) => Promise<PlannerTable>;
}

/** The documentation of a route (openapi.ts): its window and what it answers. */
/** Timelines a grouped render answers at most: the largest groups by total. */
const MAX_RENDER_GROUPS = 100;

const doc = (id: string, summary: string, returns: string, more: QueryRouteDoc = {}) => queryRouteSchema('profiles', id, summary, { ...more, returns: { description: returns } });
const WINDOW = [P.from, P.until];
const DISCOVERY = [P.selector, ...WINDOW];

export const profileQueryPlugin: FastifyPluginAsync<ProfileQueryOptions> = async (app, opts) => {
  acceptFormBodies(app, 64 * 1024);
  const tableOf = callerTables(profilesTable, 'profiles', opts.tableColumns);
  await app.register(connectQuerierPlugin, { ...opts, tableOf });
  const params = (req: FastifyRequest) => new RequestParams(req.url, req.body);
  const run = async (req: FastifyRequest, plan: ProfilePlan): Promise<Row[]> =>
    rowsOf(await opts.querier.query(callerCredentials(req), { sql: plan.sql, params: plan.params, hints: plan.hints }, opts.queryTimeoutMs));
  const json = (reply: FastifyReply, body: unknown) => reply.type('application/json').send(body);

  /** The optional `query` selector of a discovery route over its window. */
  const discoverySelection = (p: RequestParams): ProfileSelection => {
    const range = parseWindow(p, nowNs());
    const query = p.get('query');
    if (query === undefined) return { range, profileType: undefined, matchers: [] };
    return { range, ...parseProfileSelector(query) };
  };

  const stacksOf = async (req: FastifyRequest, selection: ProfileSelection) => mergedStacksOf(await run(req, planProfileStacks({ kind: 'profile_stacks', selection }, await tableOf(req))));

  // Pyroscope serves its legacy routes under /pyroscope: a client written for it finds them under
  // this mount with that prefix too (render, render-diff, label-values, as reference §4.1 lists).
  const legacy = (path: string, schema: FastifySchema & { operationId?: string; summary?: string }, handler: Parameters<typeof getAndPost>[3]) => {
    getAndPost(app, path, schema, handler);
    getAndPost(app, `/pyroscope${path}`, { ...schema, operationId: `${schema.operationId}_pyroscope_path`, summary: `${schema.summary} (Pyroscope's path)` }, handler);
  };

  const renderParams = [P.query, ...WINDOW, P.maxNodes, P.groupBy, P.aggregation, P.format];
  legacy('/render', doc('pyroscope_render', 'Flamegraph of the profiles a selector matches', 'A flamebearer document with a timeline (and one per groupBy value in `groups`); with format=dot, a Graphviz DOT call graph as text.', { queryParameters: renderParams }), async (req, reply) => {
    const p = params(req);
    const selector = parseTypedProfileSelector(requireParam(p, 'query'));
    const range = parseWindow(p, nowNs());
    const format = parseRenderFormat(p.get('format'));
    const aggregation = parseAggregation(p.get('aggregation'));
    // Pyroscope uses the first groupBy only.
    const groupBy = p.getAll('groupBy').find((g) => g !== '');
    const selection: ProfileSelection = { range, ...selector };
    const table = await tableOf(req);
    if (format === 'dot') {
      const explicit = p.get('max-nodes') ?? p.get('maxNodes');
      const nodes = explicit === undefined ? DOT_MAX_NODES : parseMaxNodes(p);
      const stacks = await stacksOf(req, selection);
      return reply.type('text/plain; charset=utf-8').send(dotGraph(stacks, `${selector.profileType.name}:${selector.profileType.sampleType}`, selector.profileType.sampleUnit, nodes));
    }
    const maxNodes = parseMaxNodes(p);
    const stepNs = timelineStepNs(range);
    const [stacks, slots, grouped] = await Promise.all([
      stacksOf(req, selection),
      run(req, planProfileTimeline({ kind: 'profile_timeline', selection, stepNs, aggregation }, table)),
      groupBy === undefined ? undefined : run(req, planProfileTimeline({ kind: 'profile_timeline', selection, stepNs, aggregation, groupBy }, table)),
    ]);
    const timelineOf = (rows: Row[]) => buildTimeline(rows.map((r) => ({ slot: Number(r.slot), value: Number(r.value) })), range, stepNs);
    let groups: Record<string, Timeline> | null = null;
    if (grouped) {
      const byValue = new Map<string, Row[]>();
      for (const r of grouped) {
        const key = String(r.l0 ?? '');
        const rows = byValue.get(key);
        if (rows) rows.push(r);
        else byValue.set(key, [r]);
      }
      // The largest groups by their total, as many as a UI can draw.
      const totals = [...byValue].map(([value, rows]) => ({ value, rows, total: rows.reduce((a, r) => a + Number(r.value), 0) }));
      const kept = totals.sort((a, b) => b.total - a.total).slice(0, MAX_RENDER_GROUPS);
      groups = Object.fromEntries(kept.map(({ value, rows }) => [value, timelineOf(rows)]));
    }
    return json(reply, singleFlamebearer(stacks, selector.profileType, timelineOf(slots), maxNodes, groups));
  });

  // Pyroscope names each side's parameters leftQuery/leftFrom/leftUntil and right…; a shared
  // query/from/until fills in whatever a side leaves out (the same selector over two windows is
  // the usual diff).
  const side = (name: 'left' | 'right') => ['Query', 'From', 'Until'].map((p) => ({ name: `${name}${p}`, description: `${p === 'Query' ? 'Profile selector' : p === 'From' ? 'Start' : 'End'} of the ${name} side; default ${p.toLowerCase()}.` }));
  const diffParams = [...side('left'), ...side('right'), { ...P.selector, description: 'Profile selector of each side that names none.' }, ...WINDOW, P.maxNodes];
  legacy('/render-diff', doc('pyroscope_render_diff', 'Differential flamegraph of two selections', 'A diff flamebearer document.', { queryParameters: diffParams }), async (req, reply) => {
    const p = params(req);
    const now = nowNs();
    const shared = { from: p.get('from'), until: p.get('until') };
    const side = (name: 'left' | 'right'): { range: TimeRange; selector: ReturnType<typeof parseTypedProfileSelector> } => {
      const query = p.get(`${name}Query`) ?? p.get('query');
      if (query === undefined) throw new FloeError('bad_data', `missing ${name}Query parameter`, { code: 'FLOE_ERR_PROFILE_PARAM' });
      return { selector: parseTypedProfileSelector(query), range: parseWindow(p, now, { from: `${name}From`, until: `${name}Until` }, shared) };
    };
    const left = side('left');
    const right = side('right');
    if (!sameProfileType(left.selector.profileType, right.selector.profileType)) {
      throw new FloeError('bad_data', 'leftQuery and rightQuery must select the same profile type', { code: 'FLOE_ERR_PROFILE_PARAM' });
    }
    const maxNodes = parseMaxNodes(p);
    const [l, r] = await Promise.all([stacksOf(req, { range: left.range, ...left.selector }), stacksOf(req, { range: right.range, ...right.selector })]);
    return json(reply, diffFlamebearer(l, r, left.selector.profileType, maxNodes));
  });

  getAndPost(app, '/profile-types', doc('pyroscope_profile_types', 'Profile types in the window', '`{"profileTypes":[{ID, name, sampleType, sampleUnit, periodType, periodUnit}]}`.', { queryParameters: DISCOVERY }), async (req, reply) => {
    const rows = await run(req, planProfileTypes({ kind: 'profile_types', selection: discoverySelection(params(req)) }, await tableOf(req)));
    return json(reply, { profileTypes: rows.map((r) => profileTypeInfo(String(r.id))) });
  });

  getAndPost(app, '/label-names', doc('pyroscope_label_names', 'Label names of the profiles in the window', 'A JSON array of names.', { queryParameters: DISCOVERY }), async (req, reply) => {
    const rows = await run(req, planProfileLabelNames({ kind: 'profile_label_names', selection: discoverySelection(params(req)) }, await tableOf(req)));
    return json(reply, rows.map((r) => String(r.name)));
  });

  const label = { name: 'label', required: true, description: 'Label name (non-empty).' };
  legacy('/label-values', doc('pyroscope_label_values', 'Values of one label of the profiles in the window', 'A JSON array of values.', { queryParameters: [label, ...DISCOVERY] }), async (req, reply) => {
    const p = params(req);
    const label = p.get('label');
    if (label === undefined) throw new FloeError('bad_data', 'missing label parameter: label-values needs a non-empty label name', { code: 'FLOE_ERR_PROFILE_PARAM' });
    const rows = await run(req, planProfileLabelValues({ kind: 'profile_label_values', selection: discoverySelection(p), label }, await tableOf(req)));
    return json(reply, rows.map((r) => String(r.value)));
  });
};
