import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { idParams, listQuery, releaseCreateBody, releaseUpdateBody, writeQuery } from '../params/body-schemas.ts';
import { parseListParams, type ListParamName, type ListParams } from '../params/list-params.ts';
import { paginationOf } from '../params/pagination.ts';
import { project } from '../params/projection.ts';
import { createRelease, getRelease, listReleases, RELEASE_FIELDS, updateRelease, type ReleaseBody, type ReleaseJson } from '../store/releases.ts';
import { found, productOr404, recordOr404 } from './shapes.ts';

type IdParams = { id: string };
type ListQuery = Record<string, string>;

const ALL_PARAMS: readonly ListParamName[] = ['page', 'per_page', 'fields', 'q', 'updated_since', 'assigned_to_user', 'status', 'parking_lot'];
const PRODUCT_PARAMS: readonly ListParamName[] = ['page', 'per_page', 'fields', 'q', 'updated_since', 'status', 'parking_lot'];
// Spec 3, Limits: a product's release list pages by 20 unless asked otherwise.
const PRODUCT_RELEASES_PER_PAGE = 20;

/**
 * Release lists carry `pagination` at the top level (spec 3, "List releases") and, like every
 * other list, `meta.pagination` (spec 3, Limits): the spec names both, so clients written to
 * either find it.
 */
function releasePage(page: { records: ReleaseJson[]; total: number }, p: ListParams) {
  const pagination = paginationOf(p.page, p.perPage, page.total);
  return { releases: page.records.map((r) => project(r, p.fields)), pagination, meta: { pagination } };
}

/** Releases: lists (all, by product), create in a product, read, update. */
export const releaseRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.get<{ Querystring: ListQuery }>('/releases', { schema: { querystring: listQuery(ALL_PARAMS) } }, async (req) => {
    const p = parseListParams(req.query, { accepted: ALL_PARAMS, fieldNames: RELEASE_FIELDS });
    return releasePage(await listReleases(db, callerOf(req).tenantId, {}, p), p);
  });

  app.get<{ Params: IdParams; Querystring: ListQuery }>('/products/:id/releases', { schema: { params: idParams, querystring: listQuery(PRODUCT_PARAMS) } }, async (req) => {
    const p = parseListParams(req.query, { accepted: PRODUCT_PARAMS, fieldNames: RELEASE_FIELDS, defaultPerPage: PRODUCT_RELEASES_PER_PAGE });
    const tenantId = callerOf(req).tenantId;
    const product = await productOr404(db, tenantId, req.params.id);
    return releasePage(await listReleases(db, tenantId, { productId: product.id }, p), p);
  });

  app.post<{ Params: IdParams; Body: { release: ReleaseBody } }>(
    '/products/:id/releases',
    { schema: { params: idParams, querystring: writeQuery, body: releaseCreateBody } },
    async (req, reply) => {
      const caller = callerOf(req);
      const product = await productOr404(db, caller.tenantId, req.params.id);
      return reply.code(201).send({ release: await createRelease(db, caller, product.id, req.body.release) });
    },
  );

  app.get<{ Params: IdParams; Querystring: ListQuery }>('/releases/:id', { schema: { params: idParams, querystring: listQuery(['fields']) } }, async (req) => {
    const p = parseListParams(req.query, { accepted: ['fields'], fieldNames: RELEASE_FIELDS });
    return { release: project(found(await getRelease(db, callerOf(req).tenantId, req.params.id), `release ${req.params.id}`), p.fields) };
  });

  app.put<{ Params: IdParams; Body: { release: ReleaseBody } }>(
    '/releases/:id',
    { schema: { params: idParams, querystring: writeQuery, body: releaseUpdateBody } },
    async (req) => {
      const caller = callerOf(req);
      const release = await recordOr404(db, 'planning_releases', caller.tenantId, req.params.id);
      return { release: await updateRelease(db, caller, release.id, req.body.release) };
    },
  );
};
