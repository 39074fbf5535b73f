import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { FloeError } from '@floe/errors';
import { cancelDeleteRequest, createDeleteRequest, listDeleteRequests, type Db, type DeleteRequest } from '@floe/meta';
import { logDeletionOfRequest, planLogDeletion } from '@floe/query';
import { logsTable } from '@floe/schema';
import { queryRouteSchema, type ParameterDoc } from '../openapi.ts';
import { LOKI_PREFIXES, RequestParams, nowNs, parseTime } from './params.ts';
import { acceptFormBodies } from '../request-params.ts';

/**
 * Loki's log deletion API (POST, GET and DELETE /loki/api/v1/delete, also under /api/v1 of the
 * /logquery mount): a request names a LogQL log query and a window; from the moment it is recorded
 * queries leave its lines out (pending-deletions.ts), and once it is past
 * compactor.delete_request_cancel_period the compactor rewrites the files that hold them and marks
 * it processed. Until a compactor takes it up it can be cancelled. Keys need the `delete` scope,
 * which only a tenant admin may grant; a request deletes from the caller's dataset only.
 */
export interface LogDeleteOptions {
  db: Db;
  /** Called after a request is recorded or cancelled, so the caller's queries see it at once. */
  changed: (tenant: string, dataset: string) => void;
}

const TABLE = 'logs';
/**
 * Requests of a dataset not processed yet: every log query leaves out the lines of each, so their
 * number is what a query's plan grows by. Past it a request waits for the compactor to catch up.
 */
export const MAX_PENDING_DELETES = 100;
const NS_PER_MS = 1_000_000n;

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_DELETE_REQUEST' });

const PARAMS = {
  query: { name: 'query', required: true, description: 'LogQL log query (a stream selector with optional filters) selecting the lines to delete.' },
  start: { name: 'start', required: true, description: 'Start of the window: unix seconds or RFC3339.' },
  end: { name: 'end', description: 'End of the window, included: unix seconds or RFC3339; default now. Not in the future.' },
  maxInterval: { name: 'max_interval', description: "Accepted for Loki's clients and not needed: a request is applied to its whole window in one commit." },
  requestId: { name: 'request_id', required: true, description: 'The request to cancel, as listed by GET.' },
  force: { name: 'force', description: "Accepted for Loki's clients: a request is never partly applied, so there is nothing to force." },
} satisfies Record<string, ParameterDoc>;

/** A delete request as Loki lists it: times in unix seconds, status received or processed. */
function lokiDeleteRequest(r: DeleteRequest) {
  return {
    request_id: r.id,
    start_time: r.startMs / 1000,
    end_time: r.endMs / 1000,
    query: r.query,
    status: r.processedAt ? 'processed' : 'received',
    created_at: r.createdAt.getTime() / 1000,
  };
}

export const logDeletePlugin: FastifyPluginAsync<LogDeleteOptions> = async (app, opts) => {
  // Loki's clients send the parameters in the query string; a form body is read like one.
  acceptFormBodies(app, 64 * 1024);
  const windowOf = (p: RequestParams) => {
    const now = nowNs();
    const rawStart = p.get('start');
    if (rawStart === undefined) throw bad('start time not set');
    const startNs = parseTime('start', rawStart, now);
    const endNs = parseTime('end', p.get('end'), now);
    if (endNs > now) throw bad('deletes in the future are not allowed');
    if (startNs > endNs) throw bad("start time can't be greater than end time");
    if (startNs < 0n) throw bad('start time is before 1970');
    const ms = (ns: bigint) => Number(ns / NS_PER_MS);
    return { startMs: ms(startNs), endMs: ms(endNs) };
  };

  const add = async (req: FastifyRequest, reply: FastifyReply) => {
    const p = new RequestParams(req.url, req.body);
    const query = p.get('query');
    if (query === undefined || query.trim() === '') throw bad('query not set');
    const { startMs, endMs } = windowOf(p);
    // Planned as the compactor will plan it: what cannot be is refused now, not at processing.
    planLogDeletion(logDeletionOfRequest(query, startMs, endMs), logsTable);
    const { tenant, dataset } = req.tenant!;
    const pending = await listDeleteRequests(opts.db, tenant, dataset, TABLE, { pendingOnly: true });
    if (pending.length >= MAX_PENDING_DELETES) {
      throw bad(`the dataset has ${pending.length} delete requests the compactor has not processed yet, the most it may have: wait for them or cancel some`);
    }
    const created = await createDeleteRequest(opts.db, { tenantId: tenant, datasetId: dataset, table: TABLE, query, startMs, endMs });
    opts.changed(tenant, dataset);
    req.log.info({ tenant, dataset, request: created.id, query, startMs, endMs }, 'delete request recorded');
    // Loki answers 204 without a body; the id is in a header for clients that track it.
    return reply.code(204).header('x-floe-delete-request-id', created.id).send();
  };

  for (const [prefix, idPrefix] of Object.entries(LOKI_PREFIXES)) {
    const path = `${prefix}/delete`;
    const summary = (s: string) => (idPrefix ? `${s} (Loki's path)` : s);
    const created = { response: { 204: { type: 'null', description: 'Recorded; the header X-Floe-Delete-Request-Id names it' } } };
    app.post(path, { schema: { ...queryRouteSchema('logs', `${idPrefix}create_log_delete_request`, summary('Request deletion of log lines'), { queryParameters: [PARAMS.query, PARAMS.start, PARAMS.end, PARAMS.maxInterval] }), ...created } }, add);
    app.put(path, { schema: { ...queryRouteSchema('logs', `${idPrefix}put_log_delete_request`, summary('Request deletion of log lines'), { queryParameters: [PARAMS.query, PARAMS.start, PARAMS.end, PARAMS.maxInterval] }), ...created } }, add);

    app.get(path, { schema: queryRouteSchema('logs', `${idPrefix}list_log_delete_requests`, summary('Delete requests of the dataset'), { returns: { description: 'A JSON array of `{request_id, start_time, end_time, query, status, created_at}` (times in unix seconds; status `received` or `processed`), oldest first.' } }) }, async (req, reply) => {
      const { tenant, dataset } = req.tenant!;
      const list = await listDeleteRequests(opts.db, tenant, dataset, TABLE);
      return reply.type('application/json').send(list.map(lokiDeleteRequest));
    });

    app.delete(path, { schema: { ...queryRouteSchema('logs', `${idPrefix}cancel_log_delete_request`, summary('Cancel a delete request'), { queryParameters: [PARAMS.requestId, PARAMS.force] }), response: { 204: { type: 'null', description: 'Cancelled' } } } }, async (req, reply) => {
      const p = new RequestParams(req.url, undefined);
      const id = p.get('request_id');
      if (id === undefined) throw bad('request_id not set');
      const { tenant, dataset } = req.tenant!;
      const outcome = await cancelDeleteRequest(opts.db, tenant, dataset, TABLE, id);
      if (outcome === 'not_found') throw new FloeError('not_found', 'could not find delete request with given id', { code: 'FLOE_ERR_DELETE_REQUEST' });
      if (outcome === 'started') throw bad('deletion of request which is in process or already processed is not allowed');
      opts.changed(tenant, dataset);
      return reply.code(204).send();
    });
  }
};

