import type { Db } from '@floe/meta';
import type { ListParams } from '../params/list-params.ts';
import { referenceNumber } from '../params/reference-numbers.ts';
import type { Actor } from './actor.ts';
import { addListFilters, findRecord, initialStatus, resolveInProduct } from './lookups.ts';
import { assignCommonFields, assignStatus, Assignments, linkGoals, lockCurrent, NO_STATE, type CommonFields, type CurrentState } from './record-patch.ts';
import {
  authorJson,
  commentsCount,
  customFieldsJson,
  day,
  descriptionJson,
  fullTagsJson,
  goalsJson,
  listPage,
  projectJson,
  releaseSummaryJson,
  ts,
  userJson,
  Where,
  workflowStatusJson,
} from './sql.ts';

/**
 * Epics (spec 3, Resources: Epic): created in a product or a release, numbered PRJ1-E-n; they
 * group features (a feature's `epic`). Beyond the spec's fields they carry tags, custom fields,
 * status history and a comment count, since the list filters (tag) and comments reach them too.
 */
export const EPIC_FIELDS = [
  'id', 'name', 'reference_num', 'initiative_reference_num', 'position', 'score', 'created_at', 'updated_at', 'start_date', 'due_date',
  'product_id', 'progress', 'progress_source', 'duration_source', 'workflow_status', 'project', 'description', 'release',
  'assigned_to_user', 'created_by', 'features', 'goals', 'key_results',
  'tags', 'full_tags', 'custom_fields', 'comments_count', 'status_changed_on', 'workflow_status_times',
] as const;

export type EpicJson = Record<(typeof EPIC_FIELDS)[number], unknown> & { id: string };

const SELECT = `SELECT e.id::text AS id, e.name, e.reference_num, i.reference_num AS initiative_reference_num, e.position, e.score,
  ${ts('e.created_at')} AS created_at, ${ts('e.updated_at')} AS updated_at, ${day('e.start_date')} AS start_date, ${day('e.due_date')} AS due_date,
  e.product_id::text AS product_id, e.progress, e.progress_source, e.duration_source, ${workflowStatusJson('ws')} AS workflow_status,
  ${projectJson('p')} AS project, ${descriptionJson('e')} AS description, ${releaseSummaryJson('r')} AS release,
  ${userJson('e.assigned_to_user_id')} AS assigned_to_user, ${authorJson('e.created_by_user_id', 'e.created_by_key_id')} AS created_by,
  (SELECT COALESCE(jsonb_agg(jsonb_build_object('id', f.id::text, 'reference_num', f.reference_num, 'name', f.name, 'created_at', ${ts('f.created_at')}) ORDER BY f.id), '[]'::jsonb)
    FROM planning_features f WHERE f.epic_id = e.id) AS features,
  ${goalsJson('planning_epic_goals', 'epic_id', 'e')} AS goals, '[]'::jsonb AS key_results,
  e.tags, ${fullTagsJson('e')} AS full_tags, ${customFieldsJson('e')} AS custom_fields, ${commentsCount('epic', 'e')} AS comments_count,
  ${day('e.status_changed_on')} AS status_changed_on, e.workflow_status_times
FROM planning_epics e
JOIN planning_products p ON p.id = e.product_id
LEFT JOIN planning_releases r ON r.id = e.release_id
LEFT JOIN planning_initiatives i ON i.id = e.initiative_id
LEFT JOIN planning_workflow_statuses ws ON ws.id = e.workflow_status_id`;

type Ref = string | number;

export interface EpicBody extends CommonFields {
  release?: Ref | null;
  initiative?: Ref | null;
  goals?: Ref[];
  start_date?: string | null;
  due_date?: string | null;
  score?: number;
  duration_source?: string;
}

export type EpicScope = { all: true } | { productId: string } | { releaseId: string } | { goalId: string } | { initiativeId: string };

export async function getEpic(db: Db, tenantId: string, value: string): Promise<EpicJson | undefined> {
  const found = await findRecord(db, 'planning_epics', tenantId, value);
  return found && selectOne(db, tenantId, found.id);
}

async function selectOne(db: Db, tenantId: string, id: string): Promise<EpicJson | undefined> {
  const { rows } = await db.query<EpicJson>(`${SELECT} WHERE e.tenant_id = $1 AND e.id = $2`, [tenantId, id]);
  return rows[0];
}

export async function listEpics(db: Db, tenantId: string, scope: EpicScope, p: ListParams): Promise<{ records: EpicJson[]; total: number }> {
  const where = addListFilters(new Where('e', tenantId), 'e', p);
  if ('productId' in scope) where.and(`e.product_id = ${where.param(scope.productId)}`);
  if ('releaseId' in scope) where.and(`e.release_id = ${where.param(scope.releaseId)}`);
  if ('initiativeId' in scope) where.and(`e.initiative_id = ${where.param(scope.initiativeId)}`);
  if ('goalId' in scope) where.and(`EXISTS (SELECT 1 FROM planning_epic_goals l WHERE l.epic_id = e.id AND l.goal_id = ${where.param(scope.goalId)})`);
  return listPage<EpicJson>(db, { select: SELECT, from: 'planning_epics e', where, orderBy: 'e.id' }, p);
}

/** Creates an epic in a product, or in a release (then in the release's product). */
export async function createEpic(db: Db, actor: Actor, parent: { productId: string; releaseId?: string }, body: EpicBody): Promise<EpicJson> {
  return db.withTransaction(async (tx) => {
    const now = new Date().toISOString();
    const counter = await tx.query<{ n: number; prefix: string }>(
      `UPDATE planning_products SET next_epic_num = next_epic_num + 1 WHERE tenant_id = $1 AND id = $2 RETURNING next_epic_num - 1 AS n, reference_prefix AS prefix`,
      [actor.tenantId, parent.productId],
    );
    const { n, prefix } = counter.rows[0]!;
    const inserted = await tx.query<{ id: string }>(
      `INSERT INTO planning_epics (tenant_id, product_id, release_id, reference_num, name, position, created_by_user_id, created_by_key_id, created_at, updated_at, description_created_at, description_updated_at)
       VALUES ($1, $2, $3, $4, $5, (SELECT COALESCE(max(position), 0) + 1 FROM planning_epics WHERE tenant_id = $1 AND product_id = $2), $6, $7, $8, $8, $8, $8)
       RETURNING id::text AS id`,
      [actor.tenantId, parent.productId, parent.releaseId ?? null, referenceNumber('epic', prefix, n), body.name ?? '', actor.userId, actor.keyId, now],
    );
    const id = inserted.rows[0]!.id;
    await applyPatch(tx, actor, { id, productId: parent.productId, current: NO_STATE, now, creating: true }, body);
    return (await selectOne(tx, actor.tenantId, id))!;
  });
}

export async function updateEpic(db: Db, actor: Actor, id: string, body: EpicBody): Promise<EpicJson> {
  return db.withTransaction(async (tx) => {
    const current = await lockCurrent(tx, 'planning_epics', actor.tenantId, id);
    await applyPatch(tx, actor, { id, productId: current.productId, current, now: new Date().toISOString(), creating: false }, body);
    return (await selectOne(tx, actor.tenantId, id))!;
  });
}

async function applyPatch(tx: Db, actor: Actor, t: { id: string; productId: string; current: CurrentState; now: string; creating: boolean }, body: EpicBody): Promise<void> {
  const set = new Assignments([actor.tenantId, t.id]);
  await assignCommonFields(tx, actor, { productId: t.productId, kind: 'epic', current: t.current, now: t.now }, body, set);
  if (t.creating && body.workflow_status === undefined) {
    const first = await initialStatus(tx, actor.tenantId, t.productId, 'epic');
    if (first) assignStatus(set, t.current, first, t.now);
  }
  if (body.release !== undefined) set.set('release_id', body.release === null ? null : await resolveInProduct(tx, 'planning_releases', actor.tenantId, t.productId, 'release', body.release), '::bigint');
  if (body.initiative !== undefined) {
    set.set('initiative_id', body.initiative === null ? null : await resolveInProduct(tx, 'planning_initiatives', actor.tenantId, t.productId, 'initiative', body.initiative), '::bigint');
  }
  if (body.start_date !== undefined) set.setDate('start_date', body.start_date);
  if (body.due_date !== undefined) set.setDate('due_date', body.due_date);
  if (body.score !== undefined) set.set('score', Math.round(body.score));
  if (body.duration_source !== undefined) set.set('duration_source', body.duration_source);
  set.set('updated_at', t.now, '::timestamptz');
  await tx.query(`UPDATE planning_epics SET ${set} WHERE tenant_id = $1 AND id = $2`, set.params);
  if (body.goals !== undefined) await linkGoals(tx, actor.tenantId, t.productId, t.id, body.goals, 'planning_epic_goals', 'epic_id');
}
