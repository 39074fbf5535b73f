import type { FastifyPluginAsync } from 'fastify';
import type { AuthDeps, ManagementAuthDeps } from '@floe/auth';
import { queryBudgetPlugin, type QueryBudget } from '../query-budget.ts';
import { queryIrAuth } from './auth.ts';
import { runQuery, signalTables, type RunDeps } from './run.ts';
import { ERROR_RESPONSES, TAGS, runQueryBody, runQueryResponse, sourcesResponse, type QueryIrBody } from './schema.ts';
import { listSources } from './sources.ts';

export interface QueryIrOptions extends RunDeps {
  auth: AuthDeps;
  managementAuth: ManagementAuthDeps;
  /** The per-tenant query budget (absent: unlimited); only running a query spends it. */
  queryBudget?: QueryBudget;
}

/**
 * The native Query IR endpoint (spec 1 "Query"; spec 2 Management), mounted at /api/v1 beside the
 * management API but with the query APIs' caller rules (auth.ts): POST /query runs one query
 * written as JSON IR, GET /query/sources says what can be queried. Both are in the OpenAPI
 * document, which is where their bodies are described.
 */
export const queryIrPlugin: FastifyPluginAsync<QueryIrOptions> = async (app, opts) => {
  await app.register(queryIrAuth, { auth: opts.auth, managementAuth: opts.managementAuth });
  const run = { ...opts, tables: signalTables(opts.tableColumns) };

  app.get(
    '/query/sources',
    {
      schema: {
        operationId: 'list_query_sources',
        summary: 'The sources POST /api/v1/query reads in the caller’s tenant and dataset: each table’s fields (typed attribute maps included) and operations',
        tags: TAGS,
        response: { 200: sourcesResponse, ...ERROR_RESPONSES },
      },
    },
    async (req) => ({ tenant: req.tenant!.tenant, dataset: req.tenant!.dataset, sources: listSources() }),
  );

  await app.register(async (scope) => {
    await scope.register(queryBudgetPlugin, { budget: opts.queryBudget });
    scope.post<{ Body: QueryIrBody }>(
      '/query',
      {
        schema: {
          operationId: 'run_query',
          summary: 'Run one query written in Floe’s Query IR (logs, metrics, traces or profiles); 400 names the invalid field, 501 a valid request not supported yet, 504 a timeout',
          tags: TAGS,
          body: runQueryBody,
          response: { 200: runQueryResponse, ...ERROR_RESPONSES },
        },
      },
      async (req) => runQuery(run, req, req.body),
    );
  });
};
