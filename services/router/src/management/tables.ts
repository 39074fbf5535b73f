import type { FastifyPluginAsync } from 'fastify';
import { authorizeTables } from '@floe/auth';
import { FloeError } from '@floe/errors';
import { provisioningFailed } from '@floe/iceberg';
import { getTenant, listDatasets, withDefaultDataset, type Tenant } from '@floe/meta';
import { TABLES } from '@floe/schema';
import { mustGetTenant } from './datasets.ts';
import type { ManagementOptions } from './options.ts';
import { principalOf } from './principal-plugin.ts';
import { ERROR_RESPONSES, tenantParams } from './schemas.ts';

type TenantParams = { tenant_id: string };
const TAGS = ['tables'];

const tableSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'dataset', 'full_name', 'type'],
  properties: {
    name: { type: 'string', description: 'The table’s name in the catalog.' },
    dataset: { type: 'string' },
    full_name: { type: 'string', description: '`<tenant>.<dataset>.<table>`, as SQL over Flight names it.' },
    type: {
      type: ['string', 'null'],
      enum: [...Object.keys(TABLES), null],
      description: 'The Floe table it is; null for a table this build does not define (a legacy metric table awaiting its drop, or one a newer build created).',
    },
  },
} as const;

const listingProperties = {
  tables: { type: 'array', items: tableSchema, description: 'Every table that exists, flat.' },
  datasets: {
    type: 'array',
    description: 'One entry per dataset of the tenant, with the tables it has (empty when nothing is provisioned).',
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['dataset', 'tables'],
      properties: { dataset: { type: 'string' }, tables: { type: 'array', items: tableSchema } },
    },
  },
} as const;

const provisionedSchema = {
  type: 'array',
  description: 'What this call did, per dataset and table.',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['dataset', 'table', 'outcome'],
    properties: {
      dataset: { type: 'string' },
      table: { type: 'string' },
      outcome: { type: 'string', enum: ['created', 'existing', 'evolved', 'recreated', 'dropped', 'failed'] },
      error: { type: 'string' },
    },
  },
} as const;

/**
 * A tenant's tables (spec 2, "Tables listing" and provisioning rules 1–8): list what exists, or
 * provision every enabled table of every dataset now. Any valid key of the tenant may call both.
 */
export const tableRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  const datasetsOf = async (tenant: Tenant) => withDefaultDataset(tenant, await listDatasets(opts.db, tenant.id)).map((d) => d.id);
  const tables = () => {
    if (!opts.tables) throw new FloeError('unavailable', 'table provisioning is not available on this router');
    return opts.tables;
  };

  app.get<{ Params: TenantParams }>(
    '/tenants/:tenant_id/tables',
    {
      schema: {
        operationId: 'list_tables',
        summary: 'List the tables that exist, flat and grouped by dataset',
        tags: TAGS,
        params: tenantParams,
        response: { 200: { type: 'object', additionalProperties: false, required: ['tables', 'datasets'], properties: listingProperties }, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      authorizeTables(principalOf(req), req.params.tenant_id);
      // Listing rule 1: a tenant the listing cannot resolve has no datasets rather than being an
      // error; callers refused above still learn nothing about whether the tenant exists.
      const tenant = await getTenant(opts.db, req.params.tenant_id);
      return tables().list(tenant?.id ?? req.params.tenant_id, tenant ? await datasetsOf(tenant) : []);
    },
  );

  app.post<{ Params: TenantParams }>(
    '/tenants/:tenant_id/tables/create',
    {
      schema: {
        operationId: 'create_tables',
        summary: 'Provision every enabled table of every dataset of the tenant now (201, or 500 if any table failed)',
        tags: TAGS,
        params: tenantParams,
        response: {
          201: { type: 'object', additionalProperties: false, required: ['tables', 'datasets', 'provisioned'], properties: { ...listingProperties, provisioned: provisionedSchema } },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req, reply) => {
      authorizeTables(principalOf(req), req.params.tenant_id);
      const tenant = await mustGetTenant(opts, req.params.tenant_id);
      const datasets = await datasetsOf(tenant);
      const results = await tables().provision(tenant, datasets);
      const provisioned = results.flatMap((r) => r.tables.map((t) => ({ dataset: r.dataset, ...t })));
      if (results.some(provisioningFailed)) {
        const failed = provisioned.filter((t) => t.outcome === 'failed').map((t) => `${t.dataset}.${t.table}`);
        throw new FloeError('internal', `could not create tables: ${failed.join(', ')} (logged; the writer retries)`);
      }
      return reply.code(201).send({ ...(await tables().list(tenant.id, datasets)), provisioned });
    },
  );

  app.get<{ Params: TenantParams }>(
    '/tenants/:tenant_id/usage',
    {
      schema: {
        operationId: 'get_tenant_usage',
        summary: "What the tenant's tables hold now against its storage quota, with each table's retention",
        tags: TAGS,
        params: tenantParams,
        response: { 200: usageSchema, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      authorizeTables(principalOf(req), req.params.tenant_id);
      return tables().usage(await mustGetTenant(opts, req.params.tenant_id));
    },
  );
};

const count = { type: 'integer', minimum: 0 } as const;

const usageSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['tenant', 'stored_bytes', 'max_storage_bytes', 'active_series', 'max_active_series', 'tables'],
  properties: {
    tenant: { type: 'string' },
    stored_bytes: { ...count, description: 'Parquet bytes of the current snapshots: what the storage quota is measured against' },
    max_storage_bytes: { type: ['integer', 'null'], description: 'The storage quota in effect (limits.max_storage_bytes or the tenant\'s own); null: unlimited' },
    active_series: { type: ['integer', 'null'], minimum: 0, description: 'Metric series that took a data point within limits.active_series_window; null: not counted (acceptors count them only under a series limit)' },
    max_active_series: { type: ['integer', 'null'], description: 'The active-series limit in effect (limits.max_active_series or the tenant\'s own); null: unlimited' },
    tables: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['dataset', 'table', 'bytes', 'rows', 'files', 'retention_ms'],
        properties: {
          dataset: { type: 'string' },
          table: { type: 'string' },
          bytes: count,
          rows: count,
          files: count,
          retention_ms: { type: ['integer', 'null'], description: 'How long rows are kept (limits.retention, per table and per tenant); null: forever' },
        },
      },
    },
  },
} as const;
