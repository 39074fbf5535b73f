import { unlink } from 'node:fs/promises';
import type { DataFileInput, SqlCatalog, TableHandle } from '@floe/iceberg';
import { floeTableDef, publishDataFile } from '@floe/iceberg';
import { isTableName, type TableName } from '@floe/schema';
import { BufferPool, deleteSegments, listSegments, ObjectNotFoundError, parseSegmentKey, recordIdTime, recoverOpenSegments, WAL_CLOCK_SKEW_MS, WalCorruptionError, writtenLocalFiles, type AttributeTypeCount, type CheckedRecord, type ColumnBatchHead, type HeldTable, type ObjectInfo, type ObjectStore, type WalRecord } from '@floe/storage';
import type { Logger } from '@floe/telemetry';
import type { ParquetWriter } from '@floe/storage';
import type { HeldPublisher } from './held-segments.ts';
import { LoopSlices } from './loop-slices.ts';
import { encodeLedger, ledgerHas, ledgerOfSnapshots, LEDGER_KEY, type Ledger } from './segment-ledger.ts';
import { ensureFloeTable as ensureTable } from '@floe/iceberg';
import type { AttributeTypePins } from './attribute-types.ts';
import type { WriterMetrics } from './writer-metrics.ts';

/**
 * One commit round: claim the WAL segments present now (oldest first), group their records by
 * (tenant, dataset, table), write one sorted Parquet file per hour (split by row count), and make
 * one Iceberg fast-append per table whose snapshot summary names the consumed segments. Segments
 * already named by a table's retained snapshots are skipped for that table, so a crash between
 * the commit and the segment delete never appends twice. Segments are deleted only after every
 * table they feed has committed.
 *
 * Files are written with the table's own definition (floeTableDef): the signal's columns plus the
 * materialized labels the table recorded at creation, computed from the rows' maps. Once a
 * group is committed, its attribute value types are checked against the dataset's type pins
 * (attribute-types.ts).
 */
export interface RoundStats {
  segments: number;
  records: number;
  rows: number;
  files: number;
  commits: number;
  skippedRecords: number;
}

interface TableGroup {
  tenant: string;
  dataset: string;
  table: TableName;
  segments: Set<string>;
  /** hour → records */
  hours: Map<number, SegmentRecord[]>;
}

export interface CommitterOptions {
  store: ObjectStore;
  catalog: SqlCatalog;
  writer: ParquetWriter;
  log: Logger;
  maxRowsPerFile: number;
  /** Tables a round commits at once (writer.commit_concurrency; default 1). */
  commitConcurrency?: number;
  maxSegmentsPerRound: number;
  /** Most segment bytes one round reads (always at least one segment; default unbounded). */
  maxBytesPerRound?: number;
  walPrefix?: string;
  /** Attribute type pins to check each committed group against (none: not checked). */
  pins?: AttributeTypePins;
  /** Self-monitoring instruments (none: not recorded). */
  metrics?: WriterMetrics;
  /**
   * writer.wal_marker_retention: markers older than this are not read, and a segment older than
   * this is set aside instead of committed. Absent: every marker is read and no segment is too old.
   */
  markerRetentionMs?: number;
  /**
   * Which of the given datasets exist, as `tenant/dataset` keys, each with the time (ms) it or its
   * tenant was last deleted (0: never), asked once per round (absent: every one does and none was
   * deleted). Records of a deleted tenant or dataset, still in the WAL when it was deleted, are
   * dropped instead of recreating its tables; so are records appended before the deletion of one
   * created again since (their ids carry the time they were appended), which the new one must not get.
   */
  liveDatasets?: (pairs: ReadonlyArray<{ tenant: string; dataset: string }>) => Promise<ReadonlyMap<string, number>>;
  /**
   * This writer's share of a WAL that several writers read (start.ts): the segments it
   * commits and the open ones it recovers. Absent: all of them.
   */
  owns?: (segmentKey: string) => boolean;
  /**
   * First wait (ms) before a table whose commit failed is tried again; it doubles with each
   * failure in a row, up to TABLE_RETRY_MAX_MS (default 1000).
   */
  tableRetryBaseMs?: number;
  /** Where the segments held only for failing tables are published for the acceptors (absent: not published). */
  held?: HeldPublisher;
}

/**
 * A round that committed what it could but left tables uncommitted (their segments stay in the
 * WAL): those tables wait out their own back-off, so the loop need not slow the others' rounds.
 */
export class TablesNotCommittedError extends Error {
  readonly tables: number;
  constructor(tables: number, cause: unknown) {
    super(`${tables} table(s) not committed this round: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'TablesNotCommittedError';
    this.tables = tables;
  }
}

const QUARANTINE_PREFIX = 'wal-quarantine/';
/**
 * An open WAL segment untouched this long belongs to an acceptor that died (a live one seals
 * within acceptor.wal_segment_max_age) or stalled (its next append then fails, unacknowledged).
 */
const OPEN_SEGMENT_IDLE_MS = 15_000;
const RECOVERY_INTERVAL_MS = 5_000;
/** How long the WAL stays empty before the committer lets go of its round memory. */
const IDLE_RELEASE_MS = 30_000;
const ROUND_MEMORY_CHUNK_BYTES = 16 * 1024 * 1024;
/** The most round memory kept however large writer.max_bytes_per_round is. */
const MAX_KEPT_ROUND_BYTES = 1024 * 1024 * 1024;
const TABLE_RETRY_MAX_MS = 30_000;

export class Committer {
  readonly #o: CommitterOptions;
  /**
   * The segments of the running round, read into memory kept from round to round (and shared,
   * so the encoding thread takes the batches without a copy): a round reads tens of megabytes,
   * which as fresh buffers started most of the writer's full garbage collections.
   */
  readonly #segments: BufferPool;
  readonly #alloc = (bytes: number) => this.#segments.u8(bytes);
  #running = false;
  /** When the WAL was first found empty since the last round (idle()). */
  #idleSince: number | undefined;
  #lastRecovery = 0;
  /**
   * Tables whose last commits failed (damaged metadata, a file the store refuses): when each may
   * be tried again. A table that fails every round must not slow every other tenant's commits.
   */
  readonly #retries = new Map<string, { failures: number; at: number }>();
  /**
   * Segments kept in the WAL only for such tables, each with the tables (group keys) it is kept
   * for. A round does not read one again until one of its tables' back-off has run out: it would
   * fetch and decode the whole held backlog every round for nothing while a table stays broken.
   * When due, they are claimed after the others: oldest first, they would otherwise fill a
   * round's budget, and no other tenant's newer segment would be read.
   */
  readonly #held = new Map<string, Set<string>>();

  constructor(opts: CommitterOptions) {
    this.#o = opts;
    // Kept from round to round: as much as a round may read (and some chunks for segments'
    // rounding up), so a writer under load reads into memory it already has.
    const keep = Math.min(opts.maxBytesPerRound ?? Infinity, MAX_KEPT_ROUND_BYTES) + 4 * ROUND_MEMORY_CHUNK_BYTES;
    this.#segments = new BufferPool(ROUND_MEMORY_CHUNK_BYTES, keep, { shared: true });
  }

  /**
   * The WAL was found empty: once it has stayed so for IDLE_RELEASE_MS, lets go of the memory
   * kept for rounds (none may come for a long time). Not at once: a writer that keeps up with
   * its acceptors finds the WAL empty between most rounds, and reading each segment into fresh
   * memory cost it a page fault per 4 KiB.
   */
  idle(now = Date.now()): void {
    if (this.#running) return;
    this.#idleSince ??= now;
    if (now - this.#idleSince >= IDLE_RELEASE_MS) this.#segments.releaseAll(0);
  }

  /** Bytes of round memory kept now (what idle() lets go of). */
  get keptBytes(): number {
    return this.#segments.keptBytes;
  }

  /**
   * Segments waiting in the WAL for this writer (its share, with `owns`): the backlog. Every few
   * seconds, segments an acceptor left open (it died before sealing them) are published first.
   */
  async backlog(): Promise<ObjectInfo[]> {
    const { store, log, owns } = this.#o;
    if (store.appendables && Date.now() - this.#lastRecovery >= RECOVERY_INTERVAL_MS) {
      this.#lastRecovery = Date.now();
      const published = await recoverOpenSegments(store, OPEN_SEGMENT_IDLE_MS, owns);
      if (published.length > 0) log.warn({ segments: published }, 'published WAL segments that an acceptor left open (it stopped without sealing them)');
    }
    const listed = await listSegments(store, this.#o.walPrefix);
    const segments = owns ? listed.filter((s) => owns(s.key)) : listed;
    await this.#settleHeld(segments);
    return segments;
  }

  async round(segments?: ObjectInfo[]): Promise<RoundStats> {
    if (this.#running) throw new Error('Committer.round: the previous round is still running');
    this.#running = true;
    this.#idleSince = undefined;
    try {
      return await this.#round(segments);
    } finally {
      this.#running = false;
    }
  }

  async #round(segments?: ObjectInfo[]): Promise<RoundStats> {
    const { store, log } = this.#o;
    const stats: RoundStats = { segments: 0, records: 0, rows: 0, files: 0, commits: 0, skippedRecords: 0 };
    const listed = segments ?? (await this.backlog());
    const backlog = this.#dueHeldLast(listed);
    const claimed = withinBudget(backlog.slice(0, this.#o.maxSegmentsPerRound), this.#o.maxBytesPerRound ?? Infinity);
    if (backlog.length > claimed.length) this.#o.metrics?.entriesDeferredByBudget.add(backlog.length - claimed.length);
    if (claimed.length === 0) return stats;

    // Rounds run one after another: nothing reads the last round's segments any more.
    this.#segments.releaseAll();
    const groups = new Map<string, TableGroup>();
    const consumed: string[] = [];
    const slices = new LoopSlices();
    const oldestCommitted = Date.now() - (this.#o.markerRetentionMs ?? Infinity);
    for (const seg of claimed) {
      await slices.pause();
      // Another writer's since the listing (one joined, or this one's view was renewed mid-round).
      if (this.#o.owns && !this.#o.owns(seg.key)) continue;
      if ((parseSegmentKey(seg.key, this.#o.walPrefix)?.timestampMs ?? Infinity) < oldestCommitted) {
        // Older than the markers read below: were it committed already, nothing here could tell.
        await this.#quarantine(seg.key, 'WAL segment older than writer.wal_marker_retention moved to quarantine (not committed: it may have been already)');
        continue;
      }
      let records: CheckedRecord[];
      try {
        // Framing, CRCs and batches are checked on the writer's thread, off ingest's event loop.
        records = await this.#o.writer.readSegment(store, seg.key, this.#alloc);
      } catch (err) {
        // Gone since the listing (another writer's round took it): nothing to do here.
        if (err instanceof ObjectNotFoundError) continue;
        // A store or thread failure is not damage: the round fails and the segment is read again.
        if (!(err instanceof WalCorruptionError)) throw err;
        // A corrupt segment must not block the log: set it aside for an operator and go on.
        await this.#quarantine(seg.key, 'unreadable WAL segment moved to quarantine', err);
        continue;
      }
      consumed.push(seg.key);
      stats.segments++;
      for (const rec of records) {
        // An appended segment holds hundreds of records: the loop yields to ingest now and then
        // (when the batches were checked here, one go held it for 100-250 ms every round).
        await slices.pause();
        const h = rec.header;
        if (!isTableName(h.table)) {
          log.error({ table: h.table, segment: seg.key }, 'WAL record for an unknown table dropped');
          this.#o.metrics?.commitFailures.add(1, { kind: 'permanent' });
          continue;
        }
        // A column batch DuckDB could not read would fail every write of its table: set it aside.
        // Batches were checked on the writer's thread (readSegment); the write takes the head read then.
        if (rec.batchError !== undefined) {
          const key = `${QUARANTINE_PREFIX}${seg.key.split('/').pop()}-${h.id}.batch`;
          log.error({ err: rec.batchError, segment: seg.key, record: h.id, tenant: h.tenant, table: h.table, quarantined: key }, 'malformed WAL record moved to quarantine');
          this.#o.metrics?.commitFailures.add(1, { kind: 'permanent' });
          await store.put(key, rec.payload);
          // Series references are read with the definitions they number: those go beside them.
          for (const [i, d] of (rec.definitions ?? []).entries()) await store.put(`${key}.series-${i}`, d);
          stats.skippedRecords++;
          continue;
        }
        const gk = `${h.tenant}\u0000${h.dataset}\u0000${h.table}`;
        let g = groups.get(gk);
        if (!g) groups.set(gk, (g = { tenant: h.tenant, dataset: h.dataset, table: h.table, segments: new Set(), hours: new Map() }));
        g.segments.add(seg.key);
        const list = g.hours.get(h.hour) ?? [];
        list.push({ header: h, payload: rec.payload, segment: seg.key, data: rec.batch ?? rec.payload });
        g.hours.set(h.hour, list);
        stats.records++;
      }
    }

    // A segment is deleted only when every table it feeds has committed (or already had) its rows.
    const keep = new Set<string>();
    const named = new Map([...groups.values()].map((g) => [`${g.tenant}/${g.dataset}`, { tenant: g.tenant, dataset: g.dataset }]));
    const datasets = this.#o.liveDatasets && (await this.#o.liveDatasets([...named.values()]));
    // One table's failure fails the round (logged) but not the other tables' commits, and the
    // table is tried again after its own back-off: a tenant whose rows cannot be written (its
    // metadata damaged, say) must not hold every other tenant's back.
    let failure: unknown;
    let failedTables = 0;
    /** Segment → the tables (group keys) that could not take its rows this round. */
    const blocked = new Map<string, Set<string>>();
    const block = (g: TableGroup, gk: string) => {
      for (const k of g.segments) {
        let tables = blocked.get(k);
        if (!tables) blocked.set(k, (tables = new Set()));
        tables.add(gk);
      }
    };
    const commitTable = async (gk: string, g: TableGroup): Promise<void> => {
      // A dataset that is gone takes every record; one created again, those from before its deletion.
      const deletedAt = datasets ? (datasets.get(`${g.tenant}/${g.dataset}`) ?? Number.POSITIVE_INFINITY) : 0;
      const dropped = deletedAt > 0 ? dropAppendedBy(g, deletedAt) : 0;
      if (dropped > 0) {
        log.warn({ tenant: g.tenant, dataset: g.dataset, table: g.table, records: dropped }, deletedAt === Number.POSITIVE_INFINITY ? 'WAL records of a deleted tenant or dataset dropped' : 'WAL records from before the tenant or dataset was deleted and created again dropped');
        stats.skippedRecords += dropped;
      }
      if (g.hours.size === 0) return;
      const retry = this.#retries.get(gk);
      if (retry && Date.now() < retry.at) {
        this.#o.metrics?.groupsDeferred.add(1);
        block(g, gk);
        return;
      }
      try {
        if (await this.#commitGroup(g, stats)) {
          this.#retries.delete(gk);
          return;
        }
        this.#o.metrics?.groupsDeferred.add(1);
      } catch (err) {
        failure ??= err;
        failedTables++;
        const failures = (retry?.failures ?? 0) + 1;
        const waitMs = Math.min(TABLE_RETRY_MAX_MS, (this.#o.tableRetryBaseMs ?? 1000) * 2 ** Math.min(failures - 1, 16));
        this.#retries.set(gk, { failures, at: Date.now() + waitMs });
        log.error({ err, tenant: g.tenant, dataset: g.dataset, table: g.table, failures, retryInMs: waitMs }, 'table not committed this round; its WAL segments stay for a later one');
        block(g, gk);
        return;
      }
      for (const k of g.segments) keep.add(k);
    };
    // Tables are independent (each its own catalog row), and a commit mostly waits on the store
    // and the catalog: several at once, so a round of many tenants' small tables takes the time
    // of the slowest few rather than the sum of all.
    const queue = [...groups];
    const committers = Array.from({ length: Math.min(this.#o.commitConcurrency ?? 1, queue.length) }, async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) await commitTable(...next);
    });
    await Promise.all(committers);
    for (const k of consumed) {
      const tables = blocked.get(k);
      if (tables && !keep.has(k)) this.#held.set(k, tables);
      else this.#held.delete(k);
    }
    const done = consumed.filter((k) => !keep.has(k) && !blocked.has(k));
    await deleteSegments(store, done);
    const gone = new Set(done);
    await this.#settleHeld(listed.filter((s) => !gone.has(s.key)));
    if (failure !== undefined) throw new TablesNotCommittedError(failedTables, failure);
    return stats;
  }

  /**
   * The backlog without the held segments none of whose tables may be tried yet, and with the
   * held ones that may last, each part oldest first. Not reading a held segment loses nothing:
   * its rows stay in the WAL, and the ledger of each table's snapshots says which segments the
   * table has taken, so one read again later is committed once to the tables that lack it.
   */
  #dueHeldLast(backlog: ObjectInfo[]): ObjectInfo[] {
    if (this.#held.size === 0) return backlog;
    const now = Date.now();
    const due = (k: string) => [...this.#held.get(k)!].some((gk) => (this.#retries.get(gk)?.at ?? 0) <= now);
    const fresh = backlog.filter((s) => !this.#held.has(s.key));
    return [...fresh, ...backlog.filter((s) => this.#held.has(s.key) && due(s.key))];
  }

  /**
   * Forgets held segments gone from the WAL (committed by another writer, quarantined, no longer
   * this writer's share) and publishes what is held for the acceptors.
   */
  async #settleHeld(present: readonly ObjectInfo[]): Promise<void> {
    if (this.#held.size > 0) {
      const listed = new Set(present.map((s) => s.key));
      for (const k of this.#held.keys()) if (!listed.has(k)) this.#held.delete(k);
    }
    if (!this.#o.held) return;
    const tables = new Map<string, HeldTable[]>();
    for (const [k, gks] of this.#held) tables.set(k, [...gks].map(heldTable));
    await this.#o.held.publish(tables);
  }

  /** Sets a segment aside for an operator (out of the WAL, so it blocks nothing), saying why. */
  async #quarantine(key: string, why: string, err?: unknown): Promise<void> {
    const { store, log, metrics } = this.#o;
    log.error({ err, segment: key }, why);
    metrics?.commitFailures.add(1, { kind: 'permanent' });
    const bytes = await store.get(key);
    if (bytes) await store.put(QUARANTINE_PREFIX + key.split('/').pop()!, bytes);
    await store.delete(key);
  }

  /** False when the group must be retried next round (its segments stay in the WAL). */
  async #commitGroup(g: TableGroup, stats: RoundStats): Promise<boolean> {
    const { catalog, store, writer, log, pins, metrics } = this.#o;
    const handle = await ensureTable(catalog, g.tenant, g.dataset, g.table);
    // The table's own columns: labels it recorded at creation, not today's configuration.
    const def = floeTableDef(handle);
    // Markers of snapshots from before the oldest segment this writer still commits (less the
    // clock allowance) cannot name one of its segments: they are retired, not read.
    const markersSince = Date.now() - (this.#o.markerRetentionMs ?? Infinity) - WAL_CLOCK_SKEW_MS;
    const ledgerOf = (h: TableHandle): Ledger => ledgerOfSnapshots(h.metadata.snapshots, markersSince);
    const ledger = ledgerOf(handle);

    const files: DataFileInput[] = [];
    const locationKey = store.keyFromUri(handle.metadata.location);
    const written: string[] = [];
    const attributeTypes: AttributeTypeCount[] = [];
    try {
      for (const [hour, records] of g.hours) {
        const live = records.filter((r) => !ledgerHas(ledger, r.segment));
        stats.skippedRecords += records.length - live.length;
        for (const chunk of chunkByRows(live, this.#o.maxRowsPerFile)) {
          const out = await writer.write(def, chunk.map((r) => r.data), { attributeTypes: pins !== undefined });
          for (const f of writtenLocalFiles(out)) written.push(f);
          // One at a time: a flush may hold more distinct keys than a spread's arguments may number.
          for (const t of out.attributeTypes ?? []) attributeTypes.push(t);
          files.push(await publishDataFile(store, def, out, locationKey, hour));
          stats.rows += out.rowCount;
          stats.files++;
        }
      }
      if (files.length === 0) return true;
      const fresh = [...g.segments].filter((k) => !ledgerHas(ledger, k));
      const commitStart = performance.now();
      try {
        await catalog.appendFiles(handle, files, {
          summary: { [LEDGER_KEY]: encodeLedger(fresh), 'floe.writer': 'wal' },
          // Re-checked on every attempt: if another writer committed any of these segments
          // meanwhile, appending would store their rows twice.
          validate: (base) => {
            // The first attempt's base is the handle read above, its ledger decoded already.
            const current = base.metadata === handle.metadata ? ledger : ledgerOf(base);
            const taken = fresh.filter((k) => ledgerHas(current, k));
            if (taken.length > 0) throw new SegmentsTakenError(taken.length);
          },
        });
      } catch (err) {
        if (!(err instanceof SegmentsTakenError)) throw err;
        // Our files stay unreferenced; the compactor's orphan sweep removes them.
        log.warn({ tenant: g.tenant, dataset: g.dataset, table: g.table, segments: err.count }, 'segments committed concurrently by another writer; retrying the rest next round');
        return false;
      }
      stats.commits++;
      metrics?.commitDuration.record((performance.now() - commitStart) / 1000, { table: g.table });
      log.debug({ tenant: g.tenant, dataset: g.dataset, table: g.table, files: files.length }, 'committed');
      // After the commit, so a group retried next round is never counted twice.
      const checked = pins ? await pins.check(g.tenant, g.dataset, g.table, attributeTypes) : undefined;
      if (checked?.off_type) metrics?.attributeTypeMismatches.add(checked.off_type, { reason: 'off_type' });
      if (checked?.pin_conflict) metrics?.attributeTypeMismatches.add(checked.pin_conflict, { reason: 'pin_conflict' });
      return true;
    } finally {
      // Plain files: unlink is one trip through libuv's pool, where rm looks first (lstat), then unlinks.
      await Promise.all(written.map((p) => unlink(p).catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      })));
    }
  }
}

class SegmentsTakenError extends Error {
  readonly count: number;
  constructor(count: number) {
    super(`${count} WAL segments were already committed`);
    this.count = count;
  }
}

/** The oldest segments whose sizes add up to at most `maxBytes`, and at least the first one. */
function withinBudget(segments: ObjectInfo[], maxBytes: number): ObjectInfo[] {
  let bytes = 0;
  let n = 0;
  while (n < segments.length && (n === 0 || bytes + segments[n]!.size <= maxBytes)) bytes += segments[n++]!.size;
  return n === segments.length ? segments : segments.slice(0, n);
}

/** A WAL record, the segment it came from (the unit of exactly-once) and its rows as the writer takes them. */
type SegmentRecord = WalRecord & { segment: string; data: Uint8Array | ColumnBatchHead };

function* chunkByRows(records: SegmentRecord[], maxRows: number): Generator<SegmentRecord[]> {
  let chunk: SegmentRecord[] = [];
  let rows = 0;
  for (const r of records) {
    if (chunk.length > 0 && rows + r.header.rows > maxRows) {
      yield chunk;
      chunk = [];
      rows = 0;
    }
    chunk.push(r);
    rows += r.header.rows;
  }
  if (chunk.length > 0) yield chunk;
}

/**
 * Removes the group's records appended at or before `deletedAt` (ms; the time in their ids;
 * Infinity: all of them), its segments staying consumed: how many. A record whose id carries no
 * time counts as appended last.
 */
function dropAppendedBy(g: { hours: Map<number, Array<{ header: { id: string } }>> }, deletedAt: number): number {
  let n = 0;
  for (const [hour, list] of g.hours) {
    const kept = list.filter((r) => !(appendedAt(r.header.id) <= deletedAt));
    n += list.length - kept.length;
    if (kept.length === 0) g.hours.delete(hour);
    else if (kept.length < list.length) g.hours.set(hour, kept);
  }
  return n;
}

function heldTable(gk: string): HeldTable {
  const [tenant, dataset, table] = gk.split('\u0000') as [string, string, string];
  return { tenant, dataset, table };
}

function appendedAt(id: string): number {
  try {
    return recordIdTime(id);
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

