import { enabledTables, listTenantTables, provisionDataset, type DatasetProvisioning, type ListedTable, type SqlCatalog, type TableIdentifier } from '@floe/iceberg';
import type { ObjectStore } from '@floe/storage';
import type { FloeConfig } from '@floe/config';
import { getTenant, type Db, type Tenant } from '@floe/meta';
import type { ProvisionDataset } from './options.ts';
import type { Logger } from '@floe/telemetry';

/**
 * The router's view of a tenant's tables: provisioning on demand and at dataset creation (spec 2,
 * provisioning rules 1 and 8), and the listing. The same provisioning code runs in the writer's
 * reconcile pass (@floe/iceberg provisionDataset), so both create identical tables.
 */
export interface TenantTables {
  provision(tenant: Tenant, datasets: readonly string[]): Promise<DatasetProvisioning[]>;
  list(tenantId: string, datasets: readonly string[]): Promise<{ tables: ListedTable[]; datasets: Array<{ dataset: string; tables: ListedTable[] }> }>;
  /** The configured default_schemas the provisioning above follows (the schema endpoints show them). */
  readonly defaults: FloeConfig['schema']['default_schemas'];
  /** Tables the catalog holds in the tenant's namespaces (`<tenant>.<dataset>`). */
  held(tenantId: string): Promise<TableIdentifier[]>;
  /**
   * Deletes the tables of a deleted tenant: each table's catalog entry, then every object under
   * its location (data files, sidecars, manifests, metadata). Nothing of it is readable after the
   * catalog entry goes, so a failure part-way leaves only unreachable objects; purging again
   * finishes the job.
   */
  purge(tenantId: string): Promise<{ tables: number; objects: number }>;
}

export function createTenantTables(catalog: SqlCatalog, store: ObjectStore, defaults: FloeConfig['schema']['default_schemas'], log: Logger): TenantTables {
  const held = (tenantId: string) => catalog.listTables(tenantId);
  return {
    async provision(tenant, datasets) {
      const tables = enabledTables(defaults, tenant.settings);
      const out: DatasetProvisioning[] = [];
      for (const dataset of datasets) out.push(await provisionDataset(catalog, tenant.id, dataset, tables, log));
      return out;
    },
    list: (tenantId, datasets) => listTenantTables(catalog, tenantId, datasets),
    defaults,
    held,
    async purge(tenantId) {
      let tables = 0;
      let objects = 0;
      for (const id of await held(tenantId)) {
        const handle = await catalog.loadTable(id.namespace, id.name);
        await catalog.dropTable(id.namespace, id.name);
        tables++;
        if (!handle) continue;
        const keys = (await store.list(`${store.keyFromUri(handle.metadata.location).replace(/\/+$/, '')}/`)).map((o) => o.key);
        await store.deleteMany(keys);
        objects += keys.length;
      }
      return { tables, objects };
    },
  };
}

/** Dataset creation's provisioning hook over these tables (rule 1: synchronous, best effort). */
export function provisionOnCreate(tables: TenantTables, db: Db): ProvisionDataset {
  return async (tenantId, datasetId) => {
    const tenant = await getTenant(db, tenantId);
    if (tenant) await tables.provision(tenant, [datasetId]);
  };
}
