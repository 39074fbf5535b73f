import type { Db } from '@floe/meta';
import { referenceNumber } from '../params/reference-numbers.ts';
import { nonBlank } from '../params/values.ts';
import type { Actor } from './actor.ts';
import { findRecord } from './lookups.ts';
import { commentsCount, ts } from './sql.ts';

/**
 * Goals, initiatives and ideas: the records a product holds with nothing but a name, a
 * description and a reference number (PRJ1-G-n, PRJ1-I-n, PRJ1-IDEA-n). Goals and initiatives are
 * what features and epics are listed by; ideas carry comments. Spec 3 shows none of their fields
 * ("not shown beyond the identifiers used as parameters"), so they hold what that needs.
 */
export type ProductRecordKind = 'goal' | 'initiative' | 'idea';

export type ProductRecordJson = Record<string, unknown> & { id: string };

const TABLE = { goal: 'planning_goals', initiative: 'planning_initiatives', idea: 'planning_ideas' } as const satisfies Record<ProductRecordKind, string>;
const COUNTER: Record<ProductRecordKind, string> = { goal: 'next_goal_num', initiative: 'next_initiative_num', idea: 'next_idea_num' };

const select = (kind: ProductRecordKind) => `SELECT s.id::text AS id, s.name, s.reference_num, s.product_id::text AS product_id,
  jsonb_build_object('id', s.id::text, 'body', s.description) AS description,
  ${ts('s.created_at')} AS created_at, ${ts('s.updated_at')} AS updated_at, ${commentsCount(kind, 's')} AS comments_count
FROM ${TABLE[kind]} s`;

export async function getProductRecord(db: Db, kind: ProductRecordKind, tenantId: string, value: string): Promise<ProductRecordJson | undefined> {
  const found = await findRecord(db, TABLE[kind], tenantId, value);
  if (!found) return undefined;
  const { rows } = await db.query<ProductRecordJson>(`${select(kind)} WHERE s.tenant_id = $1 AND s.id = $2`, [tenantId, found.id]);
  return rows[0];
}

export async function createProductRecord(db: Db, kind: ProductRecordKind, actor: Actor, productId: string, body: { name: string; description?: string }): Promise<ProductRecordJson> {
  return db.withTransaction(async (tx) => {
    const now = new Date().toISOString();
    const counter = await tx.query<{ n: number; prefix: string }>(
      `UPDATE planning_products SET ${COUNTER[kind]} = ${COUNTER[kind]} + 1 WHERE tenant_id = $1 AND id = $2 RETURNING ${COUNTER[kind]} - 1 AS n, reference_prefix AS prefix`,
      [actor.tenantId, productId],
    );
    const { n, prefix } = counter.rows[0]!;
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO ${TABLE[kind]} (tenant_id, product_id, reference_num, name, description, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id::text AS id`,
      [actor.tenantId, productId, referenceNumber(kind, prefix, n), nonBlank('name', body.name), body.description ?? '', now],
    );
    const out = await tx.query<ProductRecordJson>(`${select(kind)} WHERE s.tenant_id = $1 AND s.id = $2`, [actor.tenantId, rows[0]!.id]);
    return out.rows[0]!;
  });
}
