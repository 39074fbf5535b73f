import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '@floe/meta';
import { callerOf, requireRole } from '../auth.ts';
import { idParams, listQuery, productCreateBody } from '../params/body-schemas.ts';
import { parseListParams } from '../params/list-params.ts';
import { nonBlank } from '../params/values.ts';
import { createProduct, getProduct, listProducts } from '../store/products.ts';
import { found, metaPage } from './shapes.ts';

type ProductBody = { name: string; reference_prefix: string; description?: string; product_line?: boolean };

/**
 * Products (workspaces). Spec 3 names them only as parents; creating one (tenant admins) gives it
 * the default workflows, so releases and features can follow.
 */
export const productRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.post<{ Body: { product: ProductBody } }>('/products', { schema: { body: productCreateBody } }, async (req, reply) => {
    const caller = requireRole(req, 'admin');
    const b = req.body.product;
    const product = await createProduct(db, caller, { name: nonBlank('name', b.name), referencePrefix: b.reference_prefix, description: b.description, productLine: b.product_line });
    return reply.code(201).send({ product });
  });

  app.get<{ Querystring: Record<string, string> }>('/products', { schema: { querystring: listQuery(['page', 'per_page']) } }, async (req) => {
    const p = parseListParams(req.query, { accepted: ['page', 'per_page'] });
    return metaPage('products', await listProducts(db, callerOf(req).tenantId, p), p);
  });

  app.get<{ Params: { id: string } }>('/products/:id', { schema: { params: idParams } }, async (req) => ({
    product: found(await getProduct(db, callerOf(req).tenantId, req.params.id), `product ${req.params.id}`),
  }));
};
