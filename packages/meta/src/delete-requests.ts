// Delete requests: recorded by the router (Loki's POST /loki/api/v1/delete), cancelled by it until
// a compactor takes them up, and processed by the compactor once they are past their cancel
// period (compactor.delete_request_cancel_period). Each request names one table of one dataset.

import { randomBytes } from 'node:crypto';
import type { Db } from './db.ts';

export interface CreateDeleteRequestInput {
  tenantId: string;
  datasetId: string;
  /** The table the rows are deleted from (`logs`). */
  table: string;
  /** What selects the rows, as the caller sent it: LogQL for logs, the `match[]` selectors (one per line) for metrics. */
  query: string;
  /** The series a metrics request deletes, resolved when it was recorded (absent for logs). */
  seriesIds?: string[];
  /** The window, in unix milliseconds, both ends included (as Loki's). */
  startMs: number;
  endMs: number;
}

export interface DeleteRequest extends CreateDeleteRequestInput {
  /** 16 lowercase hex characters. */
  id: string;
  createdAt: Date;
  /** When a compactor took it up (from then on it cannot be cancelled); null: not yet. */
  startedAt: Date | null;
  processedAt: Date | null;
  /** Rows deleted, once processed. */
  deletedRows: number | null;
}

type Row = {
  id: string;
  series_ids: string[] | null;
  tenant_id: string;
  dataset_id: string;
  table_name: string;
  query: string;
  start_ms: string | number;
  end_ms: string | number;
  created_at: Date;
  started_at: Date | null;
  processed_at: Date | null;
  deleted_rows: string | number | null;
};

const COLUMNS = 'id, tenant_id, dataset_id, table_name, query, series_ids, start_ms, end_ms, created_at, started_at, processed_at, deleted_rows';

const fromRow = (r: Row): DeleteRequest => ({
  id: r.id,
  tenantId: r.tenant_id,
  datasetId: r.dataset_id,
  table: r.table_name,
  query: r.query,
  ...(r.series_ids ? { seriesIds: r.series_ids } : {}),
  startMs: Number(r.start_ms),
  endMs: Number(r.end_ms),
  createdAt: r.created_at,
  startedAt: r.started_at,
  processedAt: r.processed_at,
  deletedRows: r.deleted_rows === null ? null : Number(r.deleted_rows),
});

export async function createDeleteRequest(db: Db, input: CreateDeleteRequestInput): Promise<DeleteRequest> {
  const id = randomBytes(8).toString('hex');
  const { rows } = await db.query<Row>(
    `INSERT INTO delete_requests (id, tenant_id, dataset_id, table_name, query, series_ids, start_ms, end_ms) VALUES ($1, $2, $3, $4, $5, $6::text[], $7, $8) RETURNING ${COLUMNS}`,
    [id, input.tenantId, input.datasetId, input.table, input.query, input.seriesIds ?? null, input.startMs, input.endMs],
  );
  return fromRow(rows[0]!);
}

/** A dataset's requests on one table, oldest first; `pendingOnly`: those not processed yet. */
export async function listDeleteRequests(db: Db, tenantId: string, datasetId: string, table: string, opts: { pendingOnly?: boolean } = {}): Promise<DeleteRequest[]> {
  const pending = opts.pendingOnly ? ' AND processed_at IS NULL' : '';
  const { rows } = await db.query<Row>(
    `SELECT ${COLUMNS} FROM delete_requests WHERE tenant_id = $1 AND dataset_id = $2 AND table_name = $3${pending} ORDER BY seq`,
    [tenantId, datasetId, table],
  );
  return rows.map(fromRow);
}

export type CancelOutcome = 'cancelled' | 'not_found' | 'started';

/**
 * Removes a request that no compactor has taken up yet (as Loki, a cancelled request is gone from
 * the list). A request already taken up or processed stays: `started`.
 */
export async function cancelDeleteRequest(db: Db, tenantId: string, datasetId: string, table: string, id: string): Promise<CancelOutcome> {
  const { rows } = await db.query<{ started: boolean }>(
    `WITH hit AS (SELECT id, started_at IS NOT NULL OR processed_at IS NOT NULL AS started FROM delete_requests WHERE id = $1 AND tenant_id = $2 AND dataset_id = $3 AND table_name = $4),
          gone AS (DELETE FROM delete_requests d USING hit WHERE d.id = hit.id AND NOT hit.started RETURNING d.id)
     SELECT started FROM hit`,
    [id, tenantId, datasetId, table],
  );
  if (rows.length === 0) return 'not_found';
  return rows[0]!.started ? 'started' : 'cancelled';
}

/**
 * Requests not processed yet and created at or before `cutoff` (past their cancel period), and
 * those of the `immediate` tables whatever their age (Prometheus's deletes are not cancellable),
 * oldest first.
 */
export async function dueDeleteRequests(db: Db, cutoff: Date, immediate: readonly string[] = []): Promise<DeleteRequest[]> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM delete_requests WHERE processed_at IS NULL AND (created_at <= $1 OR table_name = ANY($2::text[])) ORDER BY seq`, [cutoff, [...immediate]]);
  return rows.map(fromRow);
}

/** Marks a request as taken up (it can no longer be cancelled); false when it was cancelled meanwhile. */
export async function startDeleteRequest(db: Db, id: string): Promise<boolean> {
  const { rows } = await db.query<{ id: string }>(`UPDATE delete_requests SET started_at = coalesce(started_at, now()) WHERE id = $1 AND processed_at IS NULL RETURNING id`, [id]);
  return rows.length > 0;
}

/** Whether the request has been carried out (false also for one cancelled or unknown). */
export async function deleteRequestProcessed(db: Db, id: string): Promise<boolean> {
  const { rows } = await db.query<{ done: boolean }>(`SELECT processed_at IS NOT NULL AS done FROM delete_requests WHERE id = $1`, [id]);
  return rows[0]?.done === true;
}

export async function finishDeleteRequest(db: Db, id: string, deletedRows: number): Promise<void> {
  await db.query(`UPDATE delete_requests SET processed_at = now(), deleted_rows = $2 WHERE id = $1`, [id, deletedRows]);
}
