import type * as grpc from '@grpc/grpc-js';
import { withScopeOrgId } from '@floe/auth';
import { FloeError } from '@floe/errors';
import {
  create,
  grpcServiceDefinition,
  Querier,
  TempoSearchResponseSchema,
  TempoSearchTagsResponseSchema,
  TempoSearchTagsV2ResponseSchema,
  TempoTraceByIDResponseSchema,
  type TempoSearchRequest,
  type TempoSearchResponse,
  type TempoSearchTagsRequest,
  type TempoSearchTagsResponse,
  type TempoSearchTagsV2Response,
  type TempoTraceByIDRequest,
  type TempoTraceByIDResponse,
} from '@floe/proto';
import { planTraceSearch, tempoSearchOf, tempoSearchResponse, traceSearchResults } from '@floe/query';
import { tracesTable } from '@floe/schema';
import { callSignal, metadataGetter, remainingMs, type ExtraService } from '@floe/flight';
import type { Logger } from '@floe/telemetry';
import type { QueryHandler } from './query-handler.ts';
import type { TraceLookup } from './trace-lookup.ts';
import { callError } from './call-error.ts';
import type { Schedule } from './query-scheduler.ts';
import type { HeldResults } from './held-results.ts';
import { encodedAnswers, serveHeld, type TenantAnswer } from './held-answers.ts';

export interface TempoServiceDeps {
  handler: QueryHandler;
  traces: TraceLookup;
  /** querier.query_timeout: the longest a lookup may run, whatever the caller's deadline. */
  timeoutMs: number;
  log: Logger;
  /** The querier's admission of queries (query-scheduler.ts). */
  schedule: Schedule;
  /** The answers the querier holds for unread callers (held-results.ts): a tenant holding its share is refused before its lookup runs. */
  held: HeldResults;
}

const NS = /^\d{1,20}$/;

function boundNs(name: string, raw: string | undefined): bigint | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!NS.test(raw)) throw new FloeError('bad_data', `invalid ${name}: expected unix nanoseconds`);
  return BigInt(raw);
}


/**
 * FindTraceByID's work: the caller's metadata (by name), the requested id, the caller's time left
 * and `signal`, which aborts when the caller went away (a lookup still waiting for its turn leaves
 * the queue, a running scan stops); answers with the caller's tenant; rejects with a callError.
 */
export type TraceFinder = (get: (name: string) => string | undefined, id: Uint8Array, callerMs: number | undefined, signal?: AbortSignal) => Promise<TenantAnswer<TempoTraceByIDResponse>>;

export function traceByIdFinder(deps: TempoServiceDeps): TraceFinder {
  const find = async (get: (name: string) => string | undefined, id: Uint8Array, callerMs: number | undefined, signal: AbortSignal | undefined): Promise<TenantAnswer<TempoTraceByIDResponse>> => {
    const ctx = await deps.handler.authenticate(withScopeOrgId(get));
    if (id.length === 0 || id.length > 16) throw new FloeError('bad_data', 'invalid trace id: expected 1 to 16 bytes');
    const traceId = Buffer.from(id).toString('hex').padStart(32, '0');
    const startNs = boundNs('x-floe-start-ns', get('x-floe-start-ns'));
    const endNs = boundNs('x-floe-end-ns', get('x-floe-end-ns'));
    deps.held.admit(ctx.tenant);
    const answer = await deps.schedule(
      ctx.tenant,
      callerMs,
      (leftMs) => {
        const timeoutMs = Math.max(1, Math.min(deps.timeoutMs, leftMs ?? Infinity));
        return deps.traces.find({ tenant: ctx.tenant, dataset: ctx.dataset, traceId, startNs, endNs, timeoutMs, signal });
      },
      signal,
    );
    return { tenant: ctx.tenant, answer };
  };
  return (get, id, callerMs, signal) =>
    find(get, id, callerMs, signal).catch((err: unknown) => {
      throw callError(err, deps.log, 'FindTraceByID failed');
    });
}

/** SearchRecent's work, like TraceFinder's: the caller's metadata, the request, the caller's time left and its going away. */
export type TraceSearcher = (get: (name: string) => string | undefined, req: TempoSearchRequest, callerMs: number | undefined, signal?: AbortSignal) => Promise<TenantAnswer<TempoSearchResponse>>;

export function traceSearcher(deps: Pick<TempoServiceDeps, 'handler' | 'log' | 'schedule' | 'held'>): TraceSearcher {
  const search = async (get: (name: string) => string | undefined, req: TempoSearchRequest, callerMs: number | undefined, signal: AbortSignal | undefined) => {
    const ctx = await deps.handler.authenticate(withScopeOrgId(get));
    const ir = tempoSearchOf(req, BigInt(Date.now()) * 1_000_000n);
    const plan = planTraceSearch(ir, tracesTable);
    // The planner's SQL runs as any caller's ticket does (sandboxed, the caller's tables only).
    const ticket = Buffer.from(JSON.stringify({ sql: plan.sql, params: plan.params, hints: plan.hints }));
    deps.held.admit(ctx.tenant);
    const table = await deps.schedule(ctx.tenant, callerMs, (leftMs) => deps.handler.run(ctx, ticket, leftMs, signal), signal);
    const rows: Array<Record<string, unknown>> = [];
    for (const r of table) rows.push((r as { toJSON(): Record<string, unknown> }).toJSON());
    return { tenant: ctx.tenant, answer: tempoSearchResponse(traceSearchResults(ir, rows)) };
  };
  return (get, req, callerMs, signal) =>
    search(get, req, callerMs, signal).catch((err: unknown) => {
      throw callError(err, deps.log, 'SearchRecent failed');
    });
}

/** Spec 1, "Internal querier protocol": the tag calls of this protocol name a fixed set. */
const STATIC_TAGS = { resource: ['service.name'], intrinsic: ['name', 'status'] };

/**
 * Tempo's Querier service on the querier's Flight port (spec 1, "Internal querier protocol").
 * Every call authenticates like a Flight call (bearer key; the tenant from X-Tenant-ID or
 * X-Scope-OrgID) and reads the caller's tenant and dataset only. FindTraceByID reads one trace
 * (`x-floe-start-ns` / `x-floe-end-ns` metadata bound the hours searched); SearchRecent runs the
 * router's search; SearchTags and SearchTagsV2 name the fixed tags the spec lists. SearchBlock
 * and the tag value calls answer UNIMPLEMENTED (grpc-js's default for a missing handler).
 */
export function tempoQuerierService(o: {
  find: TraceFinder;
  search: TraceSearcher;
  authenticate: (get: (name: string) => string | undefined) => Promise<unknown>;
  /** What FindTraceByID and SearchRecent answers are charged to until their callers have them (held-answers.ts). */
  held: HeldResults;
  /** The longest an answer is held for a caller that does not read it (querier.query_timeout). */
  timeoutMs: number;
  log: Logger;
}): ExtraService {
  const { find, search, authenticate, held, timeoutMs, log } = o;
  const authenticated = <Req, Res>(what: string, answer: (req: Req) => Res) => (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>) => {
    authenticate(withScopeOrgId(metadataGetter(call.metadata))).then(
      () => callback(null, answer(call.request)),
      (err: unknown) => callback(callError(err, log, what)),
    );
  };
  return {
    // Both answers go out encoded once, the bytes charged to the held results (serveHeld).
    definition: encodedAnswers(grpcServiceDefinition(Querier), ['FindTraceByID', 'SearchRecent']),
    implementation: {
      FindTraceByID: (call: grpc.ServerUnaryCall<TempoTraceByIDRequest, Uint8Array>, callback: grpc.sendUnaryData<Uint8Array>) => {
        const answered = find(metadataGetter(call.metadata), call.request.traceID, remainingMs(call), callSignal(call));
        serveHeld({ held, schema: TempoTraceByIDResponseSchema, timeoutMs, log, what: 'FindTraceByID failed' }, call, callback, answered);
      },
      SearchRecent: (call: grpc.ServerUnaryCall<TempoSearchRequest, Uint8Array>, callback: grpc.sendUnaryData<Uint8Array>) => {
        const answered = search(metadataGetter(call.metadata), call.request, remainingMs(call), callSignal(call));
        serveHeld({ held, schema: TempoSearchResponseSchema, timeoutMs, log, what: 'SearchRecent failed' }, call, callback, answered);
      },
      SearchTags: authenticated<TempoSearchTagsRequest, TempoSearchTagsResponse>('SearchTags failed', () =>
        create(TempoSearchTagsResponseSchema, { tagNames: [...STATIC_TAGS.resource, ...STATIC_TAGS.intrinsic] }),
      ),
      SearchTagsV2: authenticated<TempoSearchTagsRequest, TempoSearchTagsV2Response>('SearchTagsV2 failed', () =>
        create(TempoSearchTagsV2ResponseSchema, { scopes: Object.entries(STATIC_TAGS).map(([name, tags]) => ({ name, tags })) }),
      ),
    },
  };
}
