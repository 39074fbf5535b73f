import type { FastifyPluginAsync } from 'fastify';
import { authorizeTenant, type Principal } from '@floe/auth';
import { FloeError, conflict, notFound } from '@floe/errors';
import {
  DEFAULT_DATASET_ID,
  MetaError,
  createDataset,
  deleteDataset,
  getDataset,
  getTenant,
  listAttributeQueryDemand,
  listAttributeTypeMismatches,
  listDatasets,
  withDefaultDataset,
  type Dataset,
  type Tenant,
} from '@floe/meta';
import { oneAtATime } from './one-at-a-time.ts';
import { provisionBestEffort, type ManagementOptions } from './options.ts';
import { purgeDeleted } from './tenant-tables.ts';
import { principalOf } from './principal-plugin.ts';
import { ERROR_RESPONSES, datasetIdSchema, ref, tenantIdSchema, tenantParams } from './schemas.ts';
import { datasetWire } from './wire.ts';

type TenantParams = { tenant_id: string };
type DatasetParams = { tenant_id: string; dataset_id: string };

const TAGS = ['datasets'];
const datasetParams = { type: 'object', additionalProperties: false, required: ['tenant_id', 'dataset_id'], properties: { tenant_id: tenantIdSchema, dataset_id: datasetIdSchema } } as const;

export async function mustGetTenant(opts: ManagementOptions, id: string): Promise<Tenant> {
  const tenant = await getTenant(opts.db, id);
  if (!tenant) throw notFound(`tenant ${id} not found`);
  return tenant;
}

/** Datasets of a tenant. Creation answers 201 whether or not table provisioning succeeded. */
export const datasetRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  // Keyed by tenant, under the lease a tenant's DELETE takes: the datasets of one tenant are
  // deleted one at a time, and never while the tenant itself is (its purge covers theirs; two at
  // once purged the same files side by side). Deletions are rare; the wait is short.
  const deletions = oneAtATime({ db: opts.db, lease: 'delete-tenant:', log: app.log });
  app.post<{ Params: TenantParams; Body: { id: string } }>(
    '/tenants/:tenant_id/datasets',
    {
      schema: {
        operationId: 'create_dataset',
        summary: 'Create a dataset (tenant admin); its tables are provisioned best effort',
        tags: TAGS,
        params: tenantParams,
        body: { type: 'object', additionalProperties: false, required: ['id'], properties: { id: datasetIdSchema } },
        response: { 201: ref('Dataset'), ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      const tenantId = req.params.tenant_id;
      authorizeTenant(principalOf(req), 'dataset.create', tenantId);
      if (req.body.id === DEFAULT_DATASET_ID) throw conflict(`dataset ${DEFAULT_DATASET_ID} already exists in tenant ${tenantId}`);
      // Tables a deleted dataset of this id left (a purge that failed, or a commit under way
      // during the delete) would be readable in the new one: they must go first.
      const left = (await getDataset(opts.db, tenantId, req.body.id)) ? [] : ((await opts.tables?.held(tenantId, req.body.id)) ?? []);
      if (left.length > 0) {
        throw conflict(
          `dataset id ${req.body.id} still holds ${left.length} table(s) of a deleted dataset (${left.map((t) => `${t.namespace}.${t.name}`).slice(0, 5).join(', ')}); DELETE /api/v1/tenants/${tenantId}/datasets/${req.body.id} removes them`,
          { code: 'FLOE_ERR_DATASET_DATA_LEFT' },
        );
      }
      const dataset = await createDataset(opts.db, { tenantId, id: req.body.id });
      await provisionBestEffort(opts, req.log, tenantId, dataset.id);
      return reply.code(201).send(datasetWire(dataset));
    },
  );

  app.get<{ Params: TenantParams }>(
    '/tenants/:tenant_id/datasets',
    {
      schema: {
        operationId: 'list_datasets',
        summary: 'List a tenant’s datasets, the default one first',
        tags: TAGS,
        params: tenantParams,
        response: { 200: { type: 'object', additionalProperties: false, required: ['datasets'], properties: { datasets: { type: 'array', items: ref('Dataset') } } }, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      authorizeTenant(principalOf(req), 'tenant.read', req.params.tenant_id);
      const tenant = await mustGetTenant(opts, req.params.tenant_id);
      return { datasets: withDefaultDataset(tenant, await listDatasets(opts.db, tenant.id)).map(datasetWire) };
    },
  );

  app.get<{ Params: DatasetParams }>(
    '/tenants/:tenant_id/datasets/:dataset_id',
    {
      schema: {
        operationId: 'get_dataset',
        summary: 'Get a dataset',
        tags: TAGS,
        params: datasetParams,
        response: { 200: ref('Dataset'), ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      authorizeTenant(principalOf(req), 'tenant.read', req.params.tenant_id);
      return datasetWire(await mustGetDataset(opts, req.params.tenant_id, req.params.dataset_id));
    },
  );

  app.delete<{ Params: DatasetParams }>(
    '/tenants/:tenant_id/datasets/:dataset_id',
    {
      schema: {
        operationId: 'delete_dataset',
        summary: 'Delete a dataset with the API keys bound to it, its tables and their files (tenant admin); the default dataset goes only with its tenant (409)',
        tags: TAGS,
        params: datasetParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      const { tenant_id: tenantId, dataset_id: id } = req.params;
      authorizeTenant(principalOf(req), 'dataset.delete', tenantId);
      await mustGetTenant(opts, tenantId);
      // One at a time per tenant, across routers: a second DELETE then finds the tables of the
      // first already purged (404), instead of taking them for leftovers and purging them again.
      await deletions.run(tenantId, async () => {
        try {
          await deleteDataset(opts.db, tenantId, id);
        } catch (err) {
          // A dataset already deleted whose tables are still there: this removes them.
          if (!(err instanceof MetaError && err.kind === 'not_found' && ((await opts.tables?.held(tenantId, id)) ?? []).length > 0)) throw err;
        }
        // Its keys went with it and no key reaches it any more (auth refuses a dataset that does not
        // exist; the writer drops WAL records of one). A purge that fails part-way leaves only
        // unreachable objects, and a DELETE again finishes it.
        await purgeDeleted(opts.tables, req.log, `dataset ${id} of tenant ${tenantId}`, tenantId, id);
      });
      return reply.code(204).send();
    },
  );

  // Advisory statistics of a dataset's attributes: which keys queries filter on without a column
  // (candidates for schema.materialized_labels) and which keys carry values of more than one type.
  app.get<{ Params: DatasetParams }>(
    '/tenants/:tenant_id/datasets/:dataset_id/attribute-stats',
    {
      schema: {
        operationId: 'get_attribute_stats',
        summary: 'Attribute statistics of a dataset: query demand per key, type mismatches per key',
        tags: TAGS,
        params: datasetParams,
        response: {
          200: {
            type: 'object',
            additionalProperties: false,
            required: ['query_demand', 'type_mismatches'],
            properties: {
              query_demand: {
                type: 'array',
                description: 'Attribute keys that queries filtered on without a column of their own, most asked-for first',
                items: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['table', 'key', 'count', 'last_seen_at'],
                  properties: { table: { type: 'string' }, key: { type: 'string' }, count: { type: 'integer' }, last_seen_at: { type: 'string', format: 'date-time' } },
                },
              },
              type_mismatches: {
                type: 'array',
                description: 'Values stored with another type than their key\u2019s pinned type (off_type) or that lost the pin to a concurrent first value (pin_conflict)',
                items: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['table', 'key', 'reason', 'count', 'last_seen_at'],
                  properties: {
                    table: { type: 'string' },
                    key: { type: 'string' },
                    reason: { type: 'string', enum: ['off_type', 'pin_conflict'] },
                    count: { type: 'integer' },
                    last_seen_at: { type: 'string', format: 'date-time' },
                  },
                },
              },
            },
          },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req) => {
      const p = principalOf(req);
      authorizeTenant(p, 'tenant.read', req.params.tenant_id);
      authorizeDatasetData(p, req.params.dataset_id);
      const dataset = await mustGetDataset(opts, req.params.tenant_id, req.params.dataset_id);
      const [demand, mismatches] = await Promise.all([listAttributeQueryDemand(opts.db, dataset.tenantId, dataset.id), listAttributeTypeMismatches(opts.db, dataset.tenantId, dataset.id)]);
      return {
        query_demand: demand.map((d) => ({ table: d.table, key: d.key, count: d.count, last_seen_at: d.lastSeenAt.toISOString() })),
        type_mismatches: mismatches.map((m) => ({ table: m.table, key: m.key, reason: m.reason, count: m.count, last_seen_at: m.lastSeenAt.toISOString() })),
      };
    },
  );
};

/**
 * Throws 403 when a dataset-bound key asks about what another dataset holds (its attribute keys,
 * pins and query demand): that key may read its own dataset's telemetry only.
 */
export function authorizeDatasetData(p: Principal, datasetId: string): void {
  if (p.kind === 'api_key' && p.datasetId !== null && p.datasetId !== datasetId) {
    throw new FloeError('forbidden', `API key is not valid for dataset ${datasetId}`, { code: 'FLOE_ERR_AUTH_WRONG_DATASET' });
  }
}

export async function mustGetDataset(opts: ManagementOptions, tenantId: string, datasetId: string): Promise<Dataset> {
  const tenant = await mustGetTenant(opts, tenantId);
  const found = (await getDataset(opts.db, tenant.id, datasetId)) ?? withDefaultDataset(tenant, []).find((d) => d.id === datasetId);
  if (!found) throw notFound(`dataset ${datasetId} not found in tenant ${tenant.id}`);
  return found;
}
