import { rm } from 'node:fs/promises';
import { CommitConflictError, deleteDataFiles, floeTableDef, publishDataFile, type PlannedFile, type SqlCatalog, type TableHandle, type TableMetadata } from '@floe/iceberg';
import { partitionFieldName, type TableDef } from '@floe/schema';
import { writtenLocalFiles, type CacheLease, type LocalFileCache, type ObjectStore, type ParquetWriter, type WrittenFile } from '@floe/storage';
import type { Logger } from '@floe/telemetry';

/**
 * A file is a compaction input only once it has been committed for this long. The writer commits
 * a partition every flush interval (2 s by default) while data for that hour keeps arriving;
 * rewriting files seconds old would redo the same hour on every pass and race the writer's
 * commits for the catalog row. A minute is many flush intervals, yet short against the pass
 * interval (5 min), so the current hour still gets compacted while it is being written instead of
 * staying at one file per flush until the hour is over.
 */
export const MIN_FILE_AGE_MS = 60_000;

export const COMPACTION_SUMMARY_KEY = 'floe.compaction';

/**
 * An hour partition counts as still being written until this long after its end (the writer's
 * last flushes, clients that send late). While an hour is open its files are merged size-tiered
 * (`splitTiers`); once it is closed everything below the target is merged one last time.
 */
export const OPEN_HOUR_GRACE_MS = 10 * 60_000;

/**
 * In an open hour, a group is rewritten with its largest file only when the others add up to at
 * least this fraction of it. Without the rule every pass re-merged the hour's big file with the
 * few flush files that had arrived since (2.2–3.1x the hour's rows rewritten, bench/RESULTS.md);
 * with it, a row is rewritten about log2(hour size / flush size) times at most, as in a
 * size-tiered LSM tree.
 */
export const SIZE_RATIO = 1;

const MS_PER_HOUR = 3_600_000;

export interface CompactionGroup {
  /** Value of the hour partition (hours since the epoch). */
  hour: number;
  files: PlannedFile[];
}

export interface PlanCompactionOptions {
  targetFileBytes: number;
  minFileAgeMs: number;
  nowMs: number;
}

/**
 * Which files to merge: per hour partition, the files below the target size that were committed
 * at least `minFileAgeMs` ago, when there are two or more, packed in time order into groups whose
 * total size stays within the target. Packing is next-fit over files sorted by their lowest
 * timestamp rather than best-fit by size, so each output file covers a contiguous stretch of the
 * hour and the time bounds of an hour's files barely overlap: the planner can then still prune
 * within an hour. A group of one would be rewritten for nothing and is dropped. In an hour that
 * is still open, groups are then split size-tiered (`splitTiers`).
 */
export function planCompaction(def: TableDef, metadata: TableMetadata, files: readonly PlannedFile[], opts: PlanCompactionOptions): CompactionGroup[] {
  const field = partitionFieldName(def);
  const timeId = def.columns.find((c) => c.name === def.partitionSource)?.id;
  const defaultSpec = metadata['default-spec-id'];
  const committedAt = commitTimes(metadata);
  const cutoff = opts.nowMs - opts.minFileAgeMs;

  const byHour = new Map<number, PlannedFile[]>();
  for (const f of files) {
    const hour = f.partition[field];
    // Floe writes one spec; a file of another spec would need its own partition grouping.
    if (typeof hour !== 'number' || f.specId !== defaultSpec) continue;
    if (f.fileSizeBytes >= opts.targetFileBytes) continue;
    if (committedAt(f.sequenceNumber) > cutoff) continue;
    let list = byHour.get(hour);
    if (!list) byHour.set(hour, (list = []));
    list.push(f);
  }

  const lowTime = (f: PlannedFile): bigint => {
    const b = timeId === undefined ? undefined : f.lowerBounds[timeId];
    return b && b.byteLength === 8 ? new DataView(b.buffer, b.byteOffset, 8).getBigInt64(0, true) : 0n;
  };
  const groups: CompactionGroup[] = [];
  for (const [hour, list] of [...byHour].sort((a, b) => a[0] - b[0])) {
    if (list.length < 2) continue;
    list.sort((a, b) => {
      const d = lowTime(a) - lowTime(b);
      return d < 0n ? -1 : d > 0n ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
    });
    let current: PlannedFile[] = [];
    let bytes = 0;
    const open = (hour + 1) * MS_PER_HOUR + OPEN_HOUR_GRACE_MS > opts.nowMs;
    const flush = () => {
      for (const files of open ? splitTiers(current) : [current]) if (files.length >= 2) groups.push({ hour, files });
      current = [];
      bytes = 0;
    };
    for (const f of list) {
      if (current.length > 0 && bytes + f.fileSizeBytes > opts.targetFileBytes) flush();
      current.push(f);
      bytes += f.fileSizeBytes;
    }
    flush();
  }
  return groups;
}

/**
 * A time-ordered group without its outsized files: when the largest file is bigger than
 * SIZE_RATIO times the rest together, it stays as it is and the files before and after it are
 * considered on their own (each side stays contiguous in time). Groups of fewer than two files
 * come back as they are; the caller drops them.
 */
export function splitTiers(files: readonly PlannedFile[]): PlannedFile[][] {
  if (files.length < 2) return [[...files]];
  let largest = 0;
  let total = 0;
  for (let i = 0; i < files.length; i++) {
    total += files[i]!.fileSizeBytes;
    if (files[i]!.fileSizeBytes > files[largest]!.fileSizeBytes) largest = i;
  }
  const size = files[largest]!.fileSizeBytes;
  if (size <= SIZE_RATIO * (total - size)) return [[...files]];
  return [...splitTiers(files.slice(0, largest)), ...splitTiers(files.slice(largest + 1))];
}

/**
 * When the file with a given data sequence number was committed, at the latest. Its snapshot
 * may have expired (with a short retention, every snapshot but the current one does); then the
 * first retained snapshot after it bounds the time from above, which errs toward "too young".
 */
function commitTimes(metadata: TableMetadata): (sequenceNumber: number) => number {
  const snaps = [...metadata.snapshots].sort((a, b) => a['sequence-number'] - b['sequence-number']);
  return (seq) => {
    let lo = 0;
    let hi = snaps.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (snaps[mid]!['sequence-number'] < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo < snaps.length ? snaps[lo]!['timestamp-ms'] : Number.POSITIVE_INFINITY;
  };
}

export interface CompactDeps {
  catalog: SqlCatalog;
  store: ObjectStore;
  writer: ParquetWriter;
  /** Local copies of S3 inputs; for an fs store it hands out the objects' own paths. */
  cache: LocalFileCache;
  log: Logger;
}

export interface CompactTableStats {
  groups: number;
  partitions: number;
  filesBefore: number;
  filesAfter: number;
  bytesBefore: number;
  bytesAfter: number;
  rows: number;
  conflicts: number;
  failures: number;
}

export const emptyCompactStats = (): CompactTableStats => ({
  groups: 0,
  partitions: 0,
  filesBefore: 0,
  filesAfter: 0,
  bytesBefore: 0,
  bytesAfter: 0,
  rows: 0,
  conflicts: 0,
  failures: 0,
});

export interface CompactTableResult {
  handle: TableHandle;
  stats: CompactTableStats;
}

/**
 * Merges the small files of every hour partition of one table: each group is rewritten by DuckDB
 * into one file in the canonical sort order (zstd, Iceberg field ids), uploaded with its id
 * filter, and swapped in by its own `replace` commit, so a conflict or failure costs that group
 * only. `signal` ends the table after the group in progress. The rewrite uses the table's own
 * definition (floeTableDef: the signal's plus the materialized label columns it recorded at
 * creation), so label columns and their field ids survive compaction.
 */
export async function compactTable(deps: CompactDeps, handle: TableHandle, opts: PlanCompactionOptions, signal?: AbortSignal): Promise<CompactTableResult> {
  const def = floeTableDef(handle);
  const stats = emptyCompactStats();
  const files = await deps.catalog.planFiles(handle);
  const groups = planCompaction(def, handle.metadata, files, opts);
  const hours = new Set<number>();
  let current = handle;
  for (const group of groups) {
    if (signal?.aborted) break;
    const outcome = await compactGroup(deps, current, def, group);
    if (outcome.kind === 'committed') {
      current = outcome.handle;
      hours.add(group.hour);
      stats.groups++;
      stats.filesBefore += group.files.length;
      stats.filesAfter++;
      stats.bytesBefore += group.files.reduce((a, f) => a + f.fileSizeBytes, 0);
      stats.bytesAfter += outcome.sizeBytes;
      stats.rows += outcome.rows;
    } else if (outcome.kind === 'conflict') {
      stats.conflicts++;
    } else {
      stats.failures++;
    }
  }
  stats.partitions = hours.size;
  return { handle: current, stats };
}

type GroupOutcome = { kind: 'committed'; handle: TableHandle; sizeBytes: number; rows: number } | { kind: 'conflict' } | { kind: 'failed' };

async function compactGroup(deps: CompactDeps, handle: TableHandle, def: TableDef, group: CompactionGroup): Promise<GroupOutcome> {
  const { catalog, store, writer, cache, log } = deps;
  const table = `${handle.namespace}.${handle.name}`;
  const expectedRows = group.files.reduce((a, f) => a + f.recordCount, 0);
  let written: WrittenFile | undefined;
  let uploadedKey: string | undefined;
  // Until replaceFiles is called nothing can reference the upload; after a conflict it never will.
  // Any other commit error leaves it unknown whether the swap landed, so the upload stays for the
  // orphan sweep, which deletes it only if no snapshot references it.
  let safeToDelete = true;
  try {
    const leases: CacheLease[] = [];
    try {
      for (const f of group.files) leases.push(await cache.acquire(store, f.key, f.fileSizeBytes));
      written = await writer.rewrite(def, leases.map((l) => l.path), { idBlocks: true });
    } finally {
      for (const l of leases) l.release();
    }
    if (written.rowCount !== expectedRows) {
      throw new Error(`rewrite of ${group.files.length} files produced ${written.rowCount} rows, the manifests list ${expectedRows}`);
    }
    const locationKey = store.keyFromUri(handle.metadata.location);
    const input = await publishDataFile(store, def, written, locationKey, group.hour);
    uploadedKey = input.key;
    safeToDelete = false;
    const summary = JSON.stringify({ hour: group.hour, removed: group.files.length, added: 1, rows: written.rowCount });
    const result = await catalog.replaceFiles(handle, { remove: group.files.map((f) => f.key), add: [input], summary: { [COMPACTION_SUMMARY_KEY]: summary } });
    log.debug({ table, hour: group.hour, files: group.files.length, rows: written.rowCount, bytes: written.sizeBytes, attempts: result.attempts }, 'partition group compacted');
    return { kind: 'committed', handle: result.handle, sizeBytes: written.sizeBytes, rows: written.rowCount };
  } catch (err) {
    const conflict = err instanceof CommitConflictError;
    if (conflict) safeToDelete = true;
    if (uploadedKey !== undefined && safeToDelete) {
      await deleteDataFiles(store, [uploadedKey]).catch((e: unknown) => log.warn({ err: e, key: uploadedKey }, 'could not delete an uncommitted compaction output; the orphan sweep will'));
    }
    if (conflict) {
      // Someone else changed these files (another compactor, retention): next pass replans.
      log.info({ table, hour: group.hour, files: group.files.length, reason: (err as Error).message }, 'compaction group skipped after a conflict');
      return { kind: 'conflict' };
    }
    log.error({ err, table, hour: group.hour, files: group.files.length }, 'compaction group failed');
    return { kind: 'failed' };
  } finally {
    if (written) await Promise.all(writtenLocalFiles(written).map((f) => rm(f, { force: true })));
  }
}
