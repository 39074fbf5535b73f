// Reading a snapshot: manifest lists → manifests → live data files, with partition and column-bound
// pruning. Manifest lists and manifests are immutable once written, so they are cached by path.

import { InvalidMetadataError } from './errors.ts';
import { Lru } from '@floe/storage';
import { decodeManifest, decodeManifestList, decodePartitionSummaries } from './manifest-avro.ts';
import { currentSnapshot, schemaById, snapshotById, specById } from './metadata.ts';
import type { BoundValue } from './bounds.ts';
import type { BlobStore } from './ports.ts';
import type { ManifestEntry, ManifestFile, PartitionData, PlannedFile, TableMetadata } from './types.ts';

export interface ManifestCacheOptions {
  /** Total manifest entries kept decoded (default 500,000). */
  maxEntries?: number;
  /** Manifest lists kept decoded (default 1,000). */
  maxManifestLists?: number;
}

/** Decoded manifest entries with snapshot id and sequence numbers resolved through inheritance. */
export type ResolvedEntry = ManifestEntry & { snapshotId: bigint; sequenceNumber: number; fileSequenceNumber: number };

/** Reads manifest lists and manifests through an LRU keyed by path, sharing in-flight reads. */
export class ManifestReader {
  readonly #blobs: BlobStore;
  readonly #lists: Lru<string, ManifestFile[]>;
  readonly #manifests: Lru<string, ResolvedEntry[]>;
  readonly #inflight = new Map<string, Promise<unknown>>();

  constructor(blobs: BlobStore, options: ManifestCacheOptions = {}) {
    this.#blobs = blobs;
    this.#lists = new Lru(options.maxManifestLists ?? 1000);
    this.#manifests = new Lru(options.maxEntries ?? 500_000, (entries) => entries.length + 1);
  }

  async #fetch(uri: string): Promise<Uint8Array> {
    const bytes = await this.#blobs.get(this.#blobs.keyFromUri(uri));
    if (!bytes) throw new InvalidMetadataError(`missing file ${uri}`);
    return bytes;
  }

  #once<T>(key: string, load: () => Promise<T>): Promise<T> {
    const pending = this.#inflight.get(key) as Promise<T> | undefined;
    if (pending) return pending;
    const p = load().finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, p);
    return p;
  }

  async manifestList(uri: string): Promise<ManifestFile[]> {
    const hit = this.#lists.get(uri);
    if (hit) return hit;
    return this.#once(`list:${uri}`, async () => {
      const list = decodeManifestList(await this.#fetch(uri));
      this.#lists.set(uri, list);
      return list;
    });
  }

  /**
   * A manifest list this process wrote, as it was written: the next commit to the table carries
   * its manifests over, and reading back the file it just wrote cost that commit a read and a decode.
   */
  rememberList(uri: string, manifests: ManifestFile[]): void {
    this.#lists.set(uri, manifests);
  }

  /** Entries of one manifest; `metadata` supplies the partition spec to name partition fields. */
  async manifest(mf: ManifestFile, metadata: TableMetadata): Promise<ResolvedEntry[]> {
    const hit = this.#manifests.get(mf.manifestPath);
    if (hit) return hit;
    return this.#once(`manifest:${mf.manifestPath}`, async () => {
      const spec = metadata['partition-specs'].find((s) => s['spec-id'] === mf.partitionSpecId);
      const decoded = decodeManifest(await this.#fetch(mf.manifestPath), spec);
      // Inheritance (spec: "Sequence Number Inheritance" / "Snapshot ID Inheritance"): null values
      // come from the manifest list entry that added the manifest.
      const entries = decoded.entries.map(
        (e): ResolvedEntry => ({
          ...e,
          snapshotId: e.snapshotId ?? mf.addedSnapshotId,
          sequenceNumber: e.sequenceNumber ?? mf.sequenceNumber,
          fileSequenceNumber: e.fileSequenceNumber ?? e.sequenceNumber ?? mf.sequenceNumber,
        }),
      );
      this.#manifests.set(mf.manifestPath, entries);
      return entries;
    });
  }

  /** Manifests of a snapshot (empty for a table without snapshots). */
  async snapshotManifests(metadata: TableMetadata, snapshotId?: bigint): Promise<ManifestFile[]> {
    const snap = snapshotId === undefined ? currentSnapshot(metadata) : snapshotById(metadata, snapshotId);
    if (!snap) {
      if (snapshotId !== undefined) throw new InvalidMetadataError(`snapshot ${snapshotId} not found`);
      return [];
    }
    return this.manifestList(snap['manifest-list']);
  }
}

export type PartitionSummaryRange = Record<string, { containsNull: boolean; lower: BoundValue | null; upper: BoundValue | null }>;

export interface PlanOptions {
  /** Keep a file only if this returns true for its partition tuple. */
  partitionFilter?: (partition: PartitionData) => boolean;
  /** Keep a file only if this returns true for its column bounds (keyed by field id). */
  boundsFilter?: (lower: Record<number, Uint8Array>, upper: Record<number, Uint8Array>) => boolean;
  /**
   * Skip whole manifests by their partition ranges (from the manifest list's field summaries,
   * keyed by partition field name). Return false only when no partition in the range can match.
   */
  manifestFilter?: (ranges: PartitionSummaryRange) => boolean;
  /** Plan an older snapshot instead of the current one. */
  snapshotId?: bigint;
}

/** Live data files (ADDED or EXISTING, content 0) of a snapshot after pruning. */
export async function planFiles(reader: ManifestReader, blobs: BlobStore, metadata: TableMetadata, options: PlanOptions = {}): Promise<PlannedFile[]> {
  const manifests = await reader.snapshotManifests(metadata, options.snapshotId);
  const snap = options.snapshotId === undefined ? currentSnapshot(metadata) : snapshotById(metadata, options.snapshotId);
  const schema = schemaById(metadata, snap?.['schema-id']);
  const selected = manifests.filter((mf) => {
    if (mf.content !== 0) return false; // delete manifests: Floe never writes row-level deletes
    if (mf.addedFilesCount === 0 && mf.existingFilesCount === 0) return false;
    if (!options.manifestFilter || !mf.partitions) return true;
    const ranges = decodePartitionSummaries(mf.partitions, specById(metadata, mf.partitionSpecId), schema);
    return ranges ? options.manifestFilter(ranges) : true;
  });
  const lists = await Promise.all(selected.map((mf) => reader.manifest(mf, metadata).then((entries) => ({ mf, entries }))));
  const out: PlannedFile[] = [];
  for (const { mf, entries } of lists) {
    for (const e of entries) {
      if (e.status === 2 || e.dataFile.content !== 0) continue;
      const df = e.dataFile;
      if (options.partitionFilter && !options.partitionFilter(df.partition)) continue;
      const lower = df.lowerBounds ?? {};
      const upper = df.upperBounds ?? {};
      if (options.boundsFilter && !options.boundsFilter(lower, upper)) continue;
      out.push({
        key: blobs.keyFromUri(df.filePath),
        uri: df.filePath,
        fileSizeBytes: df.fileSizeInBytes,
        recordCount: df.recordCount,
        partition: df.partition,
        specId: mf.partitionSpecId,
        sequenceNumber: e.sequenceNumber,
        lowerBounds: lower,
        upperBounds: upper,
        columnSizes: df.columnSizes ?? {},
        valueCounts: df.valueCounts ?? {},
        nullValueCounts: df.nullValueCounts ?? {},
        ...(df.sortOrderId !== undefined ? { sortOrderId: df.sortOrderId } : {}),
        ...(df.splitOffsets ? { splitOffsets: df.splitOffsets } : {}),
      });
    }
  }
  return out;
}
