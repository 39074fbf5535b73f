import type { FastifyPluginAsync } from 'fastify';
import { notFound } from '@floe/errors';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { commentBody, idParams, listQuery, writeQuery } from '../params/body-schemas.ts';
import { parseListParams } from '../params/list-params.ts';
import { addComment, listComments, type CommentParentKind } from '../store/comments.ts';
import { findProduct, findRecord, type NumberedTable } from '../store/lookups.ts';
import { findPhase } from '../store/release-phases.ts';
import { metaPage } from './shapes.ts';

type IdParams = { id: string };
type CommentBody = { body: string } | { comment: { body: string } };

/**
 * The record kinds that carry comments, by path segment (`/api/v1/{segment}/{id}/comments`).
 * Ideas and to-dos are parents spec 3 names that this service does not hold: their routes exist
 * and answer 404 for every id, as for any record that is not there.
 */
const PARENTS: ReadonlyArray<{ segment: string; kind: CommentParentKind; table: NumberedTable | 'product' | 'release_phase' | null; add: boolean }> = [
  { segment: 'features', kind: 'feature', table: 'planning_features', add: true },
  { segment: 'releases', kind: 'release', table: 'planning_releases', add: false },
  { segment: 'epics', kind: 'epic', table: 'planning_epics', add: true },
  { segment: 'requirements', kind: 'requirement', table: 'planning_requirements', add: true },
  { segment: 'ideas', kind: 'idea', table: null, add: true },
  { segment: 'initiatives', kind: 'initiative', table: 'planning_initiatives', add: true },
  { segment: 'goals', kind: 'goal', table: 'planning_goals', add: false },
  { segment: 'release_phases', kind: 'release_phase', table: 'release_phase', add: false },
  { segment: 'to_dos', kind: 'to_do', table: null, add: false },
  { segment: 'products', kind: 'product', table: 'product', add: false },
];

async function parentId(db: Db, tenantId: string, parent: (typeof PARENTS)[number], value: string): Promise<string> {
  const { table } = parent;
  const hit =
    table === 'product' ? await findProduct(db, tenantId, value)
    : table === 'release_phase' ? await findPhase(db, tenantId, value)
    : table ? await findRecord(db, table, tenantId, value)
    : undefined;
  if (!hit) throw notFound(`${parent.kind.replace('_', ' ')} ${value} not found`);
  return hit.id;
}

/** Comments: list on every commentable record, add to features, epics, requirements, ideas and initiatives. */
export const commentRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  for (const parent of PARENTS) {
    app.get<{ Params: IdParams; Querystring: Record<string, string> }>(
      `/${parent.segment}/:id/comments`,
      { schema: { params: idParams, querystring: listQuery(['page', 'per_page']) } },
      async (req) => {
        const p = parseListParams(req.query, { accepted: ['page', 'per_page'] });
        const tenantId = callerOf(req).tenantId;
        const id = await parentId(db, tenantId, parent, req.params.id);
        return metaPage('comments', await listComments(db, tenantId, { kind: parent.kind, id }, p), p);
      },
    );
    if (!parent.add) continue;
    app.post<{ Params: IdParams; Body: CommentBody }>(
      `/${parent.segment}/:id/comments`,
      { schema: { params: idParams, querystring: writeQuery, body: commentBody } },
      async (req, reply) => {
        const caller = callerOf(req);
        const id = await parentId(db, caller.tenantId, parent, req.params.id);
        const text = 'comment' in req.body ? req.body.comment.body : req.body.body;
        return reply.code(201).send(await addComment(db, caller, { kind: parent.kind, id }, text));
      },
    );
  }
};
