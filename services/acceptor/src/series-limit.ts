import type { TenantContext } from '@floe/auth';
import { seriesLimitRefusal, type ActiveSeriesStore, type TenantLimits } from '@floe/limits';
import type { Logger } from '@floe/telemetry';

/** Which metric series a request's conversion may write data points of (metrics-to-rows.ts, remote-write.ts). */
export interface SeriesGate {
  /** Whether data points of the series `seriesId` may be written. */
  admits(seriesId: string): boolean;
  /** Why a series admits() refused is refused. */
  readonly refusal: string;
}

/** Admits every series and notes it: a request's first conversion under a series limit. */
class SeriesSeen implements SeriesGate {
  readonly ids = new Set<string>();
  readonly refusal = '';

  admits(seriesId: string): boolean {
    this.ids.add(seriesId);
    return true;
  }
}

class SeriesRefused implements SeriesGate {
  readonly #refused: ReadonlySet<string>;
  readonly refusal: string;

  constructor(refused: ReadonlySet<string>, refusal: string) {
    this.#refused = refused;
    this.refusal = refusal;
  }

  admits(seriesId: string): boolean {
    return !this.#refused.has(seriesId);
  }
}

/** How often an acceptor tells the store again that a series it admitted is still active, at most. */
const MAX_REFRESH_MS = 60_000;
/** Series ids an acceptor remembers per tenant before it forgets the ones not confirmed lately. */
const MIN_REMEMBERED = 1024;

/**
 * limits.max_active_series at the acceptor. A request is converted once while its series ids are
 * noted, the ids go to the tenant's active-series store (shared by every acceptor in a cluster),
 * and only if the store refuses some is the request converted again without them: the common
 * case, every series already active, costs one pass and a set of ids. Series this acceptor had
 * admitted within a tenth of the window (at most a minute) are not sent again, so a steady
 * stream of known series asks the store about each series about once a minute, not per request.
 */
export class SeriesLimiter {
  readonly #store: ActiveSeriesStore;
  readonly #limitsOf: (tenant: string) => Promise<TenantLimits>;
  readonly #log: Logger;
  /** tenant → `<dataset>:<series_id>` → when the store last confirmed it (ms); oldest first. */
  readonly #confirmed = new Map<string, Map<string, number>>();
  /** The tenants this acceptor has seen under a series limit, with it: what active() reports. */
  readonly #limited = new Map<string, { limit: number; windowMs: number }>();
  #warnedAt = 0;

  constructor(store: ActiveSeriesStore, limitsOf: (tenant: string) => Promise<TenantLimits>, log: Logger) {
    this.#store = store;
    this.#limitsOf = limitsOf;
    this.#log = log;
  }

  /**
   * `convert(gate)` under the tenant's series limit: its result once every series the request
   * writes is admitted; otherwise `discard` the first result and convert again with the refused
   * series' points refused.
   */
  async convert<T>(ctx: TenantContext, convert: (gate: SeriesGate | undefined) => T, discard: (converted: T) => void): Promise<T> {
    const limits = await this.#limitsOf(ctx.tenant);
    const limit = limits.maxActiveSeries;
    if (limit === undefined) {
      this.#limited.delete(ctx.tenant);
      return convert(undefined);
    }
    this.#limited.set(ctx.tenant, { limit, windowMs: limits.activeSeriesWindowMs });
    const seen = new SeriesSeen();
    const first = convert(seen);
    const refused = await this.#refused(ctx, seen.ids, limit, limits.activeSeriesWindowMs);
    if (refused.size === 0) return first;
    discard(first);
    return convert(new SeriesRefused(refused, seriesLimitRefusal(ctx.tenant, limit, limits.activeSeriesWindowMs)));
  }

  /**
   * Each tenant this acceptor has written metrics of under a series limit: its active series (the
   * shared store's count) and the limit, for self-monitoring's active_series gauges.
   */
  async active(): Promise<Array<{ tenant: string; active: number; limit: number }>> {
    const out: Array<{ tenant: string; active: number; limit: number }> = [];
    for (const [tenant, { limit, windowMs }] of this.#limited) {
      try {
        out.push({ tenant, active: await this.#store.count(tenant, windowMs), limit });
      } catch {
        // Unreachable store: nothing to report this time.
      }
    }
    return out;
  }

  /** The ids of `ids` the tenant's store refuses. */
  async #refused(ctx: TenantContext, ids: ReadonlySet<string>, limit: number, windowMs: number): Promise<Set<string>> {
    const now = Date.now();
    const refreshMs = Math.min(MAX_REFRESH_MS, windowMs / 10);
    let confirmed = this.#confirmed.get(ctx.tenant);
    if (!confirmed) this.#confirmed.set(ctx.tenant, (confirmed = new Map()));
    const ask: string[] = [];
    for (const id of ids) {
      const member = `${ctx.dataset}:${id}`;
      if ((confirmed.get(member) ?? -Infinity) > now - refreshMs) continue;
      ask.push(member);
    }
    if (ask.length === 0) return new Set();
    let refusedMembers: Set<string>;
    try {
      refusedMembers = await this.#store.admit(ctx.tenant, ask, limit, windowMs);
    } catch (err) {
      // A limit protects the store; refusing every new series while Redis is away would lose data
      // the limit was never meant to refuse.
      if (now - this.#warnedAt > MAX_REFRESH_MS) {
        this.#warnedAt = now;
        this.#log.warn({ err, tenant: ctx.tenant }, 'active-series store unreachable; new series are admitted without counting them');
      }
      return new Set();
    }
    const refused = new Set<string>();
    const prefix = ctx.dataset.length + 1;
    for (const member of ask) {
      if (refusedMembers.has(member)) {
        refused.add(member.slice(prefix));
        continue;
      }
      confirmed.delete(member);
      confirmed.set(member, now);
    }
    if (confirmed.size > Math.max(limit, MIN_REMEMBERED)) {
      for (const [member, at] of confirmed) {
        if (at > now - refreshMs) break;
        confirmed.delete(member);
      }
    }
    return refused;
  }
}
