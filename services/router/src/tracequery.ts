import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { badData, notFound } from '@floe/errors';
import {
  ResourceSpansSchema,
  TempoTraceByIDResponseSchema,
  TempoTraceSchema,
  create,
  toBinary,
  toJson,
  type ResourceSpans,
} from '@floe/proto';
import { tableRows, type QuerierClient } from './querier-client.ts';
import { callerCredentials } from './auth-plugin.ts';
import { rebuildTrace, type SpanRow } from './trace-rebuild.ts';

/**
 * Tempo-compatible trace API under /tracequery. Grafana's Tempo data source asks
 * /api/v2/traces/{id} with `Accept: application/protobuf` and falls back to /api/traces/{id} on
 * 404 (reference/api-contracts.md §0 S4, §3.2), so both answer protobuf or JSON by Accept.
 */
export interface TraceQueryOptions {
  querier: QuerierClient;
  queryTimeoutMs: number;
}

const TRACE_ID_RE = /^[0-9a-fA-F]{1,32}$/;

function parseTraceId(raw: string): string {
  if (!TRACE_ID_RE.test(raw)) throw badData(`invalid trace id ${JSON.stringify(raw.slice(0, 64))}: expected up to 32 hex digits`);
  return raw.toLowerCase().padStart(32, '0');
}

/** Optional start/end in unix seconds; they only prune the hour partitions scanned. */
function parseSeconds(name: string, raw: unknown): bigint | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string' || !/^\d{1,11}$/.test(raw)) throw badData(`invalid ${name}: expected unix seconds`);
  return BigInt(raw) * 1_000_000_000n;
}

/**
 * Every stored column the rebuild reads. A lookup decodes whole row groups of each column it
 * selects (bench/trace-by-id), so the two derived ones (`timestamp`, `duration_nano`) stay out;
 * and the spans are put in start order here, since a DuckDB sort of a handful of wide rows costs
 * about a millisecond.
 */
const TRACE_BY_ID_SQL = 'SELECT * EXCLUDE ("timestamp", duration_nano) FROM traces WHERE trace_id = $1';

const byStart = (a: SpanRow, b: SpanRow) => (a.start_time_unix_nano < b.start_time_unix_nano ? -1 : a.start_time_unix_nano > b.start_time_unix_nano ? 1 : 0);

const wantsProtobuf = (req: FastifyRequest) => (req.headers.accept ?? '').includes('application/protobuf');

export const traceQueryPlugin: FastifyPluginAsync<TraceQueryOptions> = async (app, opts) => {
  app.get('/api/echo', async (_req, reply) => reply.type('text/plain').send('echo'));

  const lookup = async (req: FastifyRequest<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>) => {
    const traceId = parseTraceId(req.params.id);
    const start = parseSeconds('start', req.query.start);
    const end = parseSeconds('end', req.query.end);
    if (start !== undefined && end !== undefined && end < start) throw badData('invalid range: end is before start');
    const hints: { trace_id: string; start_ns?: string; end_ns?: string } = { trace_id: traceId };
    if (start !== undefined) hints.start_ns = start.toString();
    if (end !== undefined) hints.end_ns = (end + 999_999_999n).toString();
    const table = await opts.querier.query(callerCredentials(req), { sql: TRACE_BY_ID_SQL, params: [traceId], hints }, opts.queryTimeoutMs);
    return rebuildTrace(tableRows<SpanRow>(table).sort(byStart));
  };

  app.get<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>('/api/traces/:id', async (req, reply) => {
    const batches = await lookup(req);
    if (batches.length === 0) throw notFound('trace not found');
    if (wantsProtobuf(req)) return sendProto(reply, toBinary(TempoTraceSchema, create(TempoTraceSchema, { resourceSpans: batches })));
    return reply.type('application/json').send({ batches: batches.map(spanJson) });
  });

  app.get<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>('/api/v2/traces/:id', async (req, reply) => {
    const batches = await lookup(req);
    if (batches.length === 0) throw notFound('trace not found');
    if (wantsProtobuf(req)) {
      return sendProto(reply, toBinary(TempoTraceByIDResponseSchema, create(TempoTraceByIDResponseSchema, { trace: { resourceSpans: batches } })));
    }
    return reply.type('application/json').send({ trace: { resourceSpans: batches.map(spanJson) } });
  });
};

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
