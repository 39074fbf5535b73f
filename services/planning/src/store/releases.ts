import type { Db } from '@floe/meta';
import type { ListParams } from '../params/list-params.ts';
import { referenceNumber } from '../params/reference-numbers.ts';
import type { Actor } from './actor.ts';
import { addListFilters, findRecord, initialStatus } from './lookups.ts';
import { assignCommonFields, assignStatus, Assignments, lockCurrent, NO_STATE, type CommonFields, type CurrentState } from './record-patch.ts';
import { authorJson, commentsCount, customFieldsJson, day, descriptionJson, fullTagsJson, listPage, projectJson, releasePhasesJson, ts, userJson, Where, workflowStatusJson } from './sql.ts';

/** Releases of a product (spec 3, Resources: Release), numbered PRJ1-R-n. */
export const RELEASE_FIELDS = [
  'id', 'name', 'reference_num', 'theme', 'start_date', 'release_date', 'external_release_date', 'development_started_on', 'released_on',
  'parking_lot', 'position', 'created_at', 'updated_at', 'product_id', 'progress', 'progress_source', 'project', 'workflow_status',
  'description', 'attachments', 'owner', 'assigned_to_user', 'created_by_user', 'comments_count', 'goals', 'integration_fields',
  'workflow_status_times', 'custom_fields', 'tags', 'full_tags', 'phases', 'status_changed_on',
] as const;

export type ReleaseJson = Record<(typeof RELEASE_FIELDS)[number], unknown> & { id: string };

const SELECT = `SELECT r.id::text AS id, r.name, r.reference_num, r.theme,
  ${day('r.start_date')} AS start_date, ${day('r.release_date')} AS release_date, ${day('r.external_release_date')} AS external_release_date,
  ${day('r.development_started_on')} AS development_started_on, ${day('r.released_on')} AS released_on,
  r.parking_lot, r.position, ${ts('r.created_at')} AS created_at, ${ts('r.updated_at')} AS updated_at, r.product_id::text AS product_id,
  r.progress, r.progress_source, ${projectJson('p')} AS project, ${workflowStatusJson('ws')} AS workflow_status,
  ${descriptionJson('r')} AS description, '[]'::jsonb AS attachments,
  ${userJson('r.assigned_to_user_id')} AS owner, ${userJson('r.assigned_to_user_id')} AS assigned_to_user,
  ${authorJson('r.created_by_user_id', 'r.created_by_key_id')} AS created_by_user,
  ${commentsCount('release', 'r')} AS comments_count, '[]'::jsonb AS goals, '[]'::jsonb AS integration_fields,
  r.workflow_status_times, ${customFieldsJson('r')} AS custom_fields, r.tags, ${fullTagsJson('r')} AS full_tags, ${releasePhasesJson('r')} AS phases,
  ${day('r.status_changed_on')} AS status_changed_on
FROM planning_releases r
JOIN planning_products p ON p.id = r.product_id
LEFT JOIN planning_workflow_statuses ws ON ws.id = r.workflow_status_id`;

export interface ReleaseBody extends CommonFields {
  theme?: string;
  start_date?: string | null;
  release_date?: string | null;
  external_release_date?: string | null;
  development_started_on?: string | null;
  released_on?: string | null;
  parking_lot?: boolean;
  owner?: string | null;
}

export async function getRelease(db: Db, tenantId: string, value: string): Promise<ReleaseJson | undefined> {
  const found = await findRecord(db, 'planning_releases', tenantId, value);
  return found && selectOne(db, tenantId, found.id);
}

async function selectOne(db: Db, tenantId: string, id: string): Promise<ReleaseJson | undefined> {
  const { rows } = await db.query<ReleaseJson>(`${SELECT} WHERE r.tenant_id = $1 AND r.id = $2`, [tenantId, id]);
  return rows[0];
}

export async function listReleases(db: Db, tenantId: string, scope: { productId?: string }, p: ListParams): Promise<{ records: ReleaseJson[]; total: number }> {
  const where = addListFilters(new Where('r', tenantId), 'r', p);
  if (scope.productId !== undefined) where.and(`r.product_id = ${where.param(scope.productId)}`);
  if (p.status !== undefined) where.and(`lower(ws.name) = lower(${where.param(p.status)})`);
  if (p.parkingLot !== undefined) where.and(`r.parking_lot = ${where.param(p.parkingLot)}`);
  // The status filter reads the release's workflow status, joined for the count as SELECT joins it.
  const from = 'planning_releases r LEFT JOIN planning_workflow_statuses ws ON ws.id = r.workflow_status_id';
  return listPage<ReleaseJson>(db, { select: SELECT, from, where, orderBy: 'r.position, r.id' }, p);
}

export async function createRelease(db: Db, actor: Actor, productId: string, body: ReleaseBody): Promise<ReleaseJson> {
  return db.withTransaction(async (tx) => {
    const now = new Date().toISOString();
    const counter = await tx.query<{ n: number; prefix: string }>(
      `UPDATE planning_products SET next_release_num = next_release_num + 1 WHERE tenant_id = $1 AND id = $2 RETURNING next_release_num - 1 AS n, reference_prefix AS prefix`,
      [actor.tenantId, productId],
    );
    const { n, prefix } = counter.rows[0]!;
    const inserted = await tx.query<{ id: string }>(
      `INSERT INTO planning_releases (tenant_id, product_id, reference_num, name, position, created_by_user_id, created_by_key_id, created_at, updated_at, description_created_at, description_updated_at)
       VALUES ($1, $2, $3, $4, (SELECT COALESCE(max(position), 0) + 1 FROM planning_releases WHERE tenant_id = $1 AND product_id = $2), $5, $6, $7, $7, $7, $7)
       RETURNING id::text AS id`,
      [actor.tenantId, productId, referenceNumber('release', prefix, n), body.name ?? '', actor.userId, actor.keyId, now],
    );
    const id = inserted.rows[0]!.id;
    await applyPatch(tx, actor, { id, productId, current: NO_STATE, now, creating: true }, body);
    return (await selectOne(tx, actor.tenantId, id))!;
  });
}

export async function updateRelease(db: Db, actor: Actor, id: string, body: ReleaseBody): Promise<ReleaseJson> {
  return db.withTransaction(async (tx) => {
    const current = await lockCurrent(tx, 'planning_releases', actor.tenantId, id);
    await applyPatch(tx, actor, { id, productId: current.productId, current, now: new Date().toISOString(), creating: false }, body);
    return (await selectOne(tx, actor.tenantId, id))!;
  });
}

async function applyPatch(tx: Db, actor: Actor, t: { id: string; productId: string; current: CurrentState; now: string; creating: boolean }, body: ReleaseBody): Promise<void> {
  const set = new Assignments([actor.tenantId, t.id]);
  const patch: ReleaseBody = body.owner !== undefined && body.assigned_to_user === undefined ? { ...body, assigned_to_user: body.owner } : body;
  await assignCommonFields(tx, actor, { productId: t.productId, kind: 'release', current: t.current, now: t.now }, patch, set);
  if (t.creating && body.workflow_status === undefined) {
    const first = await initialStatus(tx, actor.tenantId, t.productId, 'release');
    if (first) assignStatus(set, t.current, first, t.now);
  }
  if (body.theme !== undefined) set.set('theme', body.theme);
  for (const col of ['start_date', 'release_date', 'external_release_date', 'development_started_on', 'released_on'] as const) {
    if (body[col] !== undefined) set.setDate(col, body[col]);
  }
  if (body.parking_lot !== undefined) set.set('parking_lot', body.parking_lot);
  set.set('updated_at', t.now, '::timestamptz');
  await tx.query(`UPDATE planning_releases SET ${set} WHERE tenant_id = $1 AND id = $2`, set.params);
}
