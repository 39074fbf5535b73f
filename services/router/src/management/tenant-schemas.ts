import type { FastifyPluginAsync } from 'fastify';
import { FloeError } from '@floe/errors';
import { schemaSignals, type SignalSchema } from '@floe/iceberg';
import { authorizeTenant } from '@floe/auth';
import { mustGetTenant } from './datasets.ts';
import type { ManagementOptions } from './options.ts';
import { principalOf } from './principal-plugin.ts';
import { ERROR_RESPONSES, tenantParams } from './schemas.ts';

/**
 * Table schemas per signal (spec 2, "Tables provisioned per dataset"): which signals this instance
 * provisions (default_schemas.<signal>_enabled), and for a tenant, which of them its own schema
 * block narrows away. Custom schemas of default_schemas.custom_schemas are shown as declared and
 * never provisioned. Both read the same rule the provisioner follows (@floe/iceberg schemaSignals).
 */

const TAGS = ['schemas'];

const signalSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['signal', 'tables', 'enabled_by_default'],
  properties: {
    signal: { type: 'string', enum: ['traces', 'logs', 'metrics', 'profiles'] },
    tables: { type: 'array', items: { type: 'string' } },
    enabled_by_default: { type: 'boolean', description: 'default_schemas.<signal>_enabled.' },
    disabled_by_tenant: { type: 'boolean', description: 'The tenant’s settings.schema.<signal>_enabled is false.' },
    enabled: { type: 'boolean', description: 'Provisioned for the tenant’s datasets.' },
  },
} as const;

const customSchemas = { type: 'array', items: { type: 'object', additionalProperties: true }, description: 'default_schemas.custom_schemas as configured; never provisioned.' } as const;

const availableWire = (s: SignalSchema) => ({ signal: s.signal, tables: s.tables, enabled_by_default: s.enabledByDefault });

export const tenantSchemaRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  const defaults = () => {
    if (!opts.tables) throw new FloeError('unavailable', 'table provisioning is not available on this router');
    return opts.tables.defaults;
  };

  app.get(
    '/schemas/available',
    {
      schema: {
        operationId: 'list_available_schemas',
        summary: 'The table schemas of each signal and whether this instance provisions them by default',
        tags: TAGS,
        response: { 200: { type: 'object', additionalProperties: false, required: ['schemas', 'custom_schemas'], properties: { schemas: { type: 'array', items: signalSchema }, custom_schemas: customSchemas } }, ...ERROR_RESPONSES },
      },
    },
    // Instance configuration, the same for everyone: any authenticated caller may read it.
    async () => ({ schemas: schemaSignals(defaults()).map(availableWire), custom_schemas: defaults().custom_schemas }),
  );

  app.get<{ Params: { tenant_id: string } }>(
    '/tenants/:tenant_id/schemas',
    {
      schema: {
        operationId: 'list_schemas',
        summary: 'The table schemas provisioned for the tenant: the defaults narrowed by its own schema block',
        tags: TAGS,
        params: tenantParams,
        response: {
          200: {
            type: 'object',
            additionalProperties: false,
            required: ['tenant_id', 'schemas', 'custom_schemas'],
            properties: { tenant_id: { type: 'string' }, schemas: { type: 'array', items: signalSchema }, custom_schemas: customSchemas },
          },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req) => {
      authorizeTenant(principalOf(req), 'tenant.read', req.params.tenant_id);
      const tenant = await mustGetTenant(opts, req.params.tenant_id);
      const schemas = schemaSignals(defaults(), tenant.settings).map((s) => ({ ...availableWire(s), disabled_by_tenant: s.disabledByTenant, enabled: s.enabled }));
      return { tenant_id: tenant.id, schemas, custom_schemas: defaults().custom_schemas };
    },
  );
};
