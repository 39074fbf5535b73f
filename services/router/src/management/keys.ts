import type { FastifyPluginAsync } from 'fastify';
import { assertGrantableScopes, authorizeTenant, mayRevokeKey, principalLabel } from '@floe/auth';
import { forbidden, notFound } from '@floe/errors';
import { createApiKey, getApiKey, getTenant, listApiKeys, revokeApiKey, updateApiKeyScopes } from '@floe/meta';
import type { ManagementOptions } from './options.ts';
import { principalOf } from './principal-plugin.ts';
import { ERROR_RESPONSES, datasetIdSchema, keyIdSchema, labelSchema, ref, scopesSchema, tenantIdSchema, tenantParams } from './schemas.ts';
import { apiKeyWire, createdApiKeyWire } from './wire.ts';

type TenantParams = { tenant_id: string };
type KeyParams = { tenant_id: string; key_id: string };
interface CreateKeyBody {
  name?: string;
  scopes: string[];
  dataset_id?: string | null;
}

const TAGS = ['api keys'];
const keyParams = { type: 'object', additionalProperties: false, required: ['tenant_id', 'key_id'], properties: { tenant_id: tenantIdSchema, key_id: keyIdSchema } } as const;

/**
 * API keys of a tenant. The secret is in the creation response only; the database keeps its
 * SHA-256. Revocation is immediate in this process and reaches other processes through the key
 * verifier (see @floe/meta).
 */
export const keyRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  app.post<{ Params: TenantParams; Body: CreateKeyBody }>(
    '/tenants/:tenant_id/api-keys',
    {
      schema: {
        operationId: 'create_api_key',
        summary: 'Create an API key; the secret is returned once (members may not grant tenant:manage)',
        tags: TAGS,
        params: tenantParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['scopes'],
          properties: {
            name: labelSchema,
            scopes: scopesSchema,
            dataset_id: { anyOf: [datasetIdSchema, { type: 'null' }], description: 'Bind the key to one dataset; omitted or null: every dataset of the tenant.' },
          },
        },
        response: { 201: ref('CreatedApiKey'), ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const tenantId = req.params.tenant_id;
      const role = authorizeTenant(p, 'api_key.create', tenantId);
      assertGrantableScopes(role, req.body.scopes);
      const key = await createApiKey(opts.db, { tenantId, datasetId: req.body.dataset_id ?? null, name: req.body.name, scopes: req.body.scopes, createdBy: principalLabel(p) });
      return reply.code(201).send(createdApiKeyWire(key));
    },
  );

  app.get<{ Params: TenantParams; Querystring: { include_revoked?: 'true' | 'false' } }>(
    '/tenants/:tenant_id/api-keys',
    {
      schema: {
        operationId: 'list_api_keys',
        summary: 'List a tenant’s API keys, oldest first (never secrets)',
        tags: TAGS,
        params: tenantParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { include_revoked: { type: 'string', enum: ['true', 'false'], default: 'false', description: 'Also list revoked keys.' } },
        },
        response: { 200: { type: 'object', additionalProperties: false, required: ['api_keys'], properties: { api_keys: { type: 'array', items: ref('ApiKey') } } }, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      authorizeTenant(principalOf(req), 'api_key.read', req.params.tenant_id);
      if (!(await getTenant(opts.db, req.params.tenant_id))) throw notFound(`tenant ${req.params.tenant_id} not found`);
      const keys = await listApiKeys(opts.db, req.params.tenant_id, { activeOnly: req.query.include_revoked !== 'true' });
      return { api_keys: keys.map(apiKeyWire) };
    },
  );

  app.get<{ Params: KeyParams }>(
    '/tenants/:tenant_id/api-keys/:key_id',
    { schema: { operationId: 'get_api_key', summary: 'Get an API key (never its secret)', tags: TAGS, params: keyParams, response: { 200: ref('ApiKey'), ...ERROR_RESPONSES } } },
    async (req) => {
      authorizeTenant(principalOf(req), 'api_key.read', req.params.tenant_id);
      const key = await getApiKey(opts.db, req.params.tenant_id, req.params.key_id);
      if (!key) throw notFound(`api key ${req.params.key_id} not found in tenant ${req.params.tenant_id}`);
      return apiKeyWire(key);
    },
  );

  app.patch<{ Params: KeyParams; Body: { scopes: string[] } }>(
    '/tenants/:tenant_id/api-keys/:key_id',
    {
      schema: {
        operationId: 'update_api_key',
        summary: 'Replace an API key’s scopes (tenant admin)',
        tags: TAGS,
        params: keyParams,
        body: { type: 'object', additionalProperties: false, required: ['scopes'], properties: { scopes: scopesSchema } },
        response: { 200: ref('ApiKey'), ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      authorizeTenant(principalOf(req), 'api_key.manage', req.params.tenant_id);
      return apiKeyWire(await updateApiKeyScopes(opts.db, req.params.tenant_id, req.params.key_id, req.body.scopes));
    },
  );

  app.delete<{ Params: KeyParams }>(
    '/tenants/:tenant_id/api-keys/:key_id',
    {
      schema: {
        operationId: 'revoke_api_key',
        summary: 'Revoke an API key (tenant admin, or the member who created it); answers the revoked key',
        tags: TAGS,
        params: keyParams,
        response: { 200: ref('ApiKey'), ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const { tenant_id, key_id } = req.params;
      authorizeTenant(p, 'tenant.read', tenant_id);
      const key = await getApiKey(opts.db, tenant_id, key_id);
      if (!mayRevokeKey(p, tenant_id, { createdBy: key?.createdBy ?? null })) throw forbidden(`revoking keys in tenant ${tenant_id} needs the admin role`);
      if (!key) throw notFound(`api key ${key_id} not found in tenant ${tenant_id}`);
      return apiKeyWire(await revokeApiKey(opts.db, tenant_id, key_id));
    },
  );
};
