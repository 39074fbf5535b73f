// Datasets: named partitions of a tenant's data (`<tenant>.<dataset>.<table>`). Every tenant has
// exactly one default dataset, created with the tenant (id 'default'); a partial unique index keeps
// it to one.

import type { Db } from './db.ts';
import { MetaError, mapConstraintError } from './errors.ts';
import { DEFAULT_DATASET_ID, assertDatasetId, isValidDatasetId, isValidTenantId } from './ids.ts';
import { keysChanged } from './key-cache.ts';
import type { Tenant } from './tenants.ts';

export interface Dataset {
  tenantId: string;
  id: string;
  isDefault: boolean;
  createdAt: Date;
}

type DatasetRow = { tenant_id: string; id: string; is_default: boolean; created_at: Date };

const COLUMNS = 'tenant_id, id, is_default, created_at';

function toDataset(r: DatasetRow): Dataset {
  return { tenantId: r.tenant_id, id: r.id, isDefault: r.is_default, createdAt: r.created_at };
}

export interface CreateDatasetInput {
  tenantId: string;
  id: string;
}

/** Errors: bad_data (id format), not_found (no such tenant), conflict (dataset exists). */
export async function createDataset(db: Db, input: CreateDatasetInput): Promise<Dataset> {
  assertDatasetId(input.id);
  if (!isValidTenantId(input.tenantId)) throw new MetaError('not_found', `tenant ${JSON.stringify(input.tenantId)} not found`);
  // INSERT … SELECT: no row when the tenant is missing; ON CONFLICT: no row when the dataset exists.
  const res = await db
    .query<DatasetRow>(
      `INSERT INTO datasets (tenant_id, id)
       SELECT id, $2 FROM tenants WHERE id = $1
       ON CONFLICT DO NOTHING
       RETURNING ${COLUMNS}`,
      [input.tenantId, input.id],
    )
    .catch((err: unknown) => mapConstraintError(err, `dataset ${input.tenantId}/${input.id}`));
  const row = res.rows[0];
  if (row) return toDataset(row);
  const tenant = await db.query('SELECT 1 FROM tenants WHERE id = $1', [input.tenantId]);
  if (tenant.rowCount === 0) throw new MetaError('not_found', `tenant ${input.tenantId} not found`);
  throw new MetaError('conflict', `dataset ${input.id} already exists in tenant ${input.tenantId}`);
}

/** The tenant's datasets, default first, then by id; [] for an unknown tenant. */
export async function listDatasets(db: Db, tenantId: string): Promise<Dataset[]> {
  if (!isValidTenantId(tenantId)) return [];
  const { rows } = await db.query<DatasetRow>(
    `SELECT ${COLUMNS} FROM datasets WHERE tenant_id = $1 ORDER BY is_default DESC, id`,
    [tenantId],
  );
  return rows.map(toDataset);
}

/**
 * `datasets` (the tenant's rows) with the default dataset always among them, first: spec 2 counts
 * it even when its row was removed by hand, so every consumer (listings, the writer's reconcile
 * pass) must see it without a row.
 */
export function withDefaultDataset(tenant: Pick<Tenant, 'id' | 'createdAt'>, datasets: readonly Dataset[]): Dataset[] {
  if (datasets.some((d) => d.isDefault)) return [...datasets];
  const synthetic: Dataset = { tenantId: tenant.id, id: DEFAULT_DATASET_ID, isDefault: true, createdAt: tenant.createdAt };
  return [synthetic, ...datasets.filter((d) => d.id !== DEFAULT_DATASET_ID)];
}

export async function getDataset(db: Db, tenantId: string, id: string): Promise<Dataset | undefined> {
  if (!isValidTenantId(tenantId) || !isValidDatasetId(id)) return undefined;
  const { rows } = await db.query<DatasetRow>(`SELECT ${COLUMNS} FROM datasets WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    id,
  ]);
  return rows[0] && toDataset(rows[0]);
}

export async function getDefaultDataset(db: Db, tenantId: string): Promise<Dataset | undefined> {
  if (!isValidTenantId(tenantId)) return undefined;
  const { rows } = await db.query<DatasetRow>(
    `SELECT ${COLUMNS} FROM datasets WHERE tenant_id = $1 AND is_default`,
    [tenantId],
  );
  return rows[0] && toDataset(rows[0]);
}

/**
 * Deletes a dataset and, through their foreign keys, the API keys bound to it and its attribute
 * statistics. Its tables are the caller's to purge. Errors: not_found (no such dataset), conflict
 * (the tenant's default dataset, which lives as long as its tenant).
 */
export async function deleteDataset(db: Db, tenantId: string, id: string): Promise<void> {
  const dataset = await getDataset(db, tenantId, id);
  if (!dataset) throw new MetaError('not_found', `dataset ${id} not found in tenant ${tenantId}`);
  if (dataset.isDefault) throw new MetaError('conflict', `dataset ${id} is the default dataset of tenant ${tenantId}; it goes only with its tenant`);
  await db.withTransaction(async (tx) => {
    const gone = await tx.query('DELETE FROM datasets WHERE tenant_id = $1 AND id = $2 AND NOT is_default', [tenantId, id]);
    // A concurrent delete of the same dataset took it between the read above and here.
    if (gone.rowCount === 0) throw new MetaError('not_found', `dataset ${id} not found in tenant ${tenantId}`);
    // Its data is purged with it; a delete request left behind would only visit a table that is gone.
    await tx.query('DELETE FROM delete_requests WHERE tenant_id = $1 AND dataset_id = $2', [tenantId, id]);
    await recordDeletion(tx, tenantId, id);
  });
  await keysChanged(db);
}

/**
 * Which of the (tenant, dataset) pairs name a dataset that exists now, as `tenant/dataset` keys,
 * each with the time (ms) its tenant or it was last deleted (0: never), in two queries: a
 * tenant's default dataset exists as long as its tenant (spec 2 counts it even without a row).
 * The writer asks once per round for the datasets its WAL records name, and drops records of a
 * dataset that is gone, and records appended before the deletion of one created again since.
 */
export async function liveDatasets(db: Db, pairs: ReadonlyArray<{ tenant: string; dataset: string }>): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (pairs.length === 0) return out;
  const tenants = [...new Set(pairs.map((p) => p.tenant))];
  const [existing, deletions] = await Promise.all([
    db.query<{ tenant_id: string; id: string | null }>(`SELECT t.id AS tenant_id, d.id FROM tenants t LEFT JOIN datasets d ON d.tenant_id = t.id WHERE t.id = ANY($1::text[])`, [tenants]),
    db.query<{ tenant_id: string; dataset_id: string; deleted_at: Date | string }>(`SELECT tenant_id, dataset_id, deleted_at FROM deletions WHERE tenant_id = ANY($1::text[])`, [tenants]),
  ]);
  const deletedAt = new Map(deletions.rows.map((r) => [`${r.tenant_id}/${r.dataset_id}`, new Date(r.deleted_at).getTime()]));
  const since = (tenant: string, dataset: string) => Math.max(deletedAt.get(`${tenant}/`) ?? 0, deletedAt.get(`${tenant}/${dataset}`) ?? 0);
  for (const r of existing.rows) {
    out.set(`${r.tenant_id}/${DEFAULT_DATASET_ID}`, since(r.tenant_id, DEFAULT_DATASET_ID));
    if (r.id !== null) out.set(`${r.tenant_id}/${r.id}`, since(r.tenant_id, r.id));
  }
  return out;
}

/** Records that the tenant (dataset '': all of it) or one dataset of it is deleted now, inside the deleting transaction. */
export async function recordDeletion(tx: Db, tenantId: string, datasetId = ''): Promise<void> {
  await tx.query(
    `INSERT INTO deletions (tenant_id, dataset_id, deleted_at) VALUES ($1, $2, now()) ON CONFLICT (tenant_id, dataset_id) DO UPDATE SET deleted_at = now()`,
    [tenantId, datasetId],
  );
}
