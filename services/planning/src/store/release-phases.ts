import { badData, notFound } from '@floe/errors';
import type { Db } from '@floe/meta';
import { parseRecordRef } from '../params/reference-numbers.ts';
import { nonBlank } from '../params/values.ts';
import { Assignments } from './record-patch.ts';
import { day, listPage, ts, Where, type PageOf } from './sql.ts';

/**
 * Phases of a release (spec 3: a release's `phases` of {id, name, start_date, end_date,
 * position}; comments on a release phase; a feature's `release_phase`). Named by id only: they
 * have no reference numbers. A phase ends on or after the day it starts.
 */
export const RELEASE_PHASE_FIELDS = ['id', 'name', 'start_date', 'end_date', 'position', 'release_id', 'created_at', 'updated_at'] as const;

export type ReleasePhaseJson = Record<(typeof RELEASE_PHASE_FIELDS)[number], unknown> & { id: string };

export interface ReleasePhaseBody {
  name?: string;
  start_date?: string | null;
  end_date?: string | null;
  position?: number;
}

export interface FoundPhase {
  id: string;
  releaseId: string;
}

const SELECT = `SELECT ph.id::text AS id, ph.name, ${day('ph.start_date')} AS start_date, ${day('ph.end_date')} AS end_date, ph.position,
  ph.release_id::text AS release_id, ${ts('ph.created_at')} AS created_at, ${ts('ph.updated_at')} AS updated_at
FROM planning_release_phases ph`;

/** The tenant's phase of that id (a path's value), or undefined. */
export async function findPhase(db: Db, tenantId: string, value: string): Promise<FoundPhase | undefined> {
  const ref = parseRecordRef(value);
  if (ref?.by !== 'id') return undefined;
  const { rows } = await db.query<{ id: string; release_id: string }>('SELECT id::text AS id, release_id::text AS release_id FROM planning_release_phases WHERE tenant_id = $1 AND id = $2', [
    tenantId,
    ref.id,
  ]);
  const row = rows[0];
  return row && { id: row.id, releaseId: row.release_id };
}

export async function getPhase(db: Db, tenantId: string, id: string): Promise<ReleasePhaseJson | undefined> {
  const { rows } = await db.query<ReleasePhaseJson>(`${SELECT} WHERE ph.tenant_id = $1 AND ph.id = $2`, [tenantId, id]);
  return rows[0];
}

export async function listPhases(db: Db, tenantId: string, releaseId: string, page: PageOf): Promise<{ records: ReleasePhaseJson[]; total: number }> {
  const where = new Where('ph', tenantId);
  where.and(`ph.release_id = ${where.param(releaseId)}`);
  return listPage<ReleasePhaseJson>(db, { select: SELECT, from: 'planning_release_phases ph', where, orderBy: 'ph.position, ph.id' }, page);
}

/** A new phase, last in its release unless given a position. */
export async function createPhase(db: Db, tenantId: string, releaseId: string, body: ReleasePhaseBody & { name: string }): Promise<ReleasePhaseJson> {
  return db.withTransaction(async (tx) => {
    const now = new Date().toISOString();
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO planning_release_phases (tenant_id, release_id, name, position, created_at, updated_at)
       VALUES ($1, $2, $3, (SELECT COALESCE(max(position), 0) + 1 FROM planning_release_phases WHERE tenant_id = $1 AND release_id = $2), $4, $4)
       RETURNING id::text AS id`,
      [tenantId, releaseId, nonBlank('name', body.name), now],
    );
    return applyPatch(tx, tenantId, rows[0]!.id, body, now);
  });
}

export async function updatePhase(db: Db, tenantId: string, id: string, body: ReleasePhaseBody): Promise<ReleasePhaseJson> {
  return db.withTransaction((tx) => applyPatch(tx, tenantId, id, body, new Date().toISOString()));
}

async function applyPatch(tx: Db, tenantId: string, id: string, body: ReleasePhaseBody, now: string): Promise<ReleasePhaseJson> {
  const set = new Assignments([tenantId, id]);
  if (body.name !== undefined) set.set('name', nonBlank('name', body.name));
  if (body.start_date !== undefined) set.setDate('start_date', body.start_date);
  if (body.end_date !== undefined) set.setDate('end_date', body.end_date);
  if (body.position !== undefined) set.set('position', body.position);
  set.set('updated_at', now, '::timestamptz');
  const { rowCount } = await tx.query(`UPDATE planning_release_phases SET ${set} WHERE tenant_id = $1 AND id = $2`, set.params);
  // Deleted since the route found it (a concurrent DELETE): not found, as a request after it.
  if (rowCount === 0) throw notFound(`release phase ${id} not found`);
  // Checked on the stored result, so a change of either end alone is held to the other.
  const phase = (await getPhase(tx, tenantId, id))!;
  if (phase.start_date !== null && phase.end_date !== null && (phase.end_date as string) < (phase.start_date as string)) {
    throw badData(`end_date ${phase.end_date as string} is before start_date ${phase.start_date as string}`);
  }
  return phase;
}

/** Deletes the phase and its comments; features in it keep their release and lose the phase. */
export async function deletePhase(db: Db, tenantId: string, id: string): Promise<void> {
  await db.withTransaction(async (tx) => {
    // The phase before its comments: a comment's writer holds the phase (addComment).
    await tx.query('DELETE FROM planning_release_phases WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
    await tx.query(`DELETE FROM planning_comments WHERE tenant_id = $1 AND parent_kind = 'release_phase' AND parent_id = $2`, [tenantId, id]);
  });
}

/**
 * A feature body's `release_phase`: a phase of the feature's release, by id or by name
 * (case-insensitive; a name two phases share must be given as an id).
 */
export async function resolvePhaseOfRelease(db: Db, tenantId: string, releaseId: string, value: string | number): Promise<string> {
  const v = String(value).trim();
  const { rows } = await db.query<{ id: string; name: string }>('SELECT id::text AS id, name FROM planning_release_phases WHERE tenant_id = $1 AND release_id = $2 ORDER BY position, id', [
    tenantId,
    releaseId,
  ]);
  const byId = rows.find((r) => r.id === v);
  if (byId) return byId.id;
  const byName = rows.filter((r) => r.name.toLowerCase() === v.toLowerCase());
  if (byName.length === 1) return byName[0]!.id;
  if (byName.length > 1) throw badData(`release_phase: ${byName.length} phases of the feature's release are named ${JSON.stringify(v)}; give its id`);
  const names = rows.map((r) => `${r.name} (${r.id})`).join(', ');
  throw badData(`release_phase: no phase ${JSON.stringify(v)} in the feature's release; its phases: ${names || 'none'}`);
}
