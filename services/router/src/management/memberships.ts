import type { FastifyPluginAsync } from 'fastify';
import { authorizeTenant, principalLabel } from '@floe/auth';
import { badData, notFound } from '@floe/errors';
import { getTenant, getUser, getUserByEmail, grantMembership, listTenantMemberships, revokeMembership, type MembershipRole } from '@floe/meta';
import type { ManagementOptions } from './options.ts';
import { principalOf } from './principal-plugin.ts';
import { ERROR_RESPONSES, emailSchema, ref, roleSchema, tenantIdSchema, tenantParams, userIdSchema } from './schemas.ts';
import { membershipWire } from './wire.ts';

type TenantParams = { tenant_id: string };
interface GrantBody {
  user_id?: string;
  email?: string;
  role: MembershipRole;
}

const TAGS = ['memberships'];

/**
 * Local grants of a role in a tenant. SSO-mapped rows (granted_by `oidc_mapping`) are listed but
 * never changed here: they follow the identity provider's groups at each login.
 */
export const membershipRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  app.get<{ Params: TenantParams }>(
    '/tenants/:tenant_id/memberships',
    {
      schema: {
        operationId: 'list_memberships',
        summary: 'List a tenant’s membership rows, local and SSO-mapped; emails only for tenant admins (others see their own)',
        tags: TAGS,
        params: tenantParams,
        response: { 200: { type: 'object', additionalProperties: false, required: ['memberships'], properties: { memberships: { type: 'array', items: ref('Membership') } } }, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const p = principalOf(req);
      // Emails are personal data: shown to whoever manages the tenant, and to each member for their own row.
      const manages = authorizeTenant(p, 'membership.read', req.params.tenant_id) === 'admin';
      if (!(await getTenant(opts.db, req.params.tenant_id))) throw notFound(`tenant ${req.params.tenant_id} not found`);
      const rows = await listTenantMemberships(opts.db, req.params.tenant_id);
      return { memberships: rows.map((m) => membershipWire(m, manages || (p.kind === 'user' && p.user.id === m.userId))) };
    },
  );

  app.post<{ Params: TenantParams; Body: GrantBody }>(
    '/tenants/:tenant_id/memberships',
    {
      schema: {
        operationId: 'create_membership',
        summary: 'Grant a user a role in the tenant, or change their local role (tenant admin); 201 when new, 200 when changed',
        tags: TAGS,
        params: tenantParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['role'],
          description: 'Name the user by exactly one of user_id and email.',
          properties: { user_id: userIdSchema, email: emailSchema, role: roleSchema },
        },
        response: { 200: ref('Membership'), 201: ref('Membership'), ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const tenantId = req.params.tenant_id;
      authorizeTenant(p, 'membership.manage', tenantId);
      const { user_id, email, role } = req.body;
      if ((user_id === undefined) === (email === undefined)) throw badData('name the user by exactly one of user_id and email');
      const user = user_id !== undefined ? await getUser(opts.db, user_id) : await getUserByEmail(opts.db, email!);
      if (!user) throw notFound(`user ${user_id ?? email} not found`);
      const { membership, created } = await grantMembership(opts.db, { tenantId, userId: user.id, role, grantedBy: principalLabel(p) });
      return reply.code(created ? 201 : 200).send(membershipWire(membership));
    },
  );

  app.delete<{ Params: TenantParams & { user_id: string } }>(
    '/tenants/:tenant_id/memberships/:user_id',
    {
      schema: {
        operationId: 'delete_membership',
        summary: 'Remove a user’s local grant in the tenant (tenant admin); an SSO-mapped row stays',
        tags: TAGS,
        params: { type: 'object', additionalProperties: false, required: ['tenant_id', 'user_id'], properties: { tenant_id: tenantIdSchema, user_id: userIdSchema } },
        response: { 204: { type: 'null', description: 'Removed' }, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      authorizeTenant(principalOf(req), 'membership.manage', req.params.tenant_id);
      await revokeMembership(opts.db, req.params.tenant_id, req.params.user_id);
      return reply.code(204).send();
    },
  );
};
