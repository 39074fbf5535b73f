import { join } from 'node:path';
import type { FloeConfig } from '@floe/config';
import { openFloeCatalog } from '@floe/iceberg';
import { openDbFromConfig, type Db } from '@floe/meta';
import { sleep, startAdminServer, type ServiceHandle } from '@floe/runtime';
import { LocalFileCache, objectStoreFromConfig, ParquetWriter, type ObjectStore } from '@floe/storage';
import { createLogger, type Logger } from '@floe/telemetry';
import { Compactor, hasWork, type PassStats } from './compactor.ts';

/** Same catalog and warehouse as the writer's tables (services/writer/src/tables.ts). */

export interface CompactorDeps {
  log?: Logger;
  db?: Db;
  store?: ObjectStore;
}

/**
 * The compactor: every `compactor.interval` (start to start) it runs one pass over every table:
 * merge small files per hour, expire snapshots, sweep orphans. With `enabled: false` it only
 * answers /ready, so a fleet can keep one deployment shape and switch compaction off.
 */
export async function start(config: Readonly<FloeConfig>, deps: CompactorDeps = {}): Promise<ServiceHandle> {
  const c = config.compactor;
  const log = (deps.log ?? createLogger({ level: config.log.level })).child({ component: 'compactor' });
  const ownDb = !deps.db;
  const db = deps.db ?? (await openDbFromConfig(config));
  const ownStore = !deps.store;
  const store = deps.store ?? objectStoreFromConfig(config);
  const catalog = openFloeCatalog(db, store);
  const writer = new ParquetWriter(join(c.work_dir, 'rewrite'), { threads: c.threads });
  // Inputs are read once and then deleted from the table, so nothing is worth keeping: a zero
  // budget drops each copy as soon as its rewrite releases it. The querier's cache directory is
  // not shared, because two caches on one directory would evict each other's files.
  const cache = new LocalFileCache({ dir: join(c.work_dir, 'inputs'), maxBytes: 0 });
  const compactor = new Compactor({
    catalog,
    store,
    writer,
    cache,
    log,
    targetFileBytes: c.target_file_size_mb * 1024 * 1024,
    snapshotRetentionMs: c.snapshot_retention,
  });

  const abort = new AbortController();
  let ready = true;
  const loop = (async () => {
    if (!c.enabled) return;
    while (!abort.signal.aborted) {
      const began = Date.now();
      try {
        logPass(log, await compactor.pass(abort.signal));
      } catch (err) {
        log.error({ err }, 'compaction pass failed; retrying next interval');
      }
      await sleep(Math.max(0, began + c.interval - Date.now()), abort.signal);
    }
  })();

  const admin = await startAdminServer({ host: c.host, port: c.admin_port, isReady: () => ready, name: 'compactor' });
  log.info({ adminPort: admin.port, enabled: c.enabled, intervalMs: c.interval, targetFileSizeMb: c.target_file_size_mb }, 'compactor ready');
  return {
    name: 'compactor',
    ports: { admin: admin.port },
    isReady: () => ready,
    async stop() {
      ready = false;
      abort.abort();
      await loop;
      writer.close();
      await cache.close();
      await admin.close();
      if (ownStore) await store.close();
      if (ownDb) await db.close();
    },
  };
}

function logPass(log: Logger, s: PassStats): void {
  if (!hasWork(s)) return;
  log.info(
    {
      tables: s.tables,
      tablesChanged: s.tablesChanged,
      failedTables: s.failedTables,
      partitionsCompacted: s.compaction.partitions,
      filesBefore: s.compaction.filesBefore,
      filesAfter: s.compaction.filesAfter,
      bytesBefore: s.compaction.bytesBefore,
      bytesAfter: s.compaction.bytesAfter,
      rowsRewritten: s.compaction.rows,
      conflicts: s.compaction.conflicts,
      failedGroups: s.compaction.failures,
      snapshotsExpired: s.expiry.snapshots,
      expiredDataFiles: s.expiry.dataFiles,
      expiredMetadataFiles: s.expiry.manifests + s.expiry.manifestLists,
      orphanDataFiles: s.orphans.data,
      orphanMetadataFiles: s.orphans.metadata,
      durationMs: s.durationMs,
    },
    'compaction pass',
  );
}
