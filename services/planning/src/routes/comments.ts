import type { FastifyPluginAsync } from 'fastify';
import { notFound } from '@floe/errors';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { commentBody, idParams, listQuery, writeQuery } from '../params/body-schemas.ts';
import { parseListParams } from '../params/list-params.ts';
import { nonBlank } from '../params/values.ts';
import { addComment, listComments, type CommentParentKind } from '../store/comments.ts';
import { findProduct, findRecord, type NumberedTable } from '../store/lookups.ts';
import { findPhase } from '../store/release-phases.ts';
import { findToDo } from '../store/to-dos.ts';
import { metaPage } from './shapes.ts';

type IdParams = { id: string };
type CommentBody = { body: string } | { comment: { body: string } };

type Find = (db: Db, tenantId: string, value: string) => Promise<{ id: string } | undefined>;
const inTable = (table: NumberedTable): Find => (db, tenantId, value) => findRecord(db, table, tenantId, value);

/**
 * The record kinds that carry comments, by path segment (`/api/v1/{segment}/{id}/comments`), with
 * how a path names one: by id or reference number, a product by id or prefix, a release phase or
 * a to-do by id. Every kind spec 3 names is a record of this service.
 */
const PARENTS: ReadonlyArray<{ segment: string; kind: CommentParentKind; find: Find; add: boolean }> = [
  { segment: 'features', kind: 'feature', find: inTable('planning_features'), add: true },
  { segment: 'releases', kind: 'release', find: inTable('planning_releases'), add: false },
  { segment: 'epics', kind: 'epic', find: inTable('planning_epics'), add: true },
  { segment: 'requirements', kind: 'requirement', find: inTable('planning_requirements'), add: true },
  { segment: 'ideas', kind: 'idea', find: inTable('planning_ideas'), add: true },
  { segment: 'initiatives', kind: 'initiative', find: inTable('planning_initiatives'), add: true },
  { segment: 'goals', kind: 'goal', find: inTable('planning_goals'), add: false },
  { segment: 'release_phases', kind: 'release_phase', find: findPhase, add: false },
  { segment: 'to_dos', kind: 'to_do', find: findToDo, add: false },
  { segment: 'products', kind: 'product', find: findProduct, add: false },
];

async function parentId(db: Db, tenantId: string, parent: (typeof PARENTS)[number], value: string): Promise<string> {
  const hit = await parent.find(db, tenantId, value);
  if (!hit) throw notFound(`${parent.kind === 'to_do' ? 'to-do' : parent.kind.replace('_', ' ')} ${value} not found`);
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
        // A blank comment is refused like a blank name; a comment is kept as written.
        nonBlank('body', text);
        return reply.code(201).send(await addComment(db, caller, { kind: parent.kind, id }, text));
      },
    );
  }
};
