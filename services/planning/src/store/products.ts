import { conflict } from '@floe/errors';
import type { Db } from '@floe/meta';
import { DEFAULT_WORKFLOW_KINDS, DEFAULT_WORKFLOWS, type WorkflowRecordKind } from '../workflows.ts';
import type { Actor } from './actor.ts';
import { findProduct } from './lookups.ts';
import { listPage, ts, Where, type PageOf } from './sql.ts';

/**
 * Products (workspaces): the container of releases, features, epics, goals, initiatives and
 * competitors, and the owner of the workflows and the reference-number counters. Spec 3 shows no
 * operation that creates one; the service offers POST /api/v1/products for tenant admins.
 */
export interface ProductJson {
  id: string;
  reference_prefix: string;
  name: string;
  description: string;
  product_line: boolean;
  workspace_type: string;
  created_at: string;
  updated_at: string;
}

const SELECT = `SELECT p.id::text AS id, p.reference_prefix, p.name, p.description, p.product_line, p.workspace_type,
  ${ts('p.created_at')} AS created_at, ${ts('p.updated_at')} AS updated_at FROM planning_products p`;

export interface CreateProductInput {
  name: string;
  referencePrefix: string;
  description?: string;
  productLine?: boolean;
}

export async function createProduct(db: Db, actor: Actor, input: CreateProductInput): Promise<ProductJson> {
  return db.withTransaction(async (tx) => {
    const now = new Date().toISOString();
    const inserted = await tx.query<{ id: string }>(
      `INSERT INTO planning_products (tenant_id, reference_prefix, name, description, product_line, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (tenant_id, reference_prefix) DO NOTHING RETURNING id::text AS id`,
      [actor.tenantId, input.referencePrefix, input.name, input.description ?? '', input.productLine ?? false, now],
    );
    const id = inserted.rows[0]?.id;
    if (!id) throw conflict(`a product with reference_prefix ${input.referencePrefix} already exists`);
    for (const kind of Object.keys(DEFAULT_WORKFLOWS) as WorkflowRecordKind[]) {
      const statuses = DEFAULT_WORKFLOWS[kind];
      await tx.query(
        `INSERT INTO planning_workflow_statuses (tenant_id, product_id, record_kind, name, position, complete, color)
         SELECT $1, $2, $3, s.name, s.position, s.complete, s.color
         FROM unnest($4::text[], $5::int[], $6::boolean[], $7::text[]) AS s(name, position, complete, color)`,
        [actor.tenantId, id, kind, statuses.map((s) => s.name), statuses.map((_, i) => i + 1), statuses.map((s) => s.complete), statuses.map((s) => s.color)],
      );
    }
    await tx.query(
      `INSERT INTO planning_workflow_kinds (tenant_id, product_id, name, position)
       SELECT $1, $2, k.name, k.position FROM unnest($3::text[], $4::int[]) AS k(name, position)`,
      [actor.tenantId, id, DEFAULT_WORKFLOW_KINDS, DEFAULT_WORKFLOW_KINDS.map((_, i) => i + 1)],
    );
    const { rows } = await tx.query<ProductJson>(`${SELECT} WHERE p.tenant_id = $1 AND p.id = $2`, [actor.tenantId, id]);
    return rows[0]!;
  });
}

export async function getProduct(db: Db, tenantId: string, value: string): Promise<ProductJson | undefined> {
  const found = await findProduct(db, tenantId, value);
  if (!found) return undefined;
  const { rows } = await db.query<ProductJson>(`${SELECT} WHERE p.tenant_id = $1 AND p.id = $2`, [tenantId, found.id]);
  return rows[0];
}

export async function listProducts(db: Db, tenantId: string, page: PageOf): Promise<{ records: ProductJson[]; total: number }> {
  return listPage<ProductJson>(db, { select: SELECT, from: 'planning_products p', where: new Where('p', tenantId), orderBy: 'p.id' }, page);
}
