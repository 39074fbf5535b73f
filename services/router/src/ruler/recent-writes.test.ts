import { describe, expect, it } from 'vitest';
import { RecentWrites } from './recent-writes.ts';

const sample = (name: string, t: number) => ({ labels: { __name__: name }, t, v: 1 });

describe('RecentWrites', () => {
  it('keeps each dataset’s writes of the window, by when they were written, in write order', () => {
    const recent = new RecentWrites(60_000, 100);
    recent.record('acme', 'default', [sample('a', 0)], 1_000);
    // A group with a query offset writes samples older than the window: kept by write time.
    recent.record('acme', 'default', [sample('b', -120_000)], 30_000);
    recent.record('acme', 'prod', [sample('c', 30_000)], 30_000);
    recent.record('other', 'default', [sample('d', 30_000)], 30_000);
    expect(recent.of('acme', 'default', 31_000).samples.map((s) => s.labels.__name__)).toEqual(['a', 'b']);
    expect(recent.of('acme', 'default', 61_001).samples.map((s) => s.labels.__name__)).toEqual(['b']);
    expect(recent.of('acme', 'default', 90_001).samples).toEqual([]);
    // Datasets and tenants never see each other's writes.
    expect(recent.of('acme', 'prod', 31_000).samples.map((s) => s.labels.__name__)).toEqual(['c']);
    expect(recent.of('other', 'default', 31_000).samples.map((s) => s.labels.__name__)).toEqual(['d']);
    expect(recent.of('nobody', 'default', 31_000).samples).toEqual([]);
  });

  it('indexes a dataset’s writes once for every query until the next write or expiry', () => {
    const recent = new RecentWrites(60_000, 100);
    recent.record('acme', 'default', [sample('a', 0)], 1_000);
    const index = recent.of('acme', 'default', 2_000);
    expect(recent.of('acme', 'default', 3_000)).toBe(index);
    recent.record('acme', 'default', [sample('b', 0)], 4_000);
    const after = recent.of('acme', 'default', 5_000);
    expect(after).not.toBe(index);
    expect(after.samples.map((s) => s.labels.__name__)).toEqual(['a', 'b']);
    expect(recent.of('acme', 'default', 61_500).samples.map((s) => s.labels.__name__)).toEqual(['b']);
  });

  it('keeps at most its cap per dataset, dropping the oldest writes first', () => {
    const recent = new RecentWrites(60_000, 3);
    recent.record('acme', 'default', [sample('a', 1), sample('b', 1)], 1);
    recent.record('acme', 'default', [sample('c', 2), sample('d', 2)], 2);
    expect(recent.of('acme', 'default', 3).samples.map((s) => s.labels.__name__)).toEqual(['c', 'd']);
    recent.record('acme', 'default', [sample('e', 3), sample('f', 3), sample('g', 3), sample('h', 3)], 3);
    expect(recent.of('acme', 'default', 4).samples.map((s) => s.labels.__name__)).toEqual(['f', 'g', 'h']);
  });
});
