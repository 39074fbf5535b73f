import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { authenticate, credentialsFrom, withScopeOrgId, type AuthDeps, type TenantContext } from '@floe/auth';
import { FloeError, toHttp } from '@floe/errors';
import { SYSTEM_TENANT_ID } from '@floe/meta';
import { endHttpServerSpan, httpFrameworkLogging, httpServerMetrics, serverTiming, startHttpServerSpan, traceparentOf, UNTRACED_PATHS, type Logger, type SelfTelemetry, type Span } from '@floe/telemetry';
import { formatOf, inflate } from './decode.ts';
import type { AcceptedTimes } from './accepted-times.ts';
import type { Admission } from './admission.ts';
import type { InflightLimit, InflightRequest } from './inflight-limit.ts';
import type { Ingest } from './ingest.ts';
import { SIGNALS } from './signals.ts';
import { checkRemoteWriteEncoding, remoteWriteVersion } from './remote-write.ts';
import { RemoteWriteIngest } from './remote-write-ingest.ts';
import { lokiStreamsFromJson, lokiStreamsFromProtobuf, lokiStreamsToOtlp } from './loki-push.ts';
import { zipkinToOtlp } from './zipkin.ts';
import { jaegerToOtlp } from './jaeger.ts';
import { pprofToOtlp } from './pprof.ts';
import { legacyIngestSeries } from './pyroscope-ingest.ts';
import { PyroPushRequestSchema, PyroPushResponseSchema } from '@floe/proto';
import { CONNECT_CONTENT_TYPES, checkProtocolVersion, codecOf, connectError, decodeConnectMessage, decodedConnectBody, encodeConnectMessage, snappyUncompress, headerValue, clientErrorHandler, arrivalDeadlines } from '@floe/runtime';

export interface HttpServerOptions {
  ingest: Ingest;
  /** Per-tenant rate limits, storage quota, accepted row times and resend dedup. */
  admission: Admission;
  auth: AuthDeps;
  log: Logger;
  maxBodyBytes: number;
  /** acceptor.read_timeout: the longest a request may take to arrive. */
  readTimeoutMs: number;
  maxDecompressedBytes: number;
  isReady: () => boolean;
  /** Certificate and key when the port serves TLS (config `tls`); absent: cleartext. */
  https?: import('node:https').ServerOptions;
  /** What the acceptor holds at once, shared with the gRPC port. */
  inflight: InflightLimit;
  /** Floe's own tracer (self_monitoring); absent or disabled: no spans. */
  telemetry?: SelfTelemetry;
}

declare module 'fastify' {
  interface FastifyRequest {
    tenant?: TenantContext;
  }
}

/**
 * OTLP/HTTP on 4318: POST /v1/traces, /v1/logs, … (every signal of signals.ts; protobuf or JSON,
 * optionally gzip), Prometheus remote write at POST /api/v1/write, Loki's push API at POST
 * /loki/api/v1/push, Zipkin's v2 spans at POST /api/v2/spans, Jaeger's thrift batches at POST
 * /api/traces, Pyroscope's push API at POST /push.v1.PusherService/Push, and GET /ready.
 */
export function buildHttpServer(opts: HttpServerOptions) {
  const app = Fastify({
    ...httpFrameworkLogging(opts.log, 'otlp-http'),
    bodyLimit: opts.maxBodyBytes,
    clientErrorHandler,
    // A URL fastify cannot route (a bad percent-escape) is answered in the envelope too.
    frameworkErrors: (err, req, reply) => sendError(err, req, reply),
    ...(opts.https ? { https: opts.https } : {}),
  });

  // Bodies are taken raw for every content type: the handler decides 415 vs decode, so a wrong
  // Content-Type gets the same envelope as every other error.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  const sendError = (err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const out = toHttp(fastifyToFloe(err));
    if (out.unexpected) req.log.error({ err }, 'unexpected error');
    void reply.code(out.status).headers(out.headers).type('application/json').send(out.body);
  };
  app.setErrorHandler(sendError);
  app.setNotFoundHandler((_req, reply) => {
    void reply.code(404).type('application/json').send({ status: 'error', errorType: 'not_found', error: 'no such endpoint' });
  });

  // Every ingest request holds its room from its first byte (the declared length, before the
  // body is read; a chunked body, of unknown length, as much as any may be) until its connection
  // has the whole answer or is gone. An upload still arriving after read_timeout has its
  // connection closed (arrivalDeadlines), which gives its room back.
  const arrivals = arrivalDeadlines(opts.readTimeoutMs);
  app.addHook('onRequest', async (req, reply) => {
    if (req.method !== 'POST') return;
    const length = headerValue(req.headers, 'content-length');
    const declared = Number(length);
    const bytes = length === undefined ? opts.maxBodyBytes : Number.isSafeInteger(declared) && declared > 0 ? declared : 0;
    const room = opts.inflight.take(bytes);
    rooms.set(req, room);
    arrivals.expect(req.raw, reply.raw);
    reply.raw.once('close', () => room.release());
  });
  // Each request's room in flight (InflightLimit): its tenant's share once its key is checked, and
  // what its compressed body inflated to, held beside the body as sent until the same moment. A
  // request whose connection is gone is no longer counted at all, its inflation included.
  // Inflation is synchronous (gunzipWithin), so one body at a time may pass the limit while
  // inflating before it is refused.
  const rooms = new WeakMap<FastifyRequest, InflightRequest>();
  const held = (req: FastifyRequest) => (bytes: number) => rooms.get(req)?.grow(bytes);
  /** `body` as `decoded` made it of `raw`, counted in flight when it is new bytes (not identity). */
  const heldBody = (req: FastifyRequest, raw: Buffer, body: Buffer): Buffer => {
    if (body !== raw) held(req)(body.length);
    return body;
  };
  // The body is in: the request is processed however long that takes (the WAL's own limits apply).
  app.addHook('preValidation', async (req) => arrivals.arrived(req.raw));
  // At stop, uploads still arriving are cut (nothing of them is acknowledged; the client sends
  // them again elsewhere) rather than awaited for up to read_timeout; requests in process finish.
  app.addHook('preClose', async () => arrivals.cutArriving());

  // A server span per request (spec 2, Events), but none for the self-monitoring tenant, whose
  // requests carry Floe's own telemetry (a span each would be exported as one more request).
  // The response carries Server-Timing (traceparent, total) and traceresponse, as the router's do.
  const telemetry = opts.telemetry;
  if (telemetry) httpServerMetrics(app, telemetry);
  if (telemetry?.enabled) {
    const spans = new WeakMap<FastifyRequest, { span: Span; start: number }>();
    app.addHook('onRequest', async (req) => {
      if (headerValue(req.headers, 'x-tenant-id')?.trim() === SYSTEM_TENANT_ID || UNTRACED_PATHS.has(req.url)) return;
      const span = startHttpServerSpan(telemetry, { method: req.method, route: req.routeOptions.url, url: req.url, traceparent: req.headers.traceparent });
      spans.set(req, { span, start: performance.now() });
    });
    app.addHook('onSend', async (req, reply, payload) => {
      const t = spans.get(req);
      if (!t || req.tenant?.tenant === SYSTEM_TENANT_ID) return payload;
      const traceparent = traceparentOf(t.span);
      void reply.header('server-timing', serverTiming(traceparent, performance.now() - t.start)).header('traceresponse', traceparent);
      return payload;
    });
    app.addHook('onResponse', async (req, reply) => {
      const t = spans.get(req);
      // A tenant named by Basic auth is known only now: a _system span is dropped unended (never exported).
      if (t && req.tenant?.tenant !== SYSTEM_TENANT_ID) endHttpServerSpan(t.span, reply.statusCode, req.tenant?.tenant);
    });
  }

  app.get('/ready', async (_req, reply) => (opts.isReady() ? reply.code(200).send('ready\n') : reply.code(503).send('not ready\n')));

  // X-Scope-OrgID names the tenant too: Grafana's agents and SDKs (Promtail, Alloy, Pyroscope's
  // SDKs, exporters set up for Mimir, Loki or Tempo) send it; the key must still be the tenant's.
  const authHook = async (req: FastifyRequest) => {
    req.tenant = await authenticate(credentialsFrom(withScopeOrgId((n) => headerValue(req.headers, n))), opts.auth, 'ingest');
    rooms.get(req)?.ofTenant(req.tenant.tenant);
  };

  for (const signal of SIGNALS) {
    const handler = async (req: FastifyRequest, reply: FastifyReply) => {
      const format = formatOf(req.headers['content-type']);
      const raw = bodyBuffer(req.body);
      const store = (times: AcceptedTimes) => signal.ingest(opts.ingest, req.tenant!, heldBody(req, raw, inflate(raw, headerValue(req.headers, 'content-encoding'), opts.maxDecompressedBytes)), format, times);
      const identity = { signal: signal.name, contentType: format, contentEncoding: headerValue(req.headers, 'content-encoding') ?? '', body: raw };
      const result = await opts.admission.run(req.tenant!, identity, store, () => NOTHING_REJECTED);
      const resp = signal.response(result, format);
      if (format === 'json') return reply.code(200).type('application/json').send(resp);
      return reply.code(200).type('application/x-protobuf').send(Buffer.from(resp as Uint8Array));
    };
    app.post(signal.httpPath, { onRequest: authHook }, handler);
    // Also under /otlp, where Loki's and Mimir's OTLP endpoints take it: an exporter pointed at
    // `<floe>/otlp`, as at Loki or Mimir, reaches the same route.
    app.post(`/otlp${signal.httpPath}`, { onRequest: authHook }, handler);
    for (const path of signal.otherHttpPaths ?? []) app.post(path, { onRequest: authHook }, handler);
  }

  // Prometheus remote write 1.0 / 2.0 (spec 1, Ingest; reference §6): snappy block bodies,
  // 204 on success, v2's written counts as headers (also on a 400 for unconvertible series).
  const remoteWrite = new RemoteWriteIngest(opts.ingest, opts.log);
  app.post('/api/v1/write', { onRequest: authHook }, async (req, reply) => {
    const version = remoteWriteVersion(headerValue(req.headers, 'content-type'));
    checkRemoteWriteEncoding(headerValue(req.headers, 'content-encoding'));
    const raw = bodyBuffer(req.body);
    const store = (times: AcceptedTimes) => remoteWrite.write(req.tenant!, heldBody(req, raw, snappyUncompress(raw, opts.maxDecompressedBytes)), version, times);
    const identity = { signal: 'remote_write', contentType: `v${version}`, contentEncoding: 'snappy', body: raw };
    // A resend of a durable request is acknowledged without counts (senders then assume all written).
    const outcome = await opts.admission.run(req.tenant!, identity, store, () => undefined);
    if (!outcome) return reply.code(204).send();
    if (version === 2) void reply.headers(outcome.headers);
    if (outcome.error) throw outcome.error;
    return reply.code(204).send();
  });

  // Loki's push API (Promtail, Alloy's loki.write, Fluent Bit, Vector; loki-push.ts): snappy
  // protobuf, or JSON with optional gzip, stored as OTLP logs; 204 as Loki answers. Entries
  // refused (outside the accepted times) make it 400 after the rest is stored, as remote write.
  const lokiPush = async (req: FastifyRequest, reply: FastifyReply) => {
    const format = formatOf(req.headers['content-type']);
    const raw = bodyBuffer(req.body);
    const encoding = headerValue(req.headers, 'content-encoding');
    const store = (times: AcceptedTimes) => {
      const streams = format === 'protobuf' ? lokiStreamsFromProtobuf(heldBody(req, raw, snappyUncompress(raw, opts.maxDecompressedBytes))) : lokiStreamsFromJson(heldBody(req, raw, inflate(raw, encoding, opts.maxDecompressedBytes)));
      return opts.ingest.logs(req.tenant!, lokiStreamsToOtlp(streams), times);
    };
    const identity = { signal: 'loki_push', contentType: format, contentEncoding: encoding ?? '', body: raw };
    const result = await opts.admission.run(req.tenant!, identity, store, () => NOTHING_REJECTED);
    refusedRest(result, 'entries');
    return reply.code(204).send();
  };
  app.post('/loki/api/v1/push', { onRequest: authHook }, lokiPush);
  app.post('/api/prom/push', { onRequest: authHook }, lokiPush);

  // Pyroscope's push API over Connect (Alloy's pyroscope.write, Pyroscope's SDKs; pprof.ts): pprof
  // profiles with their series labels, stored as OTLP profiles. Errors in Connect's own shape.
  app.register(async (scope) => {
    scope.setErrorHandler((err: unknown, req, reply) => {
      const out = connectError(fastifyToFloe(err));
      if (out.unexpected) req.log.error({ err }, 'unexpected error');
      void reply.code(out.status).headers(out.headers).type('application/json').send(out.body);
    });
    scope.post('/push.v1.PusherService/Push', { onRequest: authHook }, async (req, reply) => {
      checkProtocolVersion(headerValue(req.headers, 'connect-protocol-version'));
      const codec = codecOf(req.headers['content-type']);
      const raw = bodyBuffer(req.body);
      const encoding = headerValue(req.headers, 'content-encoding');
      const store = async (times: AcceptedTimes) => {
        const push = decodeConnectMessage(PyroPushRequestSchema, codec, heldBody(req, raw, decodedConnectBody(raw, encoding, opts.maxDecompressedBytes)));
        const series = push.series.map((s) => ({ labels: s.labels, profiles: s.samples.map((x) => x.rawProfile) }));
        const { request, names } = pprofToOtlp(series, opts.maxDecompressedBytes, held(req));
        return opts.ingest.profiles(req.tenant!, request, times, names);
      };
      const result = await opts.admission.run(req.tenant!, { signal: 'pyroscope_push', contentType: codec, contentEncoding: encoding ?? '', body: raw }, store, () => NOTHING_REJECTED);
      refusedRest(result, 'profiles');
      return reply.code(200).type(CONNECT_CONTENT_TYPES[codec]).send(encodeConnectMessage(PyroPushResponseSchema, codec, {}));
    });
  });

  // Pyroscope's HTTP ingest (its SDKs and pyroscope-cli; pyroscope-ingest.ts): one window of one
  // application's profile, folded stacks, pprof or JFR, with what it is in the query. 200, empty.
  app.post('/ingest', { onRequest: authHook }, async (req, reply) => {
    const raw = bodyBuffer(req.body);
    const encoding = headerValue(req.headers, 'content-encoding');
    const contentType = headerValue(req.headers, 'content-type');
    const query: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(req.query as Record<string, unknown>)) query[k] = Array.isArray(v) ? String(v[0]) : String(v);
    const store = async (times: AcceptedTimes) => {
      const series = await legacyIngestSeries({ query, contentType, body: heldBody(req, raw, inflate(raw, encoding, opts.maxDecompressedBytes)), maxDecompressedBytes: opts.maxDecompressedBytes, hold: held(req) }, BigInt(Date.now()) * 1_000_000n);
      const { request, names } = pprofToOtlp(series, opts.maxDecompressedBytes, held(req));
      return opts.ingest.profiles(req.tenant!, request, times, names);
    };
    // The query says what the body is: the same body under another name or window is no resend.
    const params = req.url.slice(req.url.indexOf('?') + 1 || req.url.length);
    const result = await opts.admission.run(req.tenant!, { signal: 'pyroscope_ingest', contentType: contentType ?? '', contentEncoding: encoding ?? '', params, body: raw }, store, () => NOTHING_REJECTED);
    refusedRest(result, 'profiles');
    return reply.code(200).send();
  });

  // Zipkin's v2 span API (Envoy, Istio, Brave, Spring Cloud Sleuth; zipkin.ts): a JSON array of
  // spans, optionally gzip, stored as OTLP traces; 202 as Zipkin answers.
  app.post('/api/v2/spans', { onRequest: authHook }, async (req, reply) => {
    if (formatOf(req.headers['content-type']) !== 'json') {
      throw new FloeError('unsupported_media_type', 'Zipkin spans are taken as application/json (Zipkin v2 JSON); send OTLP for protobuf', { code: 'FLOE_ERR_INGEST_CONTENT_TYPE' });
    }
    const raw = bodyBuffer(req.body);
    const encoding = headerValue(req.headers, 'content-encoding');
    const store = (times: AcceptedTimes) => opts.ingest.traces(req.tenant!, zipkinToOtlp(heldBody(req, raw, inflate(raw, encoding, opts.maxDecompressedBytes))), times);
    const result = await opts.admission.run(req.tenant!, { signal: 'zipkin', contentType: 'json', contentEncoding: encoding ?? '', body: raw }, store, () => NOTHING_REJECTED);
    refusedRest(result, 'spans');
    return reply.code(202).send();
  });

  // Jaeger's thrift_http API (the Jaeger clients' HTTP senders; jaeger.ts): a Thrift
  // binary-protocol Batch, optionally gzip, stored as OTLP traces; 202 as Jaeger answers.
  app.post('/api/traces', { onRequest: authHook }, async (req, reply) => {
    const type = (headerValue(req.headers, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-thrift' && type !== 'application/vnd.apache.thrift.binary') {
      throw new FloeError('unsupported_media_type', 'Jaeger batches are taken as application/x-thrift (Thrift binary protocol); send OTLP for protobuf or JSON', { code: 'FLOE_ERR_INGEST_CONTENT_TYPE' });
    }
    const raw = bodyBuffer(req.body);
    const encoding = headerValue(req.headers, 'content-encoding');
    const store = (times: AcceptedTimes) => opts.ingest.traces(req.tenant!, jaegerToOtlp(heldBody(req, raw, inflate(raw, encoding, opts.maxDecompressedBytes))), times);
    const result = await opts.admission.run(req.tenant!, { signal: 'jaeger', contentType: 'thrift', contentEncoding: encoding ?? '', body: raw }, store, () => NOTHING_REJECTED);
    refusedRest(result, 'spans');
    return reply.code(202).send();
  });

  return app;
}

const NOTHING_REJECTED = { accepted: 0, rejected: 0, rejectReason: undefined };

/**
 * The answer of a push API without a partial-success shape (Loki push, Zipkin, Jaeger, Pyroscope push),
 * as remote write answers: when some items were refused (outside the accepted times), 400 naming
 * how many and the first reason, after the rest was stored.
 */
function refusedRest(result: { rejected: number; rejectReason: string | undefined }, items: string): void {
  if (result.rejected === 0) return;
  throw new FloeError('bad_data', `${result.rejected} ${items} were refused (the rest was stored); first: ${result.rejectReason ?? 'refused'}`, { code: 'FLOE_ERR_INGEST_REJECTED' });
}

function bodyBuffer(body: unknown): Buffer {
  if (Buffer.isBuffer(body)) return body;
  // No body at all (e.g. Content-Length: 0): an empty export request, valid protobuf.
  return Buffer.alloc(0);
}

/** Fastify's own errors (body too large, malformed headers) mapped onto Floe's kinds. */
function fastifyToFloe(err: unknown): unknown {
  if (err instanceof FloeError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new FloeError('too_large', 'request body too large', { code: 'FLOE_ERR_INGEST_TOO_LARGE' });
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new FloeError('unsupported_media_type', 'unsupported Content-Type', { code: 'FLOE_ERR_INGEST_CONTENT_TYPE' });
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new FloeError(e.statusCode === 413 ? 'too_large' : e.statusCode === 415 ? 'unsupported_media_type' : 'bad_data', e.message ?? 'bad request');
  }
  return err;
}
