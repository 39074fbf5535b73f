import { randomBytes } from 'node:crypto';
import type { FloeConfig } from '@floe/config';
import { bootstrapSummary, bootstrapTenant, openDbFromConfig, migrate, type Db } from '@floe/meta';
import { presentProcessCertificate, serverTlsFromConfig, startModules, SERVICE_NAMES, type ModuleDef, type ServerTls, type StartedModules } from '@floe/runtime';
import { limitStoresFromConfig, type LimitStores } from '@floe/limits';
import { objectStoreFromConfig, type ObjectStore } from '@floe/storage';
import type { QuerierCalls } from '@floe/flight';
import { EmbeddedLock } from './embedded-lock.ts';
import { TARGETS } from './targets.ts';
import { createLogger, type Logger, type SelfTelemetry } from '@floe/telemetry';
import { startProcessSelfMonitoring } from './self-monitoring.ts';

/**
 * The composition of Floe's services. The metadata DB, object store and logger are plumbing
 * modules (not selectable as targets) shared by every service of the process; `all` is the
 * composite target of the five services. The router depends on the querier only in-process: it
 * calls the querier of the process directly (no gRPC between them) unless router.querier_urls
 * names queriers, and then signs with the process's internal key.
 */
interface Ctx {
  config: Readonly<FloeConfig>;
  log: Logger;
  db?: Db;
  store?: ObjectStore;
  querierPort?: number;
  /** The in-process querier's calls, which the router makes without gRPC. */
  querier?: QuerierCalls;
  /** Signs planner SQL between the in-process router and querier (random per process). */
  internalKey: string;
  /** Admin URL of the compactor of this process, which the router's /api/v1/ops/compact drives. */
  compactorUrl?: string;
  /** The planning service of this process, for the router to forward its paths to. */
  planningUrl?: string;
  /** Held while this process owns the embedded metadata DB. */
  lock?: EmbeddedLock;
  /** Floe's own tracer and meter (self_monitoring), shared by the services of the process. */
  telemetry: SelfTelemetry;
  /** OTLP/HTTP URL of the acceptor of this process, where self-monitoring exports. */
  acceptorUrl?: string;
  /** Token buckets, resend fingerprints and active series, one set for the acceptor and router of the process. */
  limitStores?: LimitStores;
  /** The server certificate (config tls), read and renewed once for every public port of the process. */
  tls?: ServerTls;
}

const plumbing = (name: string, open: (ctx: Ctx) => Promise<() => Promise<void>>): ModuleDef<Ctx> => ({
  name,
  deps: [],
  async start(ctx) {
    const close = await open(ctx);
    return { name, ports: {}, isReady: () => true, stop: close };
  },
});

const MODULES: ModuleDef<Ctx>[] = [
  // First among a service's dependencies, so a bad certificate fails start before the metadata
  // DB opens. Every service has it: with mutual TLS even those without a TLS port (writer,
  // compactor) present the certificate when they call one (self-monitoring).
  plumbing('tls', async (ctx) => {
    const tls = serverTlsFromConfig(ctx.config.tls, ctx.log);
    if (tls?.mutual) presentProcessCertificate(tls);
    ctx.tls = tls;
    return async () => tls?.close();
  }),
  plumbing('meta', async (ctx) => {
    const lock = ctx.config.meta.kind === 'pglite' ? EmbeddedLock.acquire(ctx.config.meta.data_dir) : undefined;
    ctx.lock = lock;
    try {
      ctx.db = await openDbFromConfig(ctx.config);
      const schema = await migrate(ctx.db);
      // Migrations only add; a Floe older than its metadata DB still starts (a rollback of a
      // rolling upgrade), but the operator should know that it runs on a schema it does not know.
      if (schema.unknown.length > 0) {
        ctx.log.warn({ unknownMigrations: schema.unknown, version: schema.version }, 'the metadata DB was migrated by a newer Floe than this one; it runs, but features of the newer one are unavailable here');
      }
    } catch (err) {
      lock?.release();
      throw err;
    }
    const db = ctx.db;
    return async () => {
      await db.close();
      lock?.release();
    };
  }),
  plumbing('limits', async (ctx) => {
    const stores = limitStoresFromConfig(ctx.config, ctx.log);
    ctx.limitStores = stores;
    return () => stores.close();
  }),
  plumbing('store', async (ctx) => {
    ctx.store = objectStoreFromConfig(ctx.config);
    const store = ctx.store;
    return () => store.close();
  }),
  // Services are imported when started, so a single-service process loads only its own code.
  {
    name: 'querier',
    deps: ['tls', 'meta', 'store'],
    start: async (ctx) => {
      const handle = await (await import('@floe/querier')).start(ctx.config, { log: ctx.log, db: ctx.db, store: ctx.store, internalKey: ctx.internalKey, telemetry: ctx.telemetry, tls: ctx.tls });
      ctx.querierPort = handle.ports.flight;
      ctx.querier = handle.inProcess;
      return handle;
    },
  },
  {
    name: 'acceptor',
    deps: ['tls', 'meta', 'store', 'limits'],
    start: async (ctx) => {
      const handle = await (await import('@floe/acceptor')).start(ctx.config, {
        log: ctx.log,
        db: ctx.db,
        store: ctx.store,
        telemetry: ctx.telemetry,
        limitStores: ctx.limitStores,
        internalKey: ctx.internalKey,
        tls: ctx.tls,
        loopback: true,
      });
      // With TLS the process's own clients (ruler, self-monitoring) use the cleartext loopback port.
      ctx.acceptorUrl = `http://127.0.0.1:${handle.ports.loopback ?? handle.ports.http}`;
      return handle;
    },
  },
  { name: 'writer', deps: ['tls', 'meta', 'store'], start: async (ctx) => (await import('@floe/writer')).start(ctx.config, { log: ctx.log, db: ctx.db, store: ctx.store, telemetry: ctx.telemetry, tls: ctx.tls }) },
  {
    name: 'compactor',
    deps: ['tls', 'meta', 'store'],
    start: async (ctx) => {
      const handle = await (await import('@floe/compactor')).start(ctx.config, { log: ctx.log, db: ctx.db, store: ctx.store, telemetry: ctx.telemetry, internalKey: ctx.internalKey, tls: ctx.tls, loopback: true });
      // With tls.admin_ports the router of this process uses the cleartext loopback port (as for the acceptor).
      ctx.compactorUrl = `http://127.0.0.1:${handle.ports.loopback ?? handle.ports.admin}`;
      return handle;
    },
  },
  {
    name: 'router',
    deps: ['tls', 'meta', 'store', 'limits'],
    start: async (ctx) =>
      (await import('@floe/router')).start(ctx.config, {
        log: ctx.log,
        db: ctx.db,
        store: ctx.store,
        querierUrls: ctx.querierPort ? () => [`127.0.0.1:${ctx.querierPort}`] : undefined,
        internalKey: ctx.querierPort ? ctx.internalKey : undefined,
        inProcessQuerier: ctx.querier,
        localAdminToken: ctx.lock?.token,
        compactor: ctx.compactorUrl ? { url: ctx.compactorUrl, key: ctx.internalKey } : undefined,
        acceptor: ctx.acceptorUrl ? { url: ctx.acceptorUrl, key: ctx.internalKey } : undefined,
        planningUrl: () => ctx.planningUrl,
        telemetry: ctx.telemetry,
        limitStores: ctx.limitStores,
        tls: ctx.tls,
        loopback: ctx.lock !== undefined,
      }).then((handle) => {
        ctx.lock?.update({ routerUrl: `http://127.0.0.1:${handle.ports.loopback ?? handle.ports.http}` });
        return handle;
      }),
  },
  { name: 'all', deps: ['querier', 'writer', 'acceptor', 'compactor', 'router'], start: async () => ({ name: 'all', ports: {}, isReady: () => true, stop: async () => {} }) },
  // The product-planning API (spec 3): a separate service beside Floe, not part of `all`.
  // Started beside the router (`floe all planning`), it also answers at the router's address.
  {
    name: 'planning',
    deps: ['tls', 'meta'],
    start: async (ctx) => {
      const handle = await (await import('@floe/planning')).start(ctx.config, { log: ctx.log, db: ctx.db, telemetry: ctx.telemetry });
      ctx.planningUrl = `http://127.0.0.1:${handle.ports.http}`;
      return handle;
    },
  },
];

export interface StartedFloe extends StartedModules {
  /** Creates a tenant (if missing) and a new API key through this process's metadata DB. */
  bootstrap(tenant: string): Promise<{ tenant: string; dataset: string; api_key: string }>;
  /** The process's metadata DB (embedded PGlite can only be opened by one process). */
  readonly db: Db | undefined;
}

export async function startFloe(config: Readonly<FloeConfig>, targets: readonly string[], log?: Logger): Promise<StartedFloe> {
  const logger = log ?? createLogger({ level: config.log.level, name: 'floe' });
  for (const t of targets) {
    if (!(TARGETS as readonly string[]).includes(t)) throw new Error(`unknown target "${t}" (one of: ${TARGETS.join(', ')})`);
  }
  const storing = targets.filter((t) => t !== 'planning');
  if (config.storage.kind === 'fs' && storing.length > 0 && !storing.includes('all') && storing.length < SERVICE_NAMES.length) {
    logger.warn('storage.kind is "fs" while running a subset of services: every process must share the same directory');
  }
  const self = await startProcessSelfMonitoring(config, targets, logger, () => ctx.acceptorUrl);
  const ctx: Ctx = { config, log: logger, internalKey: randomBytes(32).toString('base64url'), telemetry: self.telemetry };
  let started: StartedModules;
  try {
    started = await startModules(MODULES, targets, ctx);
  } catch (err) {
    await self.stop();
    throw err;
  }
  // Self-monitoring never fails a start that got this far: it only observes.
  await self.afterStart(ctx.db).catch((err: unknown) => logger.warn({ err }, 'self-monitoring: not fully started'));
  return {
    ...started,
    get: started.get,
    isReady: started.isReady,
    stop: async (drainMs) => {
      await self.stop();
      await started.stop(drainMs);
    },
    bootstrap: async (tenant) => bootstrapSummary(await bootstrapTenant(ctx.db!, tenant)),
    db: ctx.db,
  };
}
