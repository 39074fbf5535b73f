import type { FloeConfig } from '@floe/config';
import { LoginAttempts, limitStoresFromConfig } from '@floe/limits';
import { migrate, openDbFromConfig, type Db } from '@floe/meta';
import type { ServiceHandle } from '@floe/runtime';
import { createLogger, type Logger, type SelfTelemetry } from '@floe/telemetry';
import { buildApp } from './app.ts';
import { createPlanningAuth } from './auth.ts';

export interface PlanningDeps {
  log?: Logger;
  /** The metadata DB of the composition (`floe all` holds PGlite); otherwise opened from config. */
  db?: Db;
  /** The process's meter and `GET /metrics`. */
  telemetry?: SelfTelemetry;
}

/**
 * The product-planning API (spec 3) on planning.port (3300). It migrates the metadata DB it opens
 * itself (a shared one is migrated by its owner), serves /api/v1 and /ready, and on stop reports
 * not-ready, lets in-flight requests finish, then closes what it opened.
 */
export async function start(config: Readonly<FloeConfig>, deps: PlanningDeps = {}): Promise<ServiceHandle> {
  const log = (deps.log ?? createLogger({ level: config.log.level })).child({ component: 'planning' });
  const ownDb = !deps.db;
  const db = deps.db ?? (await openDbFromConfig(config));
  if (ownDb) await migrate(db);
  const limitStores = limitStoresFromConfig(config, log);
  const auth = createPlanningAuth(db, { adminApiKey: config.auth.admin_api_key, ttlMs: config.auth.key_cache_ttl, loginAttempts: new LoginAttempts(limitStores.buckets) });
  let ready = false;
  const app = await buildApp({
    log,
    db,
    auth,
    buckets: limitStores.buckets,
    rateLimit: { ratePerSec: config.planning.rate_limit_per_sec, burst: config.planning.rate_limit_burst },
    maxBodyBytes: config.planning.max_body_bytes,
    isReady: () => ready,
    telemetry: deps.telemetry,
  });
  try {
    await app.listen({ host: config.planning.host, port: config.planning.port });
  } catch (err) {
    auth.dispose();
    await limitStores.close();
    if (ownDb) await db.close();
    throw err;
  }
  const port = (app.server.address() as { port: number }).port;
  ready = true;
  log.info({ port }, 'planning ready');
  return {
    name: 'planning',
    ports: { http: port },
    isReady: () => ready,
    drain: () => {
      ready = false;
    },
    async stop() {
      ready = false;
      // fastify's close stops accepting connections and waits for requests in flight.
      await app.close();
      auth.dispose();
      await limitStores.close();
      if (ownDb) await db.close();
    },
  };
}
