import { join } from 'node:path';
import { ConfigError, type FloeConfig } from '@floe/config';
import { openFloeCatalog } from '@floe/iceberg';
import { cachedTenantLimits } from '@floe/limits';
import { dueDeleteRequests, finishDeleteRequest, getTenant, LeaseMembership, observeMembership, openDbFromConfig, startDeleteRequest, type Db } from '@floe/meta';
import { isFloeError, toHttp } from '@floe/errors';
import { serverTlsFromConfig, sleep, startAdminServer, type AdminAnswer, type ServerTls, type ServiceHandle } from '@floe/runtime';
import { LocalFileCache, objectStoreFromConfig, observeDuckDbMemory, ParquetWriter, type ObjectStore } from '@floe/storage';
import { createLogger, noSelfTelemetry, type Logger, type SelfTelemetry } from '@floe/telemetry';
import { compactorMetrics } from './compactor-metrics.ts';
import { randomUUID } from 'node:crypto';
import { Compactor, hasWork, type PassScope, type PassStats } from './compactor.ts';
import { retentionStreamProblems } from '@floe/query';
import { checkTables, type CheckPage } from './table-check.ts';
import { dropDamagedFiles, parseDropDamagedRequest } from './table-drop-damaged.ts';
import { MaintenanceJobs, parseWaitMs } from './maintenance-jobs.ts';
import { findUnregistered, parseRegisterRequest, registerTable } from './table-register.ts';
import { parseRollbackRequest, rollbackTable } from './table-rollback.ts';

/** Same catalog and warehouse as the writer's tables (services/writer/src/tables.ts). */

export interface CompactorDeps {
  log?: Logger;
  db?: Db;
  store?: ObjectStore;
  telemetry?: SelfTelemetry;
  /** The process's own key when auth.internal_service_key is empty (`floe all`): the router presents it to run actions. */
  internalKey?: string;
  /** The process's server certificate (`floe all`: one reader for every port); absent: read from config.tls when tls.admin_ports. */
  tls?: ServerTls;
  /** With tls.admin_ports, also serve the admin routes on a cleartext 127.0.0.1 port for this process's router (`floe all`). */
  loopback?: boolean;
}

/**
 * The compactor: every `compactor.interval` (start to start) it runs one pass over every table
 * (its share of them when several compactors run): merge small files per hour, expire
 * snapshots, sweep orphans. With `enabled: false` it only
 * answers /ready, so a fleet can keep one deployment shape and switch compaction off.
 */
export async function start(config: Readonly<FloeConfig>, deps: CompactorDeps = {}): Promise<ServiceHandle> {
  const c = config.compactor;
  checkRetentionStreams(config.limits.retention_stream);
  const log = (deps.log ?? createLogger({ level: config.log.level })).child({ component: 'compactor' });
  const ownDb = !deps.db;
  const db = deps.db ?? (await openDbFromConfig(config));
  const ownStore = !deps.store;
  const store = deps.store ?? objectStoreFromConfig(config);
  const catalog = openFloeCatalog(db, store);
  const writer = new ParquetWriter(join(c.work_dir, 'rewrite'), { threads: c.threads, memoryLimit: c.memory_limit });
  // The open-hour passes run beside the full ones, with a DuckDB of their own: behind a full
  // pass's sorts (minutes under load) they would wait, and the open hour gain a file per flush.
  const openHourWriter = c.enabled && c.open_hour_interval > 0 ? new ParquetWriter(join(c.work_dir, 'concat'), { threads: 1, memoryLimit: c.memory_limit }) : undefined;
  // Inputs are read once and then deleted from the table, so nothing is worth keeping: a zero
  // budget drops each copy as soon as its rewrite releases it. The querier's cache directory is
  // not shared, because two caches on one directory would evict each other's files.
  const cache = new LocalFileCache({ dir: join(c.work_dir, 'inputs'), maxBytes: 0 });
  const limitsOf = cachedTenantLimits(config.limits, (t) => getTenant(db, t));
  // Compactors divide the tables between them (a disabled one takes no share). Two that visit one
  // table while their views of the members differ are safe: each commit is a compare-and-swap,
  // and a rewrite whose inputs changed meanwhile is dropped.
  const membership = c.enabled ? new LeaseMembership({ db, group: 'compactor', id: config.runtime.instance_id, ttlMs: c.member_ttl, log }) : undefined;
  await membership?.join();
  if (membership && deps.telemetry) observeMembership(deps.telemetry, membership);
  const compactor = new Compactor({
    catalog,
    store,
    writer,
    cache,
    log,
    targetFileBytes: c.target_file_size_mb * 1024 * 1024,
    snapshotRetentionMs: c.snapshot_retention,
    markerRetentionMs: config.writer.wal_marker_retention,
    retentionMs: async (tenant, table) => (await limitsOf(tenant)).retentionMs(table),
    retentionStreams: async (tenant) => (await limitsOf(tenant)).retentionStreams,
    minFileAgeMs: c.min_file_age,
    // An open hour's files are old enough to concatenate after one open-hour interval, or sooner where min_file_age says so.
    ...(openHourWriter ? { openHourAgeMs: Math.min(c.open_hour_interval, c.min_file_age), openHourWriter } : {}),
    ...(membership ? { owns: (table: string) => membership.owns(table) } : {}),
    deleteRequests: {
      // Prometheus deletes series at once and never takes a delete back: no cancel period for metrics.
      due: (nowMs) => dueDeleteRequests(db, new Date(nowMs - c.delete_request_cancel_period), ['metrics']),
      start: (id) => startDeleteRequest(db, id),
      finish: (id, rows) => finishDeleteRequest(db, id, rows),
    },
  });

  const abort = new AbortController();
  let ready = true;
  const state: CompactorStatus = {
    enabled: c.enabled,
    intervalMs: c.interval,
    passes: 0,
    runningSince: null,
    lastPass: null,
    requests: [],
    openHours: { intervalMs: c.open_hour_interval, passes: 0, failedPasses: 0, filesMerged: 0, lastFinishedAt: null, last: null },
  };
  // The members as the membership sees them now (a getter: a spread would copy them once).
  if (membership) Object.defineProperties(state, { compactorId: { value: membership.id, enumerable: true }, compactors: { get: () => membership.members, enumerable: true } });
  // On-demand passes (POST /compact, behind the router's /api/v1/ops/compact) run between the
  // periodic ones, in the order asked; asking wakes the loop from its sleep.
  let wake = new AbortController();
  const pending = () => state.requests.find((r) => r.startedAt === null);
  let nextPeriodic = Date.now();

  const metrics = compactorMetrics(deps.telemetry ?? noSelfTelemetry);
  if (openHourWriter) {
    // Served at 0 from the start, so rules over them have series before the first open-hour pass.
    for (const outcome of ['ok', 'failed']) metrics.openHourPasses.add(0, { outcome });
    metrics.filesConcatenated.add(0);
  }
  observeDuckDbMemory(deps.telemetry, 'compactor', async () => {
    const [a, b] = await Promise.all([writer.memoryUsage(), openHourWriter?.memoryUsage()]);
    return b ? { ...a, bytes: a.bytes + b.bytes, tempBytes: a.tempBytes + b.tempBytes } : a;
  });
  const runPass = async (scope: PassScope | undefined, everyTable: boolean): Promise<LastPass> => {
    const startedAt = new Date().toISOString();
    state.runningSince = startedAt;
    const began = performance.now();
    let outcome = 'failed';
    try {
      const stats = await compactor.pass(abort.signal, scope, everyTable);
      const summary = passSummary(stats);
      if (hasWork(stats)) log.info({ ...summary, ...(scope ? { scope } : {}) }, 'compaction pass');
      outcome = 'ok';
      metrics.succeeded(Date.now());
      return { startedAt, finishedAt: new Date().toISOString(), failed: false, ...summary };
    } catch (err) {
      log.error({ err }, 'compaction pass failed; retrying next interval');
      return { startedAt, finishedAt: new Date().toISOString(), failed: true };
    } finally {
      state.passes++;
      state.runningSince = null;
      metrics.passDuration.record((performance.now() - began) / 1000, { outcome });
    }
  };

  const runOpenHours = async (): Promise<void> => {
    const began = performance.now();
    let failed = true;
    try {
      const stats = await compactor.concatOpenHours(abort.signal);
      if (stats.groups + stats.failures > 0) log.debug({ ...stats, durationMs: Math.round(performance.now() - began) }, 'open hours concatenated');
      failed = stats.failures > 0;
      metrics.filesConcatenated.add(stats.filesBefore);
      state.openHours.filesMerged += stats.filesBefore;
      state.openHours.last = { tablesLoaded: stats.tablesLoaded, tablesIdle: stats.tablesIdle, durationMs: Math.round(performance.now() - began) };
    } catch (err) {
      log.error({ err }, 'open-hour concatenation failed; retrying next interval');
    } finally {
      metrics.openHourPasses.add(1, { outcome: failed ? 'failed' : 'ok' });
      state.openHours.passes++;
      if (failed) state.openHours.failedPasses++;
      state.openHours.lastFinishedAt = new Date().toISOString();
    }
  };

  const loop = (async () => {
    if (!c.enabled) return;
    while (!abort.signal.aborted) {
      const request = pending();
      if (request) {
        request.startedAt = new Date().toISOString();
        // Asked for by an operator: every table of its scope, whichever compactor's share.
        const result = await runPass(request.scope ?? undefined, true);
        request.finishedAt = result.finishedAt;
        request.result = result;
        state.lastPass = result;
        continue;
      }
      if (Date.now() >= nextPeriodic) {
        nextPeriodic = Date.now() + c.interval;
        // The share this pass visits is that of the compactors as they are now.
        await membership?.current();
        state.lastPass = await runPass(undefined, false);
        continue;
      }
      await sleep(Math.max(0, nextPeriodic - Date.now()), AbortSignal.any([abort.signal, wake.signal]));
      if (wake.signal.aborted) wake = new AbortController();
    }
  })();

  // Open-hour passes, open_hour_interval apart (end to start), beside the loop above.
  const openLoop = (async () => {
    if (!openHourWriter) return;
    while (!abort.signal.aborted) {
      await sleep(c.open_hour_interval, abort.signal);
      if (abort.signal.aborted) break;
      await runOpenHours();
    }
  })();

  const jobs = new MaintenanceJobs({ log });
  const actions = {
    'POST /compact': async (body: unknown) => {
      if (!c.enabled) return { status: 409, body: { status: 'error', errorType: 'conflict', error: 'compaction is disabled on this compactor (compactor.enabled: false)' } };
      const scope = parseScope(body);
      const request: CompactionRequest = { id: randomUUID(), scope: scope ?? null, requestedAt: new Date().toISOString(), startedAt: null, finishedAt: null, result: null };
      state.requests.push(request);
      // The last MAX_REQUESTS are kept, never one that has not run yet.
      while (state.requests.length > MAX_REQUESTS && state.requests[0]!.finishedAt !== null) state.requests.shift();
      wake.abort();
      return { status: 202, body: request };
    },
    'POST /compact/dry-run': async (body: unknown) => ({ status: 200, body: { tables: await compactor.plan(parseScope(body)) } }),
    // Checking and repairing tables (table-check.ts, table-rollback.ts, table-drop-damaged.ts, table-register.ts), whether or not compaction is enabled.
    // With check_pages, both read every data file whole: a job (maintenance-jobs.ts) answered when it finishes within wait_ms, else a 202 naming it.
    'POST /tables/check': (body: unknown) =>
      answered(async () => {
        const { scope, page, checkPages, waitMs } = parseCheckRequest(body);
        if (!checkPages) return { status: 200, body: await checkTables(catalog, store, scope, page) };
        const job = jobs.start('check_tables', async (onProgress) => ({ status: 200, body: await checkTables(catalog, store, scope, page, { log, onProgress }) }));
        return jobs.wait(job, waitMs);
      }),
    'POST /tables/rollback': (body: unknown) => answered(async () => ({ status: 200, body: await rollbackTable(catalog, store, parseRollbackRequest(body)) })),
    'POST /tables/drop-damaged-files': (body: unknown) =>
      answered(async () => {
        const req = parseDropDamagedRequest(body);
        if (!req.checkPages) return { status: 200, body: await dropDamagedFiles(catalog, store, req) };
        // A dry run commits nothing, so it races nothing: only drops that commit hold their table.
        const table = `${req.tenant}.${req.dataset}.${req.table}`;
        const job = jobs.start('drop_damaged_files', async (onProgress) => ({ status: 200, body: await dropDamagedFiles(catalog, store, req, { log, onProgress }) }), req.dryRun ? undefined : table);
        return jobs.wait(job, req.waitMs);
      }),
    'GET /jobs/{id}': async (_body: unknown, params: Readonly<Record<string, string>>) => jobs.answer(params.id!),
    // Tables the catalog lost (a metadata DB restored from an older backup): table-register.ts.
    'POST /tables/unregistered': async (body: unknown) => {
      const { scope, page, checkPages } = parseCheckRequest(body);
      if (scope?.dataset !== undefined || scope?.table !== undefined) throw badRequest('only tenant narrows the search');
      if (checkPages) throw badRequest('check_pages is a field of tables/check and tables/drop-damaged-files');
      return { status: 200, body: await findUnregistered(catalog, store, db, scope, page) };
    },
    'POST /tables/register': (body: unknown) => answered(async () => ({ status: 200, body: await registerTable(catalog, store, db, parseRegisterRequest(body)) })),
  };

  const ownTls = config.tls.admin_ports && !deps.tls ? serverTlsFromConfig(config.tls, log) : undefined;
  const adminTls = config.tls.admin_ports ? (deps.tls ?? ownTls) : undefined;
  const admin = await startAdminServer({
    host: c.host,
    port: c.admin_port,
    isReady: () => ready,
    name: 'compactor',
    status: () => state,
    actions,
    actionKey: config.auth.internal_service_key || deps.internalKey,
    metrics: deps.telemetry?.metricsEndpoint,
    tls: adminTls,
    loopback: deps.loopback,
  });
  log.info({ adminPort: admin.port, enabled: c.enabled, intervalMs: c.interval, targetFileSizeMb: c.target_file_size_mb }, 'compactor ready');
  return {
    name: 'compactor',
    ports: { admin: admin.port, ...(admin.loopbackPort ? { loopback: admin.loopbackPort } : {}) },
    isReady: () => ready,
    async stop() {
      ready = false;
      abort.abort();
      await Promise.all([loop, openLoop]);
      await membership?.leave();
      writer.close();
      openHourWriter?.close();
      await cache.close();
      await admin.close();
      ownTls?.close();
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
  /** This compactor's name, and the compactors dividing the tables as it sees them (absent when disabled). */
  compactorId?: string;
  compactors?: readonly string[];
  /** Passes finished since start, periodic and on-demand. */
  passes: number;
  /** Start of the pass in progress (ISO 8601), or null. */
  runningSince: string | null;
  lastPass: LastPass | null;
  /** The latest on-demand passes (POST /compact), oldest first: waiting, running or done. */
  requests: CompactionRequest[];
  /** The open-hour concatenation passes between full ones (compactor.open_hour_interval; 0: none). */
  openHours: {
    intervalMs: number;
    passes: number;
    failedPasses: number;
    filesMerged: number;
    lastFinishedAt: string | null;
    /** The last pass that ran to its end: tables it read, tables it left alone as idle (IdleTables), and how long it took. */
    last: { tablesLoaded: number; tablesIdle: number; durationMs: number } | null;
  };
}

type LastPass = { startedAt: string; finishedAt: string; failed: boolean } & Partial<PassSummary>;

export interface CompactionRequest {
  id: string;
  /** The tables it visits; null: every table. */
  scope: PassScope | null;
  requestedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  result: LastPass | null;
}

const MAX_REQUESTS = 20;
const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** An action's answer, or the envelope of the FloeError it threw (404, 409 and 400 reach the caller as such). */
async function answered(run: () => Promise<AdminAnswer>): Promise<AdminAnswer> {
  try {
    return await run();
  } catch (err) {
    if (!isFloeError(err)) throw err;
    const { status, body } = toHttp(err);
    return { status, body };
  }
}

const badRequest = (message: string) => Object.assign(new Error(message), { status: 400 });

/** The most tables a page of a check may ask for. */
const MAX_CHECK_PAGE = 1000;

/**
 * `{tenant?, dataset?, table?, after?, limit?, check_pages?, wait_ms?}` of `POST /tables/check`: a page when `limit` is given, else every
 * table at once; data files' pages read when `check_pages`, by a job waited for `wait_ms` (maintenance-jobs.ts).
 */
function parseCheckRequest(body: unknown): { scope?: PassScope; page?: CheckPage; checkPages?: boolean; waitMs: number } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('body must be a JSON object');
  const { after, limit, check_pages, wait_ms, ...rest } = body as Record<string, unknown>;
  const scope = parseScope(rest);
  if (check_pages !== undefined && check_pages !== null && typeof check_pages !== 'boolean') throw badRequest('check_pages must be true or false');
  const checkPages = check_pages === true;
  const waitMs = parseWaitMs(wait_ms);
  if (limit === undefined || limit === null) {
    if (after !== undefined && after !== null) throw badRequest('after needs limit');
    return { scope, checkPages, waitMs };
  }
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_CHECK_PAGE) throw badRequest(`limit must be an integer from 1 to ${MAX_CHECK_PAGE}`);
  if (after !== undefined && after !== null && (typeof after !== 'string' || !/^[^.]+\.[^.]+\.[^.]+$/.test(after) || after.length > 400)) throw badRequest('after must be a <tenant>.<dataset>.<table> (the next of the previous page)');
  return { scope, checkPages, waitMs, page: { limit, ...(typeof after === 'string' ? { after } : {}) } };
}

/** `{tenant?, dataset?, table?}` of an action's body; undefined for every table. */
function parseScope(body: unknown): PassScope | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('body must be a JSON object');
  const b = body as Record<string, unknown>;
  const scope: PassScope = {};
  for (const key of Object.keys(b)) {
    if (key !== 'tenant' && key !== 'dataset' && key !== 'table') throw badRequest(`unknown field ${JSON.stringify(key)}: expected tenant, dataset, table`);
    const v = b[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || !NAME.test(v)) throw Object.assign(new Error(`invalid ${key}`), { status: 400 });
    scope[key] = v;
  }
  if (scope.dataset !== undefined && scope.tenant === undefined) throw Object.assign(new Error('dataset needs tenant'), { status: 400 });
  return Object.keys(scope).length === 0 ? undefined : scope;
}

type PassSummary = ReturnType<typeof passSummary>;

/** What a pass did, as logged and as `GET /status` shows it. */
function passSummary(s: PassStats) {
  return {
    tables: s.tables,
    tablesChanged: s.tablesChanged,
    failedTables: s.failedTables,
    partitionsExpired: s.retention.partitions,
    filesExpired: s.retention.files,
    rowsExpired: s.retention.rows,
    streamFilesRewritten: s.retention.streamFiles,
    deleteRequestsProcessed: s.deletes.requests,
    rowsDeleted: s.deletes.rows,
    partitionsCompacted: s.compaction.partitions,
    groupsConcatenated: s.compaction.concatenated,
    filesBefore: s.compaction.filesBefore,
    filesAfter: s.compaction.filesAfter,
    bytesBefore: s.compaction.bytesBefore,
    bytesAfter: s.compaction.bytesAfter,
    rowsRewritten: s.compaction.rows,
    conflicts: s.compaction.conflicts,
    failedGroups: s.compaction.failures,
    snapshotsExpired: s.expiry.snapshots,
    expiredDataFiles: s.expiry.dataFiles,
    expiredMetadataFiles: s.expiry.manifests + s.expiry.manifestLists + s.expiry.metadataFiles,
    orphanDataFiles: s.orphans.data,
    orphanMetadataFiles: s.orphans.metadata,
    durationMs: s.durationMs,
  };
}

/** A selector of limits.retention_stream that is no LogQL stream selector fails start, naming the key. */
function checkRetentionStreams(rules: FloeConfig['limits']['retention_stream']): void {
  const problems = retentionStreamProblems(rules, 'limits.retention_stream');
  if (problems.length > 0) throw new ConfigError(problems);
}
