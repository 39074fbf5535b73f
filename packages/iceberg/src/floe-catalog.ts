import { icebergSchema, partitionSpec, sortOrderJson, tableDef, type TableName } from '@floe/schema';
import { SqlCatalog } from './catalog.ts';
import type { BlobStore, SqlClient } from './ports.ts';
import type { TableHandle } from './types.ts';

/**
 * Floe's use of the catalog, in one place for every service: catalog name `floe`, one namespace
 * `<tenant>.<dataset>` per dataset, table files under `warehouse/<tenant>/<dataset>/<table>/`.
 * Engines that share the catalog database see the same names.
 */
export const FLOE_CATALOG_NAME = 'floe';
export const FLOE_WAREHOUSE_PREFIX = 'warehouse';

export const floeNamespace = (tenant: string, dataset: string) => `${tenant}.${dataset}`;

export function openFloeCatalog(sql: SqlClient, blobs: BlobStore): SqlCatalog {
  return new SqlCatalog(sql, blobs, { catalogName: FLOE_CATALOG_NAME, warehouseKeyPrefix: FLOE_WAREHOUSE_PREFIX });
}

/** Loads a dataset's table, creating it (idempotently, race-safe) from its Floe definition. */
export async function ensureFloeTable(catalog: SqlCatalog, tenant: string, dataset: string, table: TableName): Promise<TableHandle> {
  const existing = await catalog.loadTable(floeNamespace(tenant, dataset), table);
  return existing ?? createFloeTable(catalog, tenant, dataset, table);
}

/** Creates a dataset's table from its Floe definition (race-safe: a concurrent creation wins). */
export function createFloeTable(catalog: SqlCatalog, tenant: string, dataset: string, table: TableName): Promise<TableHandle> {
  const ns = floeNamespace(tenant, dataset);
  const def = tableDef(table);
  return catalog.createTable(ns, table, {
    schema: icebergSchema(def) as never,
    partitionSpec: partitionSpec(def) as never,
    sortOrder: sortOrderJson(def) as never,
    properties: { 'floe.schema-version': String(def.version), 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'zstd' },
    locationKey: `${FLOE_WAREHOUSE_PREFIX}/${tenant}/${dataset}/${table}`,
  });
}
