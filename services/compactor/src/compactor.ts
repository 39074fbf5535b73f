import { floeNamespace, floeTableDef, splitFloeNamespace, TARGET_FILE_SIZE_PROPERTY, type SqlCatalog, type TableHandle, type TableIdentifier } from '@floe/iceberg';
import type { RetentionStream } from '@floe/limits';
import type { DeleteRequest } from '@floe/meta';
import { isTableName } from '@floe/schema';
import { Lru, type LocalFileCache, type ObjectStore, type ParquetWriter } from '@floe/storage';
import type { Logger } from '@floe/telemetry';
import { compactTable, emptyCompactStats, MIN_FILE_AGE_MS, planCompaction, type CompactTableStats, type MergeMethod, type PlanCompactionOptions } from './compact.ts';
import { droppedMetadataFiles, emptyExpireStats, expireTable, expiryHorizon, type ExpireStats } from './expire.ts';
import { findOrphans, listTableObjects, ORPHAN_MIN_AGE_MS, ReferenceCache, tableReferences, versionsAhead } from './orphans.ts';
import { applyDeleteRequest, deletionTables, emptyDeleteStats, type DeleteStats } from './deletes.ts';
import { applyRetention, emptyRetentionStats, type RetentionStats } from './retention.ts';
import { applyStreamRetention, partitionRetentionMs } from './stream-retention.ts';
import { IdleTables } from './idle-tables.ts';

export interface CompactorOptions {
  catalog: SqlCatalog;
  store: ObjectStore;
  writer: ParquetWriter;
  cache: LocalFileCache;
  log: Logger;
  /** Files below this many bytes are merged toward it (compactor.target_file_size_mb). */
  targetFileBytes: number;
  /** Snapshots older than this are expired; the current one always stays (compactor.snapshot_retention). */
  snapshotRetentionMs: number;
  /** WAL segments older than this no longer hold back expiry (writer.wal_marker_retention; default: forever). */
  markerRetentionMs?: number;
  /** How long a tenant's rows of a table are kept (limits.retention and the tenant's settings); 0 or absent: forever. */
  retentionMs?: (tenant: string, table: string) => Promise<number>;
  /** A tenant's per-stream retention of logs (limits.retention_stream and its settings), in the order tried; absent: none. */
  retentionStreams?: (tenant: string) => Promise<RetentionStream[]>;
  minFileAgeMs?: number;
  /** An open hour's files are concatenated once this old (compactor.open_hour_interval); minFileAgeMs when absent. */
  openHourAgeMs?: number;
  /**
   * The writer of the open-hour passes (concatOpenHours), when they run beside the full ones:
   * full passes then leave the open hours' concatenations to them (each takes disjoint files, so
   * the two do not redo each other's work; their commits to one table are compare-and-swap).
   */
  openHourWriter?: ParquetWriter;
  /**
   * Whether an open-hour pass leaves alone a table it found nothing to do in, while its catalog
   * pointer stays the same and none of its files comes of age (IdleTables). Default true; false
   * loads every table every pass (bench/open-hours' baseline).
   */
  skipIdleOpenHours?: boolean;
  orphanMinAgeMs?: number;
  /** Where delete requests come from and are marked done (the metadata DB); absent: none are processed. */
  deleteRequests?: DeleteRequestQueue;
  walPrefix?: string;
  /**
   * This compactor's share of the tables when several run (start.ts): a periodic pass visits only
   * the tables, and takes up only the delete requests, whose `<namespace>.<table>` it accepts.
   * Absent: all of them.
   */
  owns?: (table: string) => boolean;
  now?: () => number;
}

/** Delete requests as the compactor works through them (@floe/meta's delete_requests). */
export interface DeleteRequestQueue {
  /** Requests past their cancel period and not processed yet, oldest first. */
  due(nowMs: number): Promise<DeleteRequest[]>;
  /** Takes a request up (it can no longer be cancelled); false when it was cancelled meanwhile. */
  start(id: string): Promise<boolean>;
  finish(id: string, deletedRows: number): Promise<void>;
}

/** An open-hour pass: what it merged, and how many tables it loaded and left alone as idle. */
export interface OpenHourStats extends CompactTableStats {
  /** Tables whose metadata and manifests the pass read. */
  tablesLoaded: number;
  /** Tables left alone: nothing has changed since a visit found nothing to do (IdleTables). */
  tablesIdle: number;
}

export interface PassStats {
  /** Floe tables visited. */
  tables: number;
  /** Tables where something was compacted, expired or swept, or whose target file size was set. */
  tablesChanged: number;
  failedTables: number;
  /** Hour partitions deleted for being past their retention. */
  retention: RetentionStats;
  /** Delete requests processed. */
  deletes: DeleteStats;
  compaction: CompactTableStats;
  expiry: ExpireStats;
  orphans: { data: number; metadata: number };
  durationMs: number;
}

/** Which tables an on-demand pass or a dry run visits: all, a tenant's, a dataset's, or one table. */
export interface PassScope {
  tenant?: string;
  /** Only with a tenant. */
  dataset?: string;
  table?: string;
}

/** What a pass would merge in one table (a dry run): per hour, the groups of files and their bytes. */
export interface TablePlan {
  table: string;
  files: number;
  groups: Array<{ hour: string; method: MergeMethod; files: number; bytes: number; rows: number }>;
}

export function inScope(id: TableIdentifier, scope: PassScope | undefined): boolean {
  if (!scope) return true;
  if (scope.table !== undefined && id.name !== scope.table) return false;
  if (scope.tenant === undefined) return true;
  if (scope.dataset !== undefined) return id.namespace === floeNamespace(scope.tenant, scope.dataset);
  return id.namespace.startsWith(`${scope.tenant}.`);
}

export const hasWork = (s: PassStats): boolean =>
  s.retention.files + s.retention.streamFiles + s.deletes.requests + s.compaction.groups + s.compaction.conflicts + s.compaction.failures + s.expiry.snapshots + s.expiry.metadataFiles + s.orphans.data + s.orphans.metadata + s.failedTables > 0;

/**
 * Sets the table's `write.target-file-size-bytes` to what this compactor aims for (spec 2: the
 * property is left out at creation and compaction reconciles it), so other engines writing the
 * table size their files alike. One commit, and only when the value differs.
 */
export async function reconcileTargetFileSize(catalog: SqlCatalog, handle: TableHandle, targetFileBytes: number): Promise<{ handle: TableHandle; changed: boolean }> {
  const want = String(targetFileBytes);
  if (handle.metadata.properties[TARGET_FILE_SIZE_PROPERTY] === want) return { handle, changed: false };
  return { handle: await catalog.setProperties(handle, { [TARGET_FILE_SIZE_PROPERTY]: want }), changed: true };
}

/**
 * One compactor's state across passes. A pass visits every Floe table in the catalog, one after
 * another: delete the hour partitions past the tenant's retention, merge small files per hour
 * partition, expire old snapshots and delete what only they referenced, then sweep objects no
 * retained snapshot references. Each table is independent: a
 * failure is logged and the pass goes on with the next table.
 */
export class Compactor {
  readonly #o: CompactorOptions;
  readonly #refs = new ReferenceCache();
  /**
   * Tables whose last full visit found their catalog pointer sound (not behind their metadata
   * files): the open-hour passes visit only these, so they need no listing of their own.
   */
  readonly #sound = new Set<string>();
  /** Tables the open-hour passes found nothing to do in (see IdleTables). */
  readonly #idle = new IdleTables();
  /**
   * Data files a concatenation could not take (alone with their Parquet schema), by key: planned
   * into the sorted tier from then on instead of read again every open-hour pass. Bounded: a
   * forgotten key costs one more look at its footer.
   */
  readonly #sortOnly = new Lru<string, true>(50_000);
  readonly #deps: CompactorOptions & { sortOnly: { add(key: string): void } };
  readonly #openHourDeps: CompactorOptions & { sortOnly: { add(key: string): void } };

  constructor(opts: CompactorOptions) {
    this.#o = opts;
    this.#deps = { ...opts, sortOnly: { add: (key) => this.#sortOnly.set(key, true) } };
    this.#openHourDeps = opts.openHourWriter ? { ...this.#deps, writer: opts.openHourWriter } : this.#deps;
  }

  /**
   * Runs one pass over the tables of `scope` (all when absent), this compactor's share of them
   * unless `everyTable` (an on-demand pass: an operator asked for those tables). After `signal`
   * fires, the commit in progress finishes and the pass ends.
   */
  async pass(signal?: AbortSignal, scope?: PassScope, everyTable = false): Promise<PassStats> {
    const { catalog, store, log } = this.#o;
    const now = this.#o.now ?? Date.now;
    const started = now();
    const stats: PassStats = {
      tables: 0,
      tablesChanged: 0,
      failedTables: 0,
      retention: emptyRetentionStats(),
      deletes: emptyDeleteStats(),
      compaction: emptyCompactStats(),
      expiry: emptyExpireStats(),
      orphans: { data: 0, metadata: 0 },
      durationMs: 0,
    };
    const mine = (id: TableIdentifier) => everyTable || !this.#o.owns || this.#o.owns(`${id.namespace}.${id.name}`);
    await this.#deletes(stats, scope, mine, signal);
    const horizon = await expiryHorizon(store, started, this.#o.snapshotRetentionMs, this.#o.walPrefix, this.#o.markerRetentionMs);
    for (const id of await catalog.listTables()) {
      if (signal?.aborted) break;
      // Tables of other engines sharing the catalog have no Floe definition to rewrite them with.
      if (!isTableName(id.name) || !inScope(id, scope) || !mine(id)) continue;
      stats.tables++;
      const name = `${id.namespace}.${id.name}`;
      try {
        if (await this.#table(id, horizon, stats, signal)) stats.tablesChanged++;
      } catch (err) {
        this.#unsound(name);
        stats.failedTables++;
        log.error({ err, table: name }, 'compactor pass failed for a table');
      }
    }
    // Only a complete pass knows which manifests are still reachable.
    if (!signal?.aborted && !scope) this.#refs.endPass();
    stats.durationMs = now() - started;
    return stats;
  }

  /**
   * The frequent pass between full ones (compactor.open_hour_interval): in this compactor's share
   * of the tables, concatenate the files of hours still being written, and nothing else. The
   * writer adds a file per table and partition every flush (~30 a minute under load), and every
   * file costs each query that reads the hour; concatenation copies bytes, so it can keep up.
   * Tables not yet visited by a full pass, or whose last full visit failed, are left to it; so is
   * a table found with nothing to do, until its pointer moves or one of its files comes of age
   * (IdleTables): with thousands of tables, reading every one's metadata was most of the pass.
   */
  async concatOpenHours(signal?: AbortSignal): Promise<OpenHourStats> {
    const { catalog, log } = this.#o;
    const now = this.#o.now ?? Date.now;
    const skipIdle = this.#o.skipIdleOpenHours ?? true;
    const stats: OpenHourStats = { ...emptyCompactStats(), tablesLoaded: 0, tablesIdle: 0 };
    const listed = new Set<string>();
    // Every pointer in one query: an idle table then costs no read of its own.
    for (const p of await catalog.listTablePointers()) {
      if (signal?.aborted) break;
      const name = `${p.namespace}.${p.name}`;
      if (!this.#sound.has(name) || (this.#o.owns && !this.#o.owns(name))) continue;
      listed.add(name);
      if (skipIdle && this.#idle.isIdle(name, p.metadataLocation, now())) {
        stats.tablesIdle++;
        continue;
      }
      this.#idle.forget(name);
      try {
        const handle = await catalog.loadTable(p.namespace, p.name);
        if (!handle) continue;
        stats.tablesLoaded++;
        const done = await compactTable(this.#openHourDeps, handle, this.#planOptions(now(), true), signal);
        addInto(stats, done.stats);
        // The pointer as listed, not as loaded: a commit in between makes the next pass look again.
        // A group that failed or lost to a conflict, or a table cut short, is work left: no entry.
        if (done.stats.failures + done.stats.conflicts === 0 && !signal?.aborted) this.#idle.remember(name, p.metadataLocation, done.wakeAtMs);
      } catch (err) {
        stats.failures++;
        log.error({ err, table: name }, 'open-hour concatenation failed for a table');
      }
    }
    // Tables dropped, no longer this compactor's, or no longer sound take their entries with them.
    if (!signal?.aborted) this.#idle.retain(listed);
    return stats;
  }

  #planOptions(nowMs: number, openHoursOnly = false): PlanCompactionOptions {
    return {
      targetFileBytes: this.#o.targetFileBytes,
      minFileAgeMs: this.#o.minFileAgeMs ?? MIN_FILE_AGE_MS,
      ...(this.#o.openHourAgeMs !== undefined ? { openMinFileAgeMs: this.#o.openHourAgeMs } : {}),
      ...(openHoursOnly ? { openHoursOnly } : {}),
      // With open-hour passes of their own running beside, full passes leave them the concatenations.
      ...(!openHoursOnly && this.#o.openHourWriter ? { skipOpenConcat: true } : {}),
      sortOnly: { has: (key: string) => this.#sortOnly.get(key) !== undefined },
      nowMs,
    };
  }

  /** A dry run: what a pass would merge now in the tables of `scope`, without writing anything. */
  async plan(scope?: PassScope): Promise<TablePlan[]> {
    const { catalog } = this.#o;
    const now = this.#o.now ?? Date.now;
    const out: TablePlan[] = [];
    for (const id of await catalog.listTables()) {
      if (!isTableName(id.name) || !inScope(id, scope)) continue;
      const handle = await catalog.loadTable(id.namespace, id.name);
      if (!handle) continue;
      const files = await catalog.planFiles(handle);
      const groups = planCompaction(floeTableDef(handle), handle.metadata, files, this.#planOptions(now()));
      out.push({
        table: `${id.namespace}.${id.name}`,
        files: files.length,
        groups: groups.map((g) => ({
          hour: new Date(g.hour * 3_600_000).toISOString(),
          method: g.method,
          files: g.files.length,
          bytes: g.files.reduce((a, f) => a + f.fileSizeBytes, 0),
          rows: g.files.reduce((a, f) => a + f.recordCount, 0),
        })),
      });
    }
    return out;
  }

  /**
   * Works through the delete requests past their cancel period, before the tables are compacted
   * (a file about to be rewritten for a request is not worth merging first). A request whose table
   * does not exist (nothing written yet, or dropped) is done with nothing deleted; one that fails
   * or meets a conflict stays for the next pass.
   */
  async #deletes(stats: PassStats, scope: PassScope | undefined, mine: (id: TableIdentifier) => boolean, signal?: AbortSignal): Promise<void> {
    const queue = this.#o.deleteRequests;
    if (!queue) return;
    const { catalog, log } = this.#o;
    const now = this.#o.now ?? Date.now;
    for (const req of await queue.due(now())) {
      if (signal?.aborted) return;
      const namespace = floeNamespace(req.tenantId, req.datasetId);
      if (!inScope({ namespace, name: req.table }, scope) || !mine({ namespace, name: req.table })) continue;
      try {
        if (!(await queue.start(req.id))) continue;
        // A table at a time; should a later one fail, the next pass redoes the request, and the
        // tables already done have nothing left to delete.
        let files = 0;
        let rows = 0;
        let retry = false;
        for (const table of deletionTables(req)) {
          const handle = await catalog.loadTable(namespace, table);
          if (!handle) continue;
          const outcome = await applyDeleteRequest(this.#o, handle, req, signal);
          if (outcome.kind === 'retry') {
            retry = true;
            break;
          }
          files += outcome.files;
          rows += outcome.rows;
        }
        if (retry) continue;
        await queue.finish(req.id, rows);
        stats.deletes.requests++;
        stats.deletes.files += files;
        stats.deletes.rows += rows;
      } catch (err) {
        log.error({ err, request: req.id, table: `${namespace}.${req.table}` }, 'delete request failed; retrying next pass');
      }
    }
  }

  /** A table the open-hour passes leave to the full ones from now on, with what they knew of it. */
  #unsound(table: string): void {
    this.#sound.delete(table);
    this.#idle.forget(table);
  }

  async #table(id: TableIdentifier, horizon: number, stats: PassStats, signal?: AbortSignal): Promise<boolean> {
    const { catalog, store } = this.#o;
    const now = this.#o.now ?? Date.now;
    if (!isTableName(id.name)) return false;
    let handle = await catalog.loadTable(id.namespace, id.name);
    if (!handle) return false; // dropped since the listing
    // A pointer behind the table's own files (the metadata DB restored from an older backup)
    // references nothing committed since: the sweep would take all of it for orphans, and every
    // commit here would fork the history. The table fails its pass until an operator rolls it
    // forward (floe ops check-tables names it, rollback-table --to moves it).
    // The pointer is read again after the listing, so a commit landing meanwhile is not taken for it.
    const metadataFiles = await store.list(`${store.keyFromUri(handle.metadata.location)}/metadata/`);
    const pointer = (await catalog.pointerOf(id.namespace, id.name))?.metadataLocation ?? handle.metadataLocation;
    const ahead = versionsAhead(metadataFiles, pointer, store);
    if (ahead.length > 0) {
      this.#unsound(`${id.namespace}.${id.name}`);
      throw new Error(`${ahead.length} metadata files are numbered beyond the catalog's pointer ${pointer}: the catalog is behind the table (restored from an older backup?); left alone until it is rolled forward (floe ops check-tables, floe ops rollback-table --to)`);
    }

    this.#sound.add(`${id.namespace}.${id.name}`);
    const target = await reconcileTargetFileSize(catalog, handle, this.#o.targetFileBytes);
    handle = target.handle;

    // Before compaction: an hour about to be deleted is not worth rewriting.
    const tenant = splitFloeNamespace(id.namespace).tenant;
    const retentionMs = (await this.#o.retentionMs?.(tenant, id.name)) ?? 0;
    const streams = id.name === 'logs' ? ((await this.#o.retentionStreams?.(tenant)) ?? []) : [];
    const retained = await applyRetention(catalog, handle, partitionRetentionMs(retentionMs, streams), now());
    handle = retained.handle;
    addInto(stats.retention, retained.stats);
    if (retained.stats.files > 0) this.#o.log.info({ table: `${id.namespace}.${id.name}`, retentionMs, ...retained.stats }, 'retention: partitions deleted');
    const byStream = id.name === 'logs' ? await applyStreamRetention(this.#o, handle, retentionMs, streams, now(), signal) : undefined;
    if (byStream) {
      handle = byStream.handle;
      stats.retention.rows += byStream.stats.rows;
      stats.retention.streamFiles += byStream.stats.files;
      if (byStream.stats.files > 0) this.#o.log.info({ table: `${id.namespace}.${id.name}`, ...byStream.stats }, 'retention: stream lines deleted');
    }

    const compacted = await compactTable(this.#deps, handle, this.#planOptions(now()), signal);
    handle = compacted.handle;
    addInto(stats.compaction, compacted.stats);
    if (signal?.aborted) return target.changed || retained.stats.files + compacted.stats.groups > 0;

    const expired = await expireTable(this.#o, handle, horizon);
    addInto(stats.expiry, expired.stats);

    // List first, then read the metadata: an object committed after the listing is absent from
    // it, and one committed before is in the metadata read after, so nothing live looks orphaned.
    const locationKey = store.keyFromUri(expired.handle.metadata.location);
    const listing = await listTableObjects(store, locationKey);
    const fresh = await catalog.loadTable(id.namespace, id.name);
    if (!fresh) return true;
    // The versions this pass's own commits pushed out of the metadata log are among them.
    const dropped = droppedMetadataFiles(store, fresh, listing.metadata);
    if (dropped.length > 0) {
      await store.deleteMany(dropped);
      stats.expiry.metadataFiles += dropped.length;
    }
    const gone = new Set(dropped);
    const refs = await tableReferences(store, fresh.metadataLocation, fresh.metadata, this.#refs);
    const orphans = findOrphans({ ...listing, metadata: listing.metadata.filter((o) => !gone.has(o.key)) }, refs, now(), this.#o.orphanMinAgeMs ?? ORPHAN_MIN_AGE_MS);
    if (orphans.data.length + orphans.metadata.length > 0) {
      await store.deleteMany([...orphans.data, ...orphans.metadata]);
      stats.orphans.data += orphans.data.length;
      stats.orphans.metadata += orphans.metadata.length;
      this.#o.log.debug({ table: `${id.namespace}.${id.name}`, data: orphans.data.length, metadata: orphans.metadata.length }, 'orphans removed');
    }
    return target.changed || retained.stats.files + (byStream?.stats.files ?? 0) + compacted.stats.groups + expired.stats.snapshots + dropped.length + orphans.data.length + orphans.metadata.length > 0;
  }
}

function addInto<T extends object>(into: T, add: T): void {
  const a = into as Record<string, number>;
  for (const [k, v] of Object.entries(add as Record<string, number>)) a[k] = (a[k] ?? 0) + v;
}
