import { FloeError } from '@floe/errors';
import { DEFAULT_WAL_PREFIX, listSegments, walBacklog, WalHeldReader, type HeldTable, type ObjectInfo, type ObjectStore, type WalBacklog } from '@floe/storage';
import type { Logger } from '@floe/telemetry';

/** Shortest pause between two listings of the WAL; a slow listing stretches it (see #schedule). */
const MIN_INTERVAL_MS = 1000;
/** A listing may take at most this share of the time (a huge backlog on a slow store lists slowly). */
const LISTING_SHARE = 0.05;
/** What a refused client is told to wait: about one listing, after which the gate may open. */
const RETRY_AFTER_S = 5;
const NONE: WalBacklog = { segments: 0, bytes: 0, oldestMs: undefined };

/** The WAL segments the writers keep only for tables they cannot commit, owned by one tenant's dataset. */
export interface HeldShare {
  tenant: string;
  dataset: string;
  /** The dataset's tables the segments are kept for. */
  tables: string[];
  segments: number;
  bytes: number;
}

export interface BacklogShares {
  /** What counts against the limit for every tenant: the segments not held for a failing table. */
  backlog: WalBacklog;
  /** The segments held for failing tables, all tenants together. */
  held: { segments: number; bytes: number };
  /** Held segments by `tenant\u0000dataset`: a segment held for two datasets counts whole for each (either keeps it). */
  byDataset: Map<string, HeldShare>;
}

const shareKey = (tenant: string, dataset: string) => `${tenant}\u0000${dataset}`;

/** Splits a listing of the WAL by what the writers published as held (WalHeldReader). */
export function backlogShares(segments: readonly ObjectInfo[], held: ReadonlyMap<string, readonly HeldTable[]>): BacklogShares {
  const counted: ObjectInfo[] = [];
  const total = { segments: 0, bytes: 0 };
  const byDataset = new Map<string, HeldShare>();
  for (const s of segments) {
    const tables = held.get(s.key);
    if (!tables || tables.length === 0) {
      counted.push(s);
      continue;
    }
    total.segments++;
    total.bytes += s.size;
    const shares = new Set<HeldShare>();
    for (const t of tables) {
      const k = shareKey(t.tenant, t.dataset);
      let share = byDataset.get(k);
      if (!share) byDataset.set(k, (share = { tenant: t.tenant, dataset: t.dataset, tables: [], segments: 0, bytes: 0 }));
      if (!share.tables.includes(t.table)) share.tables.push(t.table);
      shares.add(share);
    }
    for (const share of shares) {
      share.segments++;
      share.bytes += s.size;
    }
  }
  return { backlog: walBacklog(counted), held: total, byDataset };
}

/**
 * Refuses ingest while the WAL holds more than `acceptor.max_wal_backlog` bytes that the writer
 * has not consumed: a writer that is down or behind would otherwise let the WAL grow until the
 * disk (or the bucket's budget) is full, and a full disk fails every write, the writer's own
 * included. Refused requests get 503 / UNAVAILABLE with Retry-After, which OTLP exporters,
 * Collectors and Prometheus retry with backoff, holding the data in their own queues meanwhile.
 *
 * Segments a writer keeps only for tables it cannot commit (damaged metadata: it retries them
 * after a back-off; it publishes which, storage's wal-held.ts) do not count against that limit:
 * one tenant's broken table would otherwise refuse every tenant. Instead each (tenant, dataset)
 * whose held segments pass the same limit is refused alone (FLOE_ERR_WAL_TABLE_HELD); and once
 * the held segments of all datasets together pass it, every dataset holding any is refused, so
 * the disk holds at most about twice the limit however many datasets break (each alone under the
 * limit, they added up to the limit per broken dataset). Per
 * dataset, not per table: admission runs before the body is decoded, when the request's tables
 * are not known yet, but its dataset is. A segment held for two datasets counts whole for each.
 *
 * The backlog is the sealed segments under the WAL prefix, listed in the background (every
 * acceptor of a cluster sees the same WAL), so a request never waits for a listing. Until the
 * first listing, and while listings fail, the gate stays open: it protects the disk, it must
 * not take ingest down with the store's listing.
 */
export class WalBacklogGate {
  readonly #store: ObjectStore;
  readonly #maxBytes: number;
  readonly #log: Logger;
  readonly #heldReader: WalHeldReader;
  /** As last listed; none before the first listing and while listings fail (the gate is open). */
  #backlog: WalBacklog = NONE;
  #held = { segments: 0, bytes: 0 };
  /** The datasets refused for their held segments, as last listed. */
  #refusedDatasets = new Map<string, HeldShare>();
  #closed = false;
  #refusing = false;
  /** The last listing failed (logged once per stretch of failures, not every second). */
  #unlisted = false;
  /** The writers' held objects could not be read (logged once per stretch). */
  #heldUnread = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(store: ObjectStore, maxBytes: number, log: Logger) {
    this.#store = store;
    this.#maxBytes = maxBytes;
    this.#log = log;
    this.#heldReader = new WalHeldReader(store);
  }

  /** Starts listing (once the acceptor serves: a start that fails leaves nothing running). */
  start(): void {
    if (this.#maxBytes > 0 && !this.#closed) void this.#list();
  }

  /** The backlog that counts for every tenant, as last listed (nothing before the first listing, or without a limit). */
  get backlog(): { bytes: number; segments: number } {
    return { bytes: this.#backlog.bytes, segments: this.#backlog.segments };
  }

  /** The segments held for tables that cannot be committed, as last listed. */
  get held(): { bytes: number; segments: number } {
    return { ...this.#held };
  }

  /** Throws the 503 FloeError while the backlog is over the limit, or while the segments held for the dataset's failing tables are. */
  check(tenant: string, dataset: string): void {
    if (this.#maxBytes <= 0) return;
    const { bytes, segments } = this.#backlog;
    if (bytes > this.#maxBytes) {
      throw new FloeError(
        'unavailable',
        `write-ahead log backlog of ${bytes} bytes in ${segments} segments is over acceptor.max_wal_backlog (${this.#maxBytes}): the writer is behind or down; retry later`,
        { code: 'FLOE_ERR_WAL_BACKLOG', headers: { 'Retry-After': String(RETRY_AFTER_S) } },
      );
    }
    const held = this.#refusedDatasets.get(shareKey(tenant, dataset));
    if (!held) return;
    const them = held.tables.length > 1 ? 'them' : 'it';
    const over =
      held.bytes > this.#maxBytes
        ? `the ${held.bytes} bytes in ${held.segments} write-ahead log segments kept for ${them} are over acceptor.max_wal_backlog (${this.#maxBytes})`
        : `the ${held.bytes} bytes in ${held.segments} write-ahead log segments kept for ${them}, with those kept for other datasets' failing tables (${this.#held.bytes} bytes in all), are over acceptor.max_wal_backlog (${this.#maxBytes})`;
    throw new FloeError(
      'unavailable',
      `table${held.tables.length > 1 ? 's' : ''} ${held.tables.join(', ')} of dataset ${held.dataset} cannot be committed (the writer retries ${them}): ${over}; retry later`,
      { code: 'FLOE_ERR_WAL_TABLE_HELD', headers: { 'Retry-After': String(RETRY_AFTER_S) } },
    );
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  async #list(): Promise<void> {
    const started = Date.now();
    try {
      const listed = await listSegments(this.#store, DEFAULT_WAL_PREFIX);
      const shares = backlogShares(listed, await this.#readHeld());
      const backlog = (this.#backlog = shares.backlog);
      this.#held = shares.held;
      this.#refuseDatasets(shares.byDataset, shares.held.bytes);
      const { bytes, segments } = backlog;
      if (this.#unlisted) this.#log.info('the WAL can be listed again; its backlog limits ingest again');
      this.#unlisted = false;
      const over = bytes > this.#maxBytes;
      if (over !== this.#refusing) {
        this.#refusing = over;
        if (over) this.#log.warn({ backlogBytes: bytes, segments, maxBytes: this.#maxBytes }, 'WAL backlog over acceptor.max_wal_backlog: refusing ingest (503) until the writer catches up');
        else this.#log.info({ backlogBytes: bytes, segments, maxBytes: this.#maxBytes }, 'WAL backlog back under acceptor.max_wal_backlog: accepting ingest again');
      }
    } catch (err) {
      if (this.#closed) return;
      this.#backlog = NONE;
      this.#held = { segments: 0, bytes: 0 };
      this.#refuseDatasets(new Map(), 0);
      this.#refusing = false;
      if (!this.#unlisted) this.#log.warn({ err }, 'could not list the WAL to measure its backlog; not limiting ingest by it until a listing succeeds');
      this.#unlisted = true;
    }
    this.#schedule(Date.now() - started);
  }

  /** What the writers hold; nothing when that cannot be read (the segments then count for everyone). */
  async #readHeld(): Promise<ReadonlyMap<string, readonly HeldTable[]>> {
    try {
      const held = await this.#heldReader.read();
      if (this.#heldUnread) this.#log.info('the WAL segments the writers hold for failing tables can be read again');
      this.#heldUnread = false;
      return held;
    } catch (err) {
      if (!this.#heldUnread) this.#log.warn({ err }, 'could not read which WAL segments the writers hold for failing tables; counting them as backlog for every tenant');
      this.#heldUnread = true;
      return new Map();
    }
  }

  /**
   * The datasets over the limit by their held segments, or every dataset holding any while all
   * held segments together (`heldBytes`) are; logged as each stretch of refusal starts and ends.
   */
  #refuseDatasets(byDataset: ReadonlyMap<string, HeldShare>, heldBytes: number): void {
    const allOver = heldBytes > this.#maxBytes;
    const now = new Map([...byDataset].filter(([, s]) => allOver || s.bytes > this.#maxBytes));
    for (const [k, s] of now) {
      if (this.#refusedDatasets.has(k)) continue;
      this.#log.warn(
        { tenant: s.tenant, dataset: s.dataset, tables: s.tables, heldBytes: s.bytes, segments: s.segments, allHeldBytes: heldBytes, maxBytes: this.#maxBytes },
        "WAL segments kept for a tenant's tables that cannot be committed (the dataset's, or all datasets' together) are over acceptor.max_wal_backlog: refusing that tenant's ingest to the dataset (503) until the tables commit; tenants without failing tables are accepted",
      );
    }
    for (const [k, s] of this.#refusedDatasets) {
      if (!now.has(k)) this.#log.info({ tenant: s.tenant, dataset: s.dataset }, "a tenant's WAL segments held for failing tables are back under acceptor.max_wal_backlog: accepting its ingest again");
    }
    this.#refusedDatasets = now;
  }

  #schedule(tookMs: number): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.#list(), Math.max(MIN_INTERVAL_MS, tookMs / LISTING_SHARE));
    this.#timer.unref();
  }
}
