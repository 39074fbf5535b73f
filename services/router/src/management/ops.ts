import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { authorizeInstance } from '@floe/auth';
import { FloeError } from '@floe/errors';
import { TABLES } from '@floe/schema';
import type { ManagementOptions } from './options.ts';
import { principalOf } from './principal-plugin.ts';
import { ERROR_RESPONSES, datasetIdSchema, tenantIdSchema } from './schemas.ts';

/**
 * Compaction control (spec 2, "Management and operations"; who may: rule 5, admin-authenticated):
 * start an on-demand pass, see what the compactor is doing, or ask what a pass would merge now.
 * The router authenticates the operator (break-glass admin key or an instance admin's session)
 * and passes the request to the compactor's admin port (compactor-client.ts), answering with what
 * the compactor answered.
 */

const TAGS = ['ops'];

const scopeBody = {
  type: 'object',
  additionalProperties: false,
  description: 'Which tables: all when empty; a tenant, a tenant and dataset, and/or one table name.',
  properties: { tenant: tenantIdSchema, dataset: datasetIdSchema, table: { type: 'string', enum: Object.keys(TABLES) } },
} as const;

const passSummary = { type: 'object', additionalProperties: true, description: 'What the pass did: tables, partitions and files compacted, bytes before and after, snapshots expired, orphans removed, duration.' } as const;

const request = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'scope', 'requestedAt', 'startedAt', 'finishedAt', 'result'],
  properties: {
    id: { type: 'string' },
    scope: { anyOf: [scopeBody, { type: 'null' }] },
    requestedAt: { type: 'string', format: 'date-time' },
    startedAt: { type: ['string', 'null'], format: 'date-time' },
    finishedAt: { type: ['string', 'null'], format: 'date-time' },
    result: { anyOf: [passSummary, { type: 'null' }] },
  },
} as const;

type Scope = { tenant?: string; dataset?: string; table?: string };

export const opsRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  const compactor = () => {
    if (!opts.compactor) throw new FloeError('unavailable', 'no compactor configured (router.compactor_url)', { code: 'FLOE_ERR_NO_COMPACTOR' });
    return opts.compactor;
  };
  const relay = (reply: FastifyReply, answer: { status: number; body: unknown }) => reply.code(answer.status).type('application/json').send(answer.body);
  const checkScope = (s: Scope | undefined) => {
    if (s?.dataset !== undefined && s.tenant === undefined) throw new FloeError('bad_data', 'dataset needs tenant', { code: 'FLOE_ERR_OPS_SCOPE' });
    return s ?? {};
  };

  app.post<{ Body: Scope | undefined }>(
    '/ops/compact',
    {
      schema: {
        operationId: 'start_compaction',
        summary: 'Start an on-demand compaction pass over all tables or a tenant, dataset or table (instance admin); it runs after the pass in progress',
        tags: TAGS,
        body: scopeBody,
        response: { 202: request, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      authorizeInstance(principalOf(req), 'ops.compact');
      return relay(reply, await compactor().call('POST', '/compact', checkScope(req.body)));
    },
  );

  app.get(
    '/ops/compact/status',
    {
      schema: {
        operationId: 'get_compaction_status',
        summary: 'The compactor: whether a pass runs, how many finished, the last one, and the latest on-demand passes (instance admin)',
        tags: TAGS,
        response: {
          200: {
            type: 'object',
            additionalProperties: false,
            required: ['enabled', 'intervalMs', 'passes', 'runningSince', 'lastPass', 'requests'],
            properties: {
              enabled: { type: 'boolean' },
              intervalMs: { type: 'integer' },
              passes: { type: 'integer' },
              runningSince: { type: ['string', 'null'], format: 'date-time' },
              lastPass: { anyOf: [passSummary, { type: 'null' }] },
              requests: { type: 'array', items: request },
            },
          },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req, reply) => {
      authorizeInstance(principalOf(req), 'ops.compact');
      return relay(reply, await compactor().call('GET', '/status'));
    },
  );

  app.post<{ Body: Scope | undefined }>(
    '/ops/compact/dry-run',
    {
      schema: {
        operationId: 'plan_compaction',
        summary: 'What a pass would merge now, per table and hour, without writing anything (instance admin)',
        tags: TAGS,
        body: scopeBody,
        response: {
          200: {
            type: 'object',
            additionalProperties: false,
            required: ['tables'],
            properties: {
              tables: {
                type: 'array',
                items: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['table', 'files', 'groups'],
                  properties: {
                    table: { type: 'string', description: '<tenant>.<dataset>.<table>' },
                    files: { type: 'integer', description: 'Data files the table has now.' },
                    groups: {
                      type: 'array',
                      items: {
                        type: 'object',
                        additionalProperties: false,
                        required: ['hour', 'files', 'bytes', 'rows'],
                        properties: { hour: { type: 'string', format: 'date-time' }, files: { type: 'integer' }, bytes: { type: 'integer' }, rows: { type: 'integer' } },
                      },
                    },
                  },
                },
              },
            },
          },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req, reply) => {
      authorizeInstance(principalOf(req), 'ops.compact');
      return relay(reply, await compactor().call('POST', '/compact/dry-run', checkScope(req.body)));
    },
  );
};
