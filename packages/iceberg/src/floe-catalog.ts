import { icebergSchema, partitionSpec, planMaterializedLabels, sortOrderJson, tableDef, withMaterializedLabels, type TableName } from '@floe/schema';
import { SqlCatalog } from './catalog.ts';
import { materializedLabelsProperties } from './materialized-labels.ts';
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

export interface FloeCatalogOptions {
  /**
   * Attribute keys every table created through this catalog materializes as `label_<key>`
   * columns (config `schema.materialized_labels`). Only creation reads it: an existing table keeps
   * the labels it recorded (materialized-labels.ts).
   */
  materializedLabels?: readonly string[];
}

/** The SQL catalog with Floe's table-creation settings, as every service opens it. */
export class FloeCatalog extends SqlCatalog {
  readonly materializedLabels: readonly string[];

  constructor(sql: SqlClient, blobs: BlobStore, opts: FloeCatalogOptions = {}) {
    super(sql, blobs, { catalogName: FLOE_CATALOG_NAME, warehouseKeyPrefix: FLOE_WAREHOUSE_PREFIX });
    this.materializedLabels = Object.freeze([...(opts.materializedLabels ?? [])]);
  }
}

export function openFloeCatalog(sql: SqlClient, blobs: BlobStore, opts: FloeCatalogOptions = {}): FloeCatalog {
  return new FloeCatalog(sql, blobs, opts);
}

/** Loads a dataset's table, creating it (idempotently, race-safe) from its Floe definition. */
export async function ensureFloeTable(catalog: SqlCatalog, tenant: string, dataset: string, table: TableName): Promise<TableHandle> {
  const existing = await catalog.loadTable(floeNamespace(tenant, dataset), table);
  return existing ?? createFloeTable(catalog, tenant, dataset, table);
}

/**
 * Creates a dataset's table from its Floe definition (race-safe: a concurrent creation wins, and
 * its columns stand). The materialized labels (`opts`, else the catalog's configuration) become
 * columns of the new table and are recorded in its properties (spec 2, provisioning rule 7).
 */
export function createFloeTable(catalog: SqlCatalog, tenant: string, dataset: string, table: TableName, opts: FloeCatalogOptions = {}): Promise<TableHandle> {
  const ns = floeNamespace(tenant, dataset);
  const base = tableDef(table);
  const keys = opts.materializedLabels ?? (catalog instanceof FloeCatalog ? catalog.materializedLabels : []);
  const labels = planMaterializedLabels(base, keys);
  const def = withMaterializedLabels(base, labels);
  return catalog.createTable(ns, table, {
    schema: icebergSchema(def) as never,
    partitionSpec: partitionSpec(def) as never,
    sortOrder: sortOrderJson(def) as never,
    properties: {
      'floe.schema-version': String(def.version),
      'write.format.default': 'parquet',
      'write.parquet.compression-codec': 'zstd',
      ...materializedLabelsProperties(labels),
    },
    locationKey: `${FLOE_WAREHOUSE_PREFIX}/${tenant}/${dataset}/${table}`,
  });
}
