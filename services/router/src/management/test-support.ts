// Test helpers of the management suites (not imported by the router): the router app as every
// management test builds it, so the suites cannot drift apart in how they set it up.

import { authDepsFromDb, managementAuthDepsFromDb } from '@floe/auth';
import { loadConfig } from '@floe/config';
import { openFloeCatalog } from '@floe/iceberg';
import { MemoryActiveSeries } from '@floe/limits';
import type { Db } from '@floe/meta';
import type { ObjectStore } from '@floe/storage';
import { createLogger } from '@floe/telemetry';
import { buildApp } from '../app.ts';
import { createTenantTables, type TenantTables } from './tenant-tables.ts';
import type { ProvisionDataset } from './options.ts';

export type App = Awaited<ReturnType<typeof buildApp>>;

/** The instance admin key every management test app accepts. */
export const ADMIN = 'admin-key-for-tests';

export interface TestAppOptions {
  publicUrl?: string;
  provisionDataset?: ProvisionDataset;
  tables?: TenantTables;
  /** router.read_timeout (absent: none). */
  readTimeoutMs?: number;
}

/** A router app on `db` with the management API, as a router in front of no querier. */
export async function makeApp(db: Db, extra: TestAppOptions = {}): Promise<App> {
  const auth = authDepsFromDb(db, { adminApiKey: ADMIN, ttlMs: 1000 });
  return buildApp({
    log: createLogger({ level: 'silent' }),
    auth,
    managementAuth: managementAuthDepsFromDb(db, auth),
    // Nothing here reaches a querier.
    querier: {} as never,
    queryTimeoutMs: 1000,
    maxBodyBytes: 1024 * 1024,
    isReady: () => true,
    db,
    adminKeys: () => [ADMIN],
    publicUrl: extra.publicUrl ?? 'http://localhost:3000',
    sessionTtlMs: 3_600_000,
    provisionDataset: extra.provisionDataset,
    tables: extra.tables,
    readTimeoutMs: extra.readTimeoutMs,
  });
}

/** A tenant's tables in a real catalog on `db` over `store`, every signal enabled, default limits. */
export function makeTenantTables(db: Db, store: ObjectStore): TenantTables {
  return createTenantTables({
    catalog: openFloeCatalog(db, store),
    store,
    schemas: { traces_enabled: true, logs_enabled: true, metrics_enabled: true, profiles_enabled: true, custom_schemas: [] },
    limits: loadConfig({ env: {} }).limits,
    activeSeries: new MemoryActiveSeries(),
    log: createLogger({ level: 'silent' }),
  });
}
