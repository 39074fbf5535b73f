import { deleteDataFiles, type SqlCatalog, type TableHandle } from '@floe/iceberg';
import { DEFAULT_WAL_PREFIX, listSegments, parseSegmentKey, type ObjectStore } from '@floe/storage';
import type { Logger } from '@floe/telemetry';

/**
 * Allowance for clocks: WAL segment names carry the acceptor's clock, snapshot timestamps the
 * writer's. Without a margin a skewed pair of machines could make a snapshot look older than the
 * segment it consumed.
 */
export const WAL_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * The time before which snapshots may be expired. The writer's exactly-once rule reads the WAL
 * segments each retained snapshot consumed (`floe.wal-segments` in its summary) to skip segments
 * already committed when it replays after a crash between commit and segment delete. A snapshot
 * that consumed a segment still in the WAL was committed after that segment was created, so
 * snapshots older than the oldest segment present (less the clock allowance) can go; newer ones
 * must stay until the writer has deleted what they consumed, however old they are.
 */
export async function expiryHorizon(store: ObjectStore, nowMs: number, retentionMs: number, walPrefix: string = DEFAULT_WAL_PREFIX): Promise<number> {
  const horizon = nowMs - retentionMs;
  const oldest = (await listSegments(store, walPrefix))[0];
  const created = oldest ? parseSegmentKey(oldest.key, walPrefix)?.timestampMs : undefined;
  return created === undefined ? horizon : Math.min(horizon, created - WAL_CLOCK_SKEW_MS);
}

export interface ExpireStats {
  snapshots: number;
  dataFiles: number;
  manifests: number;
  manifestLists: number;
}

export const emptyExpireStats = (): ExpireStats => ({ snapshots: 0, dataFiles: 0, manifests: 0, manifestLists: 0 });

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
