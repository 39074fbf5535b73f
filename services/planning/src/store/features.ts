import { badData } from '@floe/errors';
import type { Db } from '@floe/meta';
import type { ListParams } from '../params/list-params.ts';
import { referenceNumber } from '../params/reference-numbers.ts';
import { parseEstimateText, parseCustomFields, mergeCustomFields } from '../params/values.ts';
import type { Actor } from './actor.ts';
import { resolvePhaseOfRelease } from './release-phases.ts';
import { addListFilters, findRecord, initialStatus, resolveInProduct, resolveMember, resolveWorkflowKind, type StatusChoice } from './lookups.ts';
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
  releasePhaseJson,
  releaseSummaryJson,
  ts,
  userJson,
  Where,
  workflowStatusJson,
} from './sql.ts';

/** Features (spec 3, Resources: Feature): created in a release, numbered PRJ1-n. */
export const FEATURE_FIELDS = [
  'id', 'name', 'reference_num', 'initiative_reference_num', 'release_reference_num', 'epic_reference_num', 'product_id', 'progress_source',
  'position', 'score', 'progress', 'comments_count', 'created_at', 'updated_at', 'start_date', 'due_date', 'status_changed_on',
  'created_by_user', 'assigned_to_user', 'workflow_kind', 'workflow_status', 'project', 'description', 'attachments', 'requirements',
  'goals', 'key_results', 'score_facts', 'full_tags', 'custom_fields', 'feature_links', 'integration_fields', 'release', 'tags',
  'workflow_status_times', 'feature_only_original_estimate', 'feature_only_remaining_estimate', 'feature_only_work_done',
  'release_phase',
] as const;

export type FeatureJson = Record<(typeof FEATURE_FIELDS)[number], unknown> & { id: string };

// The original estimate is the detailed one once given, else the initial one.
const ORIGINAL = 'COALESCE(f.detailed_estimate, f.initial_estimate)';

const SELECT = `SELECT f.id::text AS id, f.name, f.reference_num, i.reference_num AS initiative_reference_num,
  r.reference_num AS release_reference_num, e.reference_num AS epic_reference_num, f.product_id::text AS product_id, f.progress_source,
  f.position, f.score, f.progress, ${commentsCount('feature', 'f')} AS comments_count,
  ${ts('f.created_at')} AS created_at, ${ts('f.updated_at')} AS updated_at,
  ${day('f.start_date')} AS start_date, ${day('f.due_date')} AS due_date, ${day('f.status_changed_on')} AS status_changed_on,
  ${authorJson('f.created_by_user_id', 'f.created_by_key_id')} AS created_by_user, ${userJson('f.assigned_to_user_id')} AS assigned_to_user,
  CASE WHEN wk.id IS NULL THEN NULL ELSE jsonb_build_object('id', wk.id::text, 'name', wk.name) END AS workflow_kind,
  ${workflowStatusJson('ws')} AS workflow_status, ${projectJson('p')} AS project, ${descriptionJson('f')} AS description,
  '[]'::jsonb AS attachments,
  (SELECT COALESCE(jsonb_agg(jsonb_build_object('id', q.id::text, 'name', q.name, 'reference_num', q.reference_num, 'position', q.position,
      'created_at', ${ts('q.created_at')}, 'updated_at', ${ts('q.updated_at')}) ORDER BY q.position, q.id), '[]'::jsonb)
    FROM planning_requirements q WHERE q.feature_id = f.id) AS requirements,
  ${goalsJson('planning_feature_goals', 'feature_id', 'f')} AS goals, '[]'::jsonb AS key_results, '[]'::jsonb AS score_facts,
  ${fullTagsJson('f')} AS full_tags, ${customFieldsJson('f')} AS custom_fields, '[]'::jsonb AS feature_links, '[]'::jsonb AS integration_fields,
  ${releaseSummaryJson('r')} AS release, f.tags, f.workflow_status_times,
  ${ORIGINAL} AS feature_only_original_estimate, f.remaining_estimate AS feature_only_remaining_estimate,
  CASE WHEN ${ORIGINAL} IS NOT NULL AND f.remaining_estimate IS NOT NULL THEN GREATEST(${ORIGINAL} - f.remaining_estimate, 0) END AS feature_only_work_done,
  ${releasePhaseJson('f.release_phase_id')} AS release_phase
FROM planning_features f
JOIN planning_products p ON p.id = f.product_id
JOIN planning_releases r ON r.id = f.release_id
LEFT JOIN planning_epics e ON e.id = f.epic_id
LEFT JOIN planning_initiatives i ON i.id = f.initiative_id
LEFT JOIN planning_workflow_statuses ws ON ws.id = f.workflow_status_id
LEFT JOIN planning_workflow_kinds wk ON wk.id = f.workflow_kind_id`;

type Ref = string | number;

export interface FeatureBody extends CommonFields {
  workflow_kind?: string | StatusChoice;
  release?: Ref;
  created_by?: string;
  initial_estimate_text?: string;
  detailed_estimate_text?: string;
  remaining_estimate_text?: string;
  initial_estimate?: number | null;
  detailed_estimate?: number | null;
  remaining_estimate?: number | null;
  start_date?: string | null;
  due_date?: string | null;
  initiative?: Ref | null;
  epic?: Ref | null;
  goals?: Ref[];
  score?: number;
  /** A phase of the feature's release (after any move in the same body), by id or name; null clears it. */
  release_phase?: Ref | null;
  // Accepted by spec 3 but naming records this service does not have: only null passes.
  team?: unknown;
  team_workflow_status?: unknown;
  iteration?: unknown;
  program_increment?: unknown;
}

/** Which features a list covers. */
export type FeatureScope = { all: true } | { productId: string } | { releaseId: string } | { goalId: string } | { initiativeId: string } | { epicId: string };

export async function getFeature(db: Db, tenantId: string, value: string): Promise<FeatureJson | undefined> {
  const found = await findRecord(db, 'planning_features', tenantId, value);
  return found && selectOne(db, tenantId, found.id);
}

async function selectOne(db: Db, tenantId: string, id: string): Promise<FeatureJson | undefined> {
  const { rows } = await db.query<FeatureJson>(`${SELECT} WHERE f.tenant_id = $1 AND f.id = $2`, [tenantId, id]);
  return rows[0];
}

export async function listFeatures(db: Db, tenantId: string, scope: FeatureScope, p: ListParams): Promise<{ records: FeatureJson[]; total: number }> {
  const where = addListFilters(new Where('f', tenantId), 'f', p);
  if ('productId' in scope) where.and(`f.product_id = ${where.param(scope.productId)}`);
  if ('releaseId' in scope) where.and(`f.release_id = ${where.param(scope.releaseId)}`);
  if ('initiativeId' in scope) where.and(`f.initiative_id = ${where.param(scope.initiativeId)}`);
  if ('epicId' in scope) where.and(`f.epic_id = ${where.param(scope.epicId)}`);
  if ('goalId' in scope) where.and(`EXISTS (SELECT 1 FROM planning_feature_goals l WHERE l.feature_id = f.id AND l.goal_id = ${where.param(scope.goalId)})`);
  return listPage<FeatureJson>(db, { select: SELECT, from: 'planning_features f', where, orderBy: 'f.id' }, p);
}

export async function createFeature(db: Db, actor: Actor, release: { id: string; productId: string }, body: FeatureBody): Promise<FeatureJson> {
  return db.withTransaction(async (tx) => {
    const now = new Date().toISOString();
    const counter = await tx.query<{ n: number; prefix: string }>(
      `UPDATE planning_products SET next_feature_num = next_feature_num + 1 WHERE tenant_id = $1 AND id = $2 RETURNING next_feature_num - 1 AS n, reference_prefix AS prefix`,
      [actor.tenantId, release.productId],
    );
    const { n, prefix } = counter.rows[0]!;
    const inserted = await tx.query<{ id: string }>(
      `INSERT INTO planning_features (tenant_id, product_id, release_id, reference_num, name, position, created_by_user_id, created_by_key_id, created_at, updated_at, description_created_at, description_updated_at)
       VALUES ($1, $2, $3, $4, $5, (SELECT COALESCE(max(position), 0) + 1 FROM planning_features WHERE tenant_id = $1 AND release_id = $3), $6, $7, $8, $8, $8, $8)
       RETURNING id::text AS id`,
      [actor.tenantId, release.productId, release.id, referenceNumber('feature', prefix, n), body.name ?? '', actor.userId, actor.keyId, now],
    );
    const id = inserted.rows[0]!.id;
    await applyPatch(tx, actor, { id, productId: release.productId, current: NO_STATE, now, creating: true }, body);
    return (await selectOne(tx, actor.tenantId, id))!;
  });
}

export async function updateFeature(db: Db, actor: Actor, id: string, body: FeatureBody): Promise<FeatureJson> {
  return db.withTransaction(async (tx) => {
    const current = await lockCurrent(tx, 'planning_features', actor.tenantId, id);
    await applyPatch(tx, actor, { id, productId: current.productId, current, now: new Date().toISOString(), creating: false }, body);
    return (await selectOne(tx, actor.tenantId, id))!;
  });
}

/** PUT …/custom_fields: merges the given keys into the stored ones (null removes a key). */
export async function updateFeatureCustomFields(db: Db, actor: Actor, id: string, fields: Record<string, unknown>): Promise<FeatureJson> {
  return db.withTransaction(async (tx) => {
    const current = await lockCurrent(tx, 'planning_features', actor.tenantId, id);
    const merged = mergeCustomFields(current.customFields, parseCustomFields(fields));
    await tx.query(`UPDATE planning_features SET custom_fields = $3::jsonb, updated_at = $4::timestamptz WHERE tenant_id = $1 AND id = $2`, [
      actor.tenantId,
      id,
      JSON.stringify(merged),
      new Date().toISOString(),
    ]);
    return (await selectOne(tx, actor.tenantId, id))!;
  });
}

/** Deletes the feature with its requirements, to-dos, goal links (cascade) and comments. */
export async function deleteFeature(db: Db, tenantId: string, id: string): Promise<void> {
  await db.withTransaction(async (tx) => {
    // Locked first, so no requirement or to-do is added under it meanwhile; its children's ids
    // are read before the cascade removes them; the records go before their comments, whose
    // writers hold a share lock on the parent (addComment): a comment written meanwhile is
    // committed by the time its parent's row is deleted, and so is seen and deleted here.
    await tx.query('SELECT 1 FROM planning_features WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [tenantId, id]);
    const children = await tx.query<{ kind: string; id: string }>(
      `SELECT 'requirement' AS kind, id::text AS id FROM planning_requirements WHERE tenant_id = $1 AND feature_id = $2
       UNION ALL SELECT 'to_do', id::text FROM planning_to_dos WHERE tenant_id = $1 AND feature_id = $2`,
      [tenantId, id],
    );
    await tx.query('DELETE FROM planning_features WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
    const of = (kind: string) => children.rows.filter((c) => c.kind === kind).map((c) => c.id);
    await tx.query(
      `DELETE FROM planning_comments WHERE tenant_id = $1 AND ((parent_kind = 'feature' AND parent_id = $2)
         OR (parent_kind = 'requirement' AND parent_id = ANY($3::bigint[])) OR (parent_kind = 'to_do' AND parent_id = ANY($4::bigint[])))`,
      [tenantId, id, of('requirement'), of('to_do')],
    );
  });
}

/**
 * The feature's phase, named against the release it is in now (the body may have moved it).
 * Without one named (a move), a phase of the release it left is cleared: a phase belongs to one
 * release.
 */
async function assignPhase(tx: Db, tenantId: string, id: string, phase: Ref | null | undefined): Promise<void> {
  if (phase === undefined) {
    await tx.query(
      `UPDATE planning_features f SET release_phase_id = NULL WHERE f.tenant_id = $1 AND f.id = $2 AND f.release_phase_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM planning_release_phases ph WHERE ph.id = f.release_phase_id AND ph.release_id = f.release_id)`,
      [tenantId, id],
    );
    return;
  }
  let phaseId: string | null = null;
  if (phase !== null) {
    const { rows } = await tx.query<{ release_id: string }>('SELECT release_id::text AS release_id FROM planning_features WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
    phaseId = await resolvePhaseOfRelease(tx, tenantId, rows[0]!.release_id, phase);
  }
  try {
    await tx.query('UPDATE planning_features SET release_phase_id = $3::bigint WHERE tenant_id = $1 AND id = $2', [tenantId, id, phaseId]);
  } catch (err) {
    // foreign_key_violation: the phase was deleted after it was resolved (a concurrent DELETE);
    // answered as a phase that does not exist (400), not a 500.
    if ((err as { code?: unknown }).code === '23503') throw badData(`release_phase: no phase ${JSON.stringify(String(phase))} in the feature's release`);
    throw err;
  }
}

const UNSUPPORTED_LINKS = ['team', 'team_workflow_status', 'iteration', 'program_increment'] as const;
const ESTIMATES = ['initial', 'detailed', 'remaining'] as const;

async function applyPatch(tx: Db, actor: Actor, t: { id: string; productId: string; current: CurrentState; now: string; creating: boolean }, body: FeatureBody): Promise<void> {
  for (const field of UNSUPPORTED_LINKS) {
    if (body[field] !== undefined && body[field] !== null) throw badData(`${field}: no such record (this service has no ${field.replaceAll('_', ' ')}s)`);
  }
  const set = new Assignments([actor.tenantId, t.id]);
  await assignCommonFields(tx, actor, { productId: t.productId, kind: 'feature', current: t.current, now: t.now }, body, set);
  if (t.creating && body.workflow_status === undefined) {
    const first = await initialStatus(tx, actor.tenantId, t.productId, 'feature');
    if (first) assignStatus(set, t.current, first, t.now);
  }
  if (t.creating && body.workflow_kind === undefined) {
    set.set('workflow_kind_id', await resolveWorkflowKind(tx, actor.tenantId, t.productId, 'New'), '::bigint');
  }
  if (body.workflow_kind !== undefined) set.set('workflow_kind_id', await resolveWorkflowKind(tx, actor.tenantId, t.productId, body.workflow_kind), '::bigint');
  if (body.release !== undefined) set.set('release_id', await resolveInProduct(tx, 'planning_releases', actor.tenantId, t.productId, 'release', body.release), '::bigint');
  if (body.epic !== undefined) set.set('epic_id', body.epic === null ? null : await resolveInProduct(tx, 'planning_epics', actor.tenantId, t.productId, 'epic', body.epic), '::bigint');
  if (body.initiative !== undefined) {
    set.set('initiative_id', body.initiative === null ? null : await resolveInProduct(tx, 'planning_initiatives', actor.tenantId, t.productId, 'initiative', body.initiative), '::bigint');
  }
  if (body.created_by !== undefined) set.set('created_by_user_id', await resolveMember(tx, actor.tenantId, 'created_by', body.created_by));
  for (const e of ESTIMATES) {
    const text = body[`${e}_estimate_text`];
    const value = body[`${e}_estimate`];
    if (text !== undefined) {
      const minutes = parseEstimateText(text);
      if (minutes === undefined) throw badData(`${e}_estimate_text must look like "2d 4h 30m", "90m" or "3p"`);
      set.set(`${e}_estimate`, minutes);
    } else if (value !== undefined) {
      set.set(`${e}_estimate`, value);
    }
  }
  if (body.start_date !== undefined) set.setDate('start_date', body.start_date);
  if (body.due_date !== undefined) set.setDate('due_date', body.due_date);
  if (body.score !== undefined) set.set('score', Math.round(body.score));
  set.set('updated_at', t.now, '::timestamptz');
  await tx.query(`UPDATE planning_features SET ${set} WHERE tenant_id = $1 AND id = $2`, set.params);
  if (body.release_phase !== undefined || body.release !== undefined) await assignPhase(tx, actor.tenantId, t.id, body.release_phase);
  if (body.goals !== undefined) await linkGoals(tx, actor.tenantId, t.productId, t.id, body.goals, 'planning_feature_goals', 'feature_id');
}
