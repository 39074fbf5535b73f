import { setTimeout as sleep } from 'node:timers/promises';
import { createHash } from 'node:crypto';
import type { TenantContext } from '@floe/auth';
import type { FloeConfig } from '@floe/config';
import { FloeError } from '@floe/errors';
import { tenantStoredBytes, type SqlCatalog } from '@floe/iceberg';
import { MemoryDedup, quotaExceeded, rateLimited, type CachedTenantLimits, type DedupStore, type TokenBuckets } from '@floe/limits';
import { getTenant, type Db } from '@floe/meta';
import type { Counter, Logger } from '@floe/telemetry';
import { AcceptedTimes } from './accepted-times.ts';
import type { WalBacklogGate } from './wal-backlog.ts';

export interface AdmissionDeps {
  db: Db;
  catalog: SqlCatalog;
  buckets: TokenBuckets;
  /** Shared by every acceptor (Redis in a cluster). */
  dedup: DedupStore;
  config: Readonly<FloeConfig>;
  log: Logger;
  /** Self-monitoring's resends_dropped (spec 2, Events): resends acknowledged without storing. */
  resendsDropped?: Counter;
  /** Self-monitoring's requests_refused: authenticated requests answered with an error, by tenant, signal and reason. */
  requestsRefused?: Counter;
  /** Self-monitoring's request_bytes_accepted: body bytes (as sent, compressed or not) of requests made durable or acknowledged as resends, by tenant, dataset and signal. */
  requestBytesAccepted?: Counter;
  /** Refuses every tenant while the WAL backlog is over acceptor.max_wal_backlog, and a dataset whose failing tables hold that much (absent: no limit). */
  walBacklog?: WalBacklogGate;
  /** Each tenant's limits (cachedTenantLimits over the metadata DB), the cache the series limit and metrics generator read too. */
  limitsOf: (tenant: string) => Promise<CachedTenantLimits>;
}

/** Why a request was refused, as requests_refused tells: the limit, or the error's kind. */
function refusalReason(err: unknown): string {
  if (!(err instanceof FloeError)) return 'internal';
  switch (err.code) {
    case 'FLOE_ERR_RATE_LIMITED':
      return 'rate_limited';
    case 'FLOE_ERR_QUOTA_EXCEEDED':
      return 'quota_exceeded';
    case 'FLOE_ERR_WAL_BACKLOG':
      return 'wal_backlog';
    case 'FLOE_ERR_WAL_TABLE_HELD':
      return 'wal_table_held';
    case 'FLOE_ERR_WAL_UNAVAILABLE':
      return 'wal_unavailable';
    default:
      return err.kind;
  }
}

/** What identifies a byte-identical resend: who sent it where, and the exact bytes. */
export interface RequestIdentity {
  /** `traces`, `logs`, …, `remote_write`. */
  signal: string;
  contentType: string;
  contentEncoding: string;
  /** The query string, where it says what the body is (Pyroscope's /ingest). */
  params?: string;
  body: Uint8Array;
}

/** Longest one request's turn to store holds off its copies (here and on other acceptors). */
const CLAIM_TTL_MS = 30_000;
/** How long a copy waits for another acceptor's turn before storing anyway, and how often it looks. */
const CLAIM_WAIT_MS = 10_000;
const CLAIM_POLL_MS = 50;

/**
 * The acceptor's per-tenant gate, in front of decoding (spec 1, Errors 4–5; Ingest rule 5):
 * - the ingest token buckets (requests and body bytes per second): 429 / RESOURCE_EXHAUSTED with
 *   Retry-After and X-RateLimit-* headers;
 * - the storage quota (limits.max_storage_bytes): 429 whose text contains quota_exceeded, no
 *   Retry-After; the stored total is re-read from the catalog every acceptor.quota_cache_ttl;
 * - the row times it may write (limits.ingest_max_age, limits.ingest_max_future; accepted-times.ts);
 * - resend dedup: a request whose fingerprint was made durable within writer.ingest_dedup_window
 *   (shared store) or acceptor.retry_dedup_window (this acceptor's memory) is acknowledged without
 *   being stored again.
 */
export class Admission {
  readonly #o: AdmissionDeps;
  readonly #local = new MemoryDedup(200_000);
  readonly #limits: (tenant: string) => Promise<CachedTenantLimits>;
  readonly #stored = new Map<string, { at: number; bytes: Promise<number> }>();

  constructor(deps: AdmissionDeps) {
    this.#o = deps;
    this.#limits = deps.limitsOf;
  }

  #storedBytes(tenant: string): Promise<number> {
    const hit = this.#stored.get(tenant);
    if (hit && Date.now() - hit.at < this.#o.config.acceptor.quota_cache_ttl) return hit.bytes;
    const bytes = tenantStoredBytes(this.#o.catalog, tenant);
    this.#stored.set(tenant, { at: Date.now(), bytes });
    bytes.catch(() => this.#stored.delete(tenant));
    return bytes;
  }

  /**
   * Throws the 429 FloeError when the tenant is over a rate limit or its storage quota, and the
   * 503 one while the WAL backlog is over its limit (before taking tokens: a refused request
   * costs its tenant nothing). Returns the tenant's limits.
   */
  async admit(ctx: TenantContext, bodyBytes: number): Promise<CachedTenantLimits> {
    this.#o.walBacklog?.check(ctx.tenant, ctx.dataset);
    const limits = await this.#limits(ctx.tenant);
    if (limits.ingestRequests) {
      const taken = await this.#o.buckets.take(`${ctx.tenant}:ingest_requests`, 1, limits.ingestRequests);
      if (!taken.allowed) throw rateLimited(`tenant ${ctx.tenant} ingest requests`, limits.ingestRequests, taken);
    }
    if (limits.ingestBytes) {
      const taken = await this.#o.buckets.take(`${ctx.tenant}:ingest_bytes`, bodyBytes, limits.ingestBytes);
      if (!taken.allowed) throw rateLimited(`tenant ${ctx.tenant} ingest bytes`, limits.ingestBytes, taken);
    }
    if (limits.maxStorageBytes !== undefined) {
      const stored = await this.#storedBytes(ctx.tenant);
      if (stored >= limits.maxStorageBytes) throw quotaExceeded(ctx.tenant, stored, limits.maxStorageBytes);
    }
    return limits;
  }

  /**
   * The whole gate around one request: admit (or throw the 429), acknowledge a byte-identical
   * resend with `onResend()` without storing it, otherwise `store(times)` (the row times the
   * tenant may write) and remember the request once that store is durable (it resolved).
   */
  async run<R>(ctx: TenantContext, req: RequestIdentity, store: (times: AcceptedTimes) => Promise<R>, onResend: () => R): Promise<R> {
    try {
      const out = await this.#run(ctx, req, store, onResend);
      this.#o.requestBytesAccepted?.add(req.body.byteLength, { 'tenant.id': ctx.tenant, 'dataset.id': ctx.dataset, signal: req.signal });
      return out;
    } catch (err) {
      this.#o.requestsRefused?.add(1, { 'tenant.id': ctx.tenant, 'dataset.id': ctx.dataset, signal: req.signal, reason: refusalReason(err) });
      throw err;
    }
  }

  async #run<R>(ctx: TenantContext, req: RequestIdentity, store: (times: AcceptedTimes) => Promise<R>, onResend: () => R): Promise<R> {
    const limits = await this.admit(ctx, req.body.byteLength);
    let fp = this.fingerprint(ctx, req, limits.createdAtMs);
    const isResendNow = async () => {
      if (!(await this.isResend(fp))) return false;
      // The cached limits may predate the tenant id's deletion and re-creation; a resend is rare
      // enough to ask the metadata DB which tenant it is now.
      const current = (await getTenant(this.#o.db, ctx.tenant))?.createdAt.getTime();
      if (current !== limits.createdAtMs) fp = this.fingerprint(ctx, req, current);
      return current === limits.createdAtMs || (await this.isResend(fp));
    };
    // The same bytes may be being stored right now, here or on another acceptor sharing the
    // store (a client retrying before its first try was answered, or sending twice at once): the
    // turn is taken first and the resend asked within it, so a copy whose first try was
    // remembered while it waited is seen as a resend. Past CLAIM_WAIT_MS the copy goes on
    // without the turn: at worst stored twice, never lost.
    let claimed = await this.#claim(fp);
    for (const until = Date.now() + CLAIM_WAIT_MS; !claimed && Date.now() < until; ) {
      await sleep(CLAIM_POLL_MS);
      claimed = await this.#claim(fp);
    }
    try {
      if (await isResendNow()) {
        this.#o.resendsDropped?.add(1, { signal: req.signal });
        return onResend();
      }
      const out = await store(new AcceptedTimes(Date.now(), limits.ingestMaxAgeMs, limits.ingestMaxFutureMs));
      await this.remember(fp);
      return out;
    } finally {
      if (claimed) await this.#release(fp);
    }
  }

  /** The shared store's turn to store `fp`; an unreachable store grants it (dedup is an optimisation). */
  async #claim(fp: Uint8Array): Promise<boolean> {
    try {
      return await this.#o.dedup.claim(fp, CLAIM_TTL_MS);
    } catch (err) {
      this.#o.log.warn({ err }, 'dedup store unreachable; storing the request');
      return true;
    }
  }

  async #release(fp: Uint8Array): Promise<void> {
    // Left behind, the turn lapses after CLAIM_TTL_MS.
    await this.#o.dedup.release(fp).catch((err: unknown) => this.#o.log.warn({ err }, 'dedup store unreachable; a claim lapses on its own'));
  }

  /**
   * The request's SHA-256 digest: who sent it where, and the exact bytes. `tenantCreatedAtMs` tells
   * the tenant from an earlier one of the same id (deleted since): a request to it is never taken
   * for a resend of one stored for the first.
   */
  fingerprint(ctx: TenantContext, req: RequestIdentity, tenantCreatedAtMs: number | undefined): Uint8Array {
    const h = createHash('sha256');
    h.update(`${ctx.tenant}\u0000${tenantCreatedAtMs ?? ''}\u0000${ctx.dataset}\u0000${req.signal}\u0000${req.contentType}\u0000${req.contentEncoding}\u0000`);
    if (req.params !== undefined) h.update(`${req.params}\u0000`);
    h.update(req.body);
    return h.digest();
  }

  /** Whether this exact request was already made durable within a dedup window. */
  async isResend(fingerprint: Uint8Array): Promise<boolean> {
    if (await this.#local.seen(fingerprint)) return true;
    try {
      return await this.#o.dedup.seen(fingerprint);
    } catch (err) {
      // The shared store is an optimisation: without it a resend is stored again, never lost.
      this.#o.log.warn({ err }, 'dedup store unreachable; storing the request');
      return false;
    }
  }

  /** Called after the request's WAL append is durable. */
  async remember(fingerprint: Uint8Array): Promise<void> {
    await this.#local.remember(fingerprint, this.#o.config.acceptor.retry_dedup_window);
    try {
      await this.#o.dedup.remember(fingerprint, this.#o.config.writer.ingest_dedup_window);
    } catch (err) {
      this.#o.log.warn({ err }, 'dedup store unreachable; a resend to another acceptor may be stored twice');
    }
  }
}
