// @floe/iceberg: Iceberg v2 table metadata, Avro manifests, the SQL (JDBC-layout) catalog with
// optimistic compare-and-swap commits, and snapshot scan planning.

export type { BlobStore, SqlClient } from './ports.ts';
export type {
  CommitResult,
  DataFile,
  DataFileInput,
  FieldSummary,
  IcebergType,
  ListType,
  ManifestEntry,
  ManifestFile,
  MapType,
  MetadataLogEntry,
  NestedField,
  PartitionData,
  PartitionField,
  PartitionSpec,
  PartitionValue,
  PlannedFile,
  PrimitiveType,
  Schema,
  Snapshot,
  SnapshotLogEntry,
  SnapshotRef,
  SnapshotSummaryInfo,
  SortField,
  SortOrder,
  StructType,
  TableHandle,
  TableMetadata,
  Transform,
} from './types.ts';
export { DataFileContent, ManifestContent, ManifestEntryStatus } from './types.ts';
export { CommitConflictError, IcebergError, InvalidMetadataError, TableNotFoundError } from './errors.ts';
export {
  SqlCatalog,
  type AppendOptions,
  type CreateTableOptions,
  type ExpireResult,
  type ReplaceOptions,
  type SqlCatalogOptions,
  type TableIdentifier,
  type TablePointer,
} from './catalog.ts';
export type { ExpireOptions } from './expire.ts';
export type { ManifestCacheOptions, PartitionSummaryRange, PlanOptions } from './scan.ts';
export {
  compareBytes,
  compareValues,
  deserializeValue,
  serializeBoolean,
  serializeDecimal,
  serializeDouble,
  serializeFloat,
  serializeInt,
  serializeLong,
  serializeString,
  serializeUuid,
  serializeValue,
  type BoundValue,
} from './bounds.ts';
export { applyTransform, findField, partitionFor, partitionPath, transformResultType } from './transforms.ts';
export {
  DELETE_AFTER_COMMIT,
  PREVIOUS_VERSIONS_MAX,
  ancestorsOf,
  currentSchema,
  currentSnapshot,
  defaultSpec,
  deletesDroppedMetadata,
  metadataVersion,
  newTableMetadata,
  parseTableMetadata,
  serializeTableMetadata,
  snapshotById,
  specById,
  tableMetadataBytes,
} from './metadata.ts';
export {
  MANIFEST_FILE_SCHEMA,
  decodeManifest,
  decodeManifestList,
  encodeManifest,
  encodeManifestList,
  manifestEntrySchema,
} from './manifest-avro.ts';
export { readAvroFile, writeAvroFile } from './avro.ts';
export { dataFileSidecars, deleteDataFiles, publishDataFile } from './floe-data-file.ts';
export {
  FLOE_CATALOG_NAME,
  FLOE_METADATA_PRUNING,
  FLOE_WAREHOUSE_PREFIX,
  FloeCatalog,
  ID_FILTER_COLUMN_PROPERTY,
  TARGET_FILE_SIZE_PROPERTY,
  createFloeTable,
  ensureFloeTable,
  floeNamespace,
  floeTableProperties,
  openFloeCatalog,
  splitFloeNamespace,
} from './floe-catalog.ts';
export type { FloeCatalogOptions } from './floe-catalog.ts';
export { floeTableDef } from './materialized-labels.ts';
export {
  LEGACY_METRIC_TABLES,
  SIGNALS,
  enabledTables,
  schemaSignals,
  evolveFloeTable,
  isLegacyAttributeLayout,
  listTenantTables,
  provisionDataset,
  provisioningFailed,
} from './provision.ts';
export type { DatasetProvisioning, ListedTable, ProvisionLogger, Signal, SignalSchema, TableProvisioning } from './provision.ts';
export { tenantStoredBytes, tenantTableUsage, type TableUsage } from './usage.ts';
