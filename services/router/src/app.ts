import Fastify from 'fastify';
import type { AuthDeps } from '@floe/auth';
import { FloeError, toHttp } from '@floe/errors';
import type { Db } from '@floe/meta';
import { quietChild, type Logger } from '@floe/telemetry';
import { adminPlugin } from './admin.ts';
import { authPlugin } from './auth-plugin.ts';
import type { QuerierClient } from './querier-client.ts';
import { traceQueryPlugin } from './tracequery.ts';

export interface AppOptions {
  log: Logger;
  auth: AuthDeps;
  querier: QuerierClient;
  queryTimeoutMs: number;
  maxBodyBytes: number;
  isReady: () => boolean;
  db: Db;
  /** Keys with instance-admin rights (auth.admin_api_key, the local token of `floe all`). */
  adminKeys: () => readonly string[];
}

/**
 * The router's plugin tree, built without listening (tests may inject). Cross-cutting concerns
 * (error envelope, not-found) sit at the root; each API surface is an encapsulated plugin with
 * its own prefix and its own auth scope.
 */
export async function buildApp(opts: AppOptions) {
  const app = Fastify({ loggerInstance: quietChild(opts.log, 'router'), bodyLimit: opts.maxBodyBytes });

  app.setErrorHandler((err: unknown, req, reply) => {
    const e = err instanceof FloeError ? err : fromFastify(err);
    const out = toHttp(e);
    if (out.unexpected) req.log.error({ err }, 'unexpected error');
    void reply.code(out.status).headers(out.headers).type('application/json').send(out.body);
  });
  app.setNotFoundHandler((_req, reply) => {
    void reply.code(404).type('application/json').send({ status: 'error', errorType: 'not_found', error: 'no such endpoint' });
  });

  app.get('/ready', async (_req, reply) => (opts.isReady() ? reply.code(200).send('ready\n') : reply.code(503).send('not ready\n')));

  await app.register(
    async (scope) => {
      await scope.register(authPlugin, { auth: opts.auth, scope: 'query' });
      await scope.register(traceQueryPlugin, { querier: opts.querier, queryTimeoutMs: opts.queryTimeoutMs });
    },
    { prefix: '/tracequery' },
  );
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => {
    try {
      done(null, body === '' ? {} : JSON.parse(body as string));
    } catch {
      done(new FloeError('bad_data', 'body is not valid JSON'), undefined);
    }
  });
  await app.register(adminPlugin, { prefix: '/api/v1/admin', db: opts.db, adminKeys: opts.adminKeys });
  return app;
}

function fromFastify(err: unknown): unknown {
  const e = err as { statusCode?: number; message?: string; code?: string };
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new FloeError('too_large', 'request body too large');
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) return new FloeError('bad_data', e.message ?? 'bad request');
  return err;
}
