import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { idParams, productRecordCreateBody, writeQuery } from '../params/body-schemas.ts';
import { createProductRecord, getProductRecord, type ProductRecordKind } from '../store/product-records.ts';
import { found, productOr404 } from './shapes.ts';

type IdParams = { id: string };

/**
 * Goals, initiatives and ideas: created in a product and read, so the feature and epic lists by
 * goal or initiative (spec 3) have something to list by, and ideas something to comment on.
 */
export const productRecordRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  for (const [kind, plural] of [['goal', 'goals'], ['initiative', 'initiatives'], ['idea', 'ideas']] as const satisfies ReadonlyArray<readonly [ProductRecordKind, string]>) {
    app.post<{ Params: IdParams; Body: Record<string, { name: string; description?: string }> }>(
      `/products/:id/${plural}`,
      { schema: { params: idParams, querystring: writeQuery, body: productRecordCreateBody(kind) } },
      async (req, reply) => {
        const caller = callerOf(req);
        const product = await productOr404(db, caller.tenantId, req.params.id);
        return reply.code(201).send({ [kind]: await createProductRecord(db, kind, caller, product.id, req.body[kind]!) });
      },
    );
    app.get<{ Params: IdParams }>(`/${plural}/:id`, { schema: { params: idParams } }, async (req) => ({
      [kind]: found(await getProductRecord(db, kind, callerOf(req).tenantId, req.params.id), `${kind} ${req.params.id}`),
    }));
  }
};
