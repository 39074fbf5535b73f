// `floe admin bootstrap --tenant T`: the first credential of a fresh installation (or a new one for
// an existing tenant). Safe to run repeatedly: the tenant is created only if missing; every run
// issues one new key and leaves earlier keys alone.

import type { Db } from './db.ts';
import { createApiKey } from './api-keys.ts';
import type { ApiKeyScope, CreatedApiKey } from './api-keys.ts';
import { getDefaultDataset } from './datasets.ts';
import { MetaError } from './errors.ts';
import { SYSTEM_TENANT_ID } from './ids.ts';
import type { Dataset } from './datasets.ts';
import { ensureTenant, refuseTablesLeftBehind } from './tenants.ts';
import type { Tenant } from './tenants.ts';

export const BOOTSTRAP_SCOPES: readonly ApiKeyScope[] = ['ingest', 'query', 'tenant:manage'];

export interface BootstrapResult {
  tenant: Tenant;
  /** The tenant's default dataset. */
  dataset: Dataset;
  /** Bound to the tenant (all datasets); the secret is shown once. */
  api_key: CreatedApiKey;
}

export async function bootstrapTenant(
  db: Db,
  tenantId: string,
  opts: { keyName?: string; createdBy?: string } = {},
): Promise<BootstrapResult> {
  // Self-monitoring creates it; a key of it could write telemetry posing as Floe's own.
  if (tenantId === SYSTEM_TENANT_ID) throw new MetaError('bad_data', `tenant id ${SYSTEM_TENANT_ID} is reserved for Floe's own telemetry`);
  return db.withTransaction(async (tx) => {
    await refuseTablesLeftBehind(tx, tenantId);
    const { tenant } = await ensureTenant(tx, { id: tenantId });
    const dataset = await getDefaultDataset(tx, tenantId);
    if (!dataset) throw new Error(`tenant ${tenantId} has no default dataset after ensureTenant`);
    const api_key = await createApiKey(tx, {
      tenantId,
      name: opts.keyName ?? 'bootstrap',
      scopes: BOOTSTRAP_SCOPES,
      createdBy: opts.createdBy ?? 'floe admin bootstrap',
    });
    return { tenant, dataset, api_key };
  });
}

/** The operator-facing form of a bootstrap: ids and the key secret (shown once). */
export function bootstrapSummary(r: BootstrapResult): { tenant: string; dataset: string; api_key: string } {
  return { tenant: r.tenant.id, dataset: r.dataset.id, api_key: r.api_key.secret };
}
