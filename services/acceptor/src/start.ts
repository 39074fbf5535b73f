import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FloeConfig } from '@floe/config';
import { authDepsFromDb } from '@floe/auth';
import { openFloeCatalog } from '@floe/iceberg';
import { cachedTenantLimits, limitStoresFromConfig, type LimitStores } from '@floe/limits';
import { getTenant, openDbFromConfig, type Db } from '@floe/meta';
import { listenLoopback, SHARED_PORT_ALPN, servePortOverHttp2, serverTlsFromConfig, type ServerTls, type ServiceHandle } from '@floe/runtime';
import { WalAppender, objectStoreFromConfig, type ObjectStore } from '@floe/storage';
import { createLogger, noSelfTelemetry, type Logger, type SelfTelemetry } from '@floe/telemetry';
import { Admission } from './admission.ts';
import { InflightLimit } from './inflight-limit.ts';
import { startGrpcServer } from './grpc-server.ts';
import { buildHttpServer } from './http-server.ts';
import { AcceptedTimes } from './accepted-times.ts';
import { Ingest } from './ingest.ts';
import { MetricsGenerator } from './metrics-generator.ts';
import { SeriesLimiter } from './series-limit.ts';
import { WalBacklogGate } from './wal-backlog.ts';

/**
 * The WAL name of this acceptor's run: the instance's name and when this process started. The
 * writer's ledger records consumed segments as (instance, sequence), and the sequence starts at 0
 * in every process, so a name that outlives a process (a configured instance_id, or the hostname
 * and pid 1 of a restarted container) would make a restart's segments look consumed already.
 */
function walInstanceId(name: string): string {
  return `acc-${name}-${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

/** This acceptor's name: runtime.instance_id, else host and pid. */
const instanceName = (configured: string): string => configured || `${hostname()}-${process.pid}`;

export interface SharedDeps {
  log?: Logger;
  db?: Db;
  store?: ObjectStore;
  /** Floe's own meter (self_monitoring); absent: nothing is recorded. */
  telemetry?: SelfTelemetry;
  /** The limit stores of the process (`floe all` shares them with the router); absent: its own from limits.*. */
  limitStores?: LimitStores;
  /** Key shared with the router of this process (`floe all`) when auth.internal_service_key is empty. */
  internalKey?: string;
  /**
   * With TLS on, also serve HTTP on a cleartext 127.0.0.1 port (`ports.loopback`) for this
   * process's own clients (`floe all`: the ruler, self-monitoring).
   */
  loopback?: boolean;
  /** The process's server certificate (`floe all`: one reader for every port); absent: read from config.tls. */
  tls?: ServerTls;
}

/**
 * The acceptor: OTLP over gRPC (4317) and HTTP (4318), Prometheus remote write (4318).
 * Authenticates, applies the tenant's limits (admission.ts), decodes, converts to rows and
 * acknowledges only after the rows are in a durable WAL segment.
 */
export async function start(config: Readonly<FloeConfig>, deps: SharedDeps = {}): Promise<ServiceHandle> {
  const log = (deps.log ?? createLogger({ level: config.log.level })).child({ component: 'acceptor' });
  const ownDb = !deps.db;
  const db = deps.db ?? (await openDbFromConfig(config));
  const ownStore = !deps.store;
  const store = deps.store ?? objectStoreFromConfig(config);
  const wal = new WalAppender(store, {
    instanceId: walInstanceId(instanceName(config.runtime.instance_id)),
    maxBatchBytes: config.acceptor.wal_max_segment_bytes,
    lingerMs: config.acceptor.wal_linger,
    segmentMaxAgeMs: config.acceptor.wal_segment_max_age,
    onSealError: (err, segment) => log.warn({ err, segment }, 'WAL segment could not be sealed; the writer publishes it once it has been idle a while'),
  });
  // The internal key writes for the router's ruler (recording-rule results, ALERTS), nothing else.
  const auth = { ...authDepsFromDb(db, { adminApiKey: config.auth.admin_api_key, ttlMs: config.auth.key_cache_ttl }), serviceKey: config.auth.internal_service_key || deps.internalKey || '', serviceScopes: ['ingest'] };
  const ownLimitStores = !deps.limitStores;
  const limitStores = deps.limitStores ?? limitStoresFromConfig(config, log);
  // One cache of tenants' limits for admission and the series limit.
  const limitsOf = cachedTenantLimits(config.limits, (t) => getTenant(db, t));
  const meter = (deps.telemetry ?? noSelfTelemetry).meter;
  const seriesLimiter = new SeriesLimiter(limitStores.activeSeries, limitsOf, log);
  // Mimir's active-series gauges: how close each limited tenant is to its limit.
  const activeSeries = meter.createObservableGauge('active_series', { description: 'Metric series a tenant under limits.max_active_series has active (across acceptors), by tenant' });
  const activeSeriesLimit = meter.createObservableGauge('active_series_limit', { description: "A tenant's limits.max_active_series, for tenants this acceptor has written metrics of" });
  meter.addBatchObservableCallback(async (r) => {
    for (const t of await seriesLimiter.active()) {
      r.observe(activeSeries, t.active, { 'tenant.id': t.tenant });
      r.observe(activeSeriesLimit, t.limit, { 'tenant.id': t.tenant });
    }
  }, [activeSeries, activeSeriesLimit]);
  const generator = config.metrics_generator.enabled ? new MetricsGenerator(config.metrics_generator, instanceName(config.runtime.instance_id), log, limitsOf) : undefined;
  const ingest = new Ingest(wal, log, {
    generator,
    series: seriesLimiter,
    itemsAccepted: meter.createCounter('items_accepted', { description: 'Items (spans, log records, data points, profiles) made durable in the WAL, by tenant and signal' }),
    itemsRefused: meter.createCounter('items_refused', {
      description: 'Items (spans, log records, data points, profiles) of acknowledged ingest requests that were not stored, by tenant, signal and reason: invalid, too_old, too_new, series_limit, unsupported',
    }),
  });
  const walBacklog = new WalBacklogGate(store, config.acceptor.max_wal_backlog, log);
  if (config.acceptor.max_wal_backlog > 0) {
    // What the gate last listed, so an alert can fire on a writer falling behind before the limit.
    meter
      .createObservableGauge('wal_backlog_bytes', { description: 'Bytes of WAL segments the writer has not consumed yet (as this acceptor last listed them)', unit: 'By' })
      .addCallback((r) => r.observe(walBacklog.backlog.bytes));
    meter
      .createObservableGauge('wal_backlog_segments', { description: 'WAL segments the writer has not consumed yet (as this acceptor last listed them)' })
      .addCallback((r) => r.observe(walBacklog.backlog.segments));
    meter
      .createObservableGauge('wal_held_bytes', { description: 'Bytes of WAL segments the writers keep only for tables they cannot commit (not counted in wal_backlog_bytes; each owning dataset is refused alone past acceptor.max_wal_backlog)', unit: 'By' })
      .addCallback((r) => r.observe(walBacklog.held.bytes));
    // The limit itself, so an alert compares the two whatever the configuration.
    meter
      .createObservableGauge('wal_backlog_limit', { description: 'acceptor.max_wal_backlog: WAL bytes above which ingest is refused', unit: 'By' })
      .addCallback((r) => r.observe(config.acceptor.max_wal_backlog));
  }
  const admission = new Admission({
    db,
    catalog: openFloeCatalog(db, store),
    buckets: limitStores.buckets,
    dedup: limitStores.dedup,
    config,
    log,
    resendsDropped: meter.createCounter('resends_dropped', { description: 'Byte-identical resends acknowledged without being stored again' }),
    requestBytesAccepted: meter.createCounter('request_bytes_accepted', {
      description: 'Body bytes of acknowledged ingest requests as sent (compressed or not), by tenant, dataset and signal: what each tenant sends, for capacity and the ingest_bytes limit',
      unit: 'By',
    }),
    requestsRefused: meter.createCounter('requests_refused', {
      description: 'Authenticated ingest requests answered with an error, by tenant, signal and reason: rate_limited, quota_exceeded, wal_backlog, wal_table_held, wal_unavailable, or the error kind (bad_data, too_large, unsupported_media_type, …)',
    }),
    walBacklog,
    limitsOf,
  });
  let ready = false;
  const inflight = new InflightLimit({
    maxRequests: config.acceptor.max_inflight_requests,
    maxBytes: config.acceptor.max_inflight_bytes,
    tenantShare: config.acceptor.max_inflight_tenant_share,
    telemetry: deps.telemetry,
  });
  const ownTls = deps.tls ? undefined : serverTlsFromConfig(config.tls, log);
  const tls = deps.tls ?? ownTls;
  const http = buildHttpServer({
    ingest,
    admission,
    auth,
    log,
    maxBodyBytes: config.acceptor.max_body_bytes,
    readTimeoutMs: config.acceptor.read_timeout,
    maxDecompressedBytes: config.acceptor.max_decompressed_bytes,
    isReady: () => ready,
    telemetry: deps.telemetry,
    inflight,
    ...(tls ? { https: { ...tls.serverOptions(), ...(config.acceptor.http2 ? { ALPNProtocols: SHARED_PORT_ALPN } : {}) } } : {}),
  });
  const http2 = config.acceptor.http2 ? servePortOverHttp2(http.server, http.routing) : undefined;
  await http.listen({ host: config.acceptor.host, port: config.acceptor.http_port });
  if (tls) tls.serve(http.server);
  const httpPort = (http.server.address() as { port: number }).port;
  const loopback = tls && deps.loopback ? await listenLoopback(http.routing) : undefined;
  const grpcServer = await startGrpcServer(
    { ingest, admission, auth, log, maxBodyBytes: config.acceptor.max_body_bytes, telemetry: deps.telemetry, inflight, ...(tls ? { credentials: tls.grpcCredentials() } : {}) },
    config.acceptor.host,
    config.acceptor.grpc_port,
  );
  walBacklog.start();
  // Generated metrics go through this acceptor's own WAL, as any export does.
  generator?.start((ctx, req) => ingest.metrics(ctx, req, AcceptedTimes.ANY));
  ready = true;
  log.info({ httpPort, grpcPort: grpcServer.port }, 'acceptor ready');

  return {
    name: 'acceptor',
    ports: { http: httpPort, grpc: grpcServer.port, ...(loopback ? { loopback: loopback.port } : {}) },
    isReady: () => ready,
    drain: () => {
      ready = false;
    },
    async stop() {
      ready = false;
      // Stop taking requests, let in-flight ones finish (their WAL appends complete), then close.
      await grpcServer.stop();
      // HTTP/2 sessions, their requests in progress finished first: the HTTP server's close would wait for them.
      await http2?.stop();
      await loopback?.close();
      await http.close();
      ownTls?.close();
      await generator?.stop();
      await wal.close();
      walBacklog.close();
      if (ownLimitStores) await limitStores.close();
      if (ownStore) await store.close();
      if (ownDb) await db.close();
    },
  };
}
