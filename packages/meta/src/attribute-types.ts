// Attribute type pins (issue 4): the first value type seen for an attribute key is pinned per
// dataset (one pin per key across the dataset's tables and attribute scopes), so the query layers
// know which typed map (str, int, double, bool) a key lives in. Values of another type are still
// stored, in their own typed map, and counted per table in attribute_type_mismatches:
// - off_type: the key was pinned before the batch that carried the value;
// - pin_conflict: the key was new, and the same batch (or a concurrent writer) brought values of
//   two types; the other type won the pin.
// The writer records them; they are advisory metadata, never a reason to refuse data.

import type { Db } from './db.ts';
import { isValidDatasetId, isValidTenantId } from './ids.ts';

export type AttributeValueType = 'str' | 'int' | 'double' | 'bool';

export type AttributeMismatchReason = 'off_type' | 'pin_conflict';

export interface AttributeTypePin {
  key: string;
  type: AttributeValueType;
  firstSeenAt: Date;
}

/**
 * The pin of a key after pinAttributeTypes: `now` this call created it (with the type asked for);
 * `before` it existed when the call started; `concurrently` another writer created it while this
 * call ran (its type may differ from the one asked for).
 */
export interface PinOutcome {
  key: string;
  type: AttributeValueType;
  pinned: 'now' | 'before' | 'concurrently';
}

export interface AttributeTypeMismatch {
  table: string;
  key: string;
  reason: AttributeMismatchReason;
  count: number;
  lastSeenAt: Date;
}

const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/**
 * Pins each key (not pinned yet) to the type given, in one round trip (INSERT … ON CONFLICT DO
 * NOTHING), and answers every key's pin, whoever set it. Keys are inserted in one sorted order, so
 * writers pinning overlapping keys at once cannot deadlock. A key pinned by a writer whose insert
 * overlapped this one is not visible to this statement's snapshot: it is read again afterwards
 * (`concurrently`). Nothing is pinned for a dataset that does not exist (any more).
 */
export async function pinAttributeTypes(
  db: Db,
  tenantId: string,
  datasetId: string,
  wanted: ReadonlyArray<{ key: string; type: AttributeValueType }>,
): Promise<PinOutcome[]> {
  if (!isValidTenantId(tenantId) || !isValidDatasetId(datasetId) || wanted.length === 0) return [];
  const unique = [...new Map(wanted.map((w) => [w.key, w])).values()].sort(byKey);
  const keys = unique.map((w) => w.key);
  const { rows } = await db.query<{ attr_key: string; attr_type: AttributeValueType; pinned: 'now' | 'before' }>(
    `WITH wanted AS (
       SELECT w.attr_key, w.attr_type, w.ord
         FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS w(attr_key, attr_type, ord)
        WHERE EXISTS (SELECT 1 FROM datasets d WHERE d.tenant_id = $1 AND d.id = $2)
     ), ins AS (
       INSERT INTO attribute_type_pins (tenant_id, dataset_id, attr_key, attr_type)
       SELECT $1, $2, attr_key, attr_type FROM wanted ORDER BY ord
       ON CONFLICT DO NOTHING
       RETURNING attr_key, attr_type
     )
     SELECT attr_key, attr_type, 'now' AS pinned FROM ins
     UNION ALL
     SELECT p.attr_key, p.attr_type, 'before' AS pinned FROM attribute_type_pins p
      WHERE p.tenant_id = $1 AND p.dataset_id = $2 AND p.attr_key = ANY($3::text[])`,
    [tenantId, datasetId, keys, unique.map((w) => w.type)],
  );
  const out: PinOutcome[] = rows.map((r) => ({ key: r.attr_key, type: r.attr_type, pinned: r.pinned }));
  const answered = new Set(out.map((o) => o.key));
  const missing = keys.filter((k) => !answered.has(k));
  if (missing.length > 0) {
    const again = await db.query<{ attr_key: string; attr_type: AttributeValueType }>(
      `SELECT attr_key, attr_type FROM attribute_type_pins WHERE tenant_id = $1 AND dataset_id = $2 AND attr_key = ANY($3::text[])`,
      [tenantId, datasetId, missing],
    );
    for (const r of again.rows) out.push({ key: r.attr_key, type: r.attr_type, pinned: 'concurrently' });
  }
  return out.sort(byKey);
}

/** A dataset's pins, by key; only the keys given when `keys` is set. */
export async function listAttributeTypePins(db: Db, tenantId: string, datasetId: string, keys?: readonly string[]): Promise<AttributeTypePin[]> {
  if (!isValidTenantId(tenantId) || !isValidDatasetId(datasetId)) return [];
  if (keys && keys.length === 0) return [];
  const { rows } = await db.query<{ attr_key: string; attr_type: AttributeValueType; first_seen_at: Date }>(
    `SELECT attr_key, attr_type, first_seen_at FROM attribute_type_pins
      WHERE tenant_id = $1 AND dataset_id = $2${keys ? ' AND attr_key = ANY($3::text[])' : ''}
      ORDER BY attr_key`,
    keys ? [tenantId, datasetId, [...keys]] : [tenantId, datasetId],
  );
  return rows.map((r) => ({ key: r.attr_key, type: r.attr_type, firstSeenAt: r.first_seen_at }));
}

/**
 * Adds mismatch counts of one table (one round trip; rows of the same key and reason summed).
 * Rows are written in one sorted order so concurrent writers cannot deadlock.
 */
export async function recordAttributeTypeMismatches(
  db: Db,
  tenantId: string,
  datasetId: string,
  table: string,
  mismatches: ReadonlyArray<{ key: string; reason: AttributeMismatchReason; count: number }>,
): Promise<void> {
  if (!isValidTenantId(tenantId) || !isValidDatasetId(datasetId)) return;
  const summed = new Map<string, { key: string; reason: AttributeMismatchReason; count: number }>();
  for (const m of mismatches) {
    if (m.count <= 0) continue;
    const id = `${m.reason}\u0000${m.key}`;
    const prev = summed.get(id);
    if (prev) prev.count += m.count;
    else summed.set(id, { ...m });
  }
  if (summed.size === 0) return;
  const rows = [...summed.values()].sort((a, b) => byKey(a, b) || (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0));
  await db.query(
    `INSERT INTO attribute_type_mismatches (tenant_id, dataset_id, table_name, attr_key, reason, count, last_seen_at)
     SELECT $1, $2, $3, m.attr_key, m.reason, m.n, now()
       FROM unnest($4::text[], $5::text[], $6::bigint[]) WITH ORDINALITY AS m(attr_key, reason, n, ord)
      WHERE EXISTS (SELECT 1 FROM datasets d WHERE d.tenant_id = $1 AND d.id = $2)
      ORDER BY m.ord
     ON CONFLICT (tenant_id, dataset_id, table_name, attr_key, reason)
     DO UPDATE SET count = attribute_type_mismatches.count + EXCLUDED.count, last_seen_at = EXCLUDED.last_seen_at`,
    [tenantId, datasetId, table, rows.map((r) => r.key), rows.map((r) => r.reason), rows.map((r) => String(r.count))],
  );
}

/** A dataset's mismatch counts, by table, key and reason; only one key's when `key` is set. */
export async function listAttributeTypeMismatches(db: Db, tenantId: string, datasetId: string, opts: { key?: string } = {}): Promise<AttributeTypeMismatch[]> {
  if (!isValidTenantId(tenantId) || !isValidDatasetId(datasetId)) return [];
  const { rows } = await db.query<{ table_name: string; attr_key: string; reason: AttributeMismatchReason; count: string; last_seen_at: Date }>(
    `SELECT table_name, attr_key, reason, count, last_seen_at FROM attribute_type_mismatches
      WHERE tenant_id = $1 AND dataset_id = $2${opts.key !== undefined ? ' AND attr_key = $3' : ''}
      ORDER BY table_name, attr_key, reason`,
    opts.key !== undefined ? [tenantId, datasetId, opts.key] : [tenantId, datasetId],
  );
  return rows.map((r) => ({ table: r.table_name, key: r.attr_key, reason: r.reason, count: Number(r.count), lastSeenAt: r.last_seen_at }));
}
