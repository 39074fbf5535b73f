import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { badData } from '@floe/errors';
import { planProfilesByTrace, profileSummaryOf, type ProfileSummary, type TimeRange } from '@floe/query';
import { profilesTable } from '@floe/schema';
import { callerCredentials } from '../auth-plugin.ts';
import { rowsOf } from '../logquery/results.ts';
import type { CallerCredentials, QuerierClient } from '../querier-client.ts';
import { RequestParams } from '../request-params.ts';
import { TRACE_ID_PARAM, storedTraceId } from '../trace-search.ts';
import { MAX_TIME_NS, PROFILE_TIMES, nowNs, parseProfileTime } from './params.ts';
import { queryRouteSchema } from '../openapi.ts';

/**
 * GET /api/profiles/trace/{trace_id} (spec 1, operation profiles_by_trace): summaries of the
 * profiles linked to a trace, `{"traceID": "<32 hex>", "profiles": [ProfileSummary…]}` in time
 * order. A trace without profiles is 200 with an empty list (spec 1, Errors rule 1). Optional
 * from/until (the profile API's time rules) narrow the hour partitions searched; without them
 * every partition is, since a trace id says nothing about when. `limit` caps the summaries.
 */
export interface ProfilesByTraceOptions {
  querier: QuerierClient;
  queryTimeoutMs: number;
}

const DEFAULT_LIMIT = 1000;
const MAX_LIMIT = 10_000;

function optionalRange(p: RequestParams): TimeRange | undefined {
  const from = p.get('from');
  const until = p.get('until');
  if (from === undefined && until === undefined) return undefined;
  const now = nowNs();
  // An open side stays open: int64 bounds, never a guess.
  const startNs = parseProfileTime('from', from, now, 0n);
  const endNs = parseProfileTime('until', until, now, MAX_TIME_NS);
  if (endNs < startNs) throw badData('invalid time range: until must not be before from', { code: 'FLOE_ERR_PROFILE_PARAM' });
  return { startNs, endNs };
}

function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  if (!/^\d+$/.test(raw) || Number(raw) === 0) throw badData(`invalid limit ${JSON.stringify(raw.slice(0, 32))}: expected a positive integer`, { code: 'FLOE_ERR_PROFILE_PARAM' });
  return Math.min(Number(raw), MAX_LIMIT);
}

/**
 * The summaries of the profiles linked to `traceId` (32 hex digits), oldest first: this route's
 * answer, and what the trace query API attaches with include_profiles=true (spec 1, rule 4).
 */
export async function profilesOfTrace(
  opts: ProfilesByTraceOptions,
  creds: CallerCredentials,
  traceId: string,
  range: TimeRange | undefined,
  limit = DEFAULT_LIMIT,
): Promise<ProfileSummary[]> {
  const plan = planProfilesByTrace({ kind: 'profiles_by_trace', traceId, range, limit }, profilesTable);
  const table = await opts.querier.query(creds, { sql: plan.sql, params: plan.params, hints: plan.hints }, opts.queryTimeoutMs);
  return rowsOf(table).map((r) => profileSummaryOf(r, traceId));
}

const schema = queryRouteSchema('profiles', 'profiles_by_trace', 'Summaries of the profiles linked to a trace', {
  pathParameters: [TRACE_ID_PARAM],
  queryParameters: [
    { name: 'from', description: `Earliest profile time (${PROFILE_TIMES}); default none. With until, narrows the partitions searched.` },
    { name: 'until', description: `Latest profile time (${PROFILE_TIMES}); default none.` },
    { name: 'limit', schema: { type: 'integer', minimum: 1 }, description: `Most summaries returned (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}).` },
  ],
  returns: { description: '`{"traceID": "<32 hex>", "profiles": [ProfileSummary…]}`, oldest first; an empty list when the trace has none.' },
});

export const profilesByTracePlugin: FastifyPluginAsync<ProfilesByTraceOptions> = async (app, opts) => {
  app.get('/trace/:trace_id', { schema }, async (req: FastifyRequest<{ Params: { trace_id: string } }>, reply) => {
    const traceId = storedTraceId(req.params.trace_id);
    const p = new RequestParams(req.url);
    const profiles = await profilesOfTrace(opts, callerCredentials(req), traceId, optionalRange(p), parseLimit(p.get('limit')));
    return reply.type('application/json').send({ traceID: traceId, profiles });
  });
};
