import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { isValidName } from '@floe/auth';
import { FloeError } from '@floe/errors';
import { bootstrapSummary, bootstrapTenant, isMetaError, type Db } from '@floe/meta';

/**
 * Instance administration that must go through the running process: with the embedded
 * metadata DB (PGlite, one process), `floe admin bootstrap` cannot open the database itself
 * while `floe all` runs, so it calls this route. Authorised by `auth.admin_api_key` or by the
 * per-start local token that `floe all` writes next to its data (readable by the same user only).
 */
export interface AdminOptions {
  db: Db;
  adminKeys: () => readonly string[];
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export const adminPlugin: FastifyPluginAsync<AdminOptions> = async (app, opts) => {
  app.addHook('onRequest', async (req) => {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!m) throw new FloeError('unauthorized', 'missing Authorization header (expected "Bearer <admin key>")');
    const given = digest(m[1]!);
    if (!opts.adminKeys().some((k) => k !== '' && timingSafeEqual(digest(k), given))) throw new FloeError('forbidden', 'an instance admin key is required');
  });

  app.post<{ Body: { tenant?: unknown } }>('/bootstrap', async (req, reply) => {
    const tenant = req.body?.tenant;
    if (typeof tenant !== 'string' || !isValidName(tenant)) throw new FloeError('bad_data', 'body must be {"tenant": "<id>"} with a valid tenant id');
    try {
      return reply.code(201).send(bootstrapSummary(await bootstrapTenant(opts.db, tenant)));
    } catch (err) {
      if (isMetaError(err)) throw new FloeError(err.kind, err.message);
      throw err;
    }
  });
};
