// Snapshot production: turning data files into manifests, manifest lists, snapshot summaries and
// the next table metadata. Pure apart from writing the Avro files through the BlobStore; the
// compare-and-swap loop around it lives in catalog.ts.

import { randomUUID } from 'node:crypto';
import { IcebergError } from './errors.ts';
import { encodeManifest, encodeManifestList, summarizePartitions } from './manifest-avro.ts';
import { partitionFieldInfo } from './transforms.ts';
import type { BlobStore } from './ports.ts';
import type { DataFile, DataFileInput, ManifestEntry, ManifestFile, PartitionData, PartitionSpec, PartitionValue, PrimitiveType, Schema, Snapshot, TableMetadata } from './types.ts';

/** Blob key of a table's root, from its metadata `location`. */
export function tableKeyOf(blobs: BlobStore, metadata: TableMetadata): string {
  return blobs.keyFromUri(metadata.location).replace(/\/+$/, '');
}

function coercePartitionValue(name: string, type: PrimitiveType, v: PartitionValue | undefined): PartitionValue {
  if (v === null || v === undefined) return null;
  const bad = (): never => {
    throw new IcebergError('invalid_argument', `partition field ${name} (${type}): invalid value ${String(v)}`);
  };
  switch (type) {
    case 'int':
    case 'date': {
      const n = typeof v === 'bigint' ? Number(v) : v;
      return typeof n === 'number' && Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 ? n : bad();
    }
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      if (typeof v === 'bigint') return v;
      return typeof v === 'number' && Number.isSafeInteger(v) ? v : bad();
    case 'float':
    case 'double':
      return typeof v === 'number' ? v : bad();
    case 'boolean':
      return typeof v === 'boolean' ? v : bad();
    case 'string':
      return typeof v === 'string' ? v : bad();
    default:
      return v;
  }
}

/** Validates a partition tuple against the spec (missing fields are null, unknown ones rejected). */
export function normalizePartition(spec: PartitionSpec, schema: Schema, partition: PartitionData): PartitionData {
  const info = partitionFieldInfo(spec, schema);
  const names = new Set(info.map((i) => i.field.name));
  for (const k of Object.keys(partition)) {
    if (!names.has(k)) throw new IcebergError('invalid_argument', `partition field ${k} is not in partition spec ${spec['spec-id']}`);
  }
  const out: PartitionData = {};
  for (const { field, resultType } of info) out[field.name] = coercePartitionValue(field.name, resultType, partition[field.name]);
  return out;
}

export function toDataFile(blobs: BlobStore, spec: PartitionSpec, schema: Schema, input: DataFileInput): DataFile {
  if (!input.key) throw new IcebergError('invalid_argument', 'data file key is empty');
  if (!Number.isSafeInteger(input.recordCount) || input.recordCount < 0) throw new IcebergError('invalid_argument', `${input.key}: bad recordCount`);
  if (!Number.isSafeInteger(input.fileSizeBytes) || input.fileSizeBytes <= 0) throw new IcebergError('invalid_argument', `${input.key}: bad fileSizeBytes`);
  const df: DataFile = {
    content: 0,
    filePath: blobs.uri(input.key),
    fileFormat: input.fileFormat ?? 'PARQUET',
    partition: normalizePartition(spec, schema, input.partition),
    recordCount: input.recordCount,
    fileSizeInBytes: input.fileSizeBytes,
  };
  if (input.columnSizes) df.columnSizes = input.columnSizes;
  if (input.valueCounts) df.valueCounts = input.valueCounts;
  if (input.nullValueCounts) df.nullValueCounts = input.nullValueCounts;
  if (input.nanValueCounts) df.nanValueCounts = input.nanValueCounts;
  if (input.lowerBounds) df.lowerBounds = input.lowerBounds;
  if (input.upperBounds) df.upperBounds = input.upperBounds;
  if (input.splitOffsets) df.splitOffsets = input.splitOffsets;
  if (input.sortOrderId !== undefined) df.sortOrderId = input.sortOrderId;
  return df;
}

/** A manifest written by the commit in progress; its sequence numbers are set per attempt. */
export interface WrittenManifest {
  file: Omit<ManifestFile, 'sequenceNumber' | 'minSequenceNumber'>;
  /** Lowest explicit data sequence number of its EXISTING entries (null when none). */
  minExistingSequenceNumber: number | null;
  specId: number;
  schemaId: number;
}

/** Writes one manifest (Avro) under `<table>/metadata/` and returns its manifest list record. */
export async function writeManifest(
  blobs: BlobStore,
  metadata: TableMetadata,
  spec: PartitionSpec,
  schema: Schema,
  snapshotId: bigint,
  entries: ManifestEntry[],
): Promise<WrittenManifest> {
  const bytes = encodeManifest(entries, { spec, schema });
  const key = `${tableKeyOf(blobs, metadata)}/metadata/${randomUUID()}-m0.avro`;
  await blobs.put(key, bytes);
  let added = 0;
  let existing = 0;
  let deleted = 0;
  let addedRows = 0;
  let existingRows = 0;
  let deletedRows = 0;
  let minExisting: number | null = null;
  for (const e of entries) {
    const rows = e.dataFile.recordCount;
    if (e.status === 1) {
      added++;
      addedRows += rows;
    } else if (e.status === 0) {
      existing++;
      existingRows += rows;
      if (e.sequenceNumber !== null) minExisting = minExisting === null ? e.sequenceNumber : Math.min(minExisting, e.sequenceNumber);
    } else {
      deleted++;
      deletedRows += rows;
    }
  }
  return {
    file: {
      manifestPath: blobs.uri(key),
      manifestLength: bytes.byteLength,
      partitionSpecId: spec['spec-id'],
      content: 0,
      addedSnapshotId: snapshotId,
      addedFilesCount: added,
      existingFilesCount: existing,
      deletedFilesCount: deleted,
      addedRowsCount: addedRows,
      existingRowsCount: existingRows,
      deletedRowsCount: deletedRows,
      partitions: summarizePartitions(entries, spec, schema),
      keyMetadata: null,
    },
    minExistingSequenceNumber: minExisting,
    specId: spec['spec-id'],
    schemaId: schema['schema-id'],
  };
}

/** The manifest list record of a manifest written by this commit, for sequence number `seq`. */
export function finalizeManifest(w: WrittenManifest, seq: number): ManifestFile {
  return { ...w.file, sequenceNumber: seq, minSequenceNumber: Math.min(seq, w.minExistingSequenceNumber ?? seq) };
}

/** Writes the manifest list of a new snapshot and returns its URI. */
export async function writeManifestList(
  blobs: BlobStore,
  metadata: TableMetadata,
  manifests: ManifestFile[],
  snapshotId: bigint,
  parentSnapshotId: bigint | null,
  sequenceNumber: number,
  attempt: number,
): Promise<string> {
  const bytes = encodeManifestList(manifests, { snapshotId, parentSnapshotId, sequenceNumber });
  const key = `${tableKeyOf(blobs, metadata)}/metadata/snap-${snapshotId}-${attempt}-${randomUUID()}.avro`;
  await blobs.put(key, bytes);
  return blobs.uri(key);
}

export interface SummaryDelta {
  addedFiles: number;
  addedRecords: number;
  addedSize: number;
  deletedFiles: number;
  deletedRecords: number;
  removedSize: number;
  changedPartitions: number;
}

function partitionKey(p: PartitionData): string {
  return JSON.stringify(p, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v));
}

export function countPartitions(files: DataFile[]): number {
  return new Set(files.map((f) => partitionKey(f.partition))).size;
}

/**
 * Snapshot summary with the standard Iceberg keys (added-/deleted-*, total-*). The caller's
 * entries are included; the standard keys win over them.
 */
export function snapshotSummary(operation: string, parent: Snapshot | undefined, delta: SummaryDelta, extra: Record<string, string> = {}): Snapshot['summary'] {
  const s: Record<string, string> = { ...extra };
  const set = (k: string, v: number): void => {
    if (v > 0) s[k] = String(v);
    else delete s[k];
  };
  set('added-data-files', delta.addedFiles);
  set('deleted-data-files', delta.deletedFiles);
  set('added-records', delta.addedRecords);
  set('deleted-records', delta.deletedRecords);
  set('added-files-size', delta.addedSize);
  set('removed-files-size', delta.removedSize);
  s['changed-partition-count'] = String(delta.changedPartitions);
  const total = (key: string, plus: number, minus: number): void => {
    const prev = parent === undefined ? '0' : parent.summary[key];
    if (prev === undefined || !/^\d+$/.test(prev)) {
      delete s[key];
      return;
    }
    s[key] = String(Number(prev) + plus - minus);
  };
  total('total-records', delta.addedRecords, delta.deletedRecords);
  total('total-files-size', delta.addedSize, delta.removedSize);
  total('total-data-files', delta.addedFiles, delta.deletedFiles);
  total('total-delete-files', 0, 0);
  total('total-position-deletes', 0, 0);
  total('total-equality-deletes', 0, 0);
  delete s.operation;
  return { operation, ...s };
}

/** Next metadata with `snapshot` added and made current on the main branch. */
export function withSnapshot(base: TableMetadata, snapshot: Snapshot, nowMs: number): TableMetadata {
  const main = base.refs.main;
  return {
    ...base,
    'last-sequence-number': snapshot['sequence-number'],
    'last-updated-ms': nowMs,
    'current-snapshot-id': snapshot['snapshot-id'],
    refs: { ...base.refs, main: { ...(main ?? {}), 'snapshot-id': snapshot['snapshot-id'], type: 'branch' } },
    snapshots: [...base.snapshots, snapshot],
    'snapshot-log': [...base['snapshot-log'], { 'timestamp-ms': snapshot['timestamp-ms'], 'snapshot-id': snapshot['snapshot-id'] }],
  };
}
