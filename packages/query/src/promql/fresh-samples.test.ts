import { describe, expect, it } from 'vitest';
import type { VectorSelector } from './ast.ts';
import { evalInstant, type RawSeries } from './eval.ts';
import { FreshSampleIndex, withFreshSamples } from './fresh-samples.ts';
import { makeLabels } from '../labels.ts';
import { parsePromQL } from './parse.ts';
import { matchLabels } from './series.ts';
import { STALE_NAN, isStaleNaN } from './staleness.ts';

const L = (o: Record<string, string>) => makeLabels(Object.entries(o));
const S = 1000;
const STORED: RawSeries[] = [
  { labels: L({ __name__: 'job:errors:rate5m', job: 'api' }), t: [60 * S, 120 * S], v: [0.1, 0.2] },
  { labels: L({ __name__: 'job:errors:rate5m', job: 'db' }), t: [60 * S], v: [0.5] },
];
const stored = (sel: VectorSelector) => STORED.filter((s) => matchLabels(s.labels, sel.matchers));
const opts = (t: number) => ({ startMs: t, endMs: t, lookbackMs: 300_000, defaultSubqueryStepMs: 60_000 });

function instant(q: string, t: number, source: (sel: VectorSelector) => readonly RawSeries[]) {
  const r = evalInstant(parsePromQL(q), t, source, opts(t));
  if (r.resultType !== 'vector') throw new Error(r.resultType);
  return r.result.map((s) => ({ ...Object.fromEntries(Object.entries(s.labels)), v: s.v })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

describe('withFreshSamples', () => {
  it('lays samples storage does not have yet over the stored series, new series included', () => {
    const fresh = [
      { labels: L({ __name__: 'job:errors:rate5m', job: 'api' }), t: 180 * S, v: 0.9 },
      { labels: L({ __name__: 'job:errors:rate5m', job: 'web' }), t: 180 * S, v: 0.3 },
      { labels: L({ __name__: 'other', job: 'api' }), t: 180 * S, v: 7 },
    ];
    const source = withFreshSamples(stored, [fresh]);
    expect(instant('job:errors:rate5m', 180 * S, stored)).toEqual([
      { __name__: 'job:errors:rate5m', job: 'api', v: 0.2 },
      { __name__: 'job:errors:rate5m', job: 'db', v: 0.5 },
    ]);
    expect(instant('job:errors:rate5m', 180 * S, source)).toEqual([
      { __name__: 'job:errors:rate5m', job: 'api', v: 0.9 },
      { __name__: 'job:errors:rate5m', job: 'db', v: 0.5 },
      { __name__: 'job:errors:rate5m', job: 'web', v: 0.3 },
    ]);
    // The selector's matchers apply to fresh samples as to stored ones.
    expect(instant('job:errors:rate5m{job=~"a.*|w.*"} > 0.5', 180 * S, source)).toEqual([{ __name__: 'job:errors:rate5m', job: 'api', v: 0.9 }]);
    // Range selectors see the merged samples in time order.
    expect(instant('count_over_time(job:errors:rate5m{job="api"}[5m])', 180 * S, source)).toEqual([{ job: 'api', v: 3 }]);
  });

  it('replaces a stored sample at the same time, and takes a staleness marker as the series’ end', () => {
    const again = withFreshSamples(stored, [[{ labels: L({ __name__: 'job:errors:rate5m', job: 'api' }), t: 120 * S, v: 0.25 }]]);
    expect(instant('job:errors:rate5m{job="api"}', 130 * S, again)).toEqual([{ __name__: 'job:errors:rate5m', job: 'api', v: 0.25 }]);
    expect(instant('count_over_time(job:errors:rate5m{job="api"}[5m])', 130 * S, again)).toEqual([{ job: 'api', v: 2 }]);
    const ended = withFreshSamples(stored, [[{ labels: L({ __name__: 'job:errors:rate5m', job: 'db' }), t: 180 * S, v: STALE_NAN }]]);
    expect(instant('job:errors:rate5m', 180 * S, ended)).toEqual([{ __name__: 'job:errors:rate5m', job: 'api', v: 0.2 }]);
  });

  it('lets a later sample at the same time win, and finds samples for selectors without a metric name', () => {
    const api = L({ __name__: 'job:errors:rate5m', job: 'api' });
    const source = withFreshSamples(stored, [
      [
        { labels: api, t: 180 * S, v: 0.7 },
        { labels: api, t: 180 * S, v: 0.8 },
      ],
    ]);
    expect(instant('job:errors:rate5m{job="api"}', 180 * S, source)).toEqual([{ __name__: 'job:errors:rate5m', job: 'api', v: 0.8 }]);
    expect(instant('{__name__=~"job:.*", job="api"}', 180 * S, source)).toEqual([{ __name__: 'job:errors:rate5m', job: 'api', v: 0.8 }]);
  });

  it('lays later layers over earlier ones, and an index serves many queries', () => {
    const api = L({ __name__: 'job:errors:rate5m', job: 'api' });
    const recent = new FreshSampleIndex([
      { labels: api, t: 120 * S, v: 0.6 },
      { labels: api, t: 180 * S, v: 0.7 },
    ]);
    const group = [{ labels: api, t: 180 * S, v: 0.9 }];
    // The index's samples, at 120 s and 180 s, then the group's at 180 s over them.
    const first = withFreshSamples(stored, [recent, group]);
    expect(instant('job:errors:rate5m{job="api"}', 180 * S, first)).toEqual([{ __name__: 'job:errors:rate5m', job: 'api', v: 0.9 }]);
    expect(instant('job:errors:rate5m{job="api"}', 150 * S, first)).toEqual([{ __name__: 'job:errors:rate5m', job: 'api', v: 0.6 }]);
    // The same index under another query, without the group's layer, and with nothing over it.
    const second = withFreshSamples(stored, [recent, []]);
    expect(instant('job:errors:rate5m{job="api"}', 180 * S, second)).toEqual([{ __name__: 'job:errors:rate5m', job: 'api', v: 0.7 }]);
    expect(withFreshSamples(stored, [new FreshSampleIndex([]), []])).toBe(stored);
  });

  it('recognises the staleness marker and no other NaN', () => {
    expect(isStaleNaN(STALE_NAN)).toBe(true);
    expect(isStaleNaN(Number.NaN)).toBe(false);
    expect(isStaleNaN(0)).toBe(false);
  });
});
