import { FloeError } from '@floe/errors';
import { CommitConflictError, type SqlCatalog } from '@floe/iceberg';
import type { ObjectStore } from '@floe/storage';
import { versionsAhead } from './orphans.ts';
import { repairTarget, type DamagedFile } from './table-check.ts';
import { parseTableRepairBody } from './table-rollback.ts';

/**
 * Drops a table's lost data files: the operator's repair when live data files of the current
 * snapshot are missing from the store (a bucket lifecycle rule, an operator's mistake) or are not
 * the size their manifests record (truncated), while its metadata and manifests are sound. One
 * Iceberg snapshot (operation `delete`, as retention's) removes exactly those files, so the table
 * gives up only their rows, where `floe ops rollback-table` (table-rollback.ts) would give up
 * every row committed since they were added. A table whose metadata or manifests are themselves
 * damaged, or whose catalog is behind its files, is refused: that is rollback-table's job.
 *
 * The files come from one listing of the table (table-check.ts), never a HEAD or GET per file.
 * The commit goes through the catalog's compare-and-swap from the version checked; a commit
 * landing meanwhile (the writer appending) is rebased on; when a file to drop is no longer live in
 * the newer version, it is a 409 and nothing changes.
 */

/** Snapshot summary key of the commit: why its files were removed. */
export const DROP_DAMAGED_SUMMARY_KEY = 'floe.dropped-damaged-files';

export interface DropDamagedRequest {
  tenant: string;
  dataset: string;
  table: string;
  dryRun: boolean;
}

export interface DroppedFile {
  key: string;
  reason: 'missing' | 'wrong_size';
  /** Rows and bytes its manifest records. */
  record_count: number;
  file_size_in_bytes: number;
  /** The size the store lists; null when missing. */
  size_in_store: number | null;
}

export interface DropDamagedAnswer {
  table: string;
  dry_run: boolean;
  /** Whether a snapshot was committed (false for a dry run, or when no file is damaged). */
  dropped: boolean;
  /** The version checked. */
  previous_metadata_location: string;
  /** The version the commit wrote, the table's pointer now (null when nothing was committed). */
  new_metadata_location: string | null;
  snapshot_id: string | null;
  /** The live data files of the checked version that are missing or of the wrong size, by key: those dropped (or that a run would drop). */
  files: DroppedFile[];
  /** Their rows, from the manifests. */
  records_given_up: number;
  note: string;
}

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_OPS_DROP_FILES' });

/** The body of `POST /tables/drop-damaged-files`: `{tenant, dataset, table, dry_run?}`. */
export function parseDropDamagedRequest(body: unknown): DropDamagedRequest {
  const { tenant, dataset, table, dryRun } = parseTableRepairBody(body, [], bad);
  return { tenant, dataset, table, dryRun };
}

const asAnswered = (d: DamagedFile): DroppedFile => ({
  key: d.key,
  reason: d.reason,
  record_count: d.recordCount,
  file_size_in_bytes: d.fileSizeInBytes,
  size_in_store: d.sizeInStore ?? null,
});

/** What the commit's summary says of the files: how many of each reason. */
function why(files: readonly DamagedFile[]): string {
  const missing = files.filter((f) => f.reason === 'missing').length;
  const wrongSize = files.length - missing;
  return [missing > 0 ? `${missing} missing` : '', wrongSize > 0 ? `${wrongSize} of the wrong size` : ''].filter(Boolean).join(', ');
}

/** `POST /tables/drop-damaged-files`. Throws FloeError: 404 unknown table, 409 metadata or manifests damaged, catalog behind its files, or a file no longer live meanwhile. */
export async function dropDamagedFiles(catalog: SqlCatalog, store: ObjectStore, req: DropDamagedRequest): Promise<DropDamagedAnswer> {
  const { namespace, table, pointer, objects } = await repairTarget(catalog, store, req, 'FLOE_ERR_OPS_DROP_FILES');
  const inspected = await objects.inspect(pointer);
  const structural = inspected.problems.find((p) => p.kind !== 'data_files_missing' && p.kind !== 'data_files_wrong_size');
  if (!inspected.metadata || structural) {
    const p = structural ?? inspected.problems[0]!;
    throw new FloeError('conflict', `${table}'s current version is itself damaged (${p.kind}: ${p.message}): dropping data files cannot repair it; floe ops rollback-table moves it back to a sound version`, {
      code: 'FLOE_ERR_OPS_TABLE_METADATA_DAMAGED',
    });
  }
  // Against the pointer as it is after the listing, as the check does: commits landing meanwhile are no sign of a catalog behind.
  const ahead = versionsAhead(objects.metadataFiles, (await catalog.pointerOf(namespace, req.table))?.metadataLocation ?? pointer, store);
  if (ahead.length > 0) {
    throw new FloeError('conflict', `the catalog is behind ${table}'s files (${ahead.length} metadata files numbered beyond the next commit's): a commit on ${pointer} would fork its history; resolve it with floe ops rollback-table first`, {
      code: 'FLOE_ERR_OPS_CATALOG_BEHIND',
    });
  }
  const damaged = [...inspected.damagedFiles].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const deleteFiles = damaged.filter((d) => d.content !== 0);
  if (deleteFiles.length > 0) {
    throw new FloeError('conflict', `${deleteFiles.length} delete files of ${table} are damaged (first: ${deleteFiles[0]!.key}): dropping them would bring back deleted rows; floe ops rollback-table moves it back to a sound version`, {
      code: 'FLOE_ERR_OPS_DROP_FILES',
    });
  }
  const files = damaged.map(asAnswered);
  const records = damaged.reduce((a, d) => a + d.recordCount, 0);
  const answer = (committed?: { location: string; snapshotId: bigint }): DropDamagedAnswer => ({
    table,
    dry_run: req.dryRun,
    dropped: committed !== undefined,
    previous_metadata_location: pointer,
    new_metadata_location: committed?.location ?? null,
    snapshot_id: committed ? String(committed.snapshotId) : null,
    files,
    records_given_up: records,
    note:
      files.length === 0
        ? `No live data file of ${table} is missing or of the wrong size: nothing to do`
        : committed
          ? `${table} no longer reads the ${files.length} files (${records} rows) as of snapshot ${committed.snapshotId}. A truncated file stays in the store until the snapshots that still reference it expire (compactor.snapshot_retention); the compactor then deletes it.`
          : `Dry run: nothing changed. Dropping the ${files.length} files would give up their ${records} rows and keep every other row of ${table}.`,
  });
  if (files.length === 0 || req.dryRun) return answer();

  const handle = { namespace, name: req.table, metadataLocation: pointer, metadata: inspected.metadata };
  try {
    const res = await catalog.replaceFiles(handle, {
      remove: damaged.map((d) => d.key),
      add: [],
      operation: 'delete',
      summary: { [DROP_DAMAGED_SUMMARY_KEY]: why(damaged) },
    });
    return answer({ location: res.metadataLocation, snapshotId: res.snapshotId });
  } catch (err) {
    if (!(err instanceof CommitConflictError)) throw err;
    const now = (await catalog.pointerOf(namespace, req.table))?.metadataLocation;
    throw new FloeError('conflict', `${table} moved from ${pointer} to ${now ?? 'nothing'} meanwhile (${err.message}); nothing was changed: check it again`, {
      code: 'FLOE_ERR_OPS_DROP_CONFLICT',
    });
  }
}
