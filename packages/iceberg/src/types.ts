// Iceberg table format v2 types, in the JSON form of the table spec (kebab-case keys as they
// appear in metadata files). Snapshot ids are 64-bit longs and are kept as `bigint`; everything
// else that the spec types as long (sequence numbers, timestamps, sizes) stays far below 2^53 and
// is a `number`.

// ---------------------------------------------------------------------------------------------
// Schemas

export type PrimitiveType =
  | 'boolean'
  | 'int'
  | 'long'
  | 'float'
  | 'double'
  | 'date'
  | 'time'
  | 'timestamp'
  | 'timestamptz'
  | 'timestamp_ns'
  | 'timestamptz_ns'
  | 'string'
  | 'uuid'
  | 'binary'
  | `fixed[${number}]`
  | `decimal(${number}, ${number})`;

export interface NestedField {
  id: number;
  name: string;
  required: boolean;
  type: IcebergType;
  doc?: string;
  'initial-default'?: unknown;
  'write-default'?: unknown;
}

export interface StructType {
  type: 'struct';
  fields: NestedField[];
}

export interface ListType {
  type: 'list';
  'element-id': number;
  element: IcebergType;
  'element-required': boolean;
}

export interface MapType {
  type: 'map';
  'key-id': number;
  key: IcebergType;
  'value-id': number;
  value: IcebergType;
  'value-required': boolean;
}

export type IcebergType = PrimitiveType | StructType | ListType | MapType;

export interface Schema extends StructType {
  'schema-id': number;
  'identifier-field-ids'?: number[];
}

// ---------------------------------------------------------------------------------------------
// Partitioning and sorting

export type Transform =
  | 'identity'
  | 'year'
  | 'month'
  | 'day'
  | 'hour'
  | 'void'
  | `bucket[${number}]`
  | `truncate[${number}]`;

export interface PartitionField {
  'source-id': number;
  /** Partition field ids start at 1000. */
  'field-id': number;
  name: string;
  transform: Transform;
}

export interface PartitionSpec {
  'spec-id': number;
  fields: PartitionField[];
}

export interface SortField {
  transform: Transform;
  'source-id': number;
  direction: 'asc' | 'desc';
  'null-order': 'nulls-first' | 'nulls-last';
}

export interface SortOrder {
  /** 0 is reserved for the unsorted order. */
  'order-id': number;
  fields: SortField[];
}

// ---------------------------------------------------------------------------------------------
// Table metadata

export interface Snapshot {
  'snapshot-id': bigint;
  'parent-snapshot-id'?: bigint;
  'sequence-number': number;
  'timestamp-ms': number;
  'manifest-list': string;
  summary: { operation: string } & Record<string, string>;
  'schema-id'?: number;
}

export interface SnapshotRef {
  'snapshot-id': bigint;
  type: 'branch' | 'tag';
  'min-snapshots-to-keep'?: number;
  'max-snapshot-age-ms'?: number;
  'max-ref-age-ms'?: number;
}

export interface SnapshotLogEntry {
  'timestamp-ms': number;
  'snapshot-id': bigint;
}

export interface MetadataLogEntry {
  'timestamp-ms': number;
  'metadata-file': string;
}

export interface TableMetadata {
  'format-version': 2;
  'table-uuid': string;
  location: string;
  'last-sequence-number': number;
  'last-updated-ms': number;
  'last-column-id': number;
  'current-schema-id': number;
  schemas: Schema[];
  'default-spec-id': number;
  'partition-specs': PartitionSpec[];
  'last-partition-id': number;
  'default-sort-order-id': number;
  'sort-orders': SortOrder[];
  properties: Record<string, string>;
  /** -1 (or absent/null in files written by others) until the first snapshot. */
  'current-snapshot-id': bigint | null;
  refs: Record<string, SnapshotRef>;
  snapshots: Snapshot[];
  'snapshot-log': SnapshotLogEntry[];
  'metadata-log': MetadataLogEntry[];
  statistics?: unknown[];
  'partition-statistics'?: unknown[];
}

/** A table as loaded from the catalog: where its metadata lives and the parsed (immutable) metadata. */
export interface TableHandle {
  readonly namespace: string;
  readonly name: string;
  readonly metadataLocation: string;
  readonly metadata: TableMetadata;
}

// ---------------------------------------------------------------------------------------------
// Manifests

/** A partition tuple keyed by partition field name, e.g. `{ timestamp_hour: 493921 }`. */
export type PartitionValue = number | bigint | string | boolean | Uint8Array | null;
export type PartitionData = Record<string, PartitionValue>;

export const ManifestEntryStatus = { EXISTING: 0, ADDED: 1, DELETED: 2 } as const;
export type ManifestEntryStatus = (typeof ManifestEntryStatus)[keyof typeof ManifestEntryStatus];

export const DataFileContent = { DATA: 0, POSITION_DELETES: 1, EQUALITY_DELETES: 2 } as const;
export type DataFileContent = (typeof DataFileContent)[keyof typeof DataFileContent];

export const ManifestContent = { DATA: 0, DELETES: 1 } as const;
export type ManifestContent = (typeof ManifestContent)[keyof typeof ManifestContent];

/** The `data_file` struct (field id 2) of a manifest entry. */
export interface DataFile {
  content: DataFileContent;
  filePath: string;
  fileFormat: string;
  partition: PartitionData;
  recordCount: number;
  fileSizeInBytes: number;
  columnSizes?: Record<number, number>;
  valueCounts?: Record<number, number>;
  nullValueCounts?: Record<number, number>;
  nanValueCounts?: Record<number, number>;
  lowerBounds?: Record<number, Uint8Array>;
  upperBounds?: Record<number, Uint8Array>;
  keyMetadata?: Uint8Array;
  splitOffsets?: number[];
  equalityIds?: number[];
  sortOrderId?: number;
}

/** One `manifest_entry` record. Sequence numbers are null when inherited from the manifest list. */
export interface ManifestEntry {
  status: ManifestEntryStatus;
  snapshotId: bigint | null;
  sequenceNumber: number | null;
  fileSequenceNumber: number | null;
  dataFile: DataFile;
}

export interface FieldSummary {
  containsNull: boolean;
  containsNan: boolean | null;
  lowerBound: Uint8Array | null;
  upperBound: Uint8Array | null;
}

/** One `manifest_file` record of a manifest list. */
export interface ManifestFile {
  manifestPath: string;
  manifestLength: number;
  partitionSpecId: number;
  content: ManifestContent;
  sequenceNumber: number;
  minSequenceNumber: number;
  addedSnapshotId: bigint;
  addedFilesCount: number;
  existingFilesCount: number;
  deletedFilesCount: number;
  addedRowsCount: number;
  existingRowsCount: number;
  deletedRowsCount: number;
  partitions: FieldSummary[] | null;
  keyMetadata: Uint8Array | null;
}

// ---------------------------------------------------------------------------------------------
// Catalog inputs and outputs

/** A Parquet file to add to a table. Stats maps are keyed by Iceberg field id. */
export interface DataFileInput {
  /** Blob key of the data file; its `uri()` is what the manifest records. */
  key: string;
  fileSizeBytes: number;
  recordCount: number;
  /** Keyed by partition field name, e.g. `{ timestamp_hour: 493921 }`; missing fields are null. */
  partition: PartitionData;
  columnSizes?: Record<number, number>;
  valueCounts?: Record<number, number>;
  nullValueCounts?: Record<number, number>;
  nanValueCounts?: Record<number, number>;
  /** Iceberg single-value serialization (see bounds.ts). */
  lowerBounds?: Record<number, Uint8Array>;
  upperBounds?: Record<number, Uint8Array>;
  splitOffsets?: number[];
  sortOrderId?: number;
  /** Defaults to PARQUET. */
  fileFormat?: 'PARQUET' | 'AVRO' | 'ORC';
}

/** A live data file of the current snapshot, as returned by planFiles. */
export interface PlannedFile {
  key: string;
  uri: string;
  fileSizeBytes: number;
  recordCount: number;
  partition: PartitionData;
  specId: number;
  /** Data sequence number (resolved through inheritance). */
  sequenceNumber: number;
  lowerBounds: Record<number, Uint8Array>;
  upperBounds: Record<number, Uint8Array>;
  columnSizes: Record<number, number>;
  valueCounts: Record<number, number>;
  nullValueCounts: Record<number, number>;
  /** The manifest's sort order id: 0 unsorted (a concatenation), 1 Floe's canonical order; absent when not recorded. */
  sortOrderId?: number;
  /** Where its row groups start, when recorded (Floe records them for what compaction writes, not for flush files). */
  splitOffsets?: number[];
}

export interface SnapshotSummaryInfo {
  snapshotId: bigint;
  parentSnapshotId: bigint | null;
  sequenceNumber: number;
  timestampMs: number;
  summary: Record<string, string>;
}

export interface CommitResult {
  snapshotId: bigint;
  metadataLocation: string;
  /** The table as committed; use it as the base of the next commit. */
  handle: TableHandle;
  /** 1 when the first compare-and-swap won. */
  attempts: number;
}
