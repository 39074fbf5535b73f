import { FloeError } from '@floe/errors';
import { DEFAULT_WAL_PREFIX, listSegments, walBacklog, type ObjectStore, type WalBacklog } from '@floe/storage';
import type { Logger } from '@floe/telemetry';

/** Shortest pause between two listings of the WAL; a slow listing stretches it (see #schedule). */
const MIN_INTERVAL_MS = 1000;
/** A listing may take at most this share of the time (a huge backlog on a slow store lists slowly). */
const LISTING_SHARE = 0.05;
/** What a refused client is told to wait: about one listing, after which the gate may open. */
const RETRY_AFTER_S = 5;
const NONE: WalBacklog = { segments: 0, bytes: 0, oldestMs: undefined };

/**
 * Refuses ingest while the WAL holds more than `acceptor.max_wal_backlog` bytes that the writer
 * has not consumed: a writer that is down or behind would otherwise let the WAL grow until the
 * disk (or the bucket's budget) is full, and a full disk fails every write, the writer's own
 * included. Refused requests get 503 / UNAVAILABLE with Retry-After, which OTLP exporters,
 * Collectors and Prometheus retry with backoff, holding the data in their own queues meanwhile.
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
  /** As last listed; none before the first listing and while listings fail (the gate is open). */
  #backlog: WalBacklog = NONE;
  #closed = false;
  #refusing = false;
  /** The last listing failed (logged once per stretch of failures, not every second). */
  #unlisted = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(store: ObjectStore, maxBytes: number, log: Logger) {
    this.#store = store;
    this.#maxBytes = maxBytes;
    this.#log = log;
  }

  /** Starts listing (once the acceptor serves: a start that fails leaves nothing running). */
  start(): void {
    if (this.#maxBytes > 0 && !this.#closed) void this.#list();
  }

  /** The backlog as last listed (nothing before the first listing, or without a limit). */
  get backlog(): { bytes: number; segments: number } {
    return { bytes: this.#backlog.bytes, segments: this.#backlog.segments };
  }

  /** Throws the 503 FloeError while the backlog is over the limit. */
  check(): void {
    const { bytes, segments } = this.#backlog;
    if (this.#maxBytes <= 0 || bytes <= this.#maxBytes) return;
    throw new FloeError(
      'unavailable',
      `write-ahead log backlog of ${bytes} bytes in ${segments} segments is over acceptor.max_wal_backlog (${this.#maxBytes}): the writer is behind or down; retry later`,
      { code: 'FLOE_ERR_WAL_BACKLOG', headers: { 'Retry-After': String(RETRY_AFTER_S) } },
    );
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  async #list(): Promise<void> {
    const started = Date.now();
    try {
      const backlog = (this.#backlog = walBacklog(await listSegments(this.#store, DEFAULT_WAL_PREFIX)));
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
      this.#refusing = false;
      if (!this.#unlisted) this.#log.warn({ err }, 'could not list the WAL to measure its backlog; not limiting ingest by it until a listing succeeds');
      this.#unlisted = true;
    }
    this.#schedule(Date.now() - started);
  }

  #schedule(tookMs: number): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.#list(), Math.max(MIN_INTERVAL_MS, tookMs / LISTING_SHARE));
    this.#timer.unref();
  }
}
