import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { idParams, strategyCreateBody, writeQuery } from '../params/body-schemas.ts';
import { createStrategy, getStrategy, type StrategyKind } from '../store/goals-initiatives.ts';
import { found, productOr404 } from './shapes.ts';

type IdParams = { id: string };

/**
 * Goals and initiatives: created in a product and read, so the feature and epic lists by goal or
 * initiative (spec 3) have something to list by.
 */
export const strategyRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  for (const [kind, plural] of [['goal', 'goals'], ['initiative', 'initiatives']] as const satisfies ReadonlyArray<readonly [StrategyKind, string]>) {
    app.post<{ Params: IdParams; Body: Record<string, { name: string; description?: string }> }>(
      `/products/:id/${plural}`,
      { schema: { params: idParams, querystring: writeQuery, body: strategyCreateBody(kind) } },
      async (req, reply) => {
        const caller = callerOf(req);
        const product = await productOr404(db, caller.tenantId, req.params.id);
        return reply.code(201).send({ [kind]: await createStrategy(db, kind, caller, product.id, req.body[kind]!) });
      },
    );
    app.get<{ Params: IdParams }>(`/${plural}/:id`, { schema: { params: idParams } }, async (req) => ({
      [kind]: found(await getStrategy(db, kind, callerOf(req).tenantId, req.params.id), `${kind} ${req.params.id}`),
    }));
  }
};
