import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { epicCreateBody, epicUpdateBody, idParams, listQuery, writeQuery } from '../params/body-schemas.ts';
import { parseListParams, type ListParamName } from '../params/list-params.ts';
import { project } from '../params/projection.ts';
import { createEpic, EPIC_FIELDS, getEpic, listEpics, updateEpic, type EpicBody, type EpicScope } from '../store/epics.ts';
import type { NumberedTable } from '../store/lookups.ts';
import { found, metaPage, productOr404, recordOr404 } from './shapes.ts';

type IdParams = { id: string };
type ListQuery = Record<string, string>;

// Spec 3 shows only the filters for epic lists; they page like the other lists (Limits).
const LIST_PARAMS: readonly ListParamName[] = ['page', 'per_page', 'fields', 'q', 'updated_since', 'tag', 'assigned_to_user'];
const listSchema = { querystring: listQuery(LIST_PARAMS) };
const parse = (query: ListQuery) => parseListParams(query, { accepted: LIST_PARAMS, fieldNames: EPIC_FIELDS });

/** Epics: lists (all, or by product, release, goal, initiative), create in a product or release, read, update. */
export const epicRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.get<{ Querystring: ListQuery }>('/epics', { schema: listSchema }, async (req) => {
    const p = parse(req.query);
    return metaPage('epics', await listEpics(db, callerOf(req).tenantId, { all: true }, p), p);
  });

  const scoped = (path: string, scope: (tenantId: string, id: string) => Promise<EpicScope>) =>
    app.get<{ Params: IdParams; Querystring: ListQuery }>(path, { schema: { ...listSchema, params: idParams } }, async (req) => {
      const p = parse(req.query);
      const tenantId = callerOf(req).tenantId;
      return metaPage('epics', await listEpics(db, tenantId, await scope(tenantId, req.params.id), p), p);
    });
  const byRecord = (table: NumberedTable, key: 'releaseId' | 'goalId' | 'initiativeId') => async (tenantId: string, id: string) =>
    ({ [key]: (await recordOr404(db, table, tenantId, id)).id }) as EpicScope;
  scoped('/products/:id/epics', async (tenantId, id) => ({ productId: (await productOr404(db, tenantId, id)).id }));
  scoped('/releases/:id/epics', byRecord('planning_releases', 'releaseId'));
  scoped('/goals/:id/epics', byRecord('planning_goals', 'goalId'));
  scoped('/initiatives/:id/epics', byRecord('planning_initiatives', 'initiativeId'));

  const createSchema = { schema: { params: idParams, querystring: writeQuery, body: epicCreateBody } };
  app.post<{ Params: IdParams; Body: { epic: EpicBody } }>('/products/:id/epics', createSchema, async (req, reply) => {
    const caller = callerOf(req);
    const product = await productOr404(db, caller.tenantId, req.params.id);
    return reply.code(201).send({ epic: await createEpic(db, caller, { productId: product.id }, req.body.epic) });
  });
  app.post<{ Params: IdParams; Body: { epic: EpicBody } }>('/releases/:id/epics', createSchema, async (req, reply) => {
    const caller = callerOf(req);
    const release = await recordOr404(db, 'planning_releases', caller.tenantId, req.params.id);
    return reply.code(201).send({ epic: await createEpic(db, caller, { productId: release.productId, releaseId: release.id }, req.body.epic) });
  });

  app.get<{ Params: IdParams; Querystring: ListQuery }>('/epics/:id', { schema: { params: idParams, querystring: listQuery(['fields']) } }, async (req) => {
    const p = parseListParams(req.query, { accepted: ['fields'], fieldNames: EPIC_FIELDS });
    return { epic: project(found(await getEpic(db, callerOf(req).tenantId, req.params.id), `epic ${req.params.id}`), p.fields) };
  });

  app.put<{ Params: IdParams; Body: { epic: EpicBody } }>('/epics/:id', { schema: { params: idParams, querystring: writeQuery, body: epicUpdateBody } }, async (req) => {
    const caller = callerOf(req);
    const epic = await recordOr404(db, 'planning_epics', caller.tenantId, req.params.id);
    return { epic: await updateEpic(db, caller, epic.id, req.body.epic) };
  });
};
