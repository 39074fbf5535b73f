import type { SqlCatalog, TableHandle } from '@floe/iceberg';
import { icebergSchema, partitionSpec, sortOrderJson, tableDef, type TableName } from '@floe/schema';

/** Warehouse layout: `warehouse/<tenant>/<dataset>/<table>/{metadata,data}/…`. */
export const WAREHOUSE_PREFIX = 'warehouse';
export const CATALOG_NAME = 'floe';

export const namespaceOf = (tenant: string, dataset: string) => `${tenant}.${dataset}`;

/** Loads a dataset's table, creating it (idempotently, race-safe) on first write. */
export async function ensureTable(catalog: SqlCatalog, tenant: string, dataset: string, table: TableName): Promise<TableHandle> {
  const ns = namespaceOf(tenant, dataset);
  const existing = await catalog.loadTable(ns, table);
  if (existing) return existing;
  const def = tableDef(table);
  return catalog.createTable(ns, table, {
    schema: icebergSchema(def) as never,
    partitionSpec: partitionSpec(def) as never,
    sortOrder: sortOrderJson(def) as never,
    properties: { 'floe.schema-version': String(def.version), 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'zstd' },
    locationKey: `${WAREHOUSE_PREFIX}/${tenant}/${dataset}/${table}`,
  });
}
