import type { FastifyBaseLogger } from 'fastify';
import type { ManagementAuthDeps } from '@floe/auth';
import type { Db } from '@floe/meta';
import type { TenantTables } from './tenant-tables.ts';
import type { CompactorClient } from '../compactor-client.ts';

/**
 * Provisions the tables of a dataset (spec 2, provisioning rule 1: synchronous, best effort). The
 * writer owns table provisioning; the composition plugs its provisioner in here. Its failure is
 * logged as a warning and never reaches the response.
 */
export type ProvisionDataset = (tenantId: string, datasetId: string) => Promise<unknown>;

export interface ManagementOptions {
  db: Db;
  auth: ManagementAuthDeps;
  provisionDataset?: ProvisionDataset;
  /** Listing and on-demand provisioning of a tenant's tables (absent: those routes answer 503). */
  tables?: TenantTables;
  /** The compactor behind /ops/compact (absent: those routes answer 503). */
  compactor?: CompactorClient;
}

/** Runs the provisioning hook, if any; never throws. */
export async function provisionBestEffort(opts: ManagementOptions, log: FastifyBaseLogger, tenantId: string, datasetId: string): Promise<void> {
  if (!opts.provisionDataset) return;
  try {
    await opts.provisionDataset(tenantId, datasetId);
  } catch (err) {
    log.warn({ err, tenant: tenantId, dataset: datasetId }, 'table provisioning at dataset creation failed; the writer will retry');
  }
}
