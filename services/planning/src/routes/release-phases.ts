import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '@floe/meta';
import { callerOf } from '../auth.ts';
import { idParams, listQuery, releasePhaseCreateBody, releasePhaseUpdateBody, writeQuery } from '../params/body-schemas.ts';
import { parseListParams } from '../params/list-params.ts';
import { project } from '../params/projection.ts';
import { createPhase, deletePhase, findPhase, getPhase, listPhases, RELEASE_PHASE_FIELDS, updatePhase, type FoundPhase, type ReleasePhaseBody } from '../store/release-phases.ts';
import { found, metaPage, recordOr404 } from './shapes.ts';

type IdParams = { id: string };
type ListQuery = Record<string, string>;

async function phaseOr404(db: Db, tenantId: string, value: string): Promise<FoundPhase> {
  return found(await findPhase(db, tenantId, value), `release phase ${value}`);
}

/**
 * Release phases: listed and created under their release (by id or reference number), read,
 * updated and deleted by id, in the `{release_phase: {...}}` wrapping of the other records. A
 * release shows them as its `phases`.
 */
export const releasePhaseRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.get<{ Params: IdParams; Querystring: ListQuery }>(
    '/releases/:id/release_phases',
    { schema: { params: idParams, querystring: listQuery(['page', 'per_page', 'fields']) } },
    async (req) => {
      const p = parseListParams(req.query, { accepted: ['page', 'per_page', 'fields'], fieldNames: RELEASE_PHASE_FIELDS });
      const tenantId = callerOf(req).tenantId;
      const release = await recordOr404(db, 'planning_releases', tenantId, req.params.id);
      return metaPage('release_phases', await listPhases(db, tenantId, release.id, p), p);
    },
  );

  app.post<{ Params: IdParams; Body: { release_phase: ReleasePhaseBody & { name: string } } }>(
    '/releases/:id/release_phases',
    { schema: { params: idParams, querystring: writeQuery, body: releasePhaseCreateBody } },
    async (req, reply) => {
      const tenantId = callerOf(req).tenantId;
      const release = await recordOr404(db, 'planning_releases', tenantId, req.params.id);
      return reply.code(201).send({ release_phase: await createPhase(db, tenantId, release.id, req.body.release_phase) });
    },
  );

  app.get<{ Params: IdParams; Querystring: ListQuery }>('/release_phases/:id', { schema: { params: idParams, querystring: listQuery(['fields']) } }, async (req) => {
    const p = parseListParams(req.query, { accepted: ['fields'], fieldNames: RELEASE_PHASE_FIELDS });
    const tenantId = callerOf(req).tenantId;
    const phase = await phaseOr404(db, tenantId, req.params.id);
    // Found, then possibly deleted by a concurrent DELETE before it is read.
    return { release_phase: project(found(await getPhase(db, tenantId, phase.id), `release phase ${req.params.id}`), p.fields) };
  });

  app.put<{ Params: IdParams; Body: { release_phase: ReleasePhaseBody } }>(
    '/release_phases/:id',
    { schema: { params: idParams, querystring: writeQuery, body: releasePhaseUpdateBody } },
    async (req) => {
      const tenantId = callerOf(req).tenantId;
      const phase = await phaseOr404(db, tenantId, req.params.id);
      return { release_phase: await updatePhase(db, tenantId, phase.id, req.body.release_phase) };
    },
  );

  app.delete<{ Params: IdParams }>('/release_phases/:id', { schema: { params: idParams, querystring: writeQuery } }, async (req, reply) => {
    const tenantId = callerOf(req).tenantId;
    const phase = await phaseOr404(db, tenantId, req.params.id);
    await deletePhase(db, tenantId, phase.id);
    return reply.code(204).send();
  });
};
