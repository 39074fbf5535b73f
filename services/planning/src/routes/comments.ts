import type { FastifyPluginAsync } from 'fastify';
import { notFound } from '@floe/errors';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { commentBody, idParams, listQuery, writeQuery } from '../params/body-schemas.ts';
import { parseListParams } from '../params/list-params.ts';
import { nonBlank } from '../params/values.ts';
import { addComment, findCommentParent, listComments, type CommentParentKind } from '../store/comments.ts';
import { metaPage } from './shapes.ts';

type IdParams = { id: string };
type CommentBody = { body: string } | { comment: { body: string } };

/**
 * The record kinds that carry comments, by path segment (`/api/v1/{segment}/{id}/comments`), and
 * whether comments may be added through the API. Every kind spec 3 names is a record of this service.
 */
const PARENTS: ReadonlyArray<{ segment: string; kind: CommentParentKind; add: boolean }> = [
  { segment: 'features', kind: 'feature', add: true },
  { segment: 'releases', kind: 'release', add: false },
  { segment: 'epics', kind: 'epic', add: true },
  { segment: 'requirements', kind: 'requirement', add: true },
  { segment: 'ideas', kind: 'idea', add: true },
  { segment: 'initiatives', kind: 'initiative', add: true },
  { segment: 'goals', kind: 'goal', add: false },
  { segment: 'release_phases', kind: 'release_phase', add: false },
  { segment: 'to_dos', kind: 'to_do', add: false },
  { segment: 'products', kind: 'product', add: false },
];

async function parentId(db: Db, tenantId: string, kind: CommentParentKind, value: string): Promise<string> {
  const hit = await findCommentParent(db, tenantId, kind, value);
  if (!hit) throw notFound(`${kind === 'to_do' ? 'to-do' : kind.replace('_', ' ')} ${value} not found`);
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
        const id = await parentId(db, tenantId, parent.kind, req.params.id);
        return metaPage('comments', await listComments(db, tenantId, { kind: parent.kind, id }, p), p);
      },
    );
    if (!parent.add) continue;
    app.post<{ Params: IdParams; Body: CommentBody }>(
      `/${parent.segment}/:id/comments`,
      { schema: { params: idParams, querystring: writeQuery, body: commentBody } },
      async (req, reply) => {
        const caller = callerOf(req);
        const id = await parentId(db, caller.tenantId, parent.kind, req.params.id);
        const text = 'comment' in req.body ? req.body.comment.body : req.body.body;
        // A blank comment is refused like a blank name; a comment is kept as written.
        nonBlank('body', text);
        return reply.code(201).send(await addComment(db, caller, { kind: parent.kind, id }, text));
      },
    );
  }
};
