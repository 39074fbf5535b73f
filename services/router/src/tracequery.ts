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
import type { QuerierClient } from './querier-client.ts';
import { callerCredentials } from './auth-plugin.ts';

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

const wantsProtobuf = (req: FastifyRequest) => (req.headers.accept ?? '').includes('application/protobuf');

export const traceQueryPlugin: FastifyPluginAsync<TraceQueryOptions> = async (app, opts) => {
  app.get('/api/echo', async (_req, reply) => reply.type('text/plain').send('echo'));

  const lookup = async (req: FastifyRequest<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>) => {
    const traceId = parseTraceId(req.params.id);
    const start = parseSeconds('start', req.query.start);
    const end = parseSeconds('end', req.query.end);
    if (start !== undefined && end !== undefined && end < start) throw badData('invalid range: end is before start');
    const endNs = end === undefined ? undefined : end + 999_999_999n;
    const res = await opts.querier.traceById(callerCredentials(req), { traceId, startNs: start, endNs }, opts.queryTimeoutMs);
    return res.trace?.resourceSpans ?? [];
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
