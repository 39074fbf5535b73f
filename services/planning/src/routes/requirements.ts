import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { idParams, requirementCreateBody, writeQuery } from '../params/body-schemas.ts';
import { createRequirement, getRequirement, type RequirementBody } from '../store/requirements.ts';
import { found, recordOr404 } from './shapes.ts';

type IdParams = { id: string };

/** Requirements: read (spec 3), and create under a feature so there is one to read. */
export const requirementRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.get<{ Params: IdParams }>('/requirements/:id', { schema: { params: idParams } }, async (req) => ({
    requirement: found(await getRequirement(db, callerOf(req).tenantId, req.params.id), `requirement ${req.params.id}`),
  }));

  app.post<{ Params: IdParams; Body: { requirement: RequirementBody } }>(
    '/features/:id/requirements',
    { schema: { params: idParams, querystring: writeQuery, body: requirementCreateBody } },
    async (req, reply) => {
      const caller = callerOf(req);
      const feature = await recordOr404(db, 'planning_features', caller.tenantId, req.params.id);
      return reply.code(201).send({ requirement: await createRequirement(db, caller, feature, req.body.requirement) });
    },
  );
};
