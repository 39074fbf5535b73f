// Tenants: the unit of isolation. Creating a tenant also creates its default dataset in the same
// transaction, so every tenant always has one.

import type { Db } from './db.ts';
import { MetaError, mapConstraintError } from './errors.ts';
import { DEFAULT_DATASET_ID, assertLabel, assertTenantId, isValidTenantId } from './ids.ts';
import { keysChanged } from './key-cache.ts';
import { recordDeletion } from './datasets.ts';

export type TenantSettings = Record<string, unknown>;

export interface Tenant {
  id: string;
  displayName: string;
  createdAt: Date;
  disabled: boolean;
  settings: TenantSettings;
  /** Id of the default dataset (null only if it was removed by hand). */
  defaultDatasetId: string | null;
}

type TenantRow = {
  id: string;
  display_name: string;
  created_at: Date;
  disabled: boolean;
  settings: TenantSettings;
  default_dataset_id: string | null;
};

const SELECT_TENANT = `
  SELECT t.id, t.display_name, t.created_at, t.disabled, t.settings,
         (SELECT d.id FROM datasets d WHERE d.tenant_id = t.id AND d.is_default) AS default_dataset_id
  FROM tenants t`;

function toTenant(r: TenantRow): Tenant {
  return {
    id: r.id,
    displayName: r.display_name,
    createdAt: r.created_at,
    disabled: r.disabled,
    settings: r.settings,
    defaultDatasetId: r.default_dataset_id,
  };
}

function settingsJson(settings: unknown): string {
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) {
    throw new MetaError('bad_data', 'tenant settings must be a JSON object');
  }
  return JSON.stringify(settings);
}

export interface CreateTenantInput {
  id: string;
  /** Defaults to the id. */
  displayName?: string;
  settings?: TenantSettings;
}

async function insertTenant(db: Db, input: CreateTenantInput): Promise<boolean> {
  assertTenantId(input.id);
  const displayName = input.displayName ?? input.id;
  assertLabel('display name', displayName);
  const settings = settingsJson(input.settings ?? {});
  const ins = await db
    .query(
      `INSERT INTO tenants (id, display_name, settings) VALUES ($1, $2, $3::jsonb)
       ON CONFLICT (id) DO NOTHING`,
      [input.id, displayName, settings],
    )
    .catch((err: unknown) => mapConstraintError(err, `tenant ${input.id}`));
  // ON CONFLICT DO NOTHING without a target also absorbs the one-default-per-tenant index.
  await db.query(
    `INSERT INTO datasets (tenant_id, id, is_default) VALUES ($1, $2, true) ON CONFLICT DO NOTHING`,
    [input.id, DEFAULT_DATASET_ID],
  );
  return ins.rowCount === 1;
}

/** Creates the tenant and its default dataset. Errors: bad_data (id, name, settings), conflict. */
export async function createTenant(db: Db, input: CreateTenantInput): Promise<Tenant> {
  return db.withTransaction(async (tx) => {
    if (!(await insertTenant(tx, input))) throw new MetaError('conflict', `tenant ${input.id} already exists`);
    return mustGet(tx, input.id);
  });
}

/**
 * Creates the tenant (with its default dataset) unless it exists; an existing tenant is returned
 * unchanged (and gets its default dataset back if it had lost it). For bootstrap and demo setup.
 */
export async function ensureTenant(db: Db, input: CreateTenantInput): Promise<{ tenant: Tenant; created: boolean }> {
  return db.withTransaction(async (tx) => {
    const created = await insertTenant(tx, input);
    return { tenant: await mustGet(tx, input.id), created };
  });
}

/**
 * Refuses (conflict) to make a tenant of an id whose deleted namesake left tables in the catalog
 * (a purge that failed, or a commit under way during the delete): the new tenant would read them.
 * A tenant of the id that exists owns its tables. Creation and every bootstrap (API, CLI) ask;
 * a DELETE of the id removes the tables.
 */
export async function refuseTablesLeftBehind(db: Db, tenantId: string): Promise<void> {
  if (await getTenant(db, tenantId)) return;
  const { rows } = await db.query<{ t: string }>(
    `SELECT table_namespace || '.' || table_name AS t FROM iceberg_tables
      WHERE (iceberg_type IS NULL OR iceberg_type = 'TABLE') AND (table_namespace = $1 OR left(table_namespace, length($1::text) + 1) = $1::text || '.')
      ORDER BY 1`,
    [tenantId],
  );
  if (rows.length === 0) return;
  const names = rows.slice(0, 5).map((r) => r.t).join(', ');
  throw new MetaError('conflict', `tenant id ${tenantId} still holds ${rows.length} table(s) of a deleted tenant (${names}); DELETE /api/v1/tenants/${tenantId} removes them`);
}

export async function getTenant(db: Db, id: string): Promise<Tenant | undefined> {
  if (!isValidTenantId(id)) return undefined;
  const { rows } = await db.query<TenantRow>(`${SELECT_TENANT} WHERE t.id = $1`, [id]);
  return rows[0] && toTenant(rows[0]);
}

async function mustGet(db: Db, id: string): Promise<Tenant> {
  const tenant = await getTenant(db, id);
  if (!tenant) throw new MetaError('not_found', `tenant ${id} not found`);
  return tenant;
}

/** Every tenant (disabled ones too), ordered by id: the tenant registry the writer reconciles. */
export async function listTenants(db: Db, opts: { includeDisabled?: boolean } = {}): Promise<Tenant[]> {
  const where = opts.includeDisabled === false ? ' WHERE NOT t.disabled' : '';
  const { rows } = await db.query<TenantRow>(`${SELECT_TENANT}${where} ORDER BY t.id`);
  return rows.map(toTenant);
}

export interface UpdateTenantInput {
  displayName?: string;
  /** A disabled tenant's API keys stop verifying (within the verifier TTL in other processes). */
  disabled?: boolean;
  /** Replaces the whole settings object. */
  settings?: TenantSettings;
}

/** Updates the given fields. Errors: not_found, bad_data. */
export async function updateTenant(db: Db, id: string, patch: UpdateTenantInput): Promise<Tenant> {
  if (patch.displayName !== undefined) assertLabel('display name', patch.displayName);
  if (patch.disabled !== undefined && typeof patch.disabled !== 'boolean') {
    throw new MetaError('bad_data', 'disabled must be a boolean');
  }
  const settings = patch.settings === undefined ? null : settingsJson(patch.settings);
  if (!isValidTenantId(id)) throw new MetaError('not_found', `tenant ${JSON.stringify(id)} not found`);
  const res = await db.query(
    `UPDATE tenants SET
       display_name = COALESCE($2, display_name),
       disabled = COALESCE($3, disabled),
       settings = COALESCE($4::jsonb, settings)
     WHERE id = $1`,
    [id, patch.displayName ?? null, patch.disabled ?? null, settings],
  );
  if (res.rowCount === 0) throw new MetaError('not_found', `tenant ${id} not found`);
  if (patch.disabled !== undefined) await keysChanged(db);
  return mustGet(db, id);
}

/**
 * Deletes the tenant with its datasets, keys and memberships (ON DELETE CASCADE). Its Iceberg tables
 * and files are not touched here: dropping them is the catalog's job. Errors: not_found.
 */
export async function deleteTenant(db: Db, id: string): Promise<void> {
  if (!isValidTenantId(id)) throw new MetaError('not_found', `tenant ${JSON.stringify(id)} not found`);
  await db.withTransaction(async (tx) => {
    const res = await tx.query('DELETE FROM tenants WHERE id = $1', [id]);
    if (res.rowCount === 0) throw new MetaError('not_found', `tenant ${id} not found`);
    await recordDeletion(tx, id);
  });
  await keysChanged(db);
}
