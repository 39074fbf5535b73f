import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { idParams, listQuery, toDoCreateBody, writeQuery } from '../params/body-schemas.ts';
import { parseListParams } from '../params/list-params.ts';
import { createToDo, getToDo, listToDos, type ToDoBody } from '../store/to-dos.ts';
import { found, metaPage, recordOr404 } from './shapes.ts';

type IdParams = { id: string };

/**
 * To-dos: listed and created under their feature (by id or reference number), read by id, in the
 * `{to_do: {...}}` wrapping of the other records.
 */
export const toDoRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.get<{ Params: IdParams; Querystring: Record<string, string> }>(
    '/features/:id/to_dos',
    { schema: { params: idParams, querystring: listQuery(['page', 'per_page']) } },
    async (req) => {
      const p = parseListParams(req.query, { accepted: ['page', 'per_page'] });
      const tenantId = callerOf(req).tenantId;
      const feature = await recordOr404(db, 'planning_features', tenantId, req.params.id);
      return metaPage('to_dos', await listToDos(db, tenantId, feature.id, p), p);
    },
  );

  app.post<{ Params: IdParams; Body: { to_do: ToDoBody } }>(
    '/features/:id/to_dos',
    { schema: { params: idParams, querystring: writeQuery, body: toDoCreateBody } },
    async (req, reply) => {
      const tenantId = callerOf(req).tenantId;
      const feature = await recordOr404(db, 'planning_features', tenantId, req.params.id);
      return reply.code(201).send({ to_do: await createToDo(db, tenantId, feature.id, req.body.to_do) });
    },
  );

  app.get<{ Params: IdParams }>('/to_dos/:id', { schema: { params: idParams } }, async (req) => ({
    to_do: found(await getToDo(db, callerOf(req).tenantId, req.params.id), `to-do ${req.params.id}`),
  }));
};
