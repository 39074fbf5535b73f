import { notFound } from '@floe/errors';
import type { Db } from '@floe/meta';
import type { Actor } from './actor.ts';
import { findProduct, findRecord, type NumberedTable } from './lookups.ts';
import { findPhase } from './release-phases.ts';
import { findToDo } from './to-dos.ts';
import { authorJson, listPage, ts, Where, type PageOf } from './sql.ts';

/**
 * Comments on planning records (spec 3, Resources: Comment): id, body, created_at and the user
 * who wrote it. A comment names its parent by kind and id; the routes check the parent exists in
 * the caller's tenant before reading or writing.
 */
export type CommentParentKind = 'feature' | 'release' | 'epic' | 'requirement' | 'idea' | 'initiative' | 'goal' | 'release_phase' | 'to_do' | 'product';

export interface CommentJson {
  id: string;
  body: string;
  created_at: string;
  user: { id: string; name: string; email: string } | null;
}

const SELECT = `SELECT c.id::text AS id, c.body, ${ts('c.created_at')} AS created_at, ${authorJson('c.user_id', 'c.key_id')} AS user FROM planning_comments c`;

export async function listComments(db: Db, tenantId: string, parent: { kind: CommentParentKind; id: string }, page: PageOf): Promise<{ records: CommentJson[]; total: number }> {
  const where = new Where('c', tenantId);
  where.and(`c.parent_kind = ${where.param(parent.kind)}`).and(`c.parent_id = ${where.param(parent.id)}`);
  return listPage<CommentJson>(db, { select: SELECT, from: 'planning_comments c', where, orderBy: 'c.id' }, page);
}

/** The table of each kind of parent (comments name theirs without a foreign key). */
const PARENT_TABLE: Record<CommentParentKind, NumberedTable | 'planning_release_phases' | 'planning_to_dos' | 'planning_products'> = {
  feature: 'planning_features',
  release: 'planning_releases',
  epic: 'planning_epics',
  requirement: 'planning_requirements',
  idea: 'planning_ideas',
  initiative: 'planning_initiatives',
  goal: 'planning_goals',
  release_phase: 'planning_release_phases',
  to_do: 'planning_to_dos',
  product: 'planning_products',
};

/**
 * The parent a path names, in the caller's tenant: a numbered record by id or reference number, a
 * product by id or prefix, a release phase or a to-do by id.
 */
export async function findCommentParent(db: Db, tenantId: string, kind: CommentParentKind, value: string): Promise<{ id: string } | undefined> {
  const table = PARENT_TABLE[kind];
  switch (table) {
    case 'planning_release_phases':
      return findPhase(db, tenantId, value);
    case 'planning_to_dos':
      return findToDo(db, tenantId, value);
    case 'planning_products':
      return findProduct(db, tenantId, value);
    default:
      return findRecord(db, table, tenantId, value);
  }
}

/**
 * Adds a comment under its parent, held with a share lock while the comment is written: a
 * concurrent DELETE of the parent then either waits and takes the comment along, or has removed
 * the parent first (not found). Without it a comment written during the delete outlived its parent.
 */
export async function addComment(db: Db, actor: Actor, parent: { kind: CommentParentKind; id: string }, body: string): Promise<CommentJson> {
  return db.withTransaction(async (tx) => {
    const held = await tx.query(`SELECT 1 FROM ${PARENT_TABLE[parent.kind]} WHERE tenant_id = $1 AND id = $2 FOR SHARE`, [actor.tenantId, parent.id]);
    if (held.rows.length === 0) throw notFound(`${parent.kind.replace('_', ' ')} ${parent.id} not found`);
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO planning_comments (tenant_id, parent_kind, parent_id, body, user_id, key_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id::text AS id`,
      [actor.tenantId, parent.kind, parent.id, body, actor.userId, actor.keyId, new Date().toISOString()],
    );
    const out = await tx.query<CommentJson>(`${SELECT} WHERE c.tenant_id = $1 AND c.id = $2`, [actor.tenantId, rows[0]!.id]);
    return out.rows[0]!;
  });
}
