import type { FastifyInstance, FastifyRequest } from 'fastify';
import { compress } from 'snappyjs';
import { FloeError } from '@floe/errors';
import { BinaryWriter, PromLabelMatcher_Type, PromReadRequest_ResponseType, PromReadRequestSchema, WireType, fromBinary, type PromReadRequest } from '@floe/proto';
import { parsePromQL, promLabelsKey, type RawSeries } from '@floe/query';
import { crc32c, snappyUncompress } from '@floe/runtime';
import type { MetricReader } from './data.ts';
import { SAMPLES_PER_CHUNK, encodeXorChunk } from './xor-chunk.ts';
import { queryRouteSchema } from '../openapi.ts';

/**
 * Prometheus remote read (`POST /api/v1/read`), as Mimir, Cortex and Thanos serve it: a Prometheus
 * server with a `remote_read` entry reads Floe's series as if they were its own, for ranges its
 * TSDB does not hold (or all, with `read_recent`). The request is a snappy-compressed protobuf
 * ReadRequest; each query's matchers select series as a PromQL selector does (the same names,
 * labels and reads as /query), and its samples in [start, end] come back as the client's first
 * accepted response type: one snappy-compressed ReadResponse (SAMPLES), or CRC-checked frames of
 * XOR chunks (STREAMED_XOR_CHUNKS, xor-chunk.ts), as Prometheus streams its own TSDB's.
 * Staleness markers are sent as Prometheus's stale NaN.
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
    returns: { description: 'By the first accepted response type: a snappy-compressed protobuf prometheus.ReadResponse, one QueryResult per query in order (SAMPLES), or application/x-streamed-protobuf frames of prometheus.ChunkedReadResponse with XOR chunks (STREAMED_XOR_CHUNKS).' },
  });
  scope.post('/read', { schema }, async (req, reply) => {
    const request = readRequestOf(req);
    // The client's first accepted type that Floe answers with; none listed means SAMPLES.
    const type = request.acceptedResponseTypes.length === 0 ? PromReadRequest_ResponseType.SAMPLES : request.acceptedResponseTypes.find((t) => t === PromReadRequest_ResponseType.SAMPLES || t === PromReadRequest_ResponseType.STREAMED_XOR_CHUNKS);
    if (type === undefined) throw badRequest(`none of the accepted response types ${JSON.stringify(request.acceptedResponseTypes)} is SAMPLES (0) or STREAMED_XOR_CHUNKS (1)`);
    if (request.queries.length > MAX_QUERIES) throw badRequest(`at most ${MAX_QUERIES} queries per remote read request, got ${request.queries.length}`);
    const reader = openReader(req);
    const results: SeriesWindow[][] = [];
    let samples = 0;
    for (const [i, q] of request.queries.entries()) {
      const start = msOf(q.startTimestampMs, i, 'start_timestamp_ms');
      const end = msOf(q.endTimestampMs, i, 'end_timestamp_ms');
      if (end < start) throw badRequest(`query ${i}: end_timestamp_ms is before start_timestamp_ms`);
      const expr = parsePromQL(selectorText(q.matchers));
      if (expr.type !== 'selector') throw badRequest(`query ${i}: the matchers are not a series selector`);
      // The source reads (minMs, maxMs]; remote read's window includes its start.
      const source = await reader.selectorSource([{ selector: expr, minMs: start - 1, maxMs: end }]);
      const windows: SeriesWindow[] = [];
      for (const s of source(expr)) {
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
        windows.push({ series: s, from, to, key: promLabelsKey(s.labels) });
      }
      // Prometheus's order of series: by their sorted label pairs.
      results.push(windows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)));
    }
    if (type === PromReadRequest_ResponseType.STREAMED_XOR_CHUNKS) {
      return reply.code(200).header('content-type', STREAMED_CONTENT_TYPE).send(Buffer.concat(streamedFrames(results)));
    }
    return reply.code(200).header('content-type', 'application/x-protobuf').header('content-encoding', 'snappy').send(Buffer.from(compress(samplesResponse(results))));
  });
}

/** One series of a query's answer and its samples in the window, [from, to) of its arrays. */
export interface SeriesWindow {
  series: RawSeries;
  from: number;
  to: number;
  key: string;
}

/** The series' labels (sorted by name) as repeated Label fields `field` of the message being written. */
function writeLabels(w: BinaryWriter, field: number, labels: Readonly<Record<string, string>>): void {
  for (const name of Object.keys(labels).sort()) {
    w.tag(field, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string(name).tag(2, WireType.LengthDelimited).string(labels[name]!).join();
  }
}

/** A ReadResponse of SAMPLES: one QueryResult per query, every sample of each series' window. */
function samplesResponse(results: readonly SeriesWindow[][]): Uint8Array {
  const response = new BinaryWriter();
  for (const windows of results) {
    response.tag(1, WireType.LengthDelimited).fork(); // ReadResponse.results
    for (const { series: s, from, to } of windows) {
      response.tag(1, WireType.LengthDelimited).fork(); // QueryResult.timeseries
      writeLabels(response, 1, s.labels);
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
  return response.finish();
}

const STREAMED_CONTENT_TYPE = 'application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse';
/** Most bytes of one ChunkedReadResponse, as Prometheus's --storage.remote.read-max-bytes-in-frame default. */
export const FRAME_BYTES = 1024 * 1024;
/** prometheus.Chunk.Encoding XOR. */
const XOR = 1;

/**
 * STREAMED_XOR_CHUNKS: ChunkedReadResponse frames, each its size as a varint, the CRC-32C of its
 * bytes (big-endian) and the message, holding whole series (labels and XOR chunks of at most
 * 120 samples) up to FRAME_BYTES; a series larger than that continues, labels repeated, in the
 * next frame. Each frame names its query (query_index); a query without series has none.
 */
export function streamedFrames(results: readonly SeriesWindow[][]): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (const [queryIndex, windows] of results.entries()) {
    // The query_index field takes at most 11 bytes of each frame.
    const INDEX_BYTES = 11;
    let pending: Uint8Array[] = [];
    let pendingBytes = INDEX_BYTES;
    const flush = () => {
      if (pending.length === 0) return;
      const w = new BinaryWriter();
      for (const series of pending) w.tag(1, WireType.LengthDelimited).bytes(series);
      w.tag(2, WireType.Varint).int64(queryIndex);
      frames.push(frame(w.finish()));
      pending = [];
      pendingBytes = INDEX_BYTES;
    };
    const add = (series: Uint8Array) => {
      // A field's tag and length take at most 6 bytes here.
      if (pending.length > 0 && pendingBytes + series.length + 6 > FRAME_BYTES) flush();
      pending.push(series);
      pendingBytes += series.length + 6;
    };
    for (const { series: s, from, to } of windows) {
      const labels = new BinaryWriter();
      writeLabels(labels, 1, s.labels);
      const labelBytes = labels.finish();
      let chunks: Uint8Array[] = [];
      // The series' own tag and length in the frame, and the frame's query_index, count too.
      const seriesOverhead = labelBytes.length + 6 + INDEX_BYTES;
      let bytes = seriesOverhead;
      const emit = () => {
        const w = new BinaryWriter();
        w.raw(labelBytes);
        for (const c of chunks) w.tag(2, WireType.LengthDelimited).bytes(c);
        add(w.finish());
        chunks = [];
        bytes = seriesOverhead;
      };
      for (let a = from; a < to; a += SAMPLES_PER_CHUNK) {
        const b = Math.min(to, a + SAMPLES_PER_CHUNK);
        const chunk = new BinaryWriter()
          .tag(1, WireType.Varint)
          .int64(s.t[a]!)
          .tag(2, WireType.Varint)
          .int64(s.t[b - 1]!)
          .tag(3, WireType.Varint)
          .int32(XOR)
          .tag(4, WireType.LengthDelimited)
          .bytes(encodeXorChunk(s.t, s.v, s.stale, a, b))
          .finish();
        if (chunks.length > 0 && bytes + chunk.length + 6 > FRAME_BYTES) emit();
        chunks.push(chunk);
        bytes += chunk.length + 6;
      }
      emit();
    }
    flush();
  }
  return frames;
}

/** One frame of a streamed answer: uvarint length, CRC-32C (big-endian), the message. */
function frame(message: Uint8Array): Uint8Array {
  const head = new BinaryWriter().uint32(message.length).finish();
  const out = new Uint8Array(head.length + 4 + message.length);
  out.set(head, 0);
  new DataView(out.buffer).setUint32(head.length, crc32c(message), false);
  out.set(message, head.length + 4);
  return out;
}

/**
 * Prometheus's staleness marker as its bytes: written by hand because a NaN's payload may not
 * survive JavaScript (V8 may set its quiet bit), and Prometheus knows the marker by its exact bits.
 */
const STALE_NAN_BYTES = Uint8Array.from([0x02, 0, 0, 0, 0, 0, 0xf0, 0x7f]);
