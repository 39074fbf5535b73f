import type { FastifyRequest } from 'fastify';
import { authorizeTenant, isValidName, type TenantAction } from '@floe/auth';
import { FloeError } from '@floe/errors';
import { DEFAULT_DATASET_ID, type Dataset } from '@floe/meta';
import { authorizeDatasetData, mustGetDataset, mustGetTenant } from './datasets.ts';
import type { ManagementOptions } from './options.ts';
import { principalOf } from './principal-plugin.ts';
import { headerValue } from '@floe/runtime';

/**
 * The tenant (and dataset) a /schema/* call acts in. These paths carry no tenant: an API key acts
 * in its own tenant (a mismatching X-Tenant-ID is refused before this), any other caller names
 * one with X-Tenant-ID. A tenant's registries are never visible from another tenant.
 */
export function schemaTenant(req: FastifyRequest, action: TenantAction): string {
  const p = principalOf(req);
  const named = headerValue(req.headers, 'x-tenant-id')?.trim();
  const tenantId = p.kind === 'api_key' ? p.tenantId : named;
  if (!tenantId) throw new FloeError('unauthorized', 'name the tenant with the X-Tenant-ID header', { code: 'FLOE_ERR_AUTH_NO_TENANT' });
  if (!isValidName(tenantId)) throw new FloeError('bad_data', 'invalid X-Tenant-ID', { code: 'FLOE_ERR_AUTH_BAD_TENANT' });
  authorizeTenant(p, action, tenantId);
  return tenantId;
}

/** The dataset attribute pins are read from: `?dataset`, else a dataset-bound key's, else the tenant's default. */
export async function schemaDataset(req: FastifyRequest, opts: ManagementOptions, tenantId: string, asked: string | undefined): Promise<Dataset> {
  const p = principalOf(req);
  const bound = p.kind === 'api_key' ? p.datasetId : null;
  if (asked !== undefined) authorizeDatasetData(p, asked);
  const tenant = await mustGetTenant(opts, tenantId);
  return mustGetDataset(opts, tenantId, asked ?? bound ?? tenant.defaultDatasetId ?? DEFAULT_DATASET_ID);
}
