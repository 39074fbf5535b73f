import { describe, expect, it } from 'vitest';
import { makePromLabels } from '@floe/query';
import { SeriesLabelCache } from './data.ts';

const entry = (name: string, instance: string) => ({ metricName: name, labels: makePromLabels([['__name__', name], ['instance', instance]]) });

describe('SeriesLabelCache', () => {
  it('keeps entries by scope and id, and lists the cached series of a metric name per scope', () => {
    const c = new SeriesLabelCache(10);
    c.set('acme\u0000default\u0000rw\u0000', 's1', entry('up', 'a'));
    c.set('acme\u0000default\u0000rw\u0000', 's2', entry('up', 'b'));
    c.set('acme\u0000default\u0000rw\u0000', 's3', entry('mem', 'a'));
    c.set('other\u0000default\u0000rw\u0000', 's1', entry('up', 'z'));
    expect(c.get('acme\u0000default\u0000rw\u0000', 's1')!.labels.instance).toBe('a');
    expect(c.get('other\u0000default\u0000rw\u0000', 's1')!.labels.instance).toBe('z');
    expect(c.get('acme\u0000default\u0000otel\u0000', 's1')).toBeUndefined();
    const ups = c.seriesOf('acme\u0000default\u0000rw\u0000', ['up']).map(([id, e]) => [id, e.labels.instance]);
    expect(ups.sort()).toEqual([['s1', 'a'], ['s2', 'b']]);
    expect(c.seriesOf('acme\u0000default\u0000rw\u0000', ['up', 'mem'])).toHaveLength(3);
    expect(c.seriesOf('other\u0000default\u0000rw\u0000', ['mem'])).toEqual([]);
  });

  it('forgets the least recently used series beyond its size, in the name lists too', () => {
    const c = new SeriesLabelCache(3);
    const p = 't\u0000d\u0000rw\u0000';
    for (let i = 0; i < 5; i++) c.set(p, `s${i}`, entry('up', String(i)));
    expect(c.get(p, 's0')).toBeUndefined();
    expect(c.seriesOf(p, ['up']).map(([id]) => id).sort()).toEqual(['s2', 's3', 's4']);
    // The index outgrowing the cache twice over starts again; cached entries stay readable by id.
    for (let i = 5; i < 12; i++) c.set(p, `s${i}`, entry('up', String(i)));
    expect(c.get(p, 's11')).toBeDefined();
    expect(c.seriesOf(p, ['up']).length).toBeLessThanOrEqual(3);
  });

  it('lends a listing of series ids to windows starting no earlier, for 30 s from the first full listing', () => {
    const c = new SeriesLabelCache();
    const t0 = 1_000_000;
    c.setWindowIds('k', { startNs: 100n, endNs: 200n, ids: ['a', 'b'] }, t0);
    expect(c.windowIds('k', 100n, t0 + 1_000)?.ids).toEqual(['a', 'b']);
    expect(c.windowIds('k', 150n, t0 + 1_000)?.ids).toEqual(['a', 'b']);
    expect(c.windowIds('k', 99n, t0 + 1_000)).toBeUndefined();
    expect(c.windowIds('other', 100n, t0 + 1_000)).toBeUndefined();
    // Extended by a later, partial listing: the age stays that of the full one.
    c.setWindowIds('k', { startNs: 100n, endNs: 260n, ids: ['a', 'b', 'c'] }, t0 + 20_000);
    expect(c.windowIds('k', 120n, t0 + 29_000)?.ids).toEqual(['a', 'b', 'c']);
    expect(c.windowIds('k', 120n, t0 + 31_000)).toBeUndefined();
    // A new full listing starts the clock again.
    c.setWindowIds('k', { startNs: 120n, endNs: 300n, ids: ['c'] }, t0 + 31_000);
    expect(c.windowIds('k', 120n, t0 + 60_000)?.ids).toEqual(['c']);
  });

  it('lets a listing stand without a new one for a few seconds, for windows it covers to their end', () => {
    const c = new SeriesLabelCache();
    const t0 = 1_000_000;
    c.setWindowIds('k', { startNs: 100n, endNs: 200n, ids: ['a', 'b'] }, t0);
    expect(c.currentWindowIds('k', 100n, 200n, t0 + 5_000)).toEqual(['a', 'b']);
    expect(c.currentWindowIds('k', 150n, 180n, t0 + 1_000)).toEqual(['a', 'b']);
    // Past its end, or older than the catalog's seconds, or starting before it: listed again.
    expect(c.currentWindowIds('k', 100n, 201n, t0 + 1_000)).toBeUndefined();
    expect(c.currentWindowIds('k', 100n, 200n, t0 + 5_001)).toBeUndefined();
    expect(c.currentWindowIds('k', 99n, 200n, t0 + 1_000)).toBeUndefined();
    // A listing of the recent part renews it.
    c.setWindowIds('k', { startNs: 100n, endNs: 260n, ids: ['a', 'b', 'c'] }, t0 + 20_000);
    expect(c.currentWindowIds('k', 120n, 260n, t0 + 24_000)).toEqual(['a', 'b', 'c']);
  });

  it('knows the scopes whose labels were read', () => {
    const c = new SeriesLabelCache();
    expect(c.knows('acme\u0000default')).toBe(false);
    c.markKnown('acme\u0000default');
    expect(c.knows('acme\u0000default')).toBe(true);
  });
});
