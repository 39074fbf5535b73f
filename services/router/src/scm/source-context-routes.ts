import type { FastifyPluginAsync } from 'fastify';
import { listScmInstallations } from '@floe/meta';
import { principalOf } from '../management/principal-plugin.ts';
import { authorizeSourceContext } from './access.ts';
import { ERROR_RESPONSES, TAGS, sourceContextBody, sourceContextResponse, sourceContextStatus, tenantParams } from './schemas.ts';
import type { Scm } from './service.ts';
import { lookupSourceContext, type SourceContext, type SourceContextRequest } from './source-context.ts';

type TenantParams = { tenant_id: string };

/**
 * The stack-frame source lookup. These routes exist whether or not the scm section is set: a view
 * that asks for a frame gets `not_configured` rather than an error (spec 2, source-context rule 1).
 */
export const sourceContextRoutes: FastifyPluginAsync<{ scm: Scm | undefined }> = async (app, opts) => {
  app.post<{ Params: TenantParams; Body: SourceContextRequest }>(
    '/api/v1/tenants/:tenant_id/source-context',
    {
      schema: {
        operationId: 'lookup_source_context',
        summary: 'Source lines around a stack frame from the tenant’s linked repositories; always 200, with status available or unavailable',
        tags: TAGS,
        params: tenantParams,
        body: sourceContextBody,
        response: { 200: sourceContextResponse, ...ERROR_RESPONSES },
      },
    },
    async (req): Promise<SourceContext> => {
      authorizeSourceContext(principalOf(req), req.params.tenant_id);
      const scm = opts.scm;
      if (!scm) return { status: 'unavailable', reason: 'not_configured' };
      try {
        return await lookupSourceContext(
          { ...scm, onHostError: (err, c) => req.log.warn({ installation: c.installationId, repository: c.repository, err: err.message }, 'scm: source file not read') },
          req.params.tenant_id,
          req.body,
        );
      } catch (err) {
        req.log.error({ err }, 'scm: source-context lookup failed');
        return { status: 'unavailable', reason: 'internal' };
      }
    },
  );

  app.get<{ Params: TenantParams }>(
    '/api/v1/tenants/:tenant_id/source-context',
    {
      schema: {
        operationId: 'get_source_context_status',
        summary: 'Whether source context can be served for the tenant: the integration is configured and an installation is linked',
        tags: TAGS,
        params: tenantParams,
        response: { 200: sourceContextStatus, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      authorizeSourceContext(principalOf(req), req.params.tenant_id);
      if (!opts.scm) return { configured: false, linked: false };
      return { configured: true, linked: (await listScmInstallations(opts.scm.db, req.params.tenant_id)).length > 0 };
    },
  );
};
