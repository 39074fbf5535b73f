import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FloeConfig } from '@floe/config';
import { openFloeCatalog } from '@floe/iceberg';
import { liveDatasets, LeaseMembership, observeMembership, openDbFromConfig, type Db } from '@floe/meta';
import { serverTlsFromConfig, sleep, startAdminServer, type ServerTls, type ServiceHandle } from '@floe/runtime';
import { objectStoreFromConfig, observeDuckDbMemory, type ObjectStore } from '@floe/storage';
import { createLogger, type Logger, type SelfTelemetry } from '@floe/telemetry';
import { AttributeTypePins } from './attribute-types.ts';
import { Committer, TablesNotCommittedError } from './committer.ts';
import { HeldPublisher } from './held-segments.ts';
import { ParquetWriter } from '@floe/storage';
import { runReconcileLoop, TableReconciler } from './reconcile.ts';
import { WriterStatus } from './status.ts';
import { observeWriterStatus, writerMetrics } from './writer-metrics.ts';

/** This writer process's name among those publishing held segments (storage's wal-held.ts): a safe object name. */
function heldObjectName(configured: string): string {
  const name = (configured || `${hostname()}-${process.pid}`).replace(/[^A-Za-z0-9_.-]/g, '_');
  return `writer-${name}-${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

export interface SharedDeps {
  log?: Logger;
  db?: Db;
  store?: ObjectStore;
  /** Floe's own meter (self_monitoring); absent: nothing is recorded. */
  telemetry?: SelfTelemetry;
  /** The process's server certificate (`floe all`: one reader for every port); absent: read from config.tls when tls.admin_ports. */
  tls?: ServerTls;
}

/**
 * The writer: tails the WAL and commits its rows to Iceberg. Under load it commits every
 * `writer.flush_interval`; when the log was idle, the first segment is committed at once. Several
 * writers divide the WAL's segments between them (@floe/meta's LeaseMembership). Beside it runs the table
 * reconcile pass (reconcile.ts).
 */
export async function start(config: Readonly<FloeConfig>, deps: SharedDeps = {}): Promise<ServiceHandle> {
  const log = (deps.log ?? createLogger({ level: config.log.level })).child({ component: 'writer' });
  const ownDb = !deps.db;
  const db = deps.db ?? (await openDbFromConfig(config));
  const ownStore = !deps.store;
  const store = deps.store ?? objectStoreFromConfig(config);
  // Tables the writer creates (on ingest, in the reconcile pass) get the configured labels.
  const catalog = openFloeCatalog(db, store, { materializedLabels: config.schema.materialized_labels });
  const metrics = writerMetrics(deps.telemetry);
  // Writers sharing the WAL each commit their share of its segments; alone, all of them. Two that
  // take one segment while their views of the members differ still commit it once per table:
  // the committer re-checks the WAL ledger of the table's snapshots on every commit attempt.
  const membership = new LeaseMembership({ db, group: 'writer', id: config.runtime.instance_id, ttlMs: config.writer.member_ttl, log });
  await membership.join();
  if (deps.telemetry) observeMembership(deps.telemetry, membership);
  const writer = new ParquetWriter(config.writer.work_dir, { threads: config.writer.encode_threads, memoryLimit: config.writer.memory_limit });
  observeDuckDbMemory(deps.telemetry, 'writer', () => writer.memoryUsage());
  // Named per process: writers of two containers may share a name (pid 1), each needs its own object.
  const held = new HeldPublisher(store, heldObjectName(config.runtime.instance_id), log);
  const committer = new Committer({
    store,
    catalog,
    writer,
    log,
    maxRowsPerFile: config.writer.max_rows_per_file,
    commitConcurrency: config.writer.commit_concurrency,
    maxSegmentsPerRound: config.writer.max_segments_per_round,
    maxBytesPerRound: config.writer.max_bytes_per_round,
    markerRetentionMs: config.writer.wal_marker_retention,
    pins: new AttributeTypePins({ db, log }),
    metrics,
    liveDatasets: (pairs) => liveDatasets(db, pairs),
    owns: (key) => membership.owns(key),
    tableRetryBaseMs: config.writer.poll_interval,
    held,
  });

  const abort = new AbortController();
  const reconciler = new TableReconciler({ db, catalog, defaults: config.schema.default_schemas, log, metrics });
  // At start, then every writer.table_reconcile_interval (0: start only). Never fatal.
  const reconcileLoop = runReconcileLoop(reconciler, config.writer.table_reconcile_interval, abort.signal, log);
  let ready = true;
  let lastRound = 0;
  const status = new WriterStatus(membership, held);
  observeWriterStatus(deps.telemetry, status);
  const loop = (async () => {
    while (!abort.signal.aborted) {
      try {
        // The share this round lists is that of the writers as they are now.
        await membership.current();
        const backlog = await committer.backlog();
        status.backlogListed(backlog);
        if (backlog.length === 0) {
          committer.idle();
          await sleep(config.writer.poll_interval, abort.signal);
          continue;
        }
        const wait = lastRound + config.writer.flush_interval - Date.now();
        if (wait > 0) await sleep(wait, abort.signal);
        lastRound = Date.now();
        // A round in progress finishes even when a stop begins: its files are committed or not.
        const stats = await committer.round(abort.signal.aborted ? backlog : undefined);
        status.roundDone(lastRound, stats);
        if (stats.segments > 0) log.debug({ ...stats, backlog: backlog.length }, 'round');
      } catch (err) {
        status.roundFailed(err);
        const failures = status.failuresInARow;
        metrics.commitFailures.add(1, { kind: 'transient' });
        log.error({ err, failures }, 'commit round failed; retrying');
        // The tables that failed wait out their own back-off in the committer; the others go on.
        if (err instanceof TablesNotCommittedError) continue;
        await sleep(Math.min(30_000, config.writer.poll_interval * 2 ** Math.min(failures, 8)), abort.signal);
      }
    }
  })();

  const ownTls = config.tls.admin_ports && !deps.tls ? serverTlsFromConfig(config.tls, log) : undefined;
  const adminTls = config.tls.admin_ports ? (deps.tls ?? ownTls) : undefined;
  const admin = await startAdminServer({ host: config.writer.host, port: config.writer.admin_port, isReady: () => ready, name: 'writer', status: () => status.toJSON(), metrics: deps.telemetry?.metricsEndpoint, tls: adminTls });
  log.info({ adminPort: admin.port }, 'writer ready');
  return {
    name: 'writer',
    ports: { admin: admin.port },
    isReady: () => ready,
    drain: () => {
      ready = false;
    },
    async stop() {
      ready = false;
      abort.abort();
      await Promise.all([loop, reconcileLoop]);
      await membership.leave();
      writer.close();
      await admin.close();
      ownTls?.close();
      if (ownStore) await store.close();
      if (ownDb) await db.close();
    },
  };
}
