import { FloeError } from '@floe/errors';
import { CommitConflictError, type SqlCatalog } from '@floe/iceberg';
import type { ObjectStore } from '@floe/storage';
import { parseWaitMs } from './maintenance-jobs.ts';
import { versionsAhead } from './orphans.ts';
import { DATA_FILE_PROBLEMS, DELETE_FILE_PROBLEMS, repairTarget, type DamagedFile, type PagesCheck, type PagesChecked } from './table-check.ts';
import { parseTableRepairBody } from './table-rollback.ts';

/**
 * Drops a table's lost data files: the operator's repair when live data files of the current
 * snapshot are missing from the store (a bucket lifecycle rule, an operator's mistake), are not
 * the size their manifests record (truncated), or, asked to check pages (`check_pages`), have a
 * page or footer that does not read (a flipped bit: the compactor's open-hour concatenation
 * refuses such a flush file by name), while its metadata and manifests are sound. One
 * Iceberg snapshot (operation `delete`, as retention's) removes exactly those files, so the table
 * gives up only their rows, where `floe ops rollback-table` (table-rollback.ts) would give up
 * every row committed since they were added. A table whose metadata or manifests are themselves
 * damaged, or whose catalog is behind its files, is refused: that is rollback-table's job. So is
 * one with a damaged delete file (missing, truncated or, with `check_pages`, damaged pages):
 * dropping it would bring back the rows it deletes.
 *
 * The files come from one listing of the table (table-check.ts), never a HEAD or GET per file;
 * only a page check reads them, each whole.
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
  /** Read every live data file the listing finds whole and walk its pages (table-check.ts). */
  checkPages: boolean;
  /** With checkPages: how long the action waits for its job before answering 202 (maintenance-jobs.ts). */
  waitMs: number;
}

export interface DroppedFile {
  key: string;
  reason: 'missing' | 'wrong_size' | 'damaged_pages';
  /** Rows and bytes its manifest records. */
  record_count: number;
  file_size_in_bytes: number;
  /** The size the store lists; null when missing. */
  size_in_store: number | null;
  /** damaged_pages only: what does not read, and where (row group, column and byte offset of the page; null for a footer). */
  damage?: { message: string; row_group: number | null; column: string | null; offset: number | null };
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
  /** The live data files of the checked version that are missing, of the wrong size or (check_pages) with damaged pages, by key: those dropped (or that a run would drop). */
  files: DroppedFile[];
  /** Their rows, from the manifests. */
  records_given_up: number;
  /** Asked to check pages only: the data and delete files whose pages were read, and their bytes. */
  pages_checked?: PagesChecked;
  note: string;
}

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_OPS_DROP_FILES' });

/** The body of `POST /tables/drop-damaged-files`: `{tenant, dataset, table, dry_run?, check_pages?, wait_ms?}`. */
export function parseDropDamagedRequest(body: unknown): DropDamagedRequest {
  const { tenant, dataset, table, dryRun, body: b } = parseTableRepairBody(body, ['check_pages', 'wait_ms'], bad);
  if (b.check_pages !== undefined && b.check_pages !== null && typeof b.check_pages !== 'boolean') throw bad('check_pages must be true or false');
  return { tenant, dataset, table, dryRun, checkPages: b.check_pages === true, waitMs: parseWaitMs(b.wait_ms) };
}

const asAnswered = (d: DamagedFile): DroppedFile => ({
  key: d.key,
  reason: d.reason,
  record_count: d.recordCount,
  file_size_in_bytes: d.fileSizeInBytes,
  size_in_store: d.sizeInStore ?? null,
  ...(d.damage ? { damage: { message: d.damage.message, row_group: d.damage.rowGroup, column: d.damage.column, offset: d.damage.offset } } : {}),
});

/** What the commit's summary says of the files: how many of each reason. */
function why(files: readonly DamagedFile[]): string {
  const count = (reason: DamagedFile['reason']) => files.filter((f) => f.reason === reason).length;
  const [missing, wrongSize, pages] = [count('missing'), count('wrong_size'), count('damaged_pages')];
  return [missing > 0 ? `${missing} missing` : '', wrongSize > 0 ? `${wrongSize} of the wrong size` : '', pages > 0 ? `${pages} with damaged pages` : ''].filter(Boolean).join(', ');
}


/** `POST /tables/drop-damaged-files`; `pages` takes a page check's progress. Throws FloeError: 404 unknown table, 409 metadata or manifests damaged, catalog behind its files, or a file no longer live meanwhile. */
export async function dropDamagedFiles(catalog: SqlCatalog, store: ObjectStore, req: DropDamagedRequest, pages: PagesCheck = {}): Promise<DropDamagedAnswer> {
  const { namespace, table, pointer, objects } = await repairTarget(catalog, store, req, 'FLOE_ERR_OPS_DROP_FILES');
  const inspected = await objects.inspect(pointer, req.checkPages ? pages : undefined);
  // Damaged delete files are rollback-table's too, refused below by a message that says why.
  const structural = inspected.problems.find((p) => !DATA_FILE_PROBLEMS.has(p.kind) && !DELETE_FILE_PROBLEMS.has(p.kind));
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
    // Rollback without --to reads no pages: it would take a version whose only damage is in pages as sound.
    const repair = deleteFiles.some((d) => d.reason === 'damaged_pages') ? 'floe ops rollback-table --to a version from before they were added' : 'floe ops rollback-table';
    throw new FloeError('conflict', `${deleteFiles.length} delete files of ${table} are damaged (first: ${deleteFiles[0]!.key}, ${deleteFiles[0]!.reason}): dropping them would bring back deleted rows; ${repair} moves it back to a sound version`, {
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
    ...(req.checkPages ? { pages_checked: inspected.pagesChecked ?? { files: 0, bytes: 0 } } : {}),
    note:
      files.length === 0
        ? `No live data file of ${table} is missing or of the wrong size${req.checkPages ? ' or has damaged pages' : ''}: nothing to do`
        : committed
          ? `${table} no longer reads the ${files.length} files (${records} rows) as of snapshot ${committed.snapshotId}. A truncated or damaged file stays in the store until the snapshots that still reference it expire (compactor.snapshot_retention); the compactor then deletes it.`
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
