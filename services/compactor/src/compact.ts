import { rm } from 'node:fs/promises';
import { CommitConflictError, deleteDataFiles, floeTableDef, publishDataFile, type PlannedFile, type SqlCatalog, type TableHandle, type TableMetadata } from '@floe/iceberg';
import { partitionFieldName, rowGroupSizeOf, type TableDef } from '@floe/schema';
import { ParquetConcatError, readParquetFooter, writtenLocalFiles, type CacheLease, type LocalFileCache, type ObjectStore, type ParquetFooter, type ParquetWriter, type WrittenFile } from '@floe/storage';
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
 * (`splitTiers`), flush files by concatenation (`MergeMethod`); once it is closed everything
 * below the target, and every concatenation, is sort-merged once.
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

/**
 * How a group is merged. `concat`: the files' row groups copied into one file as they are
 * (parquet-concat), for the writer's flush files of an hour still being written: each file costs
 * every query over the hour, and copying bytes costs a fraction of decoding, sorting and encoding
 * them again, so the open hour can be merged every few seconds' worth of flushes. `sort`: DuckDB
 * rewrites the rows in the table's order with their id blocks: bigger files of an open hour in
 * the full passes, everything of a closed hour once.
 */
export type MergeMethod = 'concat' | 'sort';

/**
 * The most row groups a concatenation gathers. Row groups stay as the writer made them, and a
 * query pays for each one of a file it opens even where it reads none of its rows: a trace by id
 * over one file of 300 flushes' row groups took 34 ms, over the flush files (their id filters
 * ruling out all but one) 16 ms, over the sorted file with id blocks 3.5 ms (bench/small-files).
 * A concatenation past half this many is left to the full pass's sorted merge.
 */
export const MAX_CONCAT_ROW_GROUPS = 32;

export interface CompactionGroup {
  /** Value of the hour partition (hours since the epoch). */
  hour: number;
  files: PlannedFile[];
  method: MergeMethod;
}

export interface PlanCompactionOptions {
  targetFileBytes: number;
  minFileAgeMs: number;
  /** The age at which an open hour's files are concatenated (compactor.open_hour_interval); minFileAgeMs when absent. */
  openMinFileAgeMs?: number;
  /** Plan the open hours only (the compactor's frequent concatenation pass). */
  openHoursOnly?: boolean;
  /** Leave out the open hours' concatenations (the open-hour passes running beside do them). */
  skipOpenConcat?: boolean;
  /** Files never to concatenate (see `concatenable`); they are sorted with the bigger files. */
  sortOnly?: { has(key: string): boolean };
  nowMs: number;
}

/** Iceberg's sort order 0: the file's rows are in no declared order (a concatenation). */
const isUnsorted = (f: PlannedFile): boolean => f.sortOrderId === 0;

/** Row groups of a file: counted by its split offsets, estimated from its rows for a flush file (which records none). */
const rowGroupsOf = (def: TableDef, f: PlannedFile): number => f.splitOffsets?.length ?? Math.max(1, Math.ceil(f.recordCount / rowGroupSizeOf(def)));

/**
 * A file of an open hour that concatenation merges: one the writer flushed (compaction records
 * split offsets in what it writes, the writer does not) or a concatenation, of at most half the
 * row groups a concatenation may gather, so that any two of them still fit in one: bigger ones
 * could be left with no neighbour to merge with, and go to the sorted tier instead. Sorted
 * merges, with their id blocks, are never taken apart again by it; nor is a file the compactor
 * found it cannot concatenate with anything (`sortOnly`: alone with its Parquet schema).
 */
function concatenable(def: TableDef, f: PlannedFile, sortOnly: PlanCompactionOptions['sortOnly']): boolean {
  if (sortOnly?.has(f.key) || rowGroupsOf(def, f) > MAX_CONCAT_ROW_GROUPS / 2) return false;
  return f.splitOffsets === undefined || isUnsorted(f);
}

/**
 * Which files to merge: per hour partition, the files below the target size that were committed
 * at least `minFileAgeMs` ago, when there are two or more, packed in time order into groups whose
 * total size stays within the target. Packing is next-fit over files sorted by their lowest
 * timestamp rather than best-fit by size, so each output file covers a contiguous stretch of the
 * hour and the time bounds of an hour's files barely overlap: the planner can then still prune
 * within an hour.
 *
 * An hour still being written has two tiers, each split size-tiered (`splitTiers`): its flush
 * files and small concatenations (`concatenable`, old enough by `openMinFileAgeMs`) are
 * concatenated, in groups of at most MAX_CONCAT_ROW_GROUPS row groups; its other files (sorted
 * merges, concatenations past half that) are sorted together, except in an open-hours-only plan. A closed
 * hour is sorted, and a concatenation is an input whatever its size, even alone: it is the one
 * rewrite that puts its rows in the table's order. Any other group of one would be rewritten for
 * nothing and is dropped.
 */
export function planCompaction(def: TableDef, metadata: TableMetadata, files: readonly PlannedFile[], opts: PlanCompactionOptions): CompactionGroup[] {
  return planWithWakeUp(def, metadata, files, opts).groups;
}

/**
 * planCompaction's groups, and when the plan could next differ by age alone: the earliest time a
 * file it left out only for being too young becomes old enough (undefined when there is none). Until
 * then, and while no commit changes the table, planning it again finds the same groups.
 */
export function planWithWakeUp(def: TableDef, metadata: TableMetadata, files: readonly PlannedFile[], opts: PlanCompactionOptions): { groups: CompactionGroup[]; wakeAtMs: number | undefined } {
  let wakeAtMs: number | undefined;
  const field = partitionFieldName(def);
  const timeId = def.columns.find((c) => c.name === def.partitionSource)?.id;
  const defaultSpec = metadata['default-spec-id'];
  const committedAt = commitTimes(metadata);
  const cutoff = opts.nowMs - opts.minFileAgeMs;
  const openCutoff = opts.nowMs - (opts.openMinFileAgeMs ?? opts.minFileAgeMs);
  const isOpen = (hour: number) => (hour + 1) * MS_PER_HOUR + OPEN_HOUR_GRACE_MS > opts.nowMs;

  // Per hour partition, the files to concatenate and those to sort.
  const byHour = new Map<number, { concat: PlannedFile[]; sort: PlannedFile[] }>();
  for (const f of files) {
    const hour = f.partition[field];
    // Floe writes one spec; a file of another spec would need its own partition grouping.
    if (typeof hour !== 'number' || f.specId !== defaultSpec) continue;
    const open = isOpen(hour);
    if (opts.openHoursOnly && !open) continue;
    if (f.fileSizeBytes >= opts.targetFileBytes && (open || !isUnsorted(f))) continue;
    const method: MergeMethod = open && concatenable(def, f, opts.sortOnly) ? 'concat' : 'sort';
    if (method === 'sort' && open && opts.openHoursOnly) continue;
    if (method === 'concat' && opts.skipOpenConcat) continue;
    const committed = committedAt(f.sequenceNumber);
    if (committed > (method === 'concat' ? openCutoff : cutoff)) {
      // Infinite: its commit time is unknown (a snapshot expired), and age never makes it eligible.
      const eligibleAt = committed + (method === 'concat' ? (opts.openMinFileAgeMs ?? opts.minFileAgeMs) : opts.minFileAgeMs);
      if (Number.isFinite(eligibleAt) && (wakeAtMs === undefined || eligibleAt < wakeAtMs)) wakeAtMs = eligibleAt;
      continue;
    }
    let lists = byHour.get(hour);
    if (!lists) byHour.set(hour, (lists = { concat: [], sort: [] }));
    lists[method].push(f);
  }

  const lowTime = (f: PlannedFile): bigint => {
    const b = timeId === undefined ? undefined : f.lowerBounds[timeId];
    return b && b.byteLength === 8 ? new DataView(b.buffer, b.byteOffset, 8).getBigInt64(0, true) : 0n;
  };
  const inTimeOrder = (a: PlannedFile, b: PlannedFile) => {
    const d = lowTime(a) - lowTime(b);
    return d < 0n ? -1 : d > 0n ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  };
  const groups: CompactionGroup[] = [];
  for (const [hour, lists] of [...byHour].sort((a, b) => a[0] - b[0])) {
    const open = isOpen(hour);
    for (const method of ['sort', 'concat'] as const) {
      const list = lists[method].sort(inTimeOrder);
      let current: PlannedFile[] = [];
      let bytes = 0;
      let rowGroups = 0;
      const flush = () => {
        if (open) {
          for (const files of splitTiers(current)) if (files.length >= 2) groups.push({ hour, files, method });
        } else if (current.length >= 2 || (current.length === 1 && isUnsorted(current[0]!))) {
          groups.push({ hour, files: current, method });
        }
        current = [];
        bytes = 0;
        rowGroups = 0;
      };
      for (const f of list) {
        const fileGroups = rowGroupsOf(def, f);
        if (current.length > 0 && (bytes + f.fileSizeBytes > opts.targetFileBytes || (method === 'concat' && rowGroups + fileGroups > MAX_CONCAT_ROW_GROUPS))) flush();
        current.push(f);
        bytes += f.fileSizeBytes;
        rowGroups += fileGroups;
      }
      flush();
    }
  }
  return { groups, wakeAtMs };
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
  /** Where a concatenation records the files it could not concatenate (PlanCompactionOptions.sortOnly). */
  sortOnly?: { add(key: string): void };
}

export interface CompactTableStats {
  groups: number;
  partitions: number;
  filesBefore: number;
  filesAfter: number;
  bytesBefore: number;
  bytesAfter: number;
  rows: number;
  /** Of `groups`, those concatenated (an open hour's) rather than sorted. */
  concatenated: number;
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
  concatenated: 0,
  conflicts: 0,
  failures: 0,
});

export interface CompactTableResult {
  handle: TableHandle;
  stats: CompactTableStats;
  /** When a file the plan left out for being too young becomes old enough (planWithWakeUp); undefined when none was. */
  wakeAtMs: number | undefined;
}

/**
 * Merges the small files of every hour partition of one table: each group becomes one file
 * (`MergeMethod`: concatenated in an open hour, sorted by DuckDB in the canonical order with its
 * id blocks once the hour is closed), uploaded with its id filter, and swapped in by its own
 * `replace` commit, so a conflict or failure costs that group only. `signal` ends the table after
 * the group in progress. A sorted rewrite uses the table's own definition (floeTableDef: the
 * signal's plus the materialized label columns it recorded at creation), so label columns and
 * their field ids survive compaction.
 */
export async function compactTable(deps: CompactDeps, handle: TableHandle, opts: PlanCompactionOptions, signal?: AbortSignal): Promise<CompactTableResult> {
  const def = floeTableDef(handle);
  const stats = emptyCompactStats();
  const files = await deps.catalog.planFiles(handle);
  const { groups, wakeAtMs } = planWithWakeUp(def, handle.metadata, files, opts);
  const hours = new Set<number>();
  let current = handle;
  for (const group of groups) {
    if (signal?.aborted) break;
    const outcome = await compactGroup(deps, current, def, group);
    if (outcome.kind === 'committed') {
      current = outcome.handle;
      hours.add(group.hour);
      stats.groups++;
      if (group.method === 'concat') stats.concatenated++;
      stats.filesBefore += outcome.removed.length;
      stats.filesAfter += outcome.added;
      stats.bytesBefore += outcome.removed.reduce((a, f) => a + f.fileSizeBytes, 0);
      stats.bytesAfter += outcome.sizeBytes;
      stats.rows += outcome.rows;
    } else if (outcome.kind === 'conflict') {
      stats.conflicts++;
    } else if (outcome.kind === 'failed') {
      stats.failures++;
    }
  }
  stats.partitions = hours.size;
  return { handle: current, stats, wakeAtMs };
}

type GroupOutcome =
  | { kind: 'committed'; handle: TableHandle; removed: PlannedFile[]; added: number; sizeBytes: number; rows: number }
  | { kind: 'conflict' }
  | { kind: 'failed' }
  /** Nothing to merge after all (no two files of the group share a schema). */
  | { kind: 'none' };

/** What a group's merge wrote: files to publish in place of `removed`. */
interface Merged {
  removed: PlannedFile[];
  written: WrittenFile[];
}

/**
 * The group's files concatenated, per schema: files written at different times may differ in
 * their Parquet schema (a DuckDB-encoded flush beside the writer's own encoder), and only
 * byte-identical schemas concatenate. A file alone with its schema stays as it is and is named
 * in `left` (the sorted tier takes it from then on).
 */
async function concatenated(writer: ParquetWriter, def: TableDef, files: readonly PlannedFile[], paths: readonly string[]): Promise<Merged & { left: PlannedFile[] }> {
  const bySchema = new Map<string, { files: PlannedFile[]; footers: ParquetFooter[] }>();
  const left: PlannedFile[] = [];
  for (let i = 0; i < files.length; i++) {
    // A footer that cannot be read is damage: the group fails, as a sorted rewrite of the file
    // would, and the file stays for the operator's repair (floe ops check-tables).
    const footer = await readParquetFooter(paths[i]!);
    let bucket = bySchema.get(footer.schemaKey);
    if (!bucket) bySchema.set(footer.schemaKey, (bucket = { files: [], footers: [] }));
    bucket.files.push(files[i]!);
    bucket.footers.push(footer);
  }
  const merged: Merged & { left: PlannedFile[] } = { removed: [], written: [], left };
  try {
    for (const bucket of bySchema.values()) {
      if (bucket.files.length < 2) {
        left.push(...bucket.files);
        continue;
      }
      merged.written.push(await writer.concatenate(def, bucket.footers));
      merged.removed.push(...bucket.files);
    }
    return merged;
  } catch (err) {
    await removeLocal(merged.written);
    throw err;
  }
}

async function compactGroup(deps: CompactDeps, handle: TableHandle, def: TableDef, group: CompactionGroup): Promise<GroupOutcome> {
  const { catalog, store, writer, cache, log } = deps;
  const table = `${handle.namespace}.${handle.name}`;
  let merged: Merged | undefined;
  const uploaded: string[] = [];
  // Until replaceFiles is called nothing can reference the uploads; after a conflict they never will.
  // Any other commit error leaves it unknown whether the swap landed, so the uploads stay for the
  // orphan sweep, which deletes them only if no snapshot references them.
  let safeToDelete = true;
  try {
    const leases: CacheLease[] = [];
    try {
      for (const f of group.files) leases.push(await cache.acquire(store, f.key, f.fileSizeBytes));
      const paths = leases.map((l) => l.path);
      if (group.method === 'concat') {
        const cat = await concatenated(writer, def, group.files, paths);
        for (const f of cat.left) deps.sortOnly?.add(f.key);
        merged = cat;
      } else {
        merged = { removed: group.files, written: [await writer.rewrite(def, paths, { idBlocks: true })] };
      }
    } finally {
      for (const l of leases) l.release();
    }
    if (merged.written.length === 0) return { kind: 'none' };
    const expectedRows = merged.removed.reduce((a, f) => a + f.recordCount, 0);
    const rows = merged.written.reduce((a, w) => a + w.rowCount, 0);
    if (rows !== expectedRows) {
      throw new Error(`${group.method === 'concat' ? 'concatenation' : 'rewrite'} of ${merged.removed.length} files produced ${rows} rows, the manifests list ${expectedRows}`);
    }
    const locationKey = store.keyFromUri(handle.metadata.location);
    const inputs = [];
    for (const w of merged.written) {
      const input = await publishDataFile(store, def, w, locationKey, group.hour);
      uploaded.push(input.key);
      inputs.push(input);
    }
    safeToDelete = false;
    const summary = JSON.stringify({ hour: group.hour, method: group.method, removed: merged.removed.length, added: inputs.length, rows });
    const result = await catalog.replaceFiles(handle, { remove: merged.removed.map((f) => f.key), add: inputs, summary: { [COMPACTION_SUMMARY_KEY]: summary } });
    const sizeBytes = merged.written.reduce((a, w) => a + w.sizeBytes, 0);
    log.debug({ table, hour: group.hour, method: group.method, files: merged.removed.length, rows, bytes: sizeBytes, attempts: result.attempts }, 'partition group compacted');
    return { kind: 'committed', handle: result.handle, removed: merged.removed, added: inputs.length, sizeBytes, rows };
  } catch (err) {
    const conflict = err instanceof CommitConflictError;
    if (conflict) safeToDelete = true;
    if (uploaded.length > 0 && safeToDelete) {
      await deleteDataFiles(store, uploaded).catch((e: unknown) => log.warn({ err: e, keys: uploaded }, 'could not delete uncommitted compaction outputs; the orphan sweep will'));
    }
    if (conflict) {
      // Someone else changed these files (another compactor, retention): next pass replans.
      log.info({ table, hour: group.hour, files: group.files.length, reason: (err as Error).message }, 'compaction group skipped after a conflict');
      return { kind: 'conflict' };
    }
    // A file whose footer or pages do not read fails every pass until the operator gives it up.
    const repair = err instanceof ParquetConcatError ? { repair: `floe ops drop-damaged-files ${table} --check-pages --dry-run` } : {};
    log.error({ err, table, hour: group.hour, method: group.method, files: group.files.length, ...repair }, 'compaction group failed');
    return { kind: 'failed' };
  } finally {
    if (merged) await removeLocal(merged.written);
  }
}

const removeLocal = (written: readonly WrittenFile[]) => Promise.all(written.flatMap(writtenLocalFiles).map((f) => rm(f, { force: true })));
