import type { Db } from '@floe/meta';
import { parseRecordRef } from '../params/reference-numbers.ts';
import { nonBlank, parseDate } from '../params/values.ts';
import { lockCurrent } from './record-patch.ts';
import { commentsCount, day, listPage, ts, Where, type PageOf } from './sql.ts';

/**
 * To-dos of a feature (spec 3: comments listed on a to-do). Spec 3 shows none of their fields,
 * so they hold what the API it is modelled on shows of a to-do at the least: a name, a body, a
 * status (pending until complete) and an optional due date. Named by id only: they have no
 * reference numbers.
 */
export type ToDoStatus = 'pending' | 'complete';

export type ToDoJson = Record<string, unknown> & { id: string };

export interface ToDoBody {
  name: string;
  body?: string;
  status?: ToDoStatus;
  due_date?: string | null;
}

const SELECT = `SELECT t.id::text AS id, t.name, t.body, t.status, ${day('t.due_date')} AS due_date, t.feature_id::text AS feature_id,
  ${ts('t.created_at')} AS created_at, ${ts('t.updated_at')} AS updated_at, ${commentsCount('to_do', 't')} AS comments_count
FROM planning_to_dos t`;

/** The id a path's value names, when it can be one (to-dos are named by id only). */
function idOf(value: string): string | undefined {
  const ref = parseRecordRef(value);
  return ref?.by === 'id' ? ref.id : undefined;
}

/** The tenant's to-do a path's value names, only its id (a comment's parent), or undefined. */
export async function findToDo(db: Db, tenantId: string, value: string): Promise<{ id: string } | undefined> {
  const id = idOf(value);
  if (id === undefined) return undefined;
  const { rows } = await db.query<{ id: string }>('SELECT id::text AS id FROM planning_to_dos WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rows[0];
}

/** The tenant's to-do a path's value names, or undefined. */
export async function getToDo(db: Db, tenantId: string, value: string): Promise<ToDoJson | undefined> {
  const id = idOf(value);
  if (id === undefined) return undefined;
  const { rows } = await db.query<ToDoJson>(`${SELECT} WHERE t.tenant_id = $1 AND t.id = $2`, [tenantId, id]);
  return rows[0];
}

/** A feature's to-dos in the order they were created. */
export async function listToDos(db: Db, tenantId: string, featureId: string, page: PageOf): Promise<{ records: ToDoJson[]; total: number }> {
  const where = new Where('t', tenantId);
  where.and(`t.feature_id = ${where.param(featureId)}`);
  return listPage<ToDoJson>(db, { select: SELECT, from: 'planning_to_dos t', where, orderBy: 't.id' }, page);
}

export async function createToDo(db: Db, tenantId: string, featureId: string, body: ToDoBody): Promise<ToDoJson> {
  const dueDate = body.due_date === undefined ? null : parseDate('due_date', body.due_date);
  return db.withTransaction(async (tx) => {
    // The feature, locked so a concurrent DELETE either waits for this to-do (and takes it along)
    // or has removed the feature: then not found, not a foreign key violation (500).
    await lockCurrent(tx, 'planning_features', tenantId, featureId);
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO planning_to_dos (tenant_id, feature_id, name, body, status, due_date, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6::date, $7, $7) RETURNING id::text AS id`,
      [tenantId, featureId, nonBlank('name', body.name), body.body ?? '', body.status ?? 'pending', dueDate, new Date().toISOString()],
    );
    return (await getToDo(tx, tenantId, rows[0]!.id))!;
  });
}
