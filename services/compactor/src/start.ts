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
  const state: CompactorStatus = { enabled: c.enabled, intervalMs: c.interval, passes: 0, runningSince: null, lastPass: null };
  const loop = (async () => {
    if (!c.enabled) return;
    while (!abort.signal.aborted) {
      const began = Date.now();
      state.runningSince = new Date(began).toISOString();
      try {
        const stats = await compactor.pass(abort.signal);
        const summary = passSummary(stats);
        if (hasWork(stats)) log.info(summary, 'compaction pass');
        state.lastPass = { startedAt: state.runningSince, finishedAt: new Date().toISOString(), failed: false, ...summary };
      } catch (err) {
        log.error({ err }, 'compaction pass failed; retrying next interval');
        state.lastPass = { startedAt: state.runningSince, finishedAt: new Date().toISOString(), failed: true };
      }
      state.passes++;
      state.runningSince = null;
      await sleep(Math.max(0, began + c.interval - Date.now()), abort.signal);
    }
  })();

  const admin = await startAdminServer({ host: c.host, port: c.admin_port, isReady: () => ready, name: 'compactor', status: () => state });
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

/**
 * `GET /status` of the compactor's admin port: whether a pass runs now (since when), how many
 * finished, and what the last one did, so an operator (or a benchmark) can tell that the data
 * written so far has been compacted: a pass that began after the last write and found nothing to
 * merge.
 */
export interface CompactorStatus {
  enabled: boolean;
  intervalMs: number;
  /** Passes finished since start. */
  passes: number;
  /** Start of the pass in progress (ISO 8601), or null. */
  runningSince: string | null;
  lastPass: ({ startedAt: string; finishedAt: string; failed: boolean } & Partial<PassSummary>) | null;
}

type PassSummary = ReturnType<typeof passSummary>;

/** What a pass did, as logged and as `GET /status` shows it. */
function passSummary(s: PassStats) {
  return {
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
  };
}
