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

  it('keeps a settled catalog for minutes, the exact window only, never an empty one', () => {
    const cache = new CatalogCache();
    cache.setSettled('acme/default', 76 * H, 99 * H, [entry('a')], now);
    expect(cache.getSettled('acme/default', 76 * H, 99 * H, now + SETTLED_CATALOG_TTL_MS)).toEqual([entry('a')]);
    expect(cache.getSettled('acme/default', 76 * H, 99 * H, now + SETTLED_CATALOG_TTL_MS + 1)).toBeUndefined();
    expect(cache.getSettled('acme/default', 77 * H, 99 * H, now)).toBeUndefined();
    expect(cache.getSettled('globex/default', 76 * H, 99 * H, now)).toBeUndefined();
    cache.setSettled('acme/default', 75 * H, 99 * H, [], now);
    expect(cache.getSettled('acme/default', 75 * H, 99 * H, now)).toBeUndefined();
    // Recent catalogs stay seconds, and serve any window they contain.
    cache.set('acme/default', 10 * H, 20 * H, [entry('b')], now);
    expect(cache.get('acme/default', 11 * H, 19 * H, now + 5_000)).toEqual([entry('b')]);
    expect(cache.get('acme/default', 11 * H, 19 * H, now + 5_001)).toBeUndefined();
  });
});
