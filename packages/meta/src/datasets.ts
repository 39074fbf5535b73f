// Datasets: named partitions of a tenant's data (`<tenant>.<dataset>.<table>`). Every tenant has
// exactly one default dataset, created with the tenant (id 'default'); a partial unique index keeps
// it to one.

import type { Db } from './db.ts';
import { MetaError, mapConstraintError } from './errors.ts';
import { DEFAULT_DATASET_ID, assertDatasetId, isValidDatasetId, isValidTenantId } from './ids.ts';
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
