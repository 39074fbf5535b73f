import type { FastifyPluginAsync } from 'fastify';
import type { ManagementAuthDeps } from '@floe/auth';
import { notFound } from '@floe/errors';
import { principalPlugin } from '../management/principal-plugin.ts';
import { installationRoutes } from './installation-routes.ts';
import type { Scm } from './service.ts';
import { sourceContextRoutes } from './source-context-routes.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route belongs to the scm section and answers 404 while it is unset. */
    scmSection?: boolean;
  }
}

export interface ScmPluginOptions {
  /** undefined: the scm section is unset. */
  scm: Scm | undefined;
  auth: ManagementAuthDeps;
  publicUrl: string;
}

/**
 * The source-control integration (spec 2): installation links under
 * /api/v1/tenants/{id}/scm-installations, the host's redirect target /ui/scm/callback, and the
 * source-context lookup. Callers are resolved as on the management API. The routes are always
 * registered, so the OpenAPI document does not depend on configuration; with the section unset the
 * link routes answer 404 before anyone is asked for credentials.
 */
export const scmPlugin: FastifyPluginAsync<ScmPluginOptions> = async (app, opts) => {
  app.addHook('onRequest', async (req) => {
    if (req.routeOptions.config.scmSection && !opts.scm) throw notFound('the source-control integration is not configured', { code: 'FLOE_ERR_SCM_NOT_CONFIGURED' });
  });
  await app.register(principalPlugin, { auth: opts.auth });
  await app.register(installationRoutes, opts);
  await app.register(sourceContextRoutes, { scm: opts.scm });
};
