import { describe, expect, it } from 'vitest';
import type { CatalogEntry } from '@floe/query';
import { CatalogCache, SETTLED_CATALOG_TTL_MS, mergeCatalogs, settledCatalogWindow } from './catalog-cache.ts';

const H = 3_600_000;
const entry = (metricName: string, over: Partial<CatalogEntry> = {}): CatalogEntry => ({
  metricName,
  metricType: 'sum',
  unit: '',
  description: '',
  isMonotonic: true,
  temporality: 'cumulative',
  rw: true,
  ...over,
});

describe('catalogs of settled hours', () => {
  const now = 100 * H + 20 * 60_000; // 20 minutes into hour 100: hours before 99 are settled

  it('splits a long window ending now at the start of the hour before the current one', () => {
    expect(settledCatalogWindow(76 * H + 30_000, now, now)).toEqual({ fromMs: 76 * H, toMs: 99 * H });
    // Starting less than an hour before the settled end, or ending before it: nothing to gain.
    expect(settledCatalogWindow(98 * H + 1, now, now)).toBeUndefined();
    expect(settledCatalogWindow(90 * H, 99 * H, now)).toBeUndefined();
    expect(settledCatalogWindow(98 * H, now, now)).toEqual({ fromMs: 98 * H, toMs: 99 * H });
  });

  it('merges two windows: one entry per name, type and origin, the later unit and text first', () => {
    const merged = mergeCatalogs(
      [entry('b'), entry('a', { unit: 's', description: 'old', isMonotonic: false }), entry('a', { metricType: 'gauge' })],
      [entry('a', { unit: '', description: 'new', isMonotonic: false }), entry('c', { rw: false }), entry('c')],
    );
    expect(merged.map((e) => [e.metricName, e.metricType, e.rw])).toEqual([
      ['a', 'gauge', true],
      ['a', 'sum', true],
      ['b', 'sum', true],
      ['c', 'sum', false],
      ['c', 'sum', true],
    ]);
    const a = merged.find((e) => e.metricName === 'a' && e.metricType === 'sum')!;
    expect([a.unit, a.description, a.isMonotonic]).toEqual(['s', 'new', false]);
  });

  it('reads a long window as its settled part, kept for minutes, and the rest, kept for seconds', async () => {
    const cache = new CatalogCache();
    const reads: Array<[number, number]> = [];
    // Storage: metric a only in old hours, b only in the last two, and c nowhere yet.
    let stored = { a: 90 * H, b: 99.5 * H };
    const read = async (from: number, to: number) => {
      reads.push([from, to]);
      return Object.entries(stored).filter(([, at]) => at > from && at <= to).map(([name]) => entry(name));
    };
    const names = (c: CatalogEntry[]) => c.map((e) => e.metricName);
    const day = [76 * H + 30_000, now] as const;
    expect(names(await cache.catalog('acme', ...day, read, now))).toEqual(['a', 'b']);
    expect(reads).toEqual([[76 * H, 99 * H], [99 * H, now]]);
    // Within seconds: the whole answer again, no read.
    expect(names(await cache.catalog('acme', 77 * H, now - 1, read, now + 5_000))).toEqual(['a', 'b']);
    expect(reads).toHaveLength(2);
    // Later, a new name in the recent hours is seen; the settled part is not read again.
    stored = { ...stored, c: 100 * H + 10 * 60_000 } as typeof stored;
    expect(names(await cache.catalog('acme', ...day, read, now + 60_000))).toEqual(['a', 'b', 'c']);
    expect(reads.slice(2)).toEqual([[99 * H, now]]);
    // Once the settled catalog is older than its TTL, it is read again; other tenants never share it.
    await cache.catalog('acme', ...day, read, now + SETTLED_CATALOG_TTL_MS + 1);
    expect(reads.slice(3)).toEqual([[76 * H, 99 * H], [99 * H, now]]);
    await cache.catalog('globex', ...day, read, now + SETTLED_CATALOG_TTL_MS + 2);
    expect(reads.slice(5)).toEqual([[76 * H, 99 * H], [99 * H, now]]);
    // A short window is read whole, and empty answers are not kept.
    stored = {} as typeof stored;
    await cache.catalog('acme', now - H, now, read, now + SETTLED_CATALOG_TTL_MS + 10_000);
    await cache.catalog('acme', now - H, now, read, now + SETTLED_CATALOG_TTL_MS + 10_001);
    expect(reads.slice(7)).toEqual([[now - H, now], [now - H, now]]);
  });
});
