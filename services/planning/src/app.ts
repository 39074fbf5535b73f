import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { FloeError } from '@floe/errors';
import type { BucketLimit, TokenBuckets } from '@floe/limits';
import type { Db } from '@floe/meta';
import { httpFrameworkLogging, httpServerMetrics, type Logger, type SelfTelemetry } from '@floe/telemetry';
import { clientErrorHandlerWith, parseJsonBody } from '@floe/runtime';
import { planningAuthPlugin, planningRolePlugin, type PlanningAuth } from './auth.ts';
import { errorReply, validationError } from './errors.ts';
import { rateLimitPlugin } from './rate-limit.ts';
import { commentRoutes } from './routes/comments.ts';
import { competitorRoutes } from './routes/competitors.ts';
import { epicRoutes } from './routes/epics.ts';
import { featureRoutes } from './routes/features.ts';
import { productRoutes } from './routes/products.ts';
import { releasePhaseRoutes } from './routes/release-phases.ts';
import { releaseRoutes } from './routes/releases.ts';
import { requirementRoutes } from './routes/requirements.ts';
import { productRecordRoutes } from './routes/product-records.ts';
import { toDoRoutes } from './routes/to-dos.ts';

export interface PlanningAppOptions {
  log: Logger;
  db: Db;
  auth: PlanningAuth;
  buckets: TokenBuckets;
  rateLimit: BucketLimit;
  maxBodyBytes: number;
  isReady: () => boolean;
  /** The process's meter and `GET /metrics` (absent: neither). */
  telemetry?: SelfTelemetry;
}

// PostgreSQL text cannot hold NUL: refused here as bad input rather than failing in the database.
function refuseNul(key: string, value: unknown): unknown {
  if (key.includes('\0') || (typeof value === 'string' && value.includes('\0'))) throw new FloeError('bad_data', 'strings must not contain NUL characters');
  return value;
}

/**
 * The planning API's plugin tree, built without listening. The root holds what every answer
 * shares (JSON parsing, the error body, 404 for unknown paths, /ready); everything under
 * /api/v1 is one scope with, in order: caller resolution, the tenant's rate limit, the role a
 * method needs, then the routes of each resource.
 */
export async function buildApp(opts: PlanningAppOptions) {
  const app = Fastify({
    ...httpFrameworkLogging(opts.log, 'planning'),
    bodyLimit: opts.maxBodyBytes,
    // Bodies are checked as written: no coercion ("1" is not a number), unknown fields refused.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    schemaErrorFormatter: validationError,
    // A URL fastify cannot route (a bad percent-escape, an overlong path parameter): the envelope too.
    frameworkErrors: (err, req, reply) => sendError(err, req, reply),
    clientErrorHandler: clientErrorHandlerWith((err) => errorReply(err).body),
  });

  const sendError = (err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const out = errorReply(err);
    if (out.unexpected) req.log.error({ err }, 'unexpected error');
    void reply.code(out.status).headers(out.headers).type('application/json').send(out.body);
  };
  app.setErrorHandler(sendError);
  app.setNotFoundHandler((_req, reply) => {
    const out = errorReply(new FloeError('not_found', 'no such endpoint'));
    void reply.code(out.status).type('application/json').send(out.body);
  });
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    let parsed: unknown;
    try {
      parsed = parseJsonBody(body as string, refuseNul);
    } catch (err) {
      done(err as Error, undefined);
      return;
    }
    done(null, parsed);
  });
  // JSON only: any other body is 415 (fastify would hand text/plain to the schemas as a string).
  app.removeContentTypeParser('text/plain');

  if (opts.telemetry) httpServerMetrics(app, opts.telemetry);
  app.get('/ready', async (_req, reply) =>
    opts.isReady() ? reply.code(200).send({ status: 'ready' }) : reply.code(503).send({ status: 'not ready' }),
  );

  await app.register(
    async (api) => {
      await api.register(planningAuthPlugin, { auth: opts.auth });
      await api.register(rateLimitPlugin, { buckets: opts.buckets, limit: opts.rateLimit });
      await api.register(planningRolePlugin);
      for (const routes of [productRoutes, releaseRoutes, releasePhaseRoutes, featureRoutes, epicRoutes, requirementRoutes, toDoRoutes, productRecordRoutes, competitorRoutes, commentRoutes]) {
        await api.register(routes, { db: opts.db });
      }
    },
    { prefix: '/api/v1' },
  );
  return app;
}
