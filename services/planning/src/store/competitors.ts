import type { Db } from '@floe/meta';
import { parseRecordRef } from '../params/reference-numbers.ts';
import { nonBlank } from '../params/values.ts';
import type { Actor } from './actor.ts';
import { listPage, ts, Where, type PageOf } from './sql.ts';

/** Competitors of a product (spec 3, Resources: Competitor): id, name, description, strengths, weaknesses. */
export interface CompetitorJson {
  id: string;
  name: string;
  description: string;
  strengths: string;
  weaknesses: string;
  product_id: string;
  created_at: string;
  updated_at: string;
}

export interface CompetitorBody {
  name?: string;
  description?: string;
  strengths?: string;
  weaknesses?: string;
}

const SELECT = `SELECT c.id::text AS id, c.name, c.description, c.strengths, c.weaknesses, c.product_id::text AS product_id,
  ${ts('c.created_at')} AS created_at, ${ts('c.updated_at')} AS updated_at
FROM planning_competitors c`;

export async function listCompetitors(db: Db, tenantId: string, productId: string, page: PageOf): Promise<{ records: CompetitorJson[]; total: number }> {
  const where = new Where('c', tenantId);
  where.and(`c.product_id = ${where.param(productId)}`);
  return listPage<CompetitorJson>(db, { select: SELECT, from: 'planning_competitors c', where, orderBy: 'c.id' }, page);
}

export async function getCompetitor(db: Db, tenantId: string, value: string): Promise<CompetitorJson | undefined> {
  const ref = parseRecordRef(value);
  if (ref?.by !== 'id') return undefined;
  const { rows } = await db.query<CompetitorJson>(`${SELECT} WHERE c.tenant_id = $1 AND c.id = $2`, [tenantId, ref.id]);
  return rows[0];
}

export async function createCompetitor(db: Db, actor: Actor, productId: string, body: CompetitorBody & { name: string }): Promise<CompetitorJson> {
  const now = new Date().toISOString();
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO planning_competitors (tenant_id, product_id, name, description, strengths, weaknesses, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id::text AS id`,
    [actor.tenantId, productId, nonBlank('name', body.name), body.description ?? '', body.strengths ?? '', body.weaknesses ?? '', now],
  );
  return (await getCompetitor(db, actor.tenantId, rows[0]!.id))!;
}

/** Updates the given fields; undefined when the competitor is not the tenant's. */
export async function updateCompetitor(db: Db, actor: Actor, id: string, body: CompetitorBody): Promise<CompetitorJson | undefined> {
  const { rowCount } = await db.query(
    `UPDATE planning_competitors SET name = COALESCE($3, name), description = COALESCE($4, description), strengths = COALESCE($5, strengths),
       weaknesses = COALESCE($6, weaknesses), updated_at = $7 WHERE tenant_id = $1 AND id = $2`,
    [actor.tenantId, id, body.name === undefined ? null : nonBlank('name', body.name), body.description ?? null, body.strengths ?? null, body.weaknesses ?? null, new Date().toISOString()],
  );
  return rowCount === 0 ? undefined : getCompetitor(db, actor.tenantId, id);
}

/** Removes a competitor; false when it is not the tenant's. */
export async function deleteCompetitor(db: Db, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM planning_competitors WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rowCount > 0;
}
