import type { FastifyInstance, FastifyRequest } from 'fastify';
import { compress } from 'snappyjs';
import { FloeError } from '@floe/errors';
import { BinaryWriter, PromLabelMatcher_Type, PromReadRequest_ResponseType, PromReadRequestSchema, WireType, fromBinary, type PromReadRequest } from '@floe/proto';
import { parsePromQL, promLabelsKey } from '@floe/query';
import { snappyUncompress } from '@floe/runtime';
import type { MetricReader } from './data.ts';
import { queryRouteSchema } from '../openapi.ts';

/**
 * Prometheus remote read (`POST /api/v1/read`), as Mimir, Cortex and Thanos serve it: a Prometheus
 * server with a `remote_read` entry reads Floe's series as if they were its own, for ranges its
 * TSDB does not hold (or all, with `read_recent`). The request is a snappy-compressed protobuf
 * ReadRequest; each query's matchers select series as a PromQL selector does (the same names,
 * labels and reads as /query), and its samples in [start, end] come back in one snappy-compressed
 * ReadResponse (the SAMPLES response type; a client that accepts only streamed XOR chunks is
 * refused). Staleness markers are sent as Prometheus's stale NaN.
 */

/** Most compressed bytes a request may hold (a handful of selectors), and their decompressed size. */
const REMOTE_READ_BODY_LIMIT = 1024 * 1024;
const MAX_DECOMPRESSED = 8 * 1024 * 1024;
/** Queries one request may carry (Prometheus sends one). */
const MAX_QUERIES = 32;
/**
 * Samples one answer may hold by default (router.remote_read_max_samples; about 20 bytes each
 * before compression, all of it built in memory): more is 422, as past Prometheus's
 * --storage.remote.read-sample-limit.
 */
export const REMOTE_READ_MAX_SAMPLES = 5_000_000;

const OPS: Record<PromLabelMatcher_Type, string> = {
  [PromLabelMatcher_Type.EQ]: '=',
  [PromLabelMatcher_Type.NEQ]: '!=',
  [PromLabelMatcher_Type.RE]: '=~',
  [PromLabelMatcher_Type.NRE]: '!~',
};
const LEGACY_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const badRequest = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_REMOTE_READ' });

/** A remote read query's matchers as the PromQL selector they are, parsed (and so checked) by the PromQL parser. */
function selectorText(matchers: PromReadRequest['queries'][number]['matchers']): string {
  const parts = matchers.map((m) => {
    const op = OPS[m.type];
    if (op === undefined) throw badRequest(`matcher type ${m.type} is not one of EQ, NEQ, RE, NRE`);
    // Names beyond the classic alphabet are quoted, as Prometheus 3 writes them.
    return `${LEGACY_NAME.test(m.name) ? m.name : JSON.stringify(m.name)}${op}${JSON.stringify(m.value)}`;
  });
  return `{${parts.join(', ')}}`;
}

/** The request's ReadRequest, or a 400 naming what is wrong with it. */
function readRequestOf(req: FastifyRequest): PromReadRequest {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'snappy') throw badRequest(`remote read bodies are snappy-compressed; Content-Encoding ${JSON.stringify(String(encoding))} is not taken`);
  if (!Buffer.isBuffer(req.body)) throw badRequest('remote read takes a snappy-compressed protobuf ReadRequest (Content-Type: application/x-protobuf)');
  const bytes = snappyUncompress(req.body, MAX_DECOMPRESSED);
  try {
    return fromBinary(PromReadRequestSchema, bytes);
  } catch (err) {
    throw badRequest(`body is not a protobuf prometheus.ReadRequest: ${(err as Error).message}`);
  }
}

/** A request's millisecond time as a number, refused beyond what one holds exactly. */
function msOf(ms: bigint, i: number, field: string): number {
  if (ms > BigInt(Number.MAX_SAFE_INTEGER) || ms < BigInt(Number.MIN_SAFE_INTEGER)) throw badRequest(`query ${i}: ${field} is out of range`);
  return Number(ms);
}

/** Registers POST /read on `scope` (the /api/v1 scope of the metric query API). */
export function remoteReadRoute(scope: FastifyInstance, openReader: (req: FastifyRequest) => MetricReader, maxSamples = REMOTE_READ_MAX_SAMPLES): void {
  scope.addContentTypeParser('application/x-protobuf', { parseAs: 'buffer', bodyLimit: REMOTE_READ_BODY_LIMIT }, (_req, body, done) => done(null, body));
  const schema = queryRouteSchema('metrics', 'prometheus_remote_read', 'Prometheus remote read: the samples of each query’s series in its window', {
    rawBody: { mediaTypes: ['application/x-protobuf'], description: 'A snappy-compressed protobuf prometheus.ReadRequest (Content-Encoding: snappy), as a Prometheus server’s remote_read sends it.' },
    returns: { description: 'A snappy-compressed protobuf prometheus.ReadResponse, one QueryResult per query in order.' },
  });
  scope.post('/read', { schema }, async (req, reply) => {
    const request = readRequestOf(req);
    const types = request.acceptedResponseTypes;
    if (types.length > 0 && !types.includes(PromReadRequest_ResponseType.SAMPLES)) {
      throw badRequest('Floe answers remote read with SAMPLES only; the request accepts only STREAMED_XOR_CHUNKS');
    }
    if (request.queries.length > MAX_QUERIES) throw badRequest(`at most ${MAX_QUERIES} queries per remote read request, got ${request.queries.length}`);
    const reader = openReader(req);
    const response = new BinaryWriter();
    let samples = 0;
    for (const [i, q] of request.queries.entries()) {
      const start = msOf(q.startTimestampMs, i, 'start_timestamp_ms');
      const end = msOf(q.endTimestampMs, i, 'end_timestamp_ms');
      if (end < start) throw badRequest(`query ${i}: end_timestamp_ms is before start_timestamp_ms`);
      const expr = parsePromQL(selectorText(q.matchers));
      if (expr.type !== 'selector') throw badRequest(`query ${i}: the matchers are not a series selector`);
      // The source reads (minMs, maxMs]; remote read's window includes its start.
      const source = await reader.selectorSource([{ selector: expr, minMs: start - 1, maxMs: end }]);
      // Prometheus's order of series: by their sorted label pairs.
      const series = source(expr)
        .map((x) => ({ x, key: promLabelsKey(x.labels) }))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        .map(({ x }) => x);
      response.tag(1, WireType.LengthDelimited).fork(); // ReadResponse.results
      for (const s of series) {
        // Sample times ascend: the window is one run of them, [from, to).
        let from = 0;
        while (from < s.t.length && s.t[from]! < start) from++;
        let to = from;
        while (to < s.t.length && s.t[to]! <= end) to++;
        if (to === from) continue;
        samples += to - from;
        if (samples > maxSamples) {
          throw new FloeError('execution', `remote read would answer more than ${maxSamples} samples (router.remote_read_max_samples); narrow the selector or the time range`, { code: 'FLOE_ERR_REMOTE_READ_LIMIT' });
        }
        response.tag(1, WireType.LengthDelimited).fork(); // QueryResult.timeseries
        for (const name of Object.keys(s.labels).sort()) {
          response.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string(name).tag(2, WireType.LengthDelimited).string(s.labels[name]!).join();
        }
        for (let k = from; k < to; k++) {
          response.tag(2, WireType.LengthDelimited).fork(); // TimeSeries.samples
          if (s.stale?.[k]) response.tag(1, WireType.Bit64).raw(STALE_NAN_BYTES);
          else response.tag(1, WireType.Bit64).double(s.v[k]!);
          response.tag(2, WireType.Varint).int64(s.t[k]!);
          response.join();
        }
        response.join();
      }
      response.join();
    }
    return reply.code(200).header('content-type', 'application/x-protobuf').header('content-encoding', 'snappy').send(Buffer.from(compress(response.finish())));
  });
}

/**
 * Prometheus's staleness marker as its bytes: written by hand because a NaN's payload may not
 * survive JavaScript (V8 may set its quiet bit), and Prometheus knows the marker by its exact bits.
 */
const STALE_NAN_BYTES = Uint8Array.from([0x02, 0, 0, 0, 0, 0, 0xf0, 0x7f]);
