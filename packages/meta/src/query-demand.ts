// Query demand (spec 1, Log query API): how often queries filter on an attribute key that has no
// column of its own. Filtering a typed map is about 20 times slower than a column
// (reference/storage.md §2), so the keys asked for most are the candidates for
// schema.materialized_labels. Advisory only: nothing reads it on the query path.

import type { Db } from './db.ts';
import { isValidDatasetId, isValidTenantId } from './ids.ts';

export interface AttributeQueryDemand {
  table: string;
  key: string;
  count: number;
  lastSeenAt: Date;
}

/**
 * Adds counts for one dataset's table (one round trip). Rows go in key order so concurrent
 * routers flushing overlapping keys cannot deadlock; a dataset deleted meanwhile is skipped.
 */
export async function recordAttributeQueryDemand(db: Db, tenantId: string, datasetId: string, table: string, counts: ReadonlyMap<string, number>): Promise<void> {
  if (!isValidTenantId(tenantId) || !isValidDatasetId(datasetId)) return;
  const rows = [...counts].filter(([, n]) => n > 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO attribute_query_demand (tenant_id, dataset_id, table_name, attr_key, count, last_seen_at)
     SELECT $1, $2, $3, d.attr_key, d.n, now()
       FROM unnest($4::text[], $5::bigint[]) WITH ORDINALITY AS d(attr_key, n, ord)
      WHERE EXISTS (SELECT 1 FROM datasets ds WHERE ds.tenant_id = $1 AND ds.id = $2)
      ORDER BY d.ord
     ON CONFLICT (tenant_id, dataset_id, table_name, attr_key)
     DO UPDATE SET count = attribute_query_demand.count + EXCLUDED.count, last_seen_at = EXCLUDED.last_seen_at`,
    [tenantId, datasetId, table, rows.map(([k]) => k), rows.map(([, n]) => String(n))],
  );
}

/** A dataset's query demand, most asked-for first (ties by table and key). */
export async function listAttributeQueryDemand(db: Db, tenantId: string, datasetId: string): Promise<AttributeQueryDemand[]> {
  if (!isValidTenantId(tenantId) || !isValidDatasetId(datasetId)) return [];
  const { rows } = await db.query<{ table_name: string; attr_key: string; count: string; last_seen_at: Date }>(
    `SELECT table_name, attr_key, count, last_seen_at FROM attribute_query_demand
      WHERE tenant_id = $1 AND dataset_id = $2
      ORDER BY count DESC, table_name, attr_key`,
    [tenantId, datasetId],
  );
  return rows.map((r) => ({ table: r.table_name, key: r.attr_key, count: Number(r.count), lastSeenAt: r.last_seen_at }));
}
