import { mkdir } from 'node:fs/promises';
import type * as grpc from '@grpc/grpc-js';
import type { FlightDescriptor } from '@floe/proto';
import type { Table } from 'apache-arrow';
import type { FloeConfig } from '@floe/config';
import { authDepsFromDb, parseAuthorization, type TenantContext } from '@floe/auth';
import { FloeError } from '@floe/errors';
import { ipcSchemaBytes, metadataGetter, remainingMs, startFlightServer, type QuerierCalls } from '@floe/flight';
import { openFloeCatalog } from '@floe/iceberg';
import { openDbFromConfig, type Db } from '@floe/meta';
import { serverTlsFromConfig, type ServerTls, startAdminServer, type ServiceHandle } from '@floe/runtime';
import { fileCacheFromConfig, objectStoreFromConfig, observeDuckDbMemory, type ObjectStore } from '@floe/storage';
import { createLogger, noSelfTelemetry, traceGrpcService, type Logger, type SelfTelemetry } from '@floe/telemetry';
import { FileResolver } from './file-resolver.ts';
import { observeQuerierCaches, observeUnreadableFiles } from './querier-metrics.ts';
import { SeriesListsCache } from './series-lists.ts';
import { QueryHandler } from './query-handler.ts';
import { tempoQuerierService, traceByIdFinder, traceSearcher } from './tempo-service.ts';
import { TraceLookup } from './trace-lookup.ts';
import { schedulerFromConfig, type Schedule } from './query-scheduler.ts';
import { heldResultsFromConfig, tableBytes } from './held-results.ts';
import { callError } from './call-error.ts';
import { readFileSync } from 'node:fs';
import { bindParameters, flightSqlCommand, isFlightSql, metadataTable, preparedStatementAction, statementTicket, type MetadataScope } from './flight-sql.ts';
import { parameterValues, type Statement } from './flight-sql-params.ts';

/** This package's version, as Flight SQL's SqlInfo reports it. */
const QUERIER_VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface SharedDeps {
  log?: Logger;
  db?: Db;
  store?: ObjectStore;
  /** Key shared with an in-process router when auth.internal_service_key is empty. */
  internalKey?: string;
  /** Floe's own tracer (self_monitoring); absent or disabled: no spans. */
  telemetry?: SelfTelemetry;
  /** The process's server certificate (`floe all`: one reader for every port); absent: read from config.tls. */
  tls?: ServerTls;
}

/** The querier's handle: a service, and its calls for a router in the same process. */
export interface QuerierHandle extends ServiceHandle {
  readonly inProcess: QuerierCalls;
}

/**
 * The querier: an Arrow Flight server (port 50054) that runs SQL in a locked-down DuckDB over the
 * Parquet files the Iceberg metadata selects, and on the same port Tempo's Querier service for
 * trace-by-id reads from the files' id blocks.
 */
export async function start(config: Readonly<FloeConfig>, deps: SharedDeps = {}): Promise<QuerierHandle> {
  const log = (deps.log ?? createLogger({ level: config.log.level })).child({ component: 'querier' });
  const ownDb = !deps.db;
  const db = deps.db ?? (await openDbFromConfig(config));
  const ownStore = !deps.store;
  const store = deps.store ?? objectStoreFromConfig(config);
  const catalog = openFloeCatalog(db, store);
  const cache = fileCacheFromConfig(config);
  const internalKey = config.auth.internal_service_key || deps.internalKey || '';
  // The internal key also stands for a router's session callers (auth: AuthDeps.serviceKey).
  const auth = { ...authDepsFromDb(db, { adminApiKey: config.auth.admin_api_key, ttlMs: config.auth.key_cache_ttl }), serviceKey: internalKey };
  const resolver = new FileResolver(catalog, store, cache, log);
  const handler = new QueryHandler(
    auth,
    resolver,
    {
      timeoutMs: config.querier.query_timeout,
      memoryLimit: config.querier.memory_limit,
      threads: config.querier.threads,
      maxRows: config.querier.max_result_rows,
      maxBytes: config.querier.max_result_mb * 1024 * 1024,
      tempDir: config.querier.temp_dir,
    },
    log,
    internalKey,
    config.querier.series_cache_mb > 0 ? new SeriesListsCache(config.querier.series_cache_mb * 1024 * 1024) : undefined,
  );
  await mkdir(config.querier.temp_dir, { recursive: true });
  observeQuerierCaches(deps.telemetry ?? noSelfTelemetry, { stats: () => cache.stats(), maxBytes: config.storage.cache_max_bytes }, () => handler.seriesListsStatus());
  observeUnreadableFiles(deps.telemetry ?? noSelfTelemetry, () => resolver.unreadableFileQueries);
  // The query handler's shared instance (planned queries, trace lookups); user SQL runs in an instance per query.
  observeDuckDbMemory(deps.telemetry, 'querier', () => handler.duckdbMemory());
  const traces = new TraceLookup(resolver, store, (o) => handler.runInternal(o), log);
  const scheduler = schedulerFromConfig(config, deps.telemetry ?? noSelfTelemetry);
  const held = heldResultsFromConfig(config, deps.telemetry ?? noSelfTelemetry);
  const schedule: Schedule = (tenant, callerMs, work, signal) => scheduler.run(tenant, callerMs, work, signal);
  // Planning makes a DuckDB instance as a run does, so it waits for a slot too: a flood of prepares
  // cannot hold more instances than querier.max_concurrent.
  const describe = (ctx: TenantContext, sql: string, signal?: AbortSignal) => schedule(ctx.tenant, undefined, (leftMs) => handler.describeStatement(ctx, sql, leftMs), signal);

  /** A Flight SQL statement, with the values bound to it if any (as user SQL: the locked-down sandbox). */
  const runStatement = (ctx: TenantContext, statement: Statement, callerMs: number | undefined, signal?: AbortSignal) =>
    handler.runStatement(ctx, statement.sql, statement.paramsIpc ? parameterValues(statement.paramsIpc) : [], callerMs, signal);
  /**
   * `signal`: the caller cancelled; a query still waiting for its turn never runs, a running one is
   * interrupted. The result comes charged to the held results: `release` once the caller has it.
   */
  const doGet = async (get: (name: string) => string | undefined, ticket: Uint8Array, callerMs: number | undefined, signal?: AbortSignal): Promise<{ table: Table; release: () => void }> => {
    try {
      // Authenticated before the command is read: a caller without credentials learns nothing of it.
      const ctx = await handler.authenticate(get, { tenantFromKey: isFlightSql(ticket) });
      held.admit(ctx.tenant);
      const table = await schedule(
        ctx.tenant,
        callerMs,
        async (leftMs) => {
          const sql = flightSqlCommand(ticket);
          if (!sql) return await handler.run(ctx, ticket, leftMs, signal);
          if (sql.kind === 'statement_ticket' || sql.kind === 'statement' || sql.kind === 'prepared') return await runStatement(ctx, sql.statement, leftMs, signal);
          return await metadataTable(sql, metadataScope(ctx));
        },
        signal,
      );
      return { table, release: held.charge(ctx.tenant, tableBytes(table)) };
    } catch (err) {
      throw callError(err, log, 'query failed');
    }
  };
  /**
   * A command descriptor's result schema (with its row count when known) and the ticket of its
   * endpoint, for GetFlightInfo and GetSchema. A plain ticket runs, so both are its result's; a
   * Flight SQL statement is only planned (describeStatement: no data file is read), since its
   * DoGet runs it.
   */
  const described = async (descriptor: FlightDescriptor, metadata: grpc.Metadata, signal: AbortSignal) => {
    if (descriptor.cmd.length === 0) throw new FloeError('bad_data', 'a command descriptor holding SQL is needed');
    const ctx = await handler.authenticate(metadataGetter(metadata), { tenantFromKey: isFlightSql(descriptor.cmd) });
    const sql = flightSqlCommand(descriptor.cmd);
    if (!sql) {
      // A plain ticket may be Floe's JSON form (SQL with parameters), which cannot be wrapped: it runs.
      const table = await schedule(ctx.tenant, undefined, () => handler.run(ctx, descriptor.cmd, undefined, signal), signal);
      return { schema: table.schema, ticket: descriptor.cmd, totalRecords: BigInt(table.numRows) };
    }
    if (sql.kind === 'statement' || sql.kind === 'prepared' || sql.kind === 'statement_ticket') {
      // -1: a statement's rows are counted only by the DoGet that reads them.
      const { columns } = await describe(ctx, sql.statement.sql, signal);
      return { schema: columns, ticket: statementTicket(sql.statement), totalRecords: -1n };
    }
    const table = await schedule(ctx.tenant, undefined, () => metadataTable(sql, metadataScope(ctx)), signal);
    return { schema: table.schema, ticket: descriptor.cmd, totalRecords: BigInt(table.numRows) };
  };
  /** What Flight SQL's catalog requests see: the caller's tenant and dataset, and its tables' schemas. */
  const metadataScope = (ctx: TenantContext): MetadataScope => ({
    tenant: ctx.tenant,
    dataset: ctx.dataset,
    version: QUERIER_VERSION,
    tableSchema: async (table) => ipcSchemaBytes((await handler.run(ctx, Buffer.from(`SELECT * FROM ${table} LIMIT 0`, 'utf8'))).schema),
  });
  const findTrace = traceByIdFinder({ handler, traces, timeoutMs: config.querier.query_timeout, log, schedule, held });
  // The same calls for a router in this process.
  const inProcess: QuerierCalls = {
    // Handed over, the table is the router's to hold (its HTTP answer): the charge here only
    // refuses a result that does not fit beside those Flight clients have not read yet.
    doGet: async (metadata, ticket, deadlineMs, signal) => {
      const { table, release } = await doGet((name) => metadata[name], ticket, deadlineMs, signal);
      release();
      return table;
    },
    // Handed over as doGet's table is: admitted (refused while the tenant's Flight and Tempo
    // clients hold its share), not charged, since it is not encoded here (the router holds it).
    findTraceById: async (metadata, traceId, deadlineMs, signal) => (await findTrace((name) => metadata[name], traceId, deadlineMs, signal)).answer,
  };

  let ready = false;
  const ownTls = deps.tls ? undefined : serverTlsFromConfig(config.tls, log);
  const tls = deps.tls ?? ownTls;
  const flight = await startFlightServer({
    host: config.querier.host,
    port: config.querier.port,
    ...(tls ? { credentials: tls.grpcCredentials() } : {}),
    handlers: {
      // The result is held until the client has read it, and at most querier.query_timeout (or
      // the client's deadline, if sooner) once it is whole: a client that stops reading is cut off then.
      doGet: async (ticket, metadata, call, signal) => {
        const { table, release } = await doGet(metadataGetter(metadata), ticket, remainingMs(call), signal);
        const sendBy = Date.now() + Math.min(remainingMs(call) ?? Infinity, config.querier.query_timeout);
        return { schema: table.schema, batches: table.batches, release, sendBy };
      },
      // A command descriptor carries the same bytes as a ticket (SQL text or the JSON form). The
      // answer names one endpoint whose ticket is that command, as Flight clients expect; the
      // schema and row count come from running it, since DuckDB knows them only then.
      // Flight SQL's commands (flight-sql.ts) come packed in an Any: a statement's endpoint gets
      // a statement ticket, a metadata request's the request itself.
      async getFlightInfo(descriptor, metadata, signal) {
        try {
          const { schema, ticket, totalRecords } = await described(descriptor, metadata, signal);
          return {
            schema: ipcSchemaBytes(schema),
            flightDescriptor: descriptor,
            endpoint: [{ ticket: { ticket } }],
            totalRecords,
            totalBytes: -1n,
          };
        } catch (err) {
          throw callError(err, log, 'GetFlightInfo failed');
        }
      },
      // The result's columns without its rows (ADBC and JDBC ask before executing).
      async getSchema(descriptor, metadata, signal) {
        try {
          return (await described(descriptor, metadata, signal)).schema;
        } catch (err) {
          throw callError(err, log, 'GetSchema failed');
        }
      },
      // Flight SQL's prepared statements: planned for the caller (its tables, its refusals); the handle is only the SQL.
      async doAction(type, body, metadata) {
        try {
          const ctx = await handler.authenticate(metadataGetter(metadata), { tenantFromKey: true });
          return await preparedStatementAction(type, body, (sql) => describe(ctx, sql));
        } catch (err) {
          throw callError(err, log, 'DoAction failed');
        }
      },
      // Flight SQL's parameter binding: the answer is a handle carrying the statement and its values.
      async doPut(descriptor, messages, metadata) {
        try {
          await handler.authenticate(metadataGetter(metadata), { tenantFromKey: true });
          return bindParameters(descriptor.cmd, messages);
        } catch (err) {
          throw callError(err, log, 'DoPut failed');
        }
      },
      // Flight SQL clients log in with Basic <tenant>:<api key> (or present a bearer key): the
      // key, once it proves to be the tenant's, is the token they send from then on.
      async handshake(metadata) {
        try {
          const get = metadataGetter(metadata);
          await handler.authenticate(get, { tenantFromKey: true });
          return parseAuthorization(get('authorization') ?? '').secret;
        } catch (err) {
          throw callError(err, log, 'Handshake failed');
        }
      },
    },
    extraServices: [tempoQuerierService({ find: findTrace, search: traceSearcher({ handler, log, schedule, held }), authenticate: (get) => handler.authenticate(get), held, timeoutMs: config.querier.query_timeout, log })],
    onError: (err, method) => log.error({ err, method }, 'unexpected Flight error'),
    instrument: (definition, implementation) => traceGrpcService(deps.telemetry ?? noSelfTelemetry, definition, implementation),
  });
  const admin = await startAdminServer({
    host: config.querier.host,
    port: config.querier.admin_port,
    isReady: () => ready,
    name: 'querier',
    status: () => ({
      series_lists: handler.seriesListsStatus() ?? null,
      queries: {
        running: scheduler.running,
        queued: scheduler.queued,
        queued_by_tenant: scheduler.queuedByTenant(),
        max_concurrent: config.querier.max_concurrent,
        held_result_bytes: held.held,
        held_result_bytes_by_tenant: held.heldByTenant(),
        max_held_result_bytes: held.maxBytes,
      },
    }),
    metrics: deps.telemetry?.metricsEndpoint,
    tls: config.tls.admin_ports ? tls : undefined,
  });
  ready = true;
  log.info({ flightPort: flight.port, adminPort: admin.port }, 'querier ready');
  return {
    name: 'querier',
    ports: { flight: flight.port, admin: admin.port },
    inProcess,
    isReady: () => ready,
    drain: () => {
      ready = false;
    },
    async stop() {
      ready = false;
      await flight.stop(5000);
      ownTls?.close();
      handler.close();
      await admin.close();
      await cache.close();
      if (ownStore) await store.close();
      if (ownDb) await db.close();
    },
  };
}
