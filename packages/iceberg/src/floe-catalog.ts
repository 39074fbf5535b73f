import { icebergSchema, partitionSpec, planMaterializedLabels, sortOrderJson, tableDef, withMaterializedLabels, type TableDef, type TableName } from '@floe/schema';
import { SqlCatalog } from './catalog.ts';
import { materializedLabelsProperties } from './materialized-labels.ts';
import { DELETE_AFTER_COMMIT, PREVIOUS_VERSIONS_MAX } from './metadata.ts';
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

/** The tenant and dataset of a namespace floeNamespace made (tenant ids hold no dot). */
export function splitFloeNamespace(namespace: string): { tenant: string; dataset: string } {
  const dot = namespace.indexOf('.');
  return dot < 0 ? { tenant: namespace, dataset: '' } : { tenant: namespace.slice(0, dot), dataset: namespace.slice(dot + 1) };
}

/**
 * The file size writers of the table aim for (Iceberg's name). Not set at creation (spec 2): the
 * compactor sets it from compactor.target_file_size_mb, so the table states what its compaction
 * actually aims for rather than a value fixed when it was made.
 */
export const TARGET_FILE_SIZE_PROPERTY = 'write.target-file-size-bytes';

/**
 * The column Floe's per-file id filter covers. That filter is a sidecar object beside each data
 * file (publishDataFile), not a Parquet bloom filter, so it is declared under Floe's own name.
 */
export const ID_FILTER_COLUMN_PROPERTY = 'floe.id-filter.column';

/**
 * Metadata pruning. The writer commits to a table every flush interval (2 s by default) and each
 * metadata version repeats every retained snapshot, so old versions are mostly storage: Java's
 * default of 100 would keep minutes of near-identical files. Reads and time travel go by
 * snapshots (kept per compactor.snapshot_retention), not by this log. Versions the log drops are
 * deleted by the compactor's next pass, which reads the flag (services/compactor/src/expire.ts).
 */
export const FLOE_METADATA_PRUNING: Readonly<Record<string, string>> = Object.freeze({
  [DELETE_AFTER_COMMIT]: 'true',
  [PREVIOUS_VERSIONS_MAX]: '20',
});

/**
 * The properties of every Floe table, whether ingest or provisioning created it (spec 2 wants them
 * the same), and what provisioning backfills on older tables (provision.ts).
 *
 * No `write.parquet.bloom-filter-enabled.column.*`: it would claim Parquet bloom filters the
 * files mostly lack. Floe's own encoder (the writer's usual flush) writes none, and DuckDB (other
 * flushes, compaction) writes one only for a dictionary-encoded chunk, which an id column of
 * mostly distinct values is not. Id lookups use the sidecar filter of ID_FILTER_COLUMN_PROPERTY.
 */
export function floeTableProperties(def: TableDef): Record<string, string> {
  return {
    'floe.schema-version': String(def.version),
    'write.format.default': 'parquet',
    'write.parquet.compression-codec': 'zstd',
    ...(def.idColumn ? { [ID_FILTER_COLUMN_PROPERTY]: def.idColumn } : {}),
    ...FLOE_METADATA_PRUNING,
  };
}

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
    properties: { ...floeTableProperties(def), ...materializedLabelsProperties(labels) },
    locationKey: `${FLOE_WAREHOUSE_PREFIX}/${tenant}/${dataset}/${table}`,
  });
}
