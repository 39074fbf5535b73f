import { deleteDataFiles, deletesDroppedMetadata, metadataVersion, type SqlCatalog, type TableHandle } from '@floe/iceberg';
import { DEFAULT_WAL_PREFIX, listSegments, parseSegmentKey, WAL_CLOCK_SKEW_MS, type ObjectInfo, type ObjectStore } from '@floe/storage';
import type { Logger } from '@floe/telemetry';

/**
 * The time before which snapshots may be expired. The writer's exactly-once rule reads the WAL
 * segments each retained snapshot consumed (`floe.wal-segments` in its summary) to skip segments
 * already committed when it replays after a crash between commit and segment delete. A snapshot
 * that consumed a segment still in the WAL was committed after that segment was created, so
 * snapshots older than the oldest segment present (less the clock allowance) can go; newer ones
 * must stay until the writer has deleted what they consumed, however old they are, up to
 * writer.wal_marker_retention (`markerRetentionMs`): the writer commits no segment older than
 * that (it sets such a segment aside) and reads no marker older than it, so a segment stuck in the
 * WAL holds back expiry of every table only that long.
 */
export async function expiryHorizon(
  store: ObjectStore,
  nowMs: number,
  retentionMs: number,
  walPrefix: string = DEFAULT_WAL_PREFIX,
  markerRetentionMs: number = Infinity,
): Promise<number> {
  const horizon = nowMs - retentionMs;
  const floor = nowMs - markerRetentionMs;
  // Segments are listed oldest first (their names begin with the creation time).
  let created: number | undefined;
  for (const s of await listSegments(store, walPrefix)) {
    const t = parseSegmentKey(s.key, walPrefix)?.timestampMs;
    if (t !== undefined && t >= floor) {
      created = t;
      break;
    }
  }
  return created === undefined ? horizon : Math.min(horizon, created - WAL_CLOCK_SKEW_MS);
}

export interface ExpireStats {
  snapshots: number;
  dataFiles: number;
  manifests: number;
  manifestLists: number;
  /** Metadata files the metadata log had dropped (droppedMetadataFiles). */
  metadataFiles: number;
}

export const emptyExpireStats = (): ExpireStats => ({ snapshots: 0, dataFiles: 0, manifests: 0, manifestLists: 0, metadataFiles: 0 });

/**
 * Metadata files of the listing that the table's metadata log has dropped, when the table asks
 * for them to be deleted (write.metadata.delete-after-commit.enabled, bounded by
 * write.metadata.previous-versions-max). Java engines delete them at each commit; Floe's commits
 * leave them, so this pass does it. Versions only grow along the log, so anything numbered below
 * its oldest entry was dropped, or is a commit attempt that lost its swap. Unlike an orphan these
 * need no minimum age: no commit in flight can still make one current.
 */
export function droppedMetadataFiles(store: ObjectStore, handle: TableHandle, objects: readonly ObjectInfo[]): string[] {
  if (!deletesDroppedMetadata(handle.metadata)) return [];
  const logged = [handle.metadataLocation, ...handle.metadata['metadata-log'].map((e) => e['metadata-file'])];
  const versions = logged.map(metadataVersion).filter((v) => v >= 0);
  if (versions.length === 0) return [];
  const oldest = versions.reduce((a, b) => Math.min(a, b));
  const kept = new Set(logged.map((u) => store.keyFromUri(u)));
  // metadataVersion is -1 for anything but a numbered metadata file, so nothing else is taken.
  return objects
    .filter((o) => {
      const v = metadataVersion(o.key);
      return v >= 0 && v < oldest && !kept.has(o.key);
    })
    .map((o) => o.key);
}

export interface ExpireDeps {
  catalog: SqlCatalog;
  store: ObjectStore;
  log: Logger;
}

/**
 * Expires the table's snapshots older than `olderThanMs` (the current one always stays) and
 * deletes what only they referenced: data files with their id filters, manifests, manifest
 * lists. Deletion follows the commit, so a crash in between leaves unreferenced files that the
 * orphan sweep removes later; never the reverse.
 */
export async function expireTable(deps: ExpireDeps, handle: TableHandle, olderThanMs: number): Promise<{ handle: TableHandle; stats: ExpireStats }> {
  const { catalog, store, log } = deps;
  const res = await catalog.expireSnapshots(handle, { olderThanMs, retainLast: 1 });
  const stats: ExpireStats = {
    snapshots: res.expiredSnapshotIds.length,
    dataFiles: res.dataFiles.length,
    manifests: res.manifests.length,
    manifestLists: res.manifestLists.length,
    metadataFiles: 0,
  };
  if (stats.snapshots === 0) return { handle: res.handle, stats };
  try {
    await deleteDataFiles(store, res.dataFiles);
    await store.deleteMany([...res.manifests, ...res.manifestLists]);
  } catch (err) {
    log.warn({ err, table: `${handle.namespace}.${handle.name}` }, 'deleting expired files failed; the orphan sweep will retry');
  }
  return { handle: res.handle, stats };
}
