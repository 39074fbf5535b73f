import { notFound } from '@floe/errors';
import type { Db } from '@floe/meta';
import { requirementReference } from '../params/reference-numbers.ts';
import { nonBlank } from '../params/values.ts';
import type { Actor } from './actor.ts';
import { findRecord, initialStatus, resolveStatus, type StatusChoice } from './lookups.ts';
import { authorJson, commentsCount, descriptionJson, ts, workflowStatusJson } from './sql.ts';

/**
 * Requirements: the parts of a feature, numbered after it (PRJ1-12-1) and moving through the
 * product's feature workflow. Spec 3 shows only "Get requirement"; POST
 * /features/{id}/requirements exists so there is something to get.
 */
export type RequirementJson = Record<string, unknown> & { id: string };

const SELECT = `SELECT q.id::text AS id, q.name, q.reference_num, q.position, ${ts('q.created_at')} AS created_at, ${ts('q.updated_at')} AS updated_at,
  f.release_id::text AS release_id, ${authorJson('q.created_by_user_id', 'q.created_by_key_id')} AS created_by_user,
  ${workflowStatusJson('ws')} AS workflow_status, ${descriptionJson('q')} AS description, '[]'::jsonb AS attachments,
  jsonb_build_object('id', f.id::text, 'reference_num', f.reference_num, 'name', f.name, 'created_at', ${ts('f.created_at')}) AS feature,
  ${commentsCount('requirement', 'q')} AS comments_count
FROM planning_requirements q
JOIN planning_features f ON f.id = q.feature_id
LEFT JOIN planning_workflow_statuses ws ON ws.id = q.workflow_status_id`;

export interface RequirementBody {
  name: string;
  description?: string;
  workflow_status?: StatusChoice | string;
}

export async function getRequirement(db: Db, tenantId: string, value: string): Promise<RequirementJson | undefined> {
  const found = await findRecord(db, 'planning_requirements', tenantId, value);
  if (!found) return undefined;
  const { rows } = await db.query<RequirementJson>(`${SELECT} WHERE q.tenant_id = $1 AND q.id = $2`, [tenantId, found.id]);
  return rows[0];
}

export async function createRequirement(db: Db, actor: Actor, feature: { id: string; productId: string }, body: RequirementBody): Promise<RequirementJson> {
  return db.withTransaction(async (tx) => {
    const now = new Date().toISOString();
    const counter = await tx.query<{ n: number; ref: string }>(
      `UPDATE planning_features SET next_requirement_num = next_requirement_num + 1 WHERE tenant_id = $1 AND id = $2
       RETURNING next_requirement_num - 1 AS n, reference_num AS ref`,
      [actor.tenantId, feature.id],
    );
    // The feature was deleted since the route found it (a concurrent DELETE): not found.
    if (!counter.rows[0]) throw notFound(`feature ${feature.id} not found`);
    const { n, ref } = counter.rows[0];
    const choice = typeof body.workflow_status === 'string' ? { name: body.workflow_status } : body.workflow_status;
    const status = choice ? await resolveStatus(tx, actor.tenantId, feature.productId, 'feature', choice) : await initialStatus(tx, actor.tenantId, feature.productId, 'feature');
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO planning_requirements (tenant_id, feature_id, reference_num, name, position, workflow_status_id, description, created_by_user_id, created_by_key_id,
         created_at, updated_at, description_created_at, description_updated_at)
       VALUES ($1, $2, $3, $4, $5, $6::bigint, $7, $8, $9, $10, $10, $10, $10) RETURNING id::text AS id`,
      [actor.tenantId, feature.id, requirementReference(ref, n), nonBlank('name', body.name), n, status?.id ?? null, body.description ?? '', actor.userId, actor.keyId, now],
    );
    const out = await tx.query<RequirementJson>(`${SELECT} WHERE q.tenant_id = $1 AND q.id = $2`, [actor.tenantId, rows[0]!.id]);
    return out.rows[0]!;
  });
}
