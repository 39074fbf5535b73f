import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { FloeError } from '@floe/errors';
import { bootstrapSummary, bootstrapTenant, type Db } from '@floe/meta';
import { ERROR_RESPONSES, tenantIdSchema } from './management/schemas.ts';

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

  app.post<{ Body: { tenant: string } }>(
    '/bootstrap',
    {
      schema: {
        operationId: 'bootstrap_tenant',
        summary: 'Create a tenant if missing and issue a new tenant-wide key with ingest, query and tenant:manage (admin key or the local token of `floe all`); 409 while a deleted tenant of the id still holds tables',
        tags: ['admin'],
        security: [{ bearer: [] }],
        body: { type: 'object', additionalProperties: false, required: ['tenant'], properties: { tenant: tenantIdSchema } },
        response: {
          201: {
            type: 'object',
            additionalProperties: false,
            required: ['tenant', 'dataset', 'api_key'],
            properties: { tenant: { type: 'string' }, dataset: { type: 'string' }, api_key: { type: 'string', description: 'The secret, shown once.' } },
          },
          ...ERROR_RESPONSES,
        },
      },
    },
    // bootstrapTenant refuses (409) an id whose deleted tenant left tables, as creation does.
    async (req, reply) => reply.code(201).send(bootstrapSummary(await bootstrapTenant(opts.db, req.body.tenant))),
  );
};
