import type { FloeConfig } from '@floe/config';
import { authDepsFromDb, managementAuthDepsFromDb } from '@floe/auth';
import type { QuerierCalls } from '@floe/flight';
import { floeNamespace, floeTableDef, openFloeCatalog } from '@floe/iceberg';
import { cachedTenantLimits, limitStoresFromConfig, LoginAttempts, type LimitStores } from '@floe/limits';
import { getTenant, openDbFromConfig, type Db } from '@floe/meta';
import { objectStoreFromConfig, type ObjectStore } from '@floe/storage';
import { listenLoopback, SHARED_PORT_ALPN, servePortOverHttp2, serverTlsFromConfig, type ServerTls, type ServiceHandle } from '@floe/runtime';
import { createLogger, type Logger, type SelfTelemetry } from '@floe/telemetry';
import { buildApp } from './app.ts';
import { createInProcessQuerierClient, createQuerierClient } from './querier-client.ts';
import type { ProvisionDataset } from './management/options.ts';
import { createTenantTables, provisionOnCreate } from './management/tenant-tables.ts';
import { setPromEvalThreads } from './metricquery/eval-thread.ts';
import { createQueryBudget } from './query-budget.ts';
import { createQueryDemand } from './query-demand.ts';
import { createRuler } from './ruler/from-config.ts';
import { createCompactorClient } from './compactor-client.ts';
import { StageTimings, timedQuerier } from './self-tracing.ts';
import { scmFromConfig } from './scm/service.ts';
import { loginFromConfig } from './session/login-from-config.ts';
import { heldAnswersFromConfig } from './held-answers.ts';
import type { OidcRetry } from './session/oidc-provider.ts';

export interface SharedDeps {
  log?: Logger;
  db?: Db;
  /** Where table metadata is written when the router provisions tables. */
  store?: ObjectStore;
  /** Querier addresses known to the composition (the in-process querier in `floe all`). */
  querierUrls?: () => readonly string[];
  /** Key shared with in-process queriers when auth.internal_service_key is empty. */
  internalKey?: string;
  /** The querier of this process, called without gRPC when router.querier_urls is empty. */
  inProcessQuerier?: QuerierCalls;
  /** Per-start token of `floe all` that `floe admin bootstrap` uses while PGlite is held here. */
  localAdminToken?: string;
  /** Replaces the router's own provisioning at dataset creation (tests). */
  provisionDataset?: ProvisionDataset;
  /** Admin URL of the compactor of this process (`floe all`), used when router.compactor_url is empty. */
  compactor?: { url: string; key: string };
  /** The acceptor of this process (`floe all`): where the ruler writes when ruler.remote_write_url is empty, and the key it takes. */
  acceptor?: { url: string; key: string };
  /** The planning service of this process (`floe all planning`), used when router.planning_url is empty; read per request. */
  planningUrl?: () => string | undefined;
  /** SSO discovery retry schedule (tests shorten it; spec 2 Limits: 1 s doubling to 5 min). */
  oidcRetry?: OidcRetry;
  /** Floe's own tracer (self_monitoring); absent or disabled: no spans, no Server-Timing. */
  telemetry?: SelfTelemetry;
  /** The limit stores of the process (`floe all`: the acceptor's too, so usage sees its active series in memory). */
  limitStores?: LimitStores;
  /** With TLS on, also serve on a cleartext 127.0.0.1 port (`ports.loopback`) for this process's own clients (`floe admin bootstrap` beside `floe all`). */
  loopback?: boolean;
  /** The process's server certificate (`floe all`: one reader for every port); absent: read from config.tls. */
  tls?: ServerTls;
}

/** The router: every HTTP query surface on port 3000. */
export async function start(config: Readonly<FloeConfig>, deps: SharedDeps = {}): Promise<ServiceHandle> {
  const log = (deps.log ?? createLogger({ level: config.log.level })).child({ component: 'router' });
  setPromEvalThreads(config.router.promql_threads);
  const ownDb = !deps.db;
  const db = deps.db ?? (await openDbFromConfig(config));
  const ownStore = !deps.store;
  const store = deps.store ?? objectStoreFromConfig(config);
  const catalog = openFloeCatalog(db, store, { materializedLabels: config.schema.materialized_labels });
  // A table's columns as its metadata records them, label columns with their attribute keys
  // (parsed metadata is cached by location).
  const tableColumns = async (tenant: string, dataset: string, table: string) => {
    const handle = await catalog.loadTable(floeNamespace(tenant, dataset), table);
    return handle ? floeTableDef(handle).columns : [];
  };
  const ownLimitStores = !deps.limitStores;
  const limitStores = deps.limitStores ?? limitStoresFromConfig(config, log);
  const tables = createTenantTables({ catalog, store, schemas: config.schema.default_schemas, limits: config.limits, activeSeries: limitStores.activeSeries, log });
  const provisionDataset = deps.provisionDataset ?? provisionOnCreate(tables, db);
  const auth = authDepsFromDb(db, { adminApiKey: config.auth.admin_api_key, ttlMs: config.auth.key_cache_ttl });
  const configured = config.router.querier_urls;
  const querierUrls = configured.length > 0 ? () => configured : (deps.querierUrls ?? (() => [`127.0.0.1:${config.querier.port}`]));
  const querier = () => {
    const key = config.auth.internal_service_key || deps.internalKey || '';
    return configured.length === 0 && deps.inProcessQuerier ? createInProcessQuerierClient(deps.inProcessQuerier, key) : createQuerierClient(querierUrls, key);
  };
  let ready = false;
  const login = await loginFromConfig(config, db, log, deps.oidcRetry);
  const timings = deps.telemetry?.enabled ? new StageTimings() : undefined;
  const queryDemand = createQueryDemand(db, log, config.router.query_demand_flush_interval);
  // Each tenant's limits, read from its settings over the instance's (cached 10 s): the query budget's and the log API's.
  const tenantLimitsOf = cachedTenantLimits(config.limits, (t) => getTenant(db, t));
  const queryBudget = createQueryBudget(limitStores.buckets, tenantLimitsOf);
  const querierClient = timings ? timedQuerier(querier(), timings) : querier();
  const ownTls = deps.tls ? undefined : serverTlsFromConfig(config.tls, log);
  const tls = deps.tls ?? ownTls;
  const rules = createRuler(config, { db, log, querier: querierClient, tableColumns, acceptor: deps.acceptor, telemetry: deps.telemetry, limitsOf: tenantLimitsOf });
  const app = await buildApp({
    log,
    ...(tls ? { https: { ...tls.serverOptions(), ...(config.router.tempo_streaming ? { ALPNProtocols: SHARED_PORT_ALPN } : {}) } } : {}),
    ...(config.router.tempo_streaming ? { tempoStreaming: { auth, querier: querierClient, queryTimeoutMs: config.router.query_timeout, queryBudget, log } } : {}),
    auth,
    managementAuth: managementAuthDepsFromDb(db, auth, { isDemoUser: login.isDemoUser }),
    login: { ...login.login, loginAttempts: new LoginAttempts(limitStores.buckets) },
    queryBudget,
    tenantLimits: tenantLimitsOf,
    querier: querierClient,
    selfTracing: timings && deps.telemetry ? { telemetry: deps.telemetry, timings } : undefined,
    telemetry: deps.telemetry,
    queryDemand,
    tableColumns,
    queryTimeoutMs: config.router.query_timeout,
    maxQuerySamples: config.router.max_query_samples,
    remoteReadMaxSamples: config.router.remote_read_max_samples,
    seriesLabelCacheSize: config.router.series_label_cache_size,
    maxBodyBytes: config.router.max_body_bytes,
    readTimeoutMs: config.router.read_timeout,
    sendTimeoutMs: config.router.send_timeout,
    heldAnswers: heldAnswersFromConfig(config.router.max_held_answer_mb, deps.telemetry),
    planning: {
      planningUrl: () => config.router.planning_url || deps.planningUrl?.(),
      timeoutMs: config.router.query_timeout,
      maxBodyBytes: config.router.max_body_bytes,
    },
    isReady: () => ready,
    db,
    adminKeys: () => [config.auth.admin_api_key, deps.localAdminToken ?? ''],
    publicUrl: config.public.api_url,
    sessionTtlMs: config.auth.session_ttl,
    ...(config.auth.oauth.enabled
      ? { oauth: { accessTokenTtlMs: config.auth.oauth.access_token_ttl, refreshTokenTtlMs: config.auth.oauth.refresh_token_ttl, consentUrl: config.auth.oauth.consent_url } }
      : {}),
    provisionDataset,
    tables,
    compactor: config.router.compactor_url
      ? createCompactorClient(config.router.compactor_url, config.auth.internal_service_key)
      : createCompactorClient(deps.compactor?.url ?? `${config.tls.admin_ports ? 'https' : 'http'}://127.0.0.1:${config.compactor.admin_port}`, config.auth.internal_service_key || deps.compactor?.key || ''),
    scm: scmFromConfig(config, db, log, limitStores.buckets),
    rules: rules.routes,
  });
  const http2 = config.router.tempo_streaming ? servePortOverHttp2(app.server, app.routing) : undefined;
  await app.listen({ host: config.router.host, port: config.router.port });
  if (tls) tls.serve(app.server);
  const port = (app.server.address() as { port: number }).port;
  const loopback = tls && deps.loopback ? await listenLoopback(app.routing) : undefined;
  ready = true;
  rules.ruler?.start();
  log.info({ port }, 'router ready');
  return {
    name: 'router',
    ports: { http: port, ...(loopback ? { loopback: loopback.port } : {}) },
    isReady: () => ready,
    drain: () => {
      ready = false;
    },
    async stop() {
      ready = false;
      // HTTP/2 sessions, their requests in progress finished first: the HTTP server's close would wait for them.
      await http2?.stop();
      await rules.ruler?.stop();
      await rules.notifier?.stop();
      await loopback?.close();
      await app.close();
      ownTls?.close();
      login.close();
      await queryDemand.close();
      if (ownLimitStores) await limitStores.close();
      if (ownStore) await store.close();
      if (ownDb) await db.close();
    },
  };
}
