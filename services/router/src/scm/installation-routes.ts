import type { FastifyPluginAsync } from 'fastify';
import { principalLabel, type ManagementAuthDeps } from '@floe/auth';
import { notFound } from '@floe/errors';
import { getTenant } from '@floe/meta';
import { principalOf } from '../management/principal-plugin.ts';
import { readSessionCookie } from '../session/cookie.ts';
import { authorizeScmAttach, authorizeScmManage } from './access.ts';
import { attachInstallation, listInstallations, removeInstallation } from './installations.ts';
import { completeLink, startLink } from './link.ts';
import { CALLBACK_PARAM_LIMITS, ERROR_RESPONSES, TAGS, attachBody, callbackQuery, installationParams, linkResponse, listResponse, scmInstallationSchema, tenantParams } from './schemas.ts';
import type { Scm } from './service.ts';
import { scmInstallationWire } from './wire.ts';

export interface InstallationRouteOptions {
  /** undefined: the scm section is unset, and plugin.ts answers 404 before these handlers run. */
  scm: Scm | undefined;
  auth: ManagementAuthDeps;
  /** public.api_url: the callback's redirects are built from it, never from request headers. */
  publicUrl: string;
}

type TenantParams = { tenant_id: string };

/** A callback parameter as completeLink takes it: repeated (an array) or too long is none, which its checks refuse. */
const single = (value: unknown, max: number) => (typeof value === 'string' && value.length <= max ? value : undefined);

/** Link, list, remove and attach (spec 2, Source-control integration), and the host's redirect target. */
export const installationRoutes: FastifyPluginAsync<InstallationRouteOptions> = async (app, opts) => {
  const scm = () => opts.scm!;
  const base = '/api/v1/tenants/:tenant_id/scm-installations';

  app.post<{ Params: TenantParams }>(
    `${base}/link`,
    {
      config: { scmSection: true },
      schema: {
        operationId: 'create_scm_installation_link',
        summary: 'Start linking a source-control installation to the tenant (tenant admin): returns the install URL with a single-use state',
        tags: TAGS,
        params: tenantParams,
        response: { 200: linkResponse, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const tenantId = req.params.tenant_id;
      authorizeScmManage(p, tenantId);
      if (!(await getTenant(scm().db, tenantId))) throw notFound(`tenant ${tenantId} not found`);
      const { installUrl, expiresAt } = await startLink(scm(), { tenantId, userId: p.kind === 'user' ? p.user.id : null, startedBy: principalLabel(p) });
      return { install_url: installUrl, expires_at: expiresAt.toISOString() };
    },
  );

  app.get<{ Params: TenantParams }>(
    base,
    {
      config: { scmSection: true },
      schema: {
        operationId: 'list_scm_installations',
        summary: 'The tenant’s linked installations with their repositories, refreshed from the host (tenant admin)',
        tags: TAGS,
        params: tenantParams,
        response: { 200: listResponse, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      authorizeScmManage(principalOf(req), req.params.tenant_id);
      const installations = await listInstallations(scm(), req.params.tenant_id);
      return { configured: true, stale: installations.some((i) => i.stale), installations: installations.map(scmInstallationWire) };
    },
  );

  app.delete<{ Params: TenantParams & { installation_id: string } }>(
    `${base}/:installation_id`,
    {
      config: { scmSection: true },
      schema: {
        operationId: 'delete_scm_installation',
        summary: 'Remove a link (tenant admin): Floe stops using the installation at once; the app stays installed on the host',
        tags: TAGS,
        params: installationParams,
        response: { 204: { type: 'null', description: 'Removed' }, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      authorizeScmManage(principalOf(req), req.params.tenant_id);
      const id = Number(req.params.installation_id);
      // Past 2^53 the number would name another id; no such installation can have been linked.
      if (!Number.isSafeInteger(id)) throw notFound(`installation ${req.params.installation_id} is not linked to tenant ${req.params.tenant_id}`);
      await removeInstallation(scm(), req.params.tenant_id, id);
      return reply.code(204).send();
    },
  );

  app.post<{ Params: TenantParams; Body: { installation_id: number } }>(
    `${base}/attach`,
    {
      config: { scmSection: true },
      schema: {
        operationId: 'attach_scm_installation',
        summary: 'Link an installation that already exists on the host, by id (instance admin; checked with the app’s JWT)',
        tags: TAGS,
        params: tenantParams,
        body: attachBody,
        response: { 200: scmInstallationSchema, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const p = principalOf(req);
      authorizeScmAttach(p);
      const tenantId = req.params.tenant_id;
      if (!(await getTenant(scm().db, tenantId))) throw notFound(`tenant ${tenantId} not found`);
      return scmInstallationWire(await attachInstallation(scm(), tenantId, req.body.installation_id, principalLabel(p)));
    },
  );

  app.get<{ Querystring: Record<string, unknown> }>(
    '/ui/scm/callback',
    {
      config: { scmSection: true, public: true },
      schema: {
        operationId: 'complete_scm_installation_link',
        summary: 'Where the host sends the browser after installing the app; needs the browser session of the user who started the link',
        tags: TAGS,
        security: [{ session: [] }],
        querystring: callbackQuery,
        response: { 302: { type: 'null', description: 'To {public.api_url}/integrations/scm?scm=linked, or ?scm=error&reason=state|session|forbidden|scm|permissions' }, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      const link = scm();
      // Any failure is a redirect with a generic reason (spec 2, Errors): a browser on its way back
      // from the host never lands on a JSON error body, not even when Floe itself failed (the
      // session lookup included).
      const result = await (async () => {
        const token = readSessionCookie(req.headers.cookie);
        const session = token ? await opts.auth.session(token) : undefined;
        const q = req.query;
        return completeLink(link, {
          code: single(q.code, CALLBACK_PARAM_LIMITS.code),
          installationId: single(q.installation_id, CALLBACK_PARAM_LIMITS.installation_id),
          state: single(q.state, CALLBACK_PARAM_LIMITS.state),
          session,
        });
      })().catch((err: unknown) => {
        req.log.error({ err }, 'scm: link callback failed');
        return { ok: false as const, reason: 'scm' as const, detail: 'internal error' };
      });
      const target = new URL(`${opts.publicUrl.replace(/\/+$/, '')}/integrations/scm`);
      if (result.ok) {
        req.log.info({ tenant: result.installation.tenantId, installation: result.installation.installationId }, 'scm: installation linked');
        target.searchParams.set('scm', 'linked');
      } else {
        // The browser learns only the generic reason (spec 2, Linking security); the log has the detail.
        req.log.info({ reason: result.reason, detail: result.detail }, 'scm: link callback refused');
        target.searchParams.set('scm', 'error');
        target.searchParams.set('reason', result.reason);
      }
      return reply.redirect(target.toString(), 302);
    },
  );
};
