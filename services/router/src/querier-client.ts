import { ERROR_KIND_METADATA, FloeError, kindFromGrpc } from '@floe/errors';
import { signTicket } from '@floe/auth';
import { findTraceById, flightDoGet, metadataGetter, type QuerierCalls } from '@floe/flight';
import type { Metadata } from '@grpc/grpc-js';
import type { TempoTraceByIDResponse } from '@floe/proto';
import type { FileOrder } from '@floe/query';
import type { Table } from 'apache-arrow';

/**
 * How the router asks a querier for rows: an Arrow Flight DoGet whose ticket is the JSON form
 * `{sql, params, hints}` (README: "Flight tickets"). The caller's own credentials travel in the
 * gRPC metadata, so the querier authorises the request exactly as the router did.
 */
export interface QueryRequest {
  sql: string;
  params?: Array<string | number | boolean | null>;
  /**
   * Pruning hints: they only narrow which files are opened (and `file_order`, in which order),
   * never the result. `per_file`: the
   * planner's per-file form of the query (@floe/query PlannedQuery), from which a querier may
   * keep and answer each file's part.
   */
  hints?: { trace_id?: string; start_ns?: string; end_ns?: string; per_file?: { sql: string; params: ReadonlyArray<string | number | boolean | null> }; file_order?: FileOrder };
}

export interface CallerCredentials {
  authorization: string;
  tenant: string;
  dataset: string | undefined;
  /**
   * The caller has no key to forward: a user signed in by a session cookie (the router has checked
   * the membership), or the router's own ruler evaluating the tenant's rules. The querier is shown
   * the internal service key for this tenant and dataset instead (see AuthDeps.serviceKey).
   */
  asService?: boolean;
  /** The router's span of the request (W3C traceparent), which the querier's span continues. */
  traceparent?: string;
  /** Aborts when the caller went away: the querier drops or stops the work (requestSignal). */
  signal?: AbortSignal;
}

/** The credentials of the router's own reads of a tenant's dataset (the ruler's queries). */
export const serviceCaller = (tenant: string, dataset: string): CallerCredentials => ({ authorization: '', tenant, dataset, asService: true });

export interface TraceByIdRequest {
  /** 32 lower-case hex digits. */
  traceId: string;
  /** Unix nanoseconds bounding the hour partitions searched. */
  startNs?: bigint;
  endNs?: bigint;
}

export interface QuerierClient {
  query(creds: CallerCredentials, req: QueryRequest, deadlineMs: number): Promise<Table>;
  /** Tempo's FindTraceByID on the querier (its id-blocks read path). */
  traceById(creds: CallerCredentials, req: TraceByIdRequest, deadlineMs: number): Promise<TempoTraceByIDResponse>;
}

/** The ticket bytes of a query (signed with `internalKey` when there is one). */
function ticketOf(creds: CallerCredentials, req: QueryRequest, internalKey: string): Buffer {
  const params = req.params ?? [];
  const ticket: Record<string, unknown> = { sql: req.sql, params, hints: req.hints ?? {} };
  if (internalKey) ticket.sig = signTicket(internalKey, { tenant: creds.tenant, dataset: creds.dataset ?? '', sql: req.sql, params, hints: req.hints ?? {} });
  return Buffer.from(JSON.stringify(ticket));
}

function callerMetadata(creds: CallerCredentials, internalKey: string): Record<string, string> {
  const metadata: Record<string, string> = { authorization: creds.asService ? serviceAuthorization(internalKey) : creds.authorization, 'x-tenant-id': creds.tenant };
  if (creds.dataset) metadata['x-dataset-id'] = creds.dataset;
  if (creds.traceparent) metadata.traceparent = creds.traceparent;
  return metadata;
}

function serviceAuthorization(internalKey: string): string {
  if (!internalKey) throw new FloeError('unavailable', 'queries from a session or the ruler need auth.internal_service_key (shared by the router and its queriers)', { code: 'FLOE_ERR_NO_SERVICE_KEY' });
  return `Bearer ${internalKey}`;
}

function traceMetadata(creds: CallerCredentials, req: TraceByIdRequest, internalKey: string): Record<string, string> {
  const metadata = callerMetadata(creds, internalKey);
  if (req.startNs !== undefined) metadata['x-floe-start-ns'] = req.startNs.toString();
  if (req.endNs !== undefined) metadata['x-floe-end-ns'] = req.endNs.toString();
  return metadata;
}

/**
 * Queriers over Flight, taken in turn. `internalKey` signs the planner's SQL so the querier may
 * run it on its warm instance instead of a per-query sandbox (empty: unsigned, always sandboxed).
 */
export function createQuerierClient(urls: () => readonly string[], internalKey = ''): QuerierClient {
  let next = 0;
  const pick = (): string => {
    const all = urls();
    if (all.length === 0) throw new FloeError('unavailable', 'no querier available', { code: 'FLOE_ERR_NO_QUERIER' });
    return all[next++ % all.length]!;
  };
  return clientOver(
    {
      doGet: async (metadata, ticket, deadlineMs, signal) => flightDoGet({ url: pick(), ticket, metadata, deadlineMs, ...(signal ? { signal } : {}) }),
      findTraceById: async (metadata, traceId, deadlineMs, signal) => findTraceById({ url: pick(), traceId, metadata, deadlineMs, ...(signal ? { signal } : {}) }),
    },
    internalKey,
  );
}

/**
 * The querier of this process (`floe all`, with no router.querier_urls configured), called
 * without gRPC: the same tickets, metadata and errors as over Flight, and the answer's Arrow
 * table itself instead of a copy through IPC.
 */
export function createInProcessQuerierClient(querier: QuerierCalls, internalKey = ''): QuerierClient {
  return clientOver(querier, internalKey);
}

function clientOver(calls: QuerierCalls, internalKey: string): QuerierClient {
  return {
    query: async (creds, req, deadlineMs) => calls.doGet(callerMetadata(creds, internalKey), ticketOf(creds, req, internalKey), deadlineMs, creds.signal).catch(rethrowFromQuerier),
    traceById: async (creds, req, deadlineMs) => calls.findTraceById(traceMetadata(creds, req, internalKey), Buffer.from(req.traceId, 'hex'), deadlineMs, creds.signal).catch(rethrowFromQuerier),
  };
}

const rethrowFromQuerier = (err: unknown): never => {
  throw fromQuerierError(err);
};

/** A querier's gRPC status as the FloeError the router answers with (deadlines are 504). */
function fromQuerierError(err: unknown): unknown {
  const { code, metadata } = err as { code?: unknown; metadata?: Metadata };
  if (typeof code !== 'number') return err;
  const get = metadata ? metadataGetter(metadata) : () => undefined;
  const kind = kindFromGrpc(code, get(ERROR_KIND_METADATA));
  const details = (err as { details?: string }).details ?? 'querier error';
  // A querier that sheds load (its admission: too many outstanding requests) says when to retry.
  const retryAfter = get('retry-after');
  if (kind === 'timeout') return new FloeError('timeout', 'query timed out', { code: 'FLOE_ERR_QUERY_TIMEOUT', cause: err });
  // UNAVAILABLE without the querier's kind trailer is the transport's (no querier answered); with
  // it, the querier's own refusal (a table it cannot read), whose message says what to do.
  if (kind === 'unavailable' && get(ERROR_KIND_METADATA) === undefined) return new FloeError('unavailable', 'querier unavailable', { code: 'FLOE_ERR_QUERIER_UNAVAILABLE', cause: err });
  if (kind !== 'internal') return new FloeError(kind, details, { cause: err, ...(retryAfter ? { headers: { 'Retry-After': retryAfter } } : {}) });
  return err;
}
