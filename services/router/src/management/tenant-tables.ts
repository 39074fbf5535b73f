import { enabledTables, listTenantTables, floeNamespace, provisionDataset, tenantTableUsage, type DatasetProvisioning, type ListedTable, type SqlCatalog, type TableIdentifier, type TableUsage } from '@floe/iceberg';
import { tenantLimits, type ActiveSeriesStore } from '@floe/limits';
import type { ObjectStore } from '@floe/storage';
import type { FloeConfig } from '@floe/config';
import { getTenant, type Db, type Tenant } from '@floe/meta';
import type { ProvisionDataset } from './options.ts';
import type { Logger } from '@floe/telemetry';
import { FloeError } from '@floe/errors';

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
  /** Tables the catalog holds in the tenant's namespaces (`<tenant>.<dataset>`), or in one dataset's. */
  held(tenantId: string, dataset?: string): Promise<TableIdentifier[]>;
  /**
   * Deletes the tables of a deleted tenant, or of one deleted dataset: each table's catalog
   * entry, then every object under its location (data files, sidecars, manifests, metadata).
   * Nothing of it is readable after the catalog entry goes, so a failure part-way leaves only
   * unreachable objects; purging again finishes the job.
   */
  purge(tenantId: string, dataset?: string): Promise<{ tables: number; objects: number }>;
  /** What the tenant's tables hold now (their current snapshots) against its storage quota, and each one's retention. */
  usage(tenant: Tenant): Promise<TenantUsage>;
}

export interface TenantUsage {
  tenant: string;
  /** Parquet bytes of the current snapshots: what limits.max_storage_bytes is measured against. */
  stored_bytes: number;
  /** The tenant's storage quota in effect; null: unlimited. */
  max_storage_bytes: number | null;
  /** Metric series that took a data point within the tenant's active_series_window; null: not counted (no series limit). */
  active_series: number | null;
  /** The tenant's limits.max_active_series in effect; null: unlimited. */
  max_active_series: number | null;
  /** retention_ms: how long rows are kept; null: forever. */
  tables: Array<TableUsage & { retention_ms: number | null }>;
}

export interface TenantTablesOptions {
  catalog: SqlCatalog;
  store: ObjectStore;
  /** schema.default_schemas: which tables provisioning creates. */
  schemas: FloeConfig['schema']['default_schemas'];
  /** limits.*: the instance's quota and retention, which a tenant's settings may override. */
  limits: FloeConfig['limits'];
  /** The acceptors' count of each tenant's active series (shared with them: Redis, or this process's memory). */
  activeSeries: ActiveSeriesStore;
  log: Logger;
}

export function createTenantTables({ catalog, store, schemas: defaults, limits, activeSeries, log }: TenantTablesOptions): TenantTables {
  // A namespace prefix lists the tables of that namespace and of those under it.
  const held = (tenantId: string, dataset?: string) => catalog.listTables(dataset === undefined ? tenantId : floeNamespace(tenantId, dataset));
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
    async purge(tenantId, dataset) {
      let tables = 0;
      let objects = 0;
      for (const id of await held(tenantId, dataset)) {
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
    async usage(tenant) {
      const own = tenantLimits(limits, tenant.settings);
      const tables = (await tenantTableUsage(catalog, tenant.id)).map((t) => {
        const retention = own.retentionMs(t.table);
        return { ...t, retention_ms: retention > 0 ? retention : null };
      });
      return {
        tenant: tenant.id,
        stored_bytes: tables.reduce((a, t) => a + t.bytes, 0),
        max_storage_bytes: own.maxStorageBytes ?? null,
        active_series: own.maxActiveSeries === undefined ? null : await activeSeries.count(tenant.id, own.activeSeriesWindowMs),
        max_active_series: own.maxActiveSeries ?? null,
        tables,
      };
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

/**
 * After a tenant's or a dataset's row is deleted: purges its tables (`dataset` undefined: every
 * dataset of the tenant), logging what went. A failure is 503 naming `what` ("tenant acme"): the
 * row is gone, and a DELETE again finishes the purge.
 */
export async function purgeDeleted(tables: TenantTables | undefined, log: { info(obj: object, msg: string): void }, what: string, tenantId: string, dataset?: string): Promise<void> {
  if (!tables) return;
  try {
    const purged = await tables.purge(tenantId, dataset);
    if (purged.tables > 0) log.info({ tenant: tenantId, ...(dataset === undefined ? {} : { dataset }), ...purged }, `tables of a deleted ${dataset === undefined ? 'tenant' : 'dataset'} purged`);
  } catch (err) {
    throw new FloeError('unavailable', `${what} is deleted, but deleting its tables failed (${err instanceof Error ? err.message : String(err)}); DELETE it again to finish`, { cause: err });
  }
}
