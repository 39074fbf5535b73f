import type { FloeConfig } from '@floe/config';
import { authDepsFromDb, managementAuthDepsFromDb } from '@floe/auth';
import { openDbFromConfig, type Db } from '@floe/meta';
import type { ServiceHandle } from '@floe/runtime';
import { createLogger, type Logger } from '@floe/telemetry';
import { buildApp } from './app.ts';
import { createQuerierClient } from './querier-client.ts';
import type { ProvisionDataset } from './management/options.ts';

export interface SharedDeps {
  log?: Logger;
  db?: Db;
  /** Querier addresses known to the composition (the in-process querier in `floe all`). */
  querierUrls?: () => readonly string[];
  /** Key shared with in-process queriers when auth.internal_service_key is empty. */
  internalKey?: string;
  /** Per-start token of `floe all` that `floe admin bootstrap` uses while PGlite is held here. */
  localAdminToken?: string;
  /** Provisions a new dataset's tables (best effort) when the composition has a provisioner. */
  provisionDataset?: ProvisionDataset;
}

/** The router: every HTTP query surface on port 3000. */
export async function start(config: Readonly<FloeConfig>, deps: SharedDeps = {}): Promise<ServiceHandle> {
  const log = (deps.log ?? createLogger({ level: config.log.level })).child({ component: 'router' });
  const ownDb = !deps.db;
  const db = deps.db ?? (await openDbFromConfig(config));
  const auth = authDepsFromDb(db, { adminApiKey: config.auth.admin_api_key, ttlMs: config.auth.key_cache_ttl });
  const configured = config.router.querier_urls;
  const querierUrls = configured.length > 0 ? () => configured : (deps.querierUrls ?? (() => [`127.0.0.1:${config.querier.port}`]));
  let ready = false;
  const app = await buildApp({
    log,
    auth,
    managementAuth: managementAuthDepsFromDb(db, auth),
    querier: createQuerierClient(querierUrls, config.auth.internal_service_key || deps.internalKey || ''),
    queryTimeoutMs: config.router.query_timeout,
    maxBodyBytes: config.router.max_body_bytes,
    isReady: () => ready,
    db,
    adminKeys: () => [config.auth.admin_api_key, deps.localAdminToken ?? ''],
    publicUrl: config.router.public_url,
    sessionTtlMs: config.auth.session_ttl,
    provisionDataset: deps.provisionDataset,
  });
  await app.listen({ host: config.router.host, port: config.router.port });
  const port = (app.server.address() as { port: number }).port;
  ready = true;
  log.info({ port }, 'router ready');
  return {
    name: 'router',
    ports: { http: port },
    isReady: () => ready,
    drain: () => {
      ready = false;
    },
    async stop() {
      ready = false;
      await app.close();
      if (ownDb) await db.close();
    },
  };
}
