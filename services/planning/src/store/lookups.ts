import { badData } from '@floe/errors';
import type { Db } from '@floe/meta';
import type { ListParams } from '../params/list-params.ts';
import { parseProductRef, parseRecordRef } from '../params/reference-numbers.ts';
import type { WorkflowRecordKind } from '../workflows.ts';
import { containsPattern, type Where } from './sql.ts';

/**
 * Resolving what a request names (a record by id or reference number, a member by id or email, a
 * workflow status by name) inside the caller's tenant, and the list filters every list shares.
 * Anything of another tenant is simply not found.
 */

/** Tables whose records a path or body may name by id or reference number. */
export type NumberedTable = 'planning_releases' | 'planning_features' | 'planning_epics' | 'planning_requirements' | 'planning_initiatives' | 'planning_goals' | 'planning_ideas';

export interface FoundRecord {
  id: string;
  productId: string;
}

// Requirements reach their product through their feature.
const PRODUCT_OF: Record<NumberedTable, { from: string; product: string }> = {
  planning_releases: { from: 'planning_releases x', product: 'x.product_id' },
  planning_features: { from: 'planning_features x', product: 'x.product_id' },
  planning_epics: { from: 'planning_epics x', product: 'x.product_id' },
  planning_initiatives: { from: 'planning_initiatives x', product: 'x.product_id' },
  planning_goals: { from: 'planning_goals x', product: 'x.product_id' },
  planning_ideas: { from: 'planning_ideas x', product: 'x.product_id' },
  planning_requirements: { from: 'planning_requirements x JOIN planning_features pf ON pf.id = x.feature_id', product: 'pf.product_id' },
};

export async function findRecord(db: Db, table: NumberedTable, tenantId: string, value: string): Promise<FoundRecord | undefined> {
  const ref = parseRecordRef(value);
  if (!ref) return undefined;
  const { from, product } = PRODUCT_OF[table];
  const column = ref.by === 'id' ? 'x.id' : 'x.reference_num';
  const { rows } = await db.query<{ id: string; product_id: string }>(
    `SELECT x.id::text AS id, ${product}::text AS product_id FROM ${from} WHERE x.tenant_id = $1 AND ${column} = $2`,
    [tenantId, ref.by === 'id' ? ref.id : ref.reference],
  );
  const row = rows[0];
  return row && { id: row.id, productId: row.product_id };
}

export interface FoundProduct {
  id: string;
  referencePrefix: string;
}

export async function findProduct(db: Db, tenantId: string, value: string): Promise<FoundProduct | undefined> {
  const ref = parseProductRef(value);
  if (!ref) return undefined;
  const { rows } = await db.query<{ id: string; reference_prefix: string }>(
    `SELECT id::text AS id, reference_prefix FROM planning_products WHERE tenant_id = $1 AND ${ref.by === 'id' ? 'id' : 'reference_prefix'} = $2`,
    [tenantId, ref.by === 'id' ? ref.id : ref.prefix],
  );
  const row = rows[0];
  return row && { id: row.id, referencePrefix: row.reference_prefix };
}

/** A body field naming a record (id or reference number) that must exist in the product. */
export async function resolveInProduct(db: Db, table: NumberedTable, tenantId: string, productId: string, field: string, value: string | number): Promise<string> {
  const found = await findRecord(db, table, tenantId, String(value));
  if (!found) throw badData(`${field}: no record ${JSON.stringify(String(value))}`);
  if (found.productId !== productId) throw badData(`${field}: ${JSON.stringify(String(value))} belongs to another product`);
  return found.id;
}

/** A user named in a body (id or email) who is a member of the tenant. */
export async function resolveMember(db: Db, tenantId: string, field: string, value: string): Promise<string> {
  const v = value.trim();
  const { rows } = await db.query<{ id: string }>(
    `SELECT DISTINCT u.id FROM users u JOIN memberships m ON m.user_id = u.id
     WHERE m.tenant_id = $1 AND (u.id = $2 OR u.email = lower($2))`,
    [tenantId, v],
  );
  if (!rows[0]) throw badData(`${field}: no member of this tenant with id or email ${JSON.stringify(v)}`);
  return rows[0].id;
}

export interface StatusChoice {
  name?: string;
  id?: string | number;
}

/** A status of the product's workflow for the record kind, by name (case-insensitive) or id. */
export async function resolveStatus(db: Db, tenantId: string, productId: string, kind: WorkflowRecordKind, choice: StatusChoice): Promise<{ id: string; name: string }> {
  const { rows } = await db.query<{ id: string; name: string }>(
    `SELECT id::text AS id, name FROM planning_workflow_statuses WHERE tenant_id = $1 AND product_id = $2 AND record_kind = $3 ORDER BY position`,
    [tenantId, productId, kind],
  );
  const hit = rows.find((r) => (choice.id !== undefined ? r.id === String(choice.id) : r.name.toLowerCase() === choice.name?.trim().toLowerCase()));
  if (!hit) throw badData(`workflow_status: no status ${JSON.stringify(choice.name ?? String(choice.id))} in this ${kind} workflow; statuses: ${rows.map((r) => r.name).join(', ')}`);
  return hit;
}

/** The first status of the product's workflow for the record kind (where new records start). */
export async function initialStatus(db: Db, tenantId: string, productId: string, kind: WorkflowRecordKind): Promise<{ id: string; name: string } | undefined> {
  const { rows } = await db.query<{ id: string; name: string }>(
    `SELECT id::text AS id, name FROM planning_workflow_statuses WHERE tenant_id = $1 AND product_id = $2 AND record_kind = $3 ORDER BY position LIMIT 1`,
    [tenantId, productId, kind],
  );
  return rows[0];
}

export async function resolveWorkflowKind(db: Db, tenantId: string, productId: string, choice: string | StatusChoice): Promise<string> {
  const c: StatusChoice = typeof choice === 'string' ? { name: choice } : choice;
  const { rows } = await db.query<{ id: string; name: string }>(
    `SELECT id::text AS id, name FROM planning_workflow_kinds WHERE tenant_id = $1 AND product_id = $2 ORDER BY position`,
    [tenantId, productId],
  );
  const hit = rows.find((r) => (c.id !== undefined ? r.id === String(c.id) : r.name.toLowerCase() === c.name?.trim().toLowerCase()));
  if (!hit) throw badData(`workflow_kind: no kind ${JSON.stringify(c.name ?? String(c.id))}; kinds: ${rows.map((r) => r.name).join(', ')}`);
  return hit.id;
}

/** Makes sure every tag has its planning_tags row (for full_tags ids and colours). */
export async function ensureTags(db: Db, tenantId: string, tags: readonly string[]): Promise<void> {
  if (tags.length === 0) return;
  await db.query(`INSERT INTO planning_tags (tenant_id, name) SELECT $1, t FROM unnest($2::text[]) AS t ON CONFLICT (tenant_id, name) DO NOTHING`, [tenantId, tags]);
}

/** The filters of spec 3 that every list shares (q, updated_since, tag, assigned_to_user). */
export function addListFilters(where: Where, alias: string, p: ListParams): Where {
  if (p.q !== undefined) where.and(`${alias}.name ILIKE ${where.param(containsPattern(p.q))}`);
  if (p.updatedSince !== undefined) where.and(`${alias}.updated_at > ${where.param(p.updatedSince.toISOString())}::timestamptz`);
  if (p.tag !== undefined) where.and(`${where.param(p.tag)} = ANY(${alias}.tags)`);
  if (p.assignedToUser?.by === 'id') where.and(`${alias}.assigned_to_user_id = ${where.param(p.assignedToUser.id)}`);
  if (p.assignedToUser?.by === 'email') where.and(`${alias}.assigned_to_user_id = (SELECT u.id FROM users u WHERE u.email = ${where.param(p.assignedToUser.email)})`);
  return where;
}
