import Fastify, { type FastifyRequest } from 'fastify';
import { authenticate, credentialsFrom, type AuthDeps, type TenantContext } from '@floe/auth';
import { FloeError, toHttp } from '@floe/errors';
import { quietChild, type Logger } from '@floe/telemetry';
import { formatOf, inflate } from './decode.ts';
import type { Ingest } from './ingest.ts';
import { SIGNALS } from './signals.ts';

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

/** OTLP/HTTP on 4318: POST /v1/traces and /v1/logs (protobuf or JSON, optionally gzip) and GET /ready. */
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

  for (const signal of SIGNALS) {
    app.post(signal.httpPath, { onRequest: authHook }, async (req, reply) => {
      const format = formatOf(req.headers['content-type']);
      const raw = bodyBuffer(req.body);
      const body = inflate(raw, header(req, 'content-encoding'), opts.maxDecompressedBytes);
      const result = await signal.ingest(opts.ingest, req.tenant!, body, format);
      const resp = signal.response(result, format);
      if (format === 'json') return reply.code(200).type('application/json').send(resp);
      return reply.code(200).type('application/x-protobuf').send(Buffer.from(resp as Uint8Array));
    });
  }

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
