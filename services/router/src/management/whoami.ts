import type { FastifyPluginAsync } from 'fastify';
import { isInstanceAdmin } from '@floe/auth';
import type { ManagementOptions } from './options.ts';
import { principalOf } from './principal-plugin.ts';
import { ERROR_RESPONSES, ref, tenantIdSchema } from './schemas.ts';
import { rolesWire, sessionUserWire } from './wire.ts';

/** Names the caller: the signed-in user and their roles, the API key, or the break-glass key. */
export const whoamiRoutes: FastifyPluginAsync<ManagementOptions> = async (app) => {
  app.get(
    '/whoami',
    {
      schema: {
        operationId: 'get_whoami',
        summary: 'Who the credentials belong to',
        tags: ['session'],
        response: {
          200: {
            type: 'object',
            additionalProperties: false,
            required: ['kind', 'is_instance_admin', 'user', 'api_key', 'memberships'],
            properties: {
              kind: { type: 'string', enum: ['user', 'api_key', 'admin_key'], description: 'admin_key: the break-glass auth.admin_api_key.' },
              is_instance_admin: { type: 'boolean' },
              user: { anyOf: [ref('SessionUser'), { type: 'null' }] },
              api_key: {
                anyOf: [
                  {
                    type: 'object',
                    additionalProperties: false,
                    required: ['id', 'tenant_id', 'dataset_id', 'scopes'],
                    properties: { id: { type: 'string' }, tenant_id: tenantIdSchema, dataset_id: { type: ['string', 'null'] }, scopes: { type: 'array', items: { type: 'string' } } },
                  },
                  { type: 'null' },
                ],
              },
              memberships: { type: 'array', items: ref('EffectiveRole'), description: 'Effective role per tenant (signed-in users).' },
            },
          },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req) => {
      const p = principalOf(req);
      return {
        kind: p.kind,
        is_instance_admin: isInstanceAdmin(p),
        user: p.kind === 'user' ? sessionUserWire(p.user) : null,
        api_key: p.kind === 'api_key' ? { id: p.keyId, tenant_id: p.tenantId, dataset_id: p.datasetId, scopes: [...p.scopes] } : null,
        memberships: p.kind === 'user' ? rolesWire(p.roles) : [],
      };
    },
  );
};
