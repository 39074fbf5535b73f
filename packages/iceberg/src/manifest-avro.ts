// Manifests and manifest lists (Iceberg table spec v2, "Manifests" and "Manifest Lists"): the Avro
// schemas with their reserved field ids, and encoding/decoding of entries.
//
// manifest_entry                         manifest_file (manifest list record)
//   0 status int                           500 manifest_path string      512 added_rows_count long
//   1 snapshot_id long?                    501 manifest_length long      513 existing_rows_count long
//   3 sequence_number long?                502 partition_spec_id int     514 deleted_rows_count long
//   4 file_sequence_number long?           517 content int               507 partitions list<508>?
//   2 data_file struct                     515 sequence_number long        509 contains_null bool
//     134 content int                      516 min_sequence_number long    518 contains_nan bool?
//     100 file_path string                 503 added_snapshot_id long      510 lower_bound bytes?
//     101 file_format string               504 added_files_count int       511 upper_bound bytes?
//     102 partition struct (ids 1000+)     505 existing_files_count int  519 key_metadata bytes?
//     103 record_count long                506 deleted_files_count int
//     104 file_size_in_bytes long
//     108 column_sizes map<117 int, 118 long>?      125 lower_bounds map<126 int, 127 binary>?
//     109 value_counts map<119 int, 120 long>?      128 upper_bounds map<129 int, 130 binary>?
//     110 null_value_counts map<121 int, 122 long>? 131 key_metadata binary?
//     137 nan_value_counts map<138 int, 139 long>?  132 split_offsets list<133 long>?
//     135 equality_ids list<136 int>?               140 sort_order_id int?
//
// Optional fields are unions with null (default null). Maps with int keys are Avro arrays of
// key/value records marked `logicalType: map`, as the spec's Avro mapping requires.

import { readAvroFile, writeAvroFile, type AvroSchema } from './avro.ts';
import { compareValues, deserializeValue, serializeDecimal, serializeUuid, serializeValue, type BoundValue } from './bounds.ts';
import { InvalidMetadataError } from './errors.ts';
import { partitionFieldInfo } from './transforms.ts';
import type {
  DataFile,
  DataFileContent,
  FieldSummary,
  ManifestContent,
  ManifestEntry,
  ManifestEntryStatus,
  ManifestFile,
  PartitionData,
  PartitionSpec,
  PartitionValue,
  PrimitiveType,
  Schema,
} from './types.ts';

// ---------------------------------------------------------------------------------------------
// Schemas

function optional(name: string, fieldId: number, type: unknown, doc?: string): Record<string, unknown> {
  return { name, type: ['null', type], default: null, ...(doc ? { doc } : {}), 'field-id': fieldId };
}

function required(name: string, fieldId: number, type: unknown, doc?: string): Record<string, unknown> {
  return { name, type, ...(doc ? { doc } : {}), 'field-id': fieldId };
}

function intMap(keyId: number, valueId: number, valueType: string): Record<string, unknown> {
  return {
    type: 'array',
    logicalType: 'map',
    items: {
      type: 'record',
      name: `k${keyId}_v${valueId}`,
      fields: [
        { name: 'key', type: 'int', 'field-id': keyId },
        { name: 'value', type: valueType, 'field-id': valueId },
      ],
    },
  };
}

/** Avro names must match [A-Za-z_][A-Za-z0-9_]*; other characters become _xHH as Iceberg does. */
export function avroName(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const ch = name[i]!;
    const ok = /[A-Za-z_]/.test(ch) || (i > 0 && /[0-9]/.test(ch));
    out += ok ? ch : i === 0 && /[0-9]/.test(ch) ? `_${ch}` : `_x${ch.charCodeAt(0).toString(16).toUpperCase()}`;
  }
  return out || '_';
}

function decimalBytes(precision: number): number {
  // Smallest n with 2^(8n-1) > 10^precision.
  let n = 1;
  while (2 ** (8 * n - 1) <= 10 ** precision) n++;
  return n;
}

/** Avro type of a primitive Iceberg type (partition tuples only hold primitives). */
export function avroTypeFor(type: PrimitiveType, fieldId: number): unknown {
  switch (type) {
    case 'boolean':
    case 'int':
    case 'long':
    case 'float':
    case 'double':
    case 'string':
      return type;
    case 'binary':
      return 'bytes';
    case 'date':
      return { type: 'int', logicalType: 'date' };
    case 'time':
      return { type: 'long', logicalType: 'time-micros' };
    case 'timestamp':
      return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': false };
    case 'timestamptz':
      return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': true };
    case 'timestamp_ns':
      return { type: 'long', logicalType: 'timestamp-nanos', 'adjust-to-utc': false };
    case 'timestamptz_ns':
      return { type: 'long', logicalType: 'timestamp-nanos', 'adjust-to-utc': true };
    case 'uuid':
      return { type: 'fixed', name: `uuid_fixed_${fieldId}`, size: 16, logicalType: 'uuid' };
    default: {
      const fixed = /^fixed\[(\d+)\]$/.exec(type);
      if (fixed) return { type: 'fixed', name: `fixed_${fieldId}`, size: Number(fixed[1]) };
      const dec = /^decimal\((\d+),\s*(\d+)\)$/.exec(type);
      if (dec) {
        const precision = Number(dec[1]);
        return { type: 'fixed', name: `decimal_${fieldId}`, size: decimalBytes(precision), logicalType: 'decimal', precision, scale: Number(dec[2]) };
      }
      throw new InvalidMetadataError(`no Avro mapping for ${type}`);
    }
  }
}

interface PartitionColumn {
  name: string;
  avroName: string;
  fieldId: number;
  type: PrimitiveType;
}

function partitionColumns(spec: PartitionSpec, schema: Schema): PartitionColumn[] {
  return partitionFieldInfo(spec, schema).map(({ field, resultType }) => ({
    name: field.name,
    avroName: avroName(field.name),
    fieldId: field['field-id'],
    type: resultType,
  }));
}

/** The v2 manifest_entry Avro schema with `partition` typed from the spec. */
export function manifestEntrySchema(spec: PartitionSpec, schema: Schema): AvroSchema {
  const partition = {
    type: 'record',
    name: 'r102',
    fields: partitionColumns(spec, schema).map((c) => optional(c.avroName, c.fieldId, avroTypeFor(c.type, c.fieldId))),
  };
  return {
    type: 'record',
    name: 'manifest_entry',
    fields: [
      required('status', 0, 'int'),
      optional('snapshot_id', 1, 'long'),
      optional('sequence_number', 3, 'long'),
      optional('file_sequence_number', 4, 'long'),
      required(
        'data_file',
        2,
        {
          type: 'record',
          name: 'r2',
          fields: [
            required('content', 134, 'int', 'Contents of the file: 0=data, 1=position deletes, 2=equality deletes'),
            required('file_path', 100, 'string', 'Location URI with FS scheme'),
            required('file_format', 101, 'string', 'File format name: avro, orc, or parquet'),
            required('partition', 102, partition, 'Partition data tuple, schema based on the partition spec'),
            required('record_count', 103, 'long', 'Number of records in the file'),
            required('file_size_in_bytes', 104, 'long', 'Total file size in bytes'),
            optional('column_sizes', 108, intMap(117, 118, 'long'), 'Map of column id to total size on disk'),
            optional('value_counts', 109, intMap(119, 120, 'long'), 'Map of column id to total count, including null and NaN'),
            optional('null_value_counts', 110, intMap(121, 122, 'long'), 'Map of column id to null value count'),
            optional('nan_value_counts', 137, intMap(138, 139, 'long'), 'Map of column id to number of NaN values in the column'),
            optional('lower_bounds', 125, intMap(126, 127, 'bytes'), 'Map of column id to lower bound'),
            optional('upper_bounds', 128, intMap(129, 130, 'bytes'), 'Map of column id to upper bound'),
            optional('key_metadata', 131, 'bytes', 'Encryption key metadata blob'),
            optional('split_offsets', 132, { type: 'array', items: 'long', 'element-id': 133 }, 'Splittable offsets'),
            optional('equality_ids', 135, { type: 'array', items: 'int', 'element-id': 136 }, 'Equality comparison field IDs'),
            optional('sort_order_id', 140, 'int', 'Sort order ID'),
          ],
        },
      ),
    ],
  };
}

/** The v2 manifest_file Avro schema (manifest list records). */
export const MANIFEST_FILE_SCHEMA: AvroSchema = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    required('manifest_path', 500, 'string', 'Location URI with FS scheme'),
    required('manifest_length', 501, 'long', 'Total file size in bytes'),
    required('partition_spec_id', 502, 'int', 'Spec ID used to write'),
    required('content', 517, 'int', 'Contents of the manifest: 0=data, 1=deletes'),
    required('sequence_number', 515, 'long', 'Sequence number when the manifest was added'),
    required('min_sequence_number', 516, 'long', 'Lowest sequence number in the manifest'),
    required('added_snapshot_id', 503, 'long', 'Snapshot ID that added the manifest'),
    required('added_files_count', 504, 'int', 'Added entry count'),
    required('existing_files_count', 505, 'int', 'Existing entry count'),
    required('deleted_files_count', 506, 'int', 'Deleted entry count'),
    required('added_rows_count', 512, 'long', 'Added rows count'),
    required('existing_rows_count', 513, 'long', 'Existing rows count'),
    required('deleted_rows_count', 514, 'long', 'Deleted rows count'),
    optional(
      'partitions',
      507,
      {
        type: 'array',
        items: {
          type: 'record',
          name: 'r508',
          fields: [
            required('contains_null', 509, 'boolean', 'True if any file has a null partition value'),
            optional('contains_nan', 518, 'boolean', 'True if any file has a nan partition value'),
            optional('lower_bound', 510, 'bytes', 'Partition lower bound for all files'),
            optional('upper_bound', 511, 'bytes', 'Partition upper bound for all files'),
          ],
        },
        'element-id': 508,
      },
      'Summary for each partition',
    ),
    optional('key_metadata', 519, 'bytes', 'Encryption key metadata blob'),
  ],
};

// ---------------------------------------------------------------------------------------------
// Value conversion

function mapToAvro(m: Record<number, number> | undefined): Array<{ key: number; value: bigint }> | null {
  if (!m) return null;
  return Object.entries(m)
    .map(([k, v]) => ({ key: Number(k), value: BigInt(Math.trunc(v)) }))
    .sort((a, b) => a.key - b.key);
}

function bytesMapToAvro(m: Record<number, Uint8Array> | undefined): Array<{ key: number; value: Buffer }> | null {
  if (!m) return null;
  return Object.entries(m)
    .map(([k, v]) => ({ key: Number(k), value: Buffer.from(v) }))
    .sort((a, b) => a.key - b.key);
}

function mapFromAvro(arr: unknown): Record<number, number> | undefined {
  if (!Array.isArray(arr)) return undefined;
  const out: Record<number, number> = {};
  for (const kv of arr as Array<{ key: number; value: bigint | number }>) out[kv.key] = Number(kv.value);
  return out;
}

function bytesMapFromAvro(arr: unknown): Record<number, Uint8Array> | undefined {
  if (!Array.isArray(arr)) return undefined;
  const out: Record<number, Uint8Array> = {};
  for (const kv of arr as Array<{ key: number; value: Buffer }>) out[kv.key] = new Uint8Array(kv.value);
  return out;
}

function fixedSize(type: PrimitiveType): number | undefined {
  if (type === 'uuid') return 16;
  const fixed = /^fixed\[(\d+)\]$/.exec(type);
  if (fixed) return Number(fixed[1]);
  const dec = /^decimal\((\d+),/.exec(type);
  if (dec) return decimalBytes(Number(dec[1]));
  return undefined;
}

/** A partition value in its Avro representation. */
function partitionValueToAvro(type: PrimitiveType, value: PartitionValue): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'boolean':
      return Boolean(value);
    case 'int':
    case 'date':
      return Number(value);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return typeof value === 'bigint' ? value : BigInt(value as number | string);
    case 'float':
    case 'double':
      return Number(value);
    case 'string':
      return String(value);
    case 'binary':
      return Buffer.from(value as Uint8Array);
    default: {
      const size = fixedSize(type)!;
      if (type === 'uuid' && typeof value === 'string') return Buffer.from(serializeUuid(value));
      if (type.startsWith('decimal(')) {
        const minimal = serializeDecimal(BigInt(value as bigint | number | string));
        const out = Buffer.alloc(size, (minimal[0]! & 0x80) !== 0 ? 0xff : 0);
        out.set(minimal, size - minimal.length);
        return out;
      }
      return Buffer.from(value as Uint8Array);
    }
  }
}

function partitionValueFromAvro(value: unknown): PartitionValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
  if (Buffer.isBuffer(value)) return new Uint8Array(value);
  return value as PartitionValue;
}

/** A partition value as a bound (single-value serialization input). */
function partitionValueAsBound(type: PrimitiveType, value: PartitionValue): BoundValue {
  if (type.startsWith('decimal(')) return BigInt(value as bigint | number | string);
  return value as BoundValue;
}

// ---------------------------------------------------------------------------------------------
// Manifests

export interface ManifestWriteOptions {
  spec: PartitionSpec;
  schema: Schema;
  content?: 'data' | 'deletes';
}

interface AvroDataFile {
  content: number;
  file_path: string;
  file_format: string;
  partition: Record<string, unknown>;
  record_count: bigint;
  file_size_in_bytes: bigint;
  column_sizes?: unknown;
  value_counts?: unknown;
  null_value_counts?: unknown;
  nan_value_counts?: unknown;
  lower_bounds?: unknown;
  upper_bounds?: unknown;
  key_metadata?: Buffer | null;
  split_offsets?: Array<bigint> | null;
  equality_ids?: number[] | null;
  sort_order_id?: number | null;
}

interface AvroManifestEntry {
  status: number;
  snapshot_id?: bigint | null;
  sequence_number?: bigint | null;
  file_sequence_number?: bigint | null;
  data_file: AvroDataFile;
}

/** Encodes manifest entries into a manifest file (Avro, deflate). */
export function encodeManifest(entries: ManifestEntry[], options: ManifestWriteOptions): Uint8Array {
  const { spec, schema } = options;
  const columns = partitionColumns(spec, schema);
  const known = new Set(columns.map((c) => c.name));
  const records = entries.map((e): AvroManifestEntry => {
    const df = e.dataFile;
    for (const k of Object.keys(df.partition)) {
      if (!known.has(k)) throw new InvalidMetadataError(`partition field ${k} is not in spec ${spec['spec-id']}`);
    }
    const partition: Record<string, unknown> = {};
    for (const c of columns) partition[c.avroName] = partitionValueToAvro(c.type, df.partition[c.name] ?? null);
    return {
      status: e.status,
      snapshot_id: e.snapshotId,
      sequence_number: e.sequenceNumber === null ? null : BigInt(e.sequenceNumber),
      file_sequence_number: e.fileSequenceNumber === null ? null : BigInt(e.fileSequenceNumber),
      data_file: {
        content: df.content,
        file_path: df.filePath,
        file_format: df.fileFormat,
        partition,
        record_count: BigInt(df.recordCount),
        file_size_in_bytes: BigInt(df.fileSizeInBytes),
        column_sizes: mapToAvro(df.columnSizes),
        value_counts: mapToAvro(df.valueCounts),
        null_value_counts: mapToAvro(df.nullValueCounts),
        nan_value_counts: mapToAvro(df.nanValueCounts),
        lower_bounds: bytesMapToAvro(df.lowerBounds),
        upper_bounds: bytesMapToAvro(df.upperBounds),
        key_metadata: df.keyMetadata ? Buffer.from(df.keyMetadata) : null,
        split_offsets: df.splitOffsets ? df.splitOffsets.map((n) => BigInt(n)) : null,
        equality_ids: df.equalityIds ?? null,
        sort_order_id: df.sortOrderId ?? null,
      },
    };
  });
  return writeAvroFile(manifestEntrySchema(spec, schema), records, {
    metadata: {
      schema: JSON.stringify(schema),
      'schema-id': String(schema['schema-id']),
      'partition-spec': JSON.stringify(spec.fields),
      'partition-spec-id': String(spec['spec-id']),
      'format-version': '2',
      content: options.content ?? 'data',
    },
  });
}

export interface DecodedManifest {
  entries: ManifestEntry[];
  /** Header metadata (schema, partition-spec, format-version, content…). */
  metadata: Record<string, string>;
  schema: AvroSchema;
}

/** Maps Avro partition field names to spec field names, using the writer schema's field ids. */
function partitionNameMap(writerSchema: AvroSchema, spec: PartitionSpec | undefined): Map<string, string> {
  const names = new Map<string, string>();
  const fields = (writerSchema.fields ?? []) as Array<Record<string, unknown>>;
  const dataFile = fields.find((f) => f.name === 'data_file');
  const dfFields = ((dataFile?.type as Record<string, unknown> | undefined)?.fields ?? []) as Array<Record<string, unknown>>;
  const partition = dfFields.find((f) => f.name === 'partition');
  const pFields = ((partition?.type as Record<string, unknown> | undefined)?.fields ?? []) as Array<Record<string, unknown>>;
  for (const pf of pFields) {
    const avroFieldName = String(pf.name);
    const id = pf['field-id'];
    const specField = spec?.fields.find((f) => f['field-id'] === id) ?? spec?.fields.find((f) => avroName(f.name) === avroFieldName);
    names.set(avroFieldName, specField?.name ?? avroFieldName);
  }
  return names;
}

/**
 * Decodes a manifest file. `spec` (the manifest's partition spec from table metadata) maps
 * partition fields back to their names by field id; without it the Avro names are used.
 */
export function decodeManifest(bytes: Uint8Array, spec?: PartitionSpec): DecodedManifest {
  const file = readAvroFile<AvroManifestEntry>(bytes);
  const names = partitionNameMap(file.schema, spec);
  const entries = file.records.map((r): ManifestEntry => {
    const d = r.data_file;
    const partition: PartitionData = {};
    for (const [k, v] of Object.entries(d.partition ?? {})) partition[names.get(k) ?? k] = partitionValueFromAvro(v);
    const dataFile: DataFile = {
      content: (d.content ?? 0) as DataFileContent,
      filePath: d.file_path,
      fileFormat: d.file_format,
      partition,
      recordCount: Number(d.record_count),
      fileSizeInBytes: Number(d.file_size_in_bytes),
    };
    const columnSizes = mapFromAvro(d.column_sizes);
    if (columnSizes) dataFile.columnSizes = columnSizes;
    const valueCounts = mapFromAvro(d.value_counts);
    if (valueCounts) dataFile.valueCounts = valueCounts;
    const nullValueCounts = mapFromAvro(d.null_value_counts);
    if (nullValueCounts) dataFile.nullValueCounts = nullValueCounts;
    const nanValueCounts = mapFromAvro(d.nan_value_counts);
    if (nanValueCounts) dataFile.nanValueCounts = nanValueCounts;
    const lowerBounds = bytesMapFromAvro(d.lower_bounds);
    if (lowerBounds) dataFile.lowerBounds = lowerBounds;
    const upperBounds = bytesMapFromAvro(d.upper_bounds);
    if (upperBounds) dataFile.upperBounds = upperBounds;
    if (d.key_metadata) dataFile.keyMetadata = new Uint8Array(d.key_metadata);
    if (d.split_offsets) dataFile.splitOffsets = d.split_offsets.map(Number);
    if (d.equality_ids) dataFile.equalityIds = d.equality_ids;
    if (d.sort_order_id !== null && d.sort_order_id !== undefined) dataFile.sortOrderId = d.sort_order_id;
    return {
      status: r.status as ManifestEntryStatus,
      snapshotId: r.snapshot_id ?? null,
      sequenceNumber: r.sequence_number === null || r.sequence_number === undefined ? null : Number(r.sequence_number),
      fileSequenceNumber: r.file_sequence_number === null || r.file_sequence_number === undefined ? null : Number(r.file_sequence_number),
      dataFile,
    };
  });
  return { entries, metadata: file.metadata, schema: file.schema };
}

/** Partition field summaries (lower/upper bound, contains null/NaN) over a manifest's entries. */
export function summarizePartitions(entries: ManifestEntry[], spec: PartitionSpec, schema: Schema): FieldSummary[] {
  return partitionColumns(spec, schema).map((c) => {
    let containsNull = false;
    let containsNan = false;
    let lower: BoundValue | undefined;
    let upper: BoundValue | undefined;
    for (const e of entries) {
      const v = e.dataFile.partition[c.name] ?? null;
      if (v === null) {
        containsNull = true;
        continue;
      }
      if (typeof v === 'number' && Number.isNaN(v)) {
        containsNan = true;
        continue;
      }
      const b = partitionValueAsBound(c.type, v);
      if (lower === undefined || compareValues(b, lower) < 0) lower = b;
      if (upper === undefined || compareValues(b, upper) > 0) upper = b;
    }
    return {
      containsNull,
      containsNan,
      lowerBound: lower === undefined ? null : serializeValue(c.type, lower),
      upperBound: upper === undefined ? null : serializeValue(c.type, upper),
    };
  });
}

/** Decodes partition field summaries into values, keyed by partition field name. */
export function decodePartitionSummaries(
  summaries: FieldSummary[] | null,
  spec: PartitionSpec,
  schema: Schema,
): Record<string, { containsNull: boolean; lower: BoundValue | null; upper: BoundValue | null }> | undefined {
  if (!summaries) return undefined;
  const out: Record<string, { containsNull: boolean; lower: BoundValue | null; upper: BoundValue | null }> = {};
  partitionColumns(spec, schema).forEach((c, i) => {
    const s = summaries[i];
    if (!s) return;
    const dec = (b: Uint8Array | null): BoundValue | null => {
      if (!b) return null;
      const v = deserializeValue(c.type, b);
      return typeof v === 'bigint' && v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    };
    out[c.name] = { containsNull: s.containsNull, lower: dec(s.lowerBound), upper: dec(s.upperBound) };
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Manifest lists

interface AvroManifestFile {
  manifest_path: string;
  manifest_length: bigint;
  partition_spec_id: number;
  content?: number;
  sequence_number?: bigint;
  min_sequence_number?: bigint;
  added_snapshot_id: bigint;
  added_files_count?: number | null;
  existing_files_count?: number | null;
  deleted_files_count?: number | null;
  added_data_files_count?: number | null;
  existing_data_files_count?: number | null;
  deleted_data_files_count?: number | null;
  added_rows_count?: bigint | null;
  existing_rows_count?: bigint | null;
  deleted_rows_count?: bigint | null;
  partitions?: Array<{ contains_null: boolean; contains_nan?: boolean | null; lower_bound?: Buffer | null; upper_bound?: Buffer | null }> | null;
  key_metadata?: Buffer | null;
}

export interface ManifestListWriteOptions {
  snapshotId: bigint;
  parentSnapshotId: bigint | null;
  sequenceNumber: number;
}

/** Encodes a manifest list (Avro, deflate). */
export function encodeManifestList(manifests: ManifestFile[], options: ManifestListWriteOptions): Uint8Array {
  const records = manifests.map(
    (m): AvroManifestFile => ({
      manifest_path: m.manifestPath,
      manifest_length: BigInt(m.manifestLength),
      partition_spec_id: m.partitionSpecId,
      content: m.content,
      sequence_number: BigInt(m.sequenceNumber),
      min_sequence_number: BigInt(m.minSequenceNumber),
      added_snapshot_id: m.addedSnapshotId,
      added_files_count: m.addedFilesCount,
      existing_files_count: m.existingFilesCount,
      deleted_files_count: m.deletedFilesCount,
      added_rows_count: BigInt(m.addedRowsCount),
      existing_rows_count: BigInt(m.existingRowsCount),
      deleted_rows_count: BigInt(m.deletedRowsCount),
      partitions: m.partitions
        ? m.partitions.map((p) => ({
            contains_null: p.containsNull,
            contains_nan: p.containsNan,
            lower_bound: p.lowerBound ? Buffer.from(p.lowerBound) : null,
            upper_bound: p.upperBound ? Buffer.from(p.upperBound) : null,
          }))
        : null,
      key_metadata: m.keyMetadata ? Buffer.from(m.keyMetadata) : null,
    }),
  );
  return writeAvroFile(MANIFEST_FILE_SCHEMA, records, {
    metadata: {
      'snapshot-id': options.snapshotId.toString(),
      'parent-snapshot-id': options.parentSnapshotId === null ? 'null' : options.parentSnapshotId.toString(),
      'sequence-number': String(options.sequenceNumber),
      'format-version': '2',
    },
  });
}

/** Decodes a manifest list (v2, and v1 lists where sequence numbers default to 0). */
export function decodeManifestList(bytes: Uint8Array): ManifestFile[] {
  const file = readAvroFile<AvroManifestFile>(bytes);
  return file.records.map((r) => ({
    manifestPath: r.manifest_path,
    manifestLength: Number(r.manifest_length),
    partitionSpecId: r.partition_spec_id,
    content: (r.content ?? 0) as ManifestContent,
    sequenceNumber: Number(r.sequence_number ?? 0n),
    minSequenceNumber: Number(r.min_sequence_number ?? 0n),
    addedSnapshotId: r.added_snapshot_id,
    addedFilesCount: r.added_files_count ?? r.added_data_files_count ?? 0,
    existingFilesCount: r.existing_files_count ?? r.existing_data_files_count ?? 0,
    deletedFilesCount: r.deleted_files_count ?? r.deleted_data_files_count ?? 0,
    addedRowsCount: Number(r.added_rows_count ?? 0n),
    existingRowsCount: Number(r.existing_rows_count ?? 0n),
    deletedRowsCount: Number(r.deleted_rows_count ?? 0n),
    partitions: r.partitions
      ? r.partitions.map((p) => ({
          containsNull: p.contains_null,
          containsNan: p.contains_nan ?? null,
          lowerBound: p.lower_bound ? new Uint8Array(p.lower_bound) : null,
          upperBound: p.upper_bound ? new Uint8Array(p.upper_bound) : null,
        }))
      : null,
    keyMetadata: r.key_metadata ? new Uint8Array(r.key_metadata) : null,
  }));
}
