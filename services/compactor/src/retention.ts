import { floeTableDef, type SqlCatalog, type TableHandle } from '@floe/iceberg';
import { partitionFieldName } from '@floe/schema';

const HOUR_MS = 3_600_000;

/** Snapshot summary key of a retention delete: the retention applied, in milliseconds. */
export const RETENTION_SUMMARY_KEY = 'floe.retention-ms';

export interface RetentionStats {
  /** Hour partitions emptied. */
  partitions: number;
  files: number;
  /** Rows deleted, with whole partitions and by stream (stream-retention.ts). */
  rows: number;
  bytes: number;
  /** Files rewritten or dropped by per-stream retention. */
  streamFiles: number;
}

export const emptyRetentionStats = (): RetentionStats => ({ partitions: 0, files: 0, rows: 0, bytes: 0, streamFiles: 0 });

/** The newest hour partition (hours since the epoch) that lies wholly before `nowMs − retentionMs`: hour h holds [h, h + 1) hours. */
export const lastExpiredHour = (nowMs: number, retentionMs: number): number => Math.floor((nowMs - retentionMs) / HOUR_MS) - 1;

/**
 * Removes from the table every hour partition whose rows are all older than `retentionMs` (0:
 * keep forever), in one Iceberg `delete` snapshot: queries stop seeing them at once, and the
 * files are deleted from storage when the snapshots before this one expire
 * (compactor.snapshot_retention). A partition is removed whole, never cut, so data goes at most
 * an hour (plus a pass interval) after its retention ends: what Loki's and Tempo's block-wise
 * retention do too. Files the writer appends later to such an hour (late data) go in the next pass.
 */
export async function applyRetention(catalog: SqlCatalog, handle: TableHandle, retentionMs: number, nowMs: number): Promise<{ handle: TableHandle; stats: RetentionStats }> {
  const stats = emptyRetentionStats();
  if (!(retentionMs > 0)) return { handle, stats };
  const field = partitionFieldName(floeTableDef(handle));
  const last = lastExpiredHour(nowMs, retentionMs);
  const expired = (hour: unknown): boolean => typeof hour === 'number' && hour <= last;
  const files = await catalog.planFiles(handle, { partitionFilter: (p) => expired(p[field]) });
  if (files.length === 0) return { handle, stats };
  const res = await catalog.replaceFiles(handle, {
    remove: files.map((f) => f.key),
    add: [],
    operation: 'delete',
    summary: { [RETENTION_SUMMARY_KEY]: String(retentionMs) },
  });
  stats.partitions = new Set(files.map((f) => f.partition[field])).size;
  stats.files = files.length;
  stats.rows = files.reduce((a, f) => a + f.recordCount, 0);
  stats.bytes = files.reduce((a, f) => a + f.fileSizeBytes, 0);
  return { handle: res.handle, stats };
}
