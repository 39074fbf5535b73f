import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { competitorCreateBody, competitorUpdateBody, idParams, listQuery, writeQuery } from '../params/body-schemas.ts';
import { parseListParams } from '../params/list-params.ts';
import { createCompetitor, deleteCompetitor, getCompetitor, listCompetitors, updateCompetitor, type CompetitorBody } from '../store/competitors.ts';
import { found, metaPage, productOr404 } from './shapes.ts';

type IdParams = { id: string };

/**
 * Competitors of a product. Spec 3 returns a competitor itself (not wrapped) from create, get and
 * update; the list is `{competitors: [...]}` with the pagination of every list. DELETE completes
 * the set (204).
 */
export const competitorRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.get<{ Params: IdParams; Querystring: Record<string, string> }>(
    '/products/:id/competitors',
    { schema: { params: idParams, querystring: listQuery(['page', 'per_page']) } },
    async (req) => {
      const p = parseListParams(req.query, { accepted: ['page', 'per_page'] });
      const tenantId = callerOf(req).tenantId;
      const product = await productOr404(db, tenantId, req.params.id);
      return metaPage('competitors', await listCompetitors(db, tenantId, product.id, p), p);
    },
  );

  app.post<{ Params: IdParams; Body: { competitor: CompetitorBody & { name: string } } }>(
    '/products/:id/competitors',
    { schema: { params: idParams, querystring: writeQuery, body: competitorCreateBody } },
    async (req, reply) => {
      const caller = callerOf(req);
      const product = await productOr404(db, caller.tenantId, req.params.id);
      return reply.code(201).send(await createCompetitor(db, caller, product.id, req.body.competitor));
    },
  );

  app.get<{ Params: IdParams }>('/competitors/:id', { schema: { params: idParams } }, async (req) =>
    found(await getCompetitor(db, callerOf(req).tenantId, req.params.id), `competitor ${req.params.id}`),
  );

  app.put<{ Params: IdParams; Body: { competitor: CompetitorBody } }>(
    '/competitors/:id',
    { schema: { params: idParams, querystring: writeQuery, body: competitorUpdateBody } },
    async (req) => {
      const caller = callerOf(req);
      const current = found(await getCompetitor(db, caller.tenantId, req.params.id), `competitor ${req.params.id}`);
      return found(await updateCompetitor(db, caller, current.id, req.body.competitor), `competitor ${req.params.id}`);
    },
  );

  app.delete<{ Params: IdParams }>('/competitors/:id', { schema: { params: idParams, querystring: writeQuery } }, async (req, reply) => {
    const caller = callerOf(req);
    const current = found(await getCompetitor(db, caller.tenantId, req.params.id), `competitor ${req.params.id}`);
    found((await deleteCompetitor(db, caller.tenantId, current.id)) || undefined, `competitor ${req.params.id}`);
    return reply.code(204).send();
  });
};
