import { isDeepStrictEqual } from 'node:util';
import type { FastifyPluginAsync } from 'fastify';
import { authorizeInstance, authorizeTenant, isInstanceAdmin, type Principal } from '@floe/auth';
import { badData, notFound } from '@floe/errors';
import { tenantLimitsProblems } from '@floe/config';
import { retentionStreamProblems } from '@floe/query';
import { createTenant, deleteTenant, getTenant, listTenants, MetaError, refuseTablesLeftBehind, SYSTEM_TENANT_ID, updateTenant, type Tenant } from '@floe/meta';
import { oneAtATime } from './one-at-a-time.ts';
import { provisionBestEffort, type ManagementOptions } from './options.ts';
import { purgeDeleted } from './tenant-tables.ts';
import { principalOf } from './principal-plugin.ts';
import { ERROR_RESPONSES, labelSchema, ref, tenantIdSchema, tenantParams } from './schemas.ts';
import { tenantWire } from './wire.ts';

interface CreateTenantBody {
  id: string;
  display_name?: string;
  settings?: Record<string, unknown>;
}
interface UpdateTenantBody {
  display_name?: string;
  disabled?: boolean;
  settings?: Record<string, unknown>;
}
type TenantParams = { tenant_id: string };

const TAGS = ['tenants'];

/** Tenants: created and deleted by instance admins, read by anyone with a role in them. */
export const tenantRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  const deletions = oneAtATime({ db: opts.db, lease: 'delete-tenant:', log: app.log });
  /**
   * A tenant's `settings.limits` (rates, storage quota, retention) are the operator's: settings
   * written by the tenant's own admin keep the stored limits (an absent `limits` is carried over)
   * and may not change them (403). An instance admin's are checked like the config keys they
   * override (400 naming each bad key).
   */
  const settingsToStore = async (p: Principal, tenantId: string, settings: Record<string, unknown>): Promise<Record<string, unknown>> => {
    if (isInstanceAdmin(p)) return checkedLimits(settings);
    const current = (await getTenant(opts.db, tenantId))?.settings.limits;
    if ('limits' in settings && !isDeepStrictEqual(settings.limits, current)) authorizeInstance(p, 'tenant.limits');
    const { limits: _dropped, ...rest } = settings;
    return current === undefined ? rest : { ...rest, limits: current };
  };

  const checkedLimits = (settings: Record<string, unknown>): Record<string, unknown> => {
    const problems = 'limits' in settings ? tenantLimitsProblems(settings.limits) : [];
    // The config schema checks a rule's shape; whether its selector is LogQL is the query package's to say.
    if (problems.length === 0) problems.push(...retentionStreamProblems((settings.limits as { retention_stream?: Array<{ selector: string }> } | undefined)?.retention_stream ?? [], 'settings.limits.retention_stream'));
    if (problems.length > 0) throw badData(problems.join('; '));
    return settings;
  };

  app.get(
    '/tenants',
    {
      schema: {
        operationId: 'list_tenants',
        summary: 'List the tenants the caller can see (all for instance admins)',
        tags: TAGS,
        response: { 200: { type: 'object', additionalProperties: false, required: ['tenants'], properties: { tenants: { type: 'array', items: ref('Tenant') } } }, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const p = principalOf(req);
      let tenants: Tenant[] = await listTenants(opts.db);
      if (!isInstanceAdmin(p)) {
        const visible = p.kind === 'api_key' ? new Set([p.tenantId]) : p.kind === 'user' ? new Set(p.roles.keys()) : new Set<string>();
        tenants = tenants.filter((t) => visible.has(t.id));
      }
      return { tenants: tenants.map(tenantWire) };
    },
  );

  app.post<{ Body: CreateTenantBody }>(
    '/tenants',
    {
      schema: {
        operationId: 'create_tenant',
        summary: 'Create a tenant with its default dataset (instance admin)',
        tags: TAGS,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['id'],
          properties: { id: tenantIdSchema, display_name: labelSchema, settings: { type: 'object', additionalProperties: true } },
        },
        response: { 201: ref('Tenant'), ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      authorizeInstance(principalOf(req), 'tenant.create');
      // Self-monitoring creates it when enabled; made by hand it would take Floe's own telemetry's id.
      if (req.body.id === SYSTEM_TENANT_ID) throw badData(`body.id ${SYSTEM_TENANT_ID} is reserved for Floe's own telemetry`);
      await refuseTablesLeftBehind(opts.db, req.body.id);
      const tenant = await createTenant(opts.db, { id: req.body.id, displayName: req.body.display_name, settings: req.body.settings && checkedLimits(req.body.settings) });
      await provisionBestEffort(opts, req.log, tenant.id, tenant.defaultDatasetId ?? 'default');
      return reply.code(201).send(tenantWire(tenant));
    },
  );

  app.get<{ Params: TenantParams }>(
    '/tenants/:tenant_id',
    { schema: { operationId: 'get_tenant', summary: 'Get a tenant', tags: TAGS, params: tenantParams, response: { 200: ref('Tenant'), ...ERROR_RESPONSES } } },
    async (req) => {
      authorizeTenant(principalOf(req), 'tenant.read', req.params.tenant_id);
      const tenant = await getTenant(opts.db, req.params.tenant_id);
      if (!tenant) throw notFound(`tenant ${req.params.tenant_id} not found`);
      return tenantWire(tenant);
    },
  );

  app.patch<{ Params: TenantParams; Body: UpdateTenantBody }>(
    '/tenants/:tenant_id',
    {
      schema: {
        operationId: 'update_tenant',
        summary: 'Update a tenant (tenant admin; `disabled` and a changed `settings.limits` need an instance admin)',
        tags: TAGS,
        params: tenantParams,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: { display_name: labelSchema, disabled: { type: 'boolean' }, settings: { type: 'object', additionalProperties: true } },
        },
        response: { 200: ref('Tenant'), ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const p = principalOf(req);
      authorizeTenant(p, 'tenant.update', req.params.tenant_id);
      // A tenant's own admin must not switch its keys off and on: that is the operator's call.
      if (req.body.disabled !== undefined) authorizeInstance(p, 'tenant.disable');
      const settings = req.body.settings && (await settingsToStore(p, req.params.tenant_id, req.body.settings));
      const tenant = await updateTenant(opts.db, req.params.tenant_id, {
        displayName: req.body.display_name,
        disabled: req.body.disabled,
        settings,
      });
      return tenantWire(tenant);
    },
  );

  app.delete<{ Params: TenantParams }>(
    '/tenants/:tenant_id',
    {
      schema: {
        operationId: 'delete_tenant',
        summary: 'Delete a tenant with its datasets, keys, memberships, tables and their files (instance admin)',
        tags: TAGS,
        params: tenantParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      authorizeInstance(principalOf(req), 'tenant.delete');
      const id = req.params.tenant_id;
      // One at a time per tenant, across routers: a second DELETE then finds the tables of the
      // first already purged (404), instead of taking them for leftovers and purging them again.
      await deletions.run(id, async () => {
        try {
          await deleteTenant(opts.db, id);
        } catch (err) {
          // A tenant already deleted whose tables are still there: this removes them.
          if (!(err instanceof MetaError && err.kind === 'not_found' && ((await opts.tables?.held(id)) ?? []).length > 0)) throw err;
        }
        // Its keys went with it, so nothing reads the tables any more. A purge that fails part-way
        // leaves only unreachable objects, and a DELETE again finishes it.
        await purgeDeleted(opts.tables, req.log, `tenant ${id}`, id);
      });
      return reply.code(204).send();
    },
  );
};

