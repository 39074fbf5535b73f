import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { agentToolsPlugin, listenUrl } from '@floe/agent-tools';
import type { AuthDeps, AuthenticateOptions, ManagementAuthDeps } from '@floe/auth';
import { toHttp } from '@floe/errors';
import type { Db } from '@floe/meta';
import { httpFrameworkLogging, httpServerMetrics, type Logger, type SelfTelemetry } from '@floe/telemetry';
import { adminPlugin } from './admin.ts';
import { authPlugin, watchCallerGone } from './auth-plugin.ts';
import type { HeldBytes, TenantLimits } from '@floe/limits';
import { queryBudgetPlugin, type QueryBudget } from './query-budget.ts';
import { heldAnswersPlugin } from './held-answers.ts';
import { arrivalDeadlines, asFloeError, carriesBody, clientErrorHandler, headerValue, parseJsonBody, validationError } from '@floe/runtime';
import { logDeletePlugin } from './logquery/deletes.ts';
import { createPendingDeletions } from './logquery/pending-deletions.ts';
import { logQueryPlugin } from './logquery/plugin.ts';
import type { TableColumns } from './table-columns.ts';
import { managementPlugin } from './management/plugin.ts';
import { MANAGEMENT_BODY_LIMIT } from './management/json-body.ts';
import { cutOffWhenStalled } from './send-timeout.ts';
import { metricQueryPlugin, type MetricQueryOptions } from './metricquery/plugin.ts';
import { profilesByTracePlugin } from './profilequery/by-trace.ts';
import { profileQueryPlugin } from './profilequery/plugin.ts';
import { queryIrPlugin } from './query-ir/plugin.ts';
import type { ProvisionDataset } from './management/options.ts';
import type { TenantTables } from './management/tenant-tables.ts';
import type { CompactorClient } from './compactor-client.ts';
import { SHARED_SCHEMAS } from './management/schemas.ts';
import { collectRoutes } from './openapi.ts';
import type { QuerierClient } from './querier-client.ts';
import type { QueryDemand } from './query-demand.ts';
import { isHttpsUrl } from './session/cookie.ts';
import { sessionRoutes, type SessionOptions } from './session/routes.ts';
import { tempoStreamingRoutes, type TempoStreamingOptions } from './tempo-streaming.ts';
import { planningProxyPlugin, type PlanningProxyOptions } from './planning-proxy.ts';
import { demoReadOnly } from './demo-read-only.ts';
import { traceQueryPlugin } from './tracequery.ts';
import { selfTracingPlugin, type SelfTracingOptions } from './self-tracing.ts';
import { scmPlugin } from './scm/plugin.ts';
import { oauthPlugin, type OAuthOptions } from './oauth/plugin.ts';
import type { Scm } from './scm/service.ts';

export interface AppOptions {
  log: Logger;
  /** Certificate and key when the port serves TLS (config `tls`), with the ALPN protocols it offers; absent: cleartext. */
  https?: { cert: Buffer; key: Buffer; ALPNProtocols?: string[] };
  /** Tempo's streaming search as gRPC routes (router.tempo_streaming; the port must also speak HTTP/2: servePortOverHttp2). */
  tempoStreaming?: TempoStreamingOptions;
  /** The product-planning API forwarded at this address (planning-proxy.ts); absent: its paths are 404. */
  planning?: PlanningProxyOptions;
  auth: AuthDeps;
  /** Credentials of the management API and sessions (break-glass key, API keys, session cookie). */
  managementAuth: ManagementAuthDeps;
  querier: QuerierClient;
  /** The per-tenant query budget of the query APIs (absent: unlimited). */
  queryBudget?: QueryBudget;
  /** A tenant's limits (its settings over limits.*), which the log API's drilldown-limits shows (absent: the defaults). */
  tenantLimits?: (tenant: string) => Promise<TenantLimits>;
  /** Query demand counting of the query APIs (absent: not counted). */
  queryDemand?: QueryDemand;
  /** A dataset's table columns from the catalog (materialized labels); see table-columns.ts. */
  tableColumns?: TableColumns;
  queryTimeoutMs: number;
  /** router.max_query_samples: most points one PromQL query may read. */
  maxQuerySamples?: number;
  /** router.remote_read_max_samples: most samples one remote read answer may hold. */
  remoteReadMaxSamples?: number;
  /** router.series_label_cache_size: remote-written series whose labels PromQL reads keep (0: none). */
  seriesLabelCacheSize?: number;
  maxBodyBytes: number;
  /** router.read_timeout: a request body still arriving after this long is cut (absent: never). */
  readTimeoutMs?: number;
  /** router.send_timeout: a response its client takes nothing of for this long is cut off. */
  sendTimeoutMs?: number;
  /** router.max_held_answer_mb: query answers held for clients that have not read them (held-answers.ts). */
  heldAnswers?: HeldBytes;
  isReady: () => boolean;
  db: Db;
  /** Keys with instance-admin rights (auth.admin_api_key, the local token of `floe all`). */
  adminKeys: () => readonly string[];
  /** public.api_url: session cookies are Secure when it is https. */
  publicUrl: string;
  /** auth.session_ttl in milliseconds. */
  sessionTtlMs: number;
  /** SSO, the password form's switch and the demo account (spec 2, Session and login). */
  login?: Pick<SessionOptions, 'oidc' | 'passwordLoginDisabled' | 'demo' | 'loginAttempts'>;
  /** Table provisioning at dataset creation (best effort); absent until the writer offers one. */
  provisionDataset?: ProvisionDataset;
  /** A tenant's tables: listing and on-demand provisioning. */
  tables?: TenantTables;
  /** The compactor that /api/v1/ops/compact drives (absent: those routes answer 503). */
  compactor?: CompactorClient;
  /** Spans and Server-Timing of every request (self_monitoring.enabled; absent: none). */
  selfTracing?: SelfTracingOptions;
  /** The process's meter and `GET /metrics` (absent: neither). */
  telemetry?: SelfTelemetry;
  /** The source-control integration (absent: the scm section is unset; its link routes answer 404). */
  scm?: Scm;
  /** The ruler's config API and rule state (absent: /api/v1/rules and /alerts answer empty lists). */
  rules?: MetricQueryOptions['rules'];
  /** The OAuth authorization server (auth.oauth; absent: disabled, its routes answer 404). */
  oauth?: Pick<OAuthOptions, 'accessTokenTtlMs' | 'refreshTokenTtlMs' | 'consentUrl'>;
}


/**
 * The router's plugin tree, built without listening (tests may inject). Cross-cutting concerns
 * (error envelope, not-found, the route collector of the OpenAPI document) sit at the root; each
 * API surface is an encapsulated plugin with its own prefix and its own auth scope.
 */
export async function buildApp(opts: AppOptions) {
  const app = Fastify({
    ...httpFrameworkLogging(opts.log, 'router'),
    bodyLimit: opts.maxBodyBytes,
    ...(opts.https ? { https: opts.https } : {}),
    // Request bodies are checked as written: no type coercion ("true" is not a boolean) and unknown
    // fields refused rather than silently dropped (fastify's defaults do both).
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    schemaErrorFormatter: validationError,
    // A URL fastify cannot route (a bad percent-escape, a path parameter over its length) gets
    // the envelope too, not fastify's own body.
    frameworkErrors: (err, req, reply) => sendError(err, req, reply),
    clientErrorHandler,
  });

  const sendError = (err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const out = toHttp(asFloeError(err));
    if (out.unexpected) req.log.error({ err }, 'unexpected error');
    void reply.code(out.status).headers(out.headers).type('application/json').send(out.body);
  };
  app.setErrorHandler(sendError);
  app.addHook('onRequest', async (req, reply) => watchCallerGone(req, reply));
  // Without a deadline a client that sends its headers and then dribbles its body (management
  // JSON, query forms, OAuth token forms, MCP) holds its connection and request for ever: fastify's
  // requestTimeout is 0, and so is the HTTP/2 port's (servePortOverHttp2), whose requests come
  // through these same hooks. Cleared once the body is in (every route parses it before
  // preValidation); at stop, uploads still arriving are cut rather than awaited.
  if (opts.readTimeoutMs) {
    const arrivals = arrivalDeadlines(opts.readTimeoutMs);
    app.addHook('onRequest', async (req, reply) => {
      if (carriesBody(req.raw)) arrivals.expect(req.raw, reply.raw);
    });
    app.addHook('preValidation', async (req) => arrivals.arrived(req.raw));
    app.addHook('preClose', async () => arrivals.cutArriving());
  }
  // Node keeps what a client has not read in memory for as long as its connection stays open:
  // without this, a client that stopped reading held a large answer (a trace, a range query) for
  // ever. Armed once the answer is being sent, so a long query is not cut while it runs.
  if (opts.sendTimeoutMs) {
    const ms = opts.sendTimeoutMs;
    app.addHook('onSend', async (_req, reply, payload) => {
      cutOffWhenStalled(reply.raw, ms);
      return payload;
    });
  }
  app.setNotFoundHandler((_req, reply) => {
    void reply.code(404).type('application/json').send({ status: 'error', errorType: 'not_found', error: 'no such endpoint' });
  });
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: MANAGEMENT_BODY_LIMIT }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  // JSON or forms (request-params.ts) only: text/plain is 415, not a string schemas then refuse
  // with a 400 (the ruler's routes take YAML as text/plain in their own scope).
  app.removeContentTypeParser('text/plain');
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  // Before any route, so its hooks see every request.
  if (opts.selfTracing) await app.register(selfTracingPlugin, opts.selfTracing);
  if (opts.telemetry) httpServerMetrics(app, opts.telemetry);
  // Before the routes are collected: the planning service documents its own API, not this one.
  if (opts.planning) await app.register(planningProxyPlugin, opts.planning);
  // gRPC, not part of the HTTP API the OpenAPI document describes.
  if (opts.tempoStreaming) await app.register(tempoStreamingRoutes, opts.tempoStreaming);
  const routes = collectRoutes(app);
  if (opts.login?.demo) await app.register(demoReadOnly, { auth: opts.managementAuth });

  app.get('/ready', async (_req, reply) => (opts.isReady() ? reply.code(200).send('ready\n') : reply.code(503).send('not ready\n')));

  // Every query API: the caller's tenant (query scope) and the per-tenant query budget, then its routes.
  const queryApi = (prefix: string, api: (scope: FastifyInstance) => PromiseLike<unknown>, auth: AuthenticateOptions = {}) =>
    app.register(
      async (scope) => {
        await scope.register(authPlugin, { auth: opts.auth, scope: 'query', ...auth });
        // Before the budget: a tenant whose clients hold its share of answers spends no token.
        await scope.register(heldAnswersPlugin, { held: opts.heldAnswers });
        await scope.register(queryBudgetPlugin, { budget: opts.queryBudget });
        await api(scope);
      },
      { prefix },
    );
  // Spec 1, Authentication rule 3: on the trace query API a request naming no tenant is malformed (400).
  await queryApi('/tracequery', (s) => s.register(traceQueryPlugin, { querier: opts.querier, queryTimeoutMs: opts.queryTimeoutMs }), { missingTenant: 'bad_data' });
  const pendingDeletions = createPendingDeletions(opts.db, app.log);
  await queryApi('/logquery', (s) =>
    s.register(logQueryPlugin, { querier: opts.querier, queryTimeoutMs: opts.queryTimeoutMs, demand: opts.queryDemand, tableColumns: opts.tableColumns, tenantLimits: opts.tenantLimits, pendingDeletions, rules: opts.rules }),
  );
  // Loki's log deletion API beside the log queries: keys with the delete scope, no query budget.
  await app.register(
    async (scope) => {
      await scope.register(authPlugin, { auth: opts.auth, scope: 'delete' });
      await scope.register(logDeletePlugin, { db: opts.db, changed: pendingDeletions.changed });
    },
    { prefix: '/logquery' },
  );
  await queryApi('/metricquery', (s) =>
    s.register(metricQueryPlugin, {
      querier: opts.querier,
      queryTimeoutMs: opts.queryTimeoutMs,
      demand: opts.queryDemand,
      maxSamples: opts.maxQuerySamples,
      remoteReadMaxSamples: opts.remoteReadMaxSamples,
      seriesLabelCacheSize: opts.seriesLabelCacheSize,
      tableColumns: opts.tableColumns,
      deletes: { db: opts.db, compactor: opts.compactor },
      rules: opts.rules,
    }),
  );
  await queryApi('/profilequery', (s) => s.register(profileQueryPlugin, { querier: opts.querier, queryTimeoutMs: opts.queryTimeoutMs, tableColumns: opts.tableColumns }));
  // profiles_by_trace sits at the root's /api/profiles (spec 1), with the query APIs' auth and budget.
  await queryApi('/api/profiles', (s) => s.register(profilesByTracePlugin, { querier: opts.querier, queryTimeoutMs: opts.queryTimeoutMs }));
  // Agent tools (MCP) at /mcp: the query scope's auth refuses a bad key with 401 up front; the
  // tools call the query APIs above over HTTP with the caller's credentials, whose budget is
  // charged there, once per call.
  // An OAuth access token names its tenant, so X-Tenant-ID may be left out here; a 401 points MCP
  // clients at the authorization server (RFC 9728 §5.1).
  const resourceMetadata = `${opts.publicUrl.replace(/\/+$/, '')}/.well-known/oauth-protected-resource/mcp`;
  await app.register(async (s) => {
    if (opts.oauth) {
      s.addHook('onSend', async (_req, reply, payload) => {
        if (reply.statusCode === 401) void reply.header('www-authenticate', `Bearer resource_metadata="${resourceMetadata}"`);
        return payload;
      });
    }
    await s.register(authPlugin, { auth: opts.auth, scope: 'query', tenantFromKey: true });
    await s.register(agentToolsPlugin, {
      routerUrl: () => listenUrl(app.server.address()),
      credentials: (req) => ({ authorization: req.headers.authorization, tenant: req.tenant!.tenant, dataset: headerValue(req.headers, 'x-dataset-id') }),
    });
  });
  await app.register(adminPlugin, { prefix: '/api/v1/admin', db: opts.db, adminKeys: opts.adminKeys });
  // The native Query IR (spec 2): beside the management API, with the query APIs' key rules plus sessions.
  await app.register(queryIrPlugin, {
    prefix: '/api/v1',
    auth: opts.auth,
    managementAuth: opts.managementAuth,
    querier: opts.querier,
    queryTimeoutMs: opts.queryTimeoutMs,
    maxSamples: opts.maxQuerySamples,
    queryBudget: opts.queryBudget,
    tableColumns: opts.tableColumns,
    pendingDeletions,
  });
  await app.register(managementPlugin, { prefix: '/api/v1', db: opts.db, auth: opts.managementAuth, provisionDataset: opts.provisionDataset, tables: opts.tables, compactor: opts.compactor, routes });
  await app.register(scmPlugin, { scm: opts.scm, auth: opts.managementAuth, publicUrl: opts.publicUrl });
  if (opts.oauth) await app.register(oauthPlugin, { db: opts.db, auth: opts.managementAuth, publicUrl: opts.publicUrl, ...opts.oauth });
  await app.register(sessionRoutes, {
    prefix: '/ui/session',
    db: opts.db,
    auth: opts.managementAuth,
    ttlMs: opts.sessionTtlMs,
    cookie: { secure: isHttpsUrl(opts.publicUrl) },
    ...opts.login,
    appUrl: opts.publicUrl,
  });
  return app;
}
