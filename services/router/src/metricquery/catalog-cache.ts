import type { CatalogEntry } from '@floe/query';

/** How long query evaluation reuses a (tenant, dataset)'s metric-name catalog. */
export const CATALOG_TTL_MS = 5_000;
/** How long the catalog of settled hours (see settledCatalogWindow) is reused. */
export const SETTLED_CATALOG_TTL_MS = 10 * 60_000;

const HOUR_MS = 3_600_000;

interface Entry {
  at: number;
  startMs: number;
  endMs: number;
  catalog: CatalogEntry[];
}

/**
 * Metric-name catalogs per (tenant, dataset), reused by query evaluation for a few seconds (the
 * panels of a dashboard ask for the same window at once): a catalog of a window that contains the
 * asked one is a superset of its catalog, and a superset only adds stored names that have no rows
 * in the window to the reads, so the answers are the same. Only queries use it (labels, label
 * values and metadata list the catalog itself and always read it); empty catalogs are not kept,
 * so the first data is seen at once; a new metric name may take up to the TTL to be seen.
 *
 * Beside them, the catalogs of settled hours (settledCatalogWindow) are kept for minutes: a
 * metric name first written into an hour that had already settled (a backfill) may take up to
 * SETTLED_CATALOG_TTL_MS to be seen there.
 */
export class CatalogCache {
  readonly #recent: Windows;
  readonly #settled: Windows;

  constructor(ttlMs = CATALOG_TTL_MS, settledTtlMs = SETTLED_CATALOG_TTL_MS) {
    this.#recent = new Windows(ttlMs);
    this.#settled = new Windows(settledTtlMs);
  }

  /**
   * The catalog of (startMs, endMs] or a superset, `read` reading a window's catalog from storage.
   * A window reaching past the settled hours by more than an hour reads its settled part (cached
   * apart) and the rest separately.
   */
  async catalog(scope: string, startMs: number, endMs: number, read: (startMs: number, endMs: number) => Promise<CatalogEntry[]>, now = Date.now()): Promise<CatalogEntry[]> {
    const hit = this.#recent.find(scope, now, (e) => e.startMs <= startMs && e.endMs >= endMs);
    if (hit) return hit;
    const settled = settledCatalogWindow(startMs, endMs, now);
    let catalog: CatalogEntry[];
    if (settled) {
      const { fromMs, toMs } = settled;
      const kept = this.#settled.find(scope, now, (e) => e.startMs === fromMs && e.endMs === toMs);
      const [old, recent] = await Promise.all([kept ?? read(fromMs, toMs), read(toMs, endMs)]);
      if (!kept) this.#settled.add(scope, { at: now, startMs: fromMs, endMs: toMs, catalog: old });
      catalog = mergeCatalogs(old, recent);
    } else {
      catalog = await read(startMs, endMs);
    }
    this.#recent.add(scope, { at: now, startMs, endMs, catalog });
    return catalog;
  }
}

/** Catalogs of windows by scope, each kept `ttlMs`. */
class Windows {
  readonly #ttlMs: number;
  readonly #entries = new Map<string, Entry[]>();

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  find(scope: string, now: number, fits: (e: Entry) => boolean): CatalogEntry[] | undefined {
    const list = this.#entries.get(scope);
    if (!list) return undefined;
    const fresh = list.filter((e) => now - e.at <= this.#ttlMs);
    if (fresh.length === 0) this.#entries.delete(scope);
    else if (fresh.length !== list.length) this.#entries.set(scope, fresh);
    return fresh.find(fits)?.catalog;
  }

  add(scope: string, entry: Entry): void {
    if (entry.catalog.length === 0) return;
    const list = (this.#entries.get(scope) ?? []).filter((e) => entry.at - e.at <= this.#ttlMs);
    list.push(entry);
    // A handful of windows per scope (panels with different ranges), the newest kept.
    this.#entries.set(scope, list.slice(-8));
    if (this.#entries.size > 1000) this.#entries.delete(this.#entries.keys().next().value!);
  }
}

/**
 * Where a query's catalog may come from settled hours: every hour before the one before `now`'s
 * (writes of an hour stop soon after it ends). A window of (startMs, endMs] reaching past them and
 * starting at least an hour inside them reads the settled part (from the start of startMs's hour,
 * a superset) apart from the rest; undefined when that gains nothing.
 */
export function settledCatalogWindow(startMs: number, endMs: number, now: number): { fromMs: number; toMs: number } | undefined {
  const toMs = Math.floor(now / HOUR_MS) * HOUR_MS - HOUR_MS;
  if (endMs <= toMs || startMs > toMs - HOUR_MS) return undefined;
  return { fromMs: Math.floor(startMs / HOUR_MS) * HOUR_MS, toMs };
}

/** The catalog of two windows together: one entry per (name, type, remote-written), the later window's unit and text first. */
export function mergeCatalogs(earlier: readonly CatalogEntry[], later: readonly CatalogEntry[]): CatalogEntry[] {
  const out = new Map<string, CatalogEntry>();
  const key = (e: CatalogEntry) => `${e.metricName}\u0000${e.metricType}\u0000${e.rw ? 1 : 0}`;
  for (const e of later) out.set(key(e), { ...e });
  for (const e of earlier) {
    const k = key(e);
    const have = out.get(k);
    if (!have) out.set(k, { ...e });
    else {
      have.isMonotonic ||= e.isMonotonic;
      have.unit ||= e.unit;
      have.description ||= e.description;
      have.temporality ||= e.temporality;
    }
  }
  return [...out.values()].sort((a, b) => (a.metricName < b.metricName ? -1 : a.metricName > b.metricName ? 1 : a.metricType < b.metricType ? -1 : a.metricType > b.metricType ? 1 : 0));
}
