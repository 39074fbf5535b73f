import { rm } from 'node:fs/promises';
import { CommitConflictError, deleteDataFiles, floeTableDef, publishDataFile, type PlannedFile, type TableHandle } from '@floe/iceberg';
import type { DeleteRequest } from '@floe/meta';
import { logDeletionOfRequest, planLogDeletion, planSeriesDeletion } from '@floe/query';
import { partitionFieldName, type TableDef } from '@floe/schema';
import { writtenLocalFiles, type RowCondition, type WrittenFile } from '@floe/storage';
import type { CompactDeps } from './compact.ts';

/** Snapshot summary key of a delete request's commit: the request's id. */
export const DELETE_REQUEST_SUMMARY_KEY = 'floe.delete-request';

const MS_PER_HOUR = 3_600_000;

export interface DeleteStats {
  /** Requests processed (marked so) in the pass. */
  requests: number;
  /** Data files rewritten or removed. */
  files: number;
  rows: number;
}

export const emptyDeleteStats = (): DeleteStats => ({ requests: 0, files: 0, rows: 0 });

/** The tables a request deletes from: a metrics request's series also leave their exemplars. */
export const deletionTables = (req: Pick<DeleteRequest, 'table'>): string[] => (req.table === 'metrics' ? ['metrics', 'metric_exemplars'] : [req.table]);

/**
 * The condition selecting a request's rows in one of its tables ([start, end] in milliseconds,
 * both ends included, as Loki's and Prometheus's): for logs its LogQL, lowered and planned as a log
 * query over the window (as the router checked it at creation); for metrics its series ids.
 */
export function deletionCondition(req: Pick<DeleteRequest, 'table' | 'query' | 'seriesIds' | 'startMs' | 'endMs'>, def: TableDef): RowCondition {
  switch (req.table) {
    case 'logs':
      return planLogDeletion(logDeletionOfRequest(req.query, req.startMs, req.endMs), def);
    case 'metrics':
      return planSeriesDeletion({ seriesIds: req.seriesIds ?? [], startNs: BigInt(req.startMs) * 1_000_000n, endNs: BigInt(req.endMs) * 1_000_000n + 999_999n }, def);
    default:
      throw new Error(`delete requests on table ${req.table} are not supported`);
  }
}

export type DeleteOutcome = { kind: 'committed'; handle: TableHandle; files: number; rows: number } | { kind: 'retry' };

/** Rows to delete from a table: a condition over its columns, within a window of unix milliseconds (both ends included). */
export interface RowDeletion {
  condition: RowCondition;
  startMs: number;
  endMs: number;
  /** Snapshot summary of the commit, naming why. */
  summary: Record<string, string>;
  /** Only files this accepts are looked at (absent: every file of the window). */
  files?: (file: PlannedFile) => boolean;
}

/** Deletes a request's rows from one table (deleteRows). */
export function applyDeleteRequest(deps: CompactDeps, handle: TableHandle, req: DeleteRequest, signal?: AbortSignal): Promise<DeleteOutcome> {
  const condition = deletionCondition(req, floeTableDef(handle));
  return deleteRows(deps, handle, { condition, startMs: req.startMs, endMs: req.endMs, summary: { [DELETE_REQUEST_SUMMARY_KEY]: req.id } }, signal);
}

/**
 * Deletes rows from one table, copy-on-write: each data file of the window's hour partitions
 * whose time bounds overlap the window and that holds rows the condition selects is rewritten
 * without them (or dropped when every row goes), and all of them are swapped in one `overwrite`
 * commit, so queries see the deletion whole or not at all. The old files go when the snapshots
 * before this one expire (compactor.snapshot_retention). A conflict (another commit touched those
 * files) or a stop leaves it for the next pass (`retry`).
 */
export async function deleteRows(deps: CompactDeps, handle: TableHandle, deletion: RowDeletion, signal?: AbortSignal): Promise<DeleteOutcome> {
  const { catalog, store, writer, cache, log } = deps;
  const def = floeTableDef(handle);
  const { condition } = deletion;
  const field = partitionFieldName(def);
  const firstHour = Math.floor(deletion.startMs / MS_PER_HOUR);
  const lastHour = Math.floor(deletion.endMs / MS_PER_HOUR);
  const tsId = def.columns.find((c) => c.name === def.partitionSource)?.id;
  const loUs = BigInt(deletion.startMs) * 1000n;
  const hiUs = BigInt(deletion.endMs) * 1000n + 999n;
  const planned = await catalog.planFiles(handle, {
    partitionFilter: (p) => typeof p[field] === 'number' && (p[field] as number) >= firstHour && (p[field] as number) <= lastHour,
    boundsFilter: (lower, upper) => {
      const lo = tsId === undefined ? undefined : longOf(lower[tsId]);
      const hi = tsId === undefined ? undefined : longOf(upper[tsId]);
      return (lo === undefined || lo <= hiUs) && (hi === undefined || hi >= loUs);
    },
  });
  const files = deletion.files ? planned.filter(deletion.files) : planned;

  const remove: string[] = [];
  const uploads: string[] = [];
  const add: Awaited<ReturnType<typeof publishDataFile>>[] = [];
  let rows = 0;
  const locationKey = store.keyFromUri(handle.metadata.location);
  // Until the commit is asked for nothing can reference the uploads; after a conflict nothing ever
  // will. Any other commit error leaves it open whether the swap landed: the orphan sweep decides.
  let commitAsked = false;
  try {
    for (const file of files) {
      if (signal?.aborted) break;
      const hour = file.partition[field];
      if (typeof hour !== 'number') continue;
      const lease = await cache.acquire(store, file.key, file.fileSizeBytes);
      let written: WrittenFile | undefined;
      try {
        const out = await writer.deleteWhere(def, [lease.path], condition, { idBlocks: true });
        written = out.kept;
        if (out.deleted === 0) continue;
        if (out.rows !== file.recordCount || (written && written.rowCount !== out.rows - out.deleted)) {
          throw new Error(`${file.key} read ${out.rows} rows and kept ${written?.rowCount ?? 0} of them deleting ${out.deleted}; the manifest lists ${file.recordCount}`);
        }
        remove.push(file.key);
        rows += out.deleted;
        if (!written) continue;
        const input = await publishDataFile(store, def, written, locationKey, hour);
        uploads.push(input.key);
        add.push(input);
      } finally {
        lease.release();
        if (written) await Promise.all(writtenLocalFiles(written).map((f) => rm(f, { force: true })));
      }
    }
    if (signal?.aborted) {
      if (uploads.length > 0) await deleteDataFiles(store, uploads).catch((e: unknown) => log.warn({ err: e }, 'could not delete uncommitted delete-request outputs; the orphan sweep will'));
      return { kind: 'retry' };
    }
    if (remove.length === 0) return { kind: 'committed', handle, files: 0, rows: 0 };
    commitAsked = true;
    const result = await catalog.replaceFiles(handle, {
      remove,
      add,
      operation: add.length === 0 ? 'delete' : 'overwrite',
      summary: deletion.summary,
    });
    log.info({ table: `${handle.namespace}.${handle.name}`, ...deletion.summary, files: remove.length, rows }, 'rows deleted');
    return { kind: 'committed', handle: result.handle, files: remove.length, rows };
  } catch (err) {
    const conflict = err instanceof CommitConflictError;
    if (uploads.length > 0 && (!commitAsked || conflict)) {
      await deleteDataFiles(store, uploads).catch((e: unknown) => log.warn({ err: e }, 'could not delete uncommitted delete-request outputs; the orphan sweep will'));
    }
    if (conflict) return { kind: 'retry' };
    throw err;
  }
}

function longOf(b: Uint8Array | undefined): bigint | undefined {
  return b && b.byteLength === 8 ? new DataView(b.buffer, b.byteOffset, 8).getBigInt64(0, true) : undefined;
}
