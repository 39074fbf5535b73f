import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { featureCreateBody, featureCustomFieldsBody, featureUpdateBody, idParams, listQuery, writeQuery } from '../params/body-schemas.ts';
import { parseListParams, type ListParamName } from '../params/list-params.ts';
import { project } from '../params/projection.ts';
import { createFeature, deleteFeature, FEATURE_FIELDS, getFeature, listFeatures, updateFeature, updateFeatureCustomFields, type FeatureBody, type FeatureScope } from '../store/features.ts';
import type { NumberedTable } from '../store/lookups.ts';
import { found, metaPage, productOr404, recordOr404 } from './shapes.ts';

type IdParams = { id: string };
type ListQuery = Record<string, string>;

const LIST_PARAMS: readonly ListParamName[] = ['page', 'per_page', 'fields', 'q', 'updated_since', 'tag', 'assigned_to_user'];
const listSchema = { querystring: listQuery(LIST_PARAMS) };
const fieldsOnly = { querystring: listQuery(['fields']) };
const parse = (query: ListQuery) => parseListParams(query, { accepted: LIST_PARAMS, fieldNames: FEATURE_FIELDS });

/** Features: lists (all, or by product, release, goal, initiative, epic), create in a release, read, update, delete. */
export const featureRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.get<{ Querystring: ListQuery }>('/features', { schema: listSchema }, async (req) => {
    const p = parse(req.query);
    return metaPage('features', await listFeatures(db, callerOf(req).tenantId, { all: true }, p), p);
  });

  const scoped = (path: string, scope: (tenantId: string, id: string) => Promise<FeatureScope>) =>
    app.get<{ Params: IdParams; Querystring: ListQuery }>(path, { schema: { ...listSchema, params: idParams } }, async (req) => {
      const p = parse(req.query);
      const tenantId = callerOf(req).tenantId;
      return metaPage('features', await listFeatures(db, tenantId, await scope(tenantId, req.params.id), p), p);
    });
  const byRecord = (table: NumberedTable, key: 'releaseId' | 'goalId' | 'initiativeId' | 'epicId') => async (tenantId: string, id: string) =>
    ({ [key]: (await recordOr404(db, table, tenantId, id)).id }) as FeatureScope;
  scoped('/products/:id/features', async (tenantId, id) => ({ productId: (await productOr404(db, tenantId, id)).id }));
  scoped('/releases/:id/features', byRecord('planning_releases', 'releaseId'));
  scoped('/goals/:id/features', byRecord('planning_goals', 'goalId'));
  scoped('/initiatives/:id/features', byRecord('planning_initiatives', 'initiativeId'));
  scoped('/epics/:id/features', byRecord('planning_epics', 'epicId'));

  app.post<{ Params: IdParams; Body: { feature: FeatureBody } }>(
    '/releases/:id/features',
    { schema: { params: idParams, querystring: writeQuery, body: featureCreateBody } },
    async (req, reply) => {
      const caller = callerOf(req);
      const release = await recordOr404(db, 'planning_releases', caller.tenantId, req.params.id);
      return reply.code(201).send({ feature: await createFeature(db, caller, release, req.body.feature) });
    },
  );

  app.get<{ Params: IdParams; Querystring: ListQuery }>('/features/:id', { schema: { params: idParams, ...fieldsOnly } }, async (req) => {
    const p = parseListParams(req.query, { accepted: ['fields'], fieldNames: FEATURE_FIELDS });
    return { feature: project(found(await getFeature(db, callerOf(req).tenantId, req.params.id), `feature ${req.params.id}`), p.fields) };
  });

  app.put<{ Params: IdParams; Body: { feature: FeatureBody } }>(
    '/features/:id',
    { schema: { params: idParams, querystring: writeQuery, body: featureUpdateBody } },
    async (req) => {
      const caller = callerOf(req);
      const feature = await recordOr404(db, 'planning_features', caller.tenantId, req.params.id);
      return { feature: await updateFeature(db, caller, feature.id, req.body.feature) };
    },
  );

  app.put<{ Params: IdParams; Body: { feature: { custom_fields: Record<string, unknown> } } }>(
    '/features/:id/custom_fields',
    { schema: { params: idParams, querystring: writeQuery, body: featureCustomFieldsBody } },
    async (req) => {
      const caller = callerOf(req);
      const feature = await recordOr404(db, 'planning_features', caller.tenantId, req.params.id);
      return { feature: await updateFeatureCustomFields(db, caller, feature.id, req.body.feature.custom_fields) };
    },
  );

  // Spec 3 does not show the response of a deletion: 204 No Content, as REST clients expect.
  app.delete<{ Params: IdParams }>('/features/:id', { schema: { params: idParams, querystring: writeQuery } }, async (req, reply) => {
    const caller = callerOf(req);
    const feature = await recordOr404(db, 'planning_features', caller.tenantId, req.params.id);
    await deleteFeature(db, caller.tenantId, feature.id);
    return reply.code(204).send();
  });
};
