import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { authenticate, credentialsFrom, type AuthDeps, type TenantContext } from '@floe/auth';
import { FloeError, toHttp } from '@floe/errors';
import { ExportTraceServiceRequestSchema, ExportTraceServiceResponseSchema, create, toBinary, toJson } from '@floe/proto';
import { quietChild, type Logger } from '@floe/telemetry';
import { decodeMessage, formatOf, inflate, type BodyFormat } from './decode.ts';
import type { Ingest, IngestResult } from './ingest.ts';

export interface HttpServerOptions {
  ingest: Ingest;
  auth: AuthDeps;
  log: Logger;
  maxBodyBytes: number;
  maxDecompressedBytes: number;
  isReady: () => boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    tenant?: TenantContext;
  }
}

/** OTLP/HTTP on 4318: POST /v1/traces (protobuf or JSON, optionally gzip) and GET /ready. */
export function buildHttpServer(opts: HttpServerOptions) {
  const app = Fastify({ loggerInstance: quietChild(opts.log, 'otlp-http'), bodyLimit: opts.maxBodyBytes });

  // Bodies are taken raw for every content type: the handler decides 415 vs decode, so a wrong
  // Content-Type gets the same envelope as every other error.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.setErrorHandler((err: unknown, req, reply) => {
    const e = fastifyToFloe(err);
    const out = toHttp(e);
    if (out.unexpected) req.log.error({ err }, 'unexpected error');
    void reply.code(out.status).headers(out.headers).type('application/json').send(out.body);
  });
  app.setNotFoundHandler((_req, reply) => {
    void reply.code(404).type('application/json').send({ status: 'error', errorType: 'not_found', error: 'no such endpoint' });
  });

  app.get('/ready', async (_req, reply) => (opts.isReady() ? reply.code(200).send('ready\n') : reply.code(503).send('not ready\n')));

  const authHook = async (req: FastifyRequest) => {
    req.tenant = await authenticate(credentialsFrom((n) => header(req, n)), opts.auth, 'ingest');
  };

  app.post('/v1/traces', { onRequest: authHook }, async (req, reply) => {
    const format = formatOf(req.headers['content-type']);
    const raw = bodyBuffer(req.body);
    const body = inflate(raw, header(req, 'content-encoding'), opts.maxDecompressedBytes);
    // Protobuf is transcoded from the wire bytes; JSON is decoded, then converted.
    const result =
      format === 'protobuf'
        ? await opts.ingest.tracesProtobuf(req.tenant!, body)
        : await opts.ingest.traces(req.tenant!, decodeMessage(ExportTraceServiceRequestSchema, body, format));
    return sendExportResponse(reply, format, result);
  });

  return app;
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function bodyBuffer(body: unknown): Buffer {
  if (Buffer.isBuffer(body)) return body;
  // No body at all (e.g. Content-Length: 0): an empty export request, valid protobuf.
  return Buffer.alloc(0);
}

function sendExportResponse(reply: FastifyReply, format: BodyFormat, result: IngestResult) {
  const resp = create(ExportTraceServiceResponseSchema, {
    partialSuccess: result.rejected > 0 ? { rejectedSpans: BigInt(result.rejected), errorMessage: result.rejectReason ?? '' } : undefined,
  });
  if (format === 'json') return reply.code(200).type('application/json').send(toJson(ExportTraceServiceResponseSchema, resp));
  return reply.code(200).type('application/x-protobuf').send(Buffer.from(toBinary(ExportTraceServiceResponseSchema, resp)));
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
