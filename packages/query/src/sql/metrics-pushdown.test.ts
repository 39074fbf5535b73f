import { describe, expect, it } from 'vitest';
import { REMOTE_WRITE_SCOPE, planMetricPoints, planMetricSeries, planMetricSeriesIds, planMetricSeriesLabels, planMetricSeriesPoints, planMetricTargetInfo, seriesIdFromHalves } from './metrics.ts';
import type { PlannerTable } from './printer.ts';
import type { MetricSelect } from '../ir/metrics.ts';
import { buildPlainSeries, buildPromSeries, matchLabels, type PointRow, type SeriesPointsRow, type SeriesRow } from '../promql/series.ts';
import type { LabelMatcher } from '../promql/ast.ts';
import { METRICS as METRICS_DB, openMetricsDb, type MetricRow } from './test-db.ts';

const cols = (names: string[]): PlannerTable['columns'] => names.map((name) => ({ name }));
const METRICS: PlannerTable = {
  name: 'metrics',
  columns: cols([
    'time_unix_nano', 'metric_name', 'metric_type', 'unit', 'description', 'is_monotonic', 'temporality', 'scope_name', 'series_id', 'service_name', 'value', 'flags',
    'explicit_bounds', 'quantiles', 'exp_scale', 'exp_zero_threshold', 'exp_positive_offset', 'exp_positive_bucket_counts', 'exp_negative_offset', 'exp_negative_bucket_counts',
    'point_attr_str', 'point_attr_int', 'point_attr_double', 'point_attr_bool', 'resource_attr_str', 'resource_attr_int', 'resource_attr_double', 'resource_attr_bool',
  ]),
};
const window = { startNs: 1_000_000_000n, endNs: 2_000_000_000n };
const EVIL = "x' OR 1=1 --";

describe('label matcher pushdown', () => {
  it('filters remote-written rows by their labels, values only as parameters', () => {
    const plan = planMetricSeriesPoints(
      {
        kind: 'metric_series_points',
        window,
        selects: [
          {
            metricNames: ['http_requests_total'],
            matchers: [
              { label: '__name__', op: '=', value: 'http_requests_total' },
              { label: 'job', op: '=', value: 'api' },
              { label: EVIL, op: '!=', value: EVIL },
              { label: 'status', op: '=~', value: '500|503' },
              { label: 'path', op: '!~', value: '/a.*' },
              { label: 'any', op: '=~', value: '.*' },
              { label: 'method', op: '=~', value: '.+' },
            ],
          },
          { metricNames: ['up'], matchers: [] },
        ],
        metricTypes: ['gauge', 'sum'],
        otelLabels: false,
      },
      METRICS,
    );
    expect(plan.sql).not.toContain(EVIL);
    const p = (v: string) => `$${plan.params.indexOf(v) + 1}`;
    expect(plan.sql).toContain(`"service_name" = ${p('api')}`);
    expect(plan.sql).toContain(`coalesce("point_attr_str"[${p(EVIL)}], '') <> ${p(EVIL)}`);
    expect(plan.sql).toContain(`(coalesce("point_attr_str"[${p('status')}], '') IN (${p('500')}, ${p('503')}))`);
    expect(plan.sql).toContain(`NOT regexp_full_match(coalesce("point_attr_str"[${p('path')}], ''), ${p('(?s:/a.*)')})`);
    expect(plan.sql).toContain(`(coalesce("point_attr_str"[${p('method')}], '') <> '')`);
    expect(plan.params).not.toContain('any');
    // Only remote-written rows are filtered by label; the second selector reads `up` whole.
    expect(plan.sql).toContain(`coalesce("scope_name", '') <> ${p('floe.prometheus.remote_write')} OR (`);
    expect(plan.sql).toMatch(/OR "metric_name" IN \(CAST\(\$\d+ AS VARCHAR\)\)\)/);
    expect(plan.sql).toContain(`"metric_type" IN (${p('gauge')}, ${p('sum')})`);
    // Only the string label map for remote-written metrics; points as lists per series.
    expect(plan.sql).not.toContain('point_attr_int');
    expect(plan.sql).toContain('AS "t", list(');
    expect(plan.sql.match(/\$\d+/g)!.every((x) => Number(x.slice(1)) <= plan.params.length)).toBe(true);
  });

  it('applies the same filter to series reads, and plans target_info over OpenTelemetry rows only', () => {
    const series = planMetricSeries({ kind: 'metric_series', window, metricNames: ['lat'], selects: [{ metricNames: ['lat'], matchers: [{ label: 'env', op: '=', value: 'prod' }] }], metricTypes: ['histogram'] }, METRICS);
    expect(series.sql).toContain(`coalesce("point_attr_str"[$`);
    expect(series.params).toEqual(expect.arrayContaining(['env', 'prod', 'histogram']));
    const ti = planMetricTargetInfo({ kind: 'metric_target_info', window }, METRICS);
    expect(ti.sql).toContain(`coalesce("scope_name", '') <> $1`);
    expect(ti.sql).toContain('GROUP BY CAST("resource_attr_str" AS VARCHAR)');
    expect(ti.params[0]).toBe('floe.prometheus.remote_write');
  });

  it('leaves labels derived from histogram and summary columns to the evaluator, and pushes them on gauges and sums', () => {
    const derived = [
      { label: 'le', op: '=' as const, value: '+Inf' },
      { label: 'quantile', op: '=' as const, value: '0.99' },
    ];
    const selects = [{ metricNames: ['lat'], matchers: [...derived, { label: 'env', op: '=' as const, value: 'prod' }] }];
    for (const plan of [
      planMetricSeries({ kind: 'metric_series', window, metricNames: ['lat'], selects, metricTypes: ['histogram', 'exponential_histogram', 'summary'] }, METRICS_DB),
      planMetricPoints({ kind: 'metric_points', window, metricNames: ['lat'], distributions: true, selects, metricTypes: ['exponential_histogram'] }, METRICS_DB),
      planMetricSeries({ kind: 'metric_series', window, metricNames: ['lat'], selects }, METRICS_DB),
    ]) {
      expect(plan.params).toEqual(expect.arrayContaining(['env', 'prod']));
      expect(plan.params).not.toContain('le');
      expect(plan.params).not.toContain('quantile');
    }
    // Remote-written classic buckets and summary quantiles are plain series that store le / quantile.
    const plain = planMetricSeriesPoints({ kind: 'metric_series_points', window, selects, metricTypes: ['gauge', 'sum'], otelLabels: false }, METRICS_DB);
    expect(plain.params).toEqual(expect.arrayContaining(['le', '+Inf', 'quantile', '0.99']));
  });
});

describe('label matcher pushdown on DuckDB', () => {
  // Inside `window`, (1 s, 2 s].
  const at = 1_500_000_000n;
  const rw = { scope: REMOTE_WRITE_SCOPE, service: 'api' };
  const rows: MetricRow[] = [
    // A remote-written native histogram: its `le` comes from the exponential buckets at read time.
    {
      ...rw, timeNs: at, name: 'rw_hist', type: 'exponential_histogram', seriesId: 'h1', count: 7, sum: 12,
      exp: { scale: 0, zeroCount: 1, zeroThreshold: 0, positiveOffset: 0, positive: [2, 4] }, point: { str: { job: 'api', instance: 'a' } },
    },
    // Remote-written classic buckets: plain sums that store `le`.
    { ...rw, timeNs: at, name: 'rw_classic_bucket', type: 'sum', isMonotonic: true, seriesId: 'c1', value: 5, point: { str: { job: 'api', le: '+Inf' } } },
    { ...rw, timeNs: at, name: 'rw_classic_bucket', type: 'sum', isMonotonic: true, seriesId: 'c2', value: 3, point: { str: { job: 'api', le: '1' } } },
  ];
  const matchers = (name: string, le: string): LabelMatcher[] => [
    { name: '__name__', op: '=', value: name },
    { name: 'le', op: '=', value: le },
  ];
  const select = (stored: string, m: LabelMatcher[]): MetricSelect => ({ metricNames: [stored], matchers: m.map((x) => ({ label: x.name, op: x.op, value: x.value })) });

  it('keeps the series of rw_hist_bucket{le="+Inf"}, which a filter on stored attributes would lose', async () => {
    const db = await openMetricsDb(rows);
    try {
      const m = matchers('rw_hist_bucket', '+Inf');
      const ir = { window, metricNames: ['rw_hist'], selects: [select('rw_hist', m)], metricTypes: ['histogram', 'exponential_histogram', 'summary'] };
      const seriesRows = (await db.run(planMetricSeries({ kind: 'metric_series', ...ir }, METRICS_DB))) as unknown as SeriesRow[];
      const points = (await db.run(planMetricPoints({ kind: 'metric_points', ...ir, distributions: true }, METRICS_DB))) as unknown as PointRow[];
      const series = buildPromSeries(seriesRows, points).filter((x) => matchLabels(x.labels, m));
      expect(series.map((x) => ({ ...x.labels }))).toEqual([{ __name__: 'rw_hist_bucket', job: 'api', instance: 'a', le: '+Inf' }]);
      expect(Array.from(series[0]!.v)).toEqual([7]);
    } finally {
      db.close();
    }
  });

  it('filters remote-written classic buckets by their stored le in SQL', async () => {
    const db = await openMetricsDb(rows);
    try {
      const m = matchers('rw_classic_bucket', '+Inf');
      const plan = planMetricSeriesPoints({ kind: 'metric_series_points', window, selects: [select('rw_classic_bucket', m)], metricTypes: ['gauge', 'sum'], otelLabels: false }, METRICS_DB);
      const read = (await db.run(plan)) as unknown as SeriesPointsRow[];
      expect(read.map((r) => r.series_id)).toEqual(['c1']);
      expect(buildPlainSeries(read).map((x) => ({ ...x.labels }))).toEqual([{ __name__: 'rw_classic_bucket', job: 'api', le: '+Inf' }]);
    } finally {
      db.close();
    }
  });
});

/** A series id as planMetricSeriesIds and planMetricSeriesPoints without labels return it. */
const idOf = (r: Record<string, unknown>) => seriesIdFromHalves(Number(r.series_hi), Number(r.series_lo), r.series_text as string | null);

describe('series ids read as two UINTEGER halves', () => {
  it('round-trip 16 lowercase hex digits through the halves, and any other id as text', async () => {
    const ids = ['e34f44d110a6a364', '00000000ffffffff', 'ffffffff00000001', '0000000000000000', 'ABCDEF0123456789', 'e34f44d110a6a36', "s1' --", ''];
    const rw = { scope: REMOTE_WRITE_SCOPE, service: 'api', name: 'mem', type: 'gauge' as const };
    const db = await openMetricsDb(ids.map((seriesId, i) => ({ ...rw, timeNs: 1_100_000_000n + BigInt(i), seriesId, value: i, point: { str: {} } })));
    try {
      const base = { metricNames: ['mem'], metricTypes: ['gauge', 'sum'] };
      const listed = await db.run(planMetricSeriesIds({ kind: 'metric_series_ids', window, ...base }, METRICS_DB));
      expect(listed.map(idOf).sort()).toEqual([...ids].sort());
      // Only the odd ones travel as text.
      expect(listed.filter((r) => r.series_text !== null).map((r) => r.series_text).sort()).toEqual(['', 'ABCDEF0123456789', 'e34f44d110a6a36', "s1' --"]);
      const lists = await db.run(planMetricSeriesPoints({ kind: 'metric_series_points', window, selects: [{ metricNames: ['mem'], matchers: [] }], ...base, otelLabels: false, labels: false }, METRICS_DB));
      expect(lists.map((r) => [idOf(r), Array.from(r.v as ArrayLike<number>)]).sort((a, b) => (a[0]! < b[0]! ? -1 : 1))).toEqual(ids.map((id, i) => [id, [i]]).sort((a, b) => (a[0]! < b[0]! ? -1 : 1)));
    } finally {
      db.close();
    }
  });
});

describe('plain series read series first (ids, labels, then points of the picked ones)', () => {
  const EVIL_ID = "z' OR 1=1 --";
  const rw = { scope: REMOTE_WRITE_SCOPE, service: 'api', name: 'mem', type: 'gauge' as const };
  // s1 and s2 report to the end of the window; s3 stopped in its first half.
  const rows: MetricRow[] = [
    { ...rw, timeNs: 1_100_000_000n, seriesId: 's1', value: 1, point: { str: { instance: 'a' } } },
    { ...rw, timeNs: 1_900_000_000n, seriesId: 's1', value: 2, point: { str: { instance: 'a' } } },
    { ...rw, timeNs: 1_950_000_000n, seriesId: 's2', value: 3, point: { str: { instance: 'b' } } },
    { ...rw, timeNs: 1_200_000_000n, seriesId: 's3', value: 4, point: { str: { instance: 'c' } } },
    { ...rw, timeNs: 1_300_000_000n, seriesId: 's3', value: 5, point: { str: { instance: 'c' } } },
  ];
  const late = { startNs: 1_500_000_000n, endNs: 2_000_000_000n };
  const base = { metricNames: ['mem'], metricTypes: ['gauge', 'sum'] };

  it('lists the ids, reads labels where asked, and points without labels of the given series only', async () => {
    const db = await openMetricsDb(rows);
    try {
      const ids = await db.run(planMetricSeriesIds({ kind: 'metric_series_ids', window, ...base }, METRICS_DB));
      expect(ids.map(idOf).sort()).toEqual(['s1', 's2', 's3']);
      // The late window holds labels of the series still reporting; s3's come from the whole window by id.
      const recent = await db.run(planMetricSeriesLabels({ kind: 'metric_series_labels', window: late, ...base, otelLabels: false }, METRICS_DB));
      expect(recent.map((r) => r.series_id).sort()).toEqual(['s1', 's2']);
      const byId = planMetricSeriesLabels({ kind: 'metric_series_labels', window, ...base, otelLabels: false, seriesIds: ['s3', EVIL_ID] }, METRICS_DB);
      expect(byId.sql).not.toContain(EVIL_ID);
      const s3 = (await db.run(byId)) as unknown as SeriesRow[];
      expect(s3.map((r) => [r.series_id, r.metric_name, r.rw])).toEqual([['s3', 'mem', true]]);
      const lists = planMetricSeriesPoints({ kind: 'metric_series_points', window, selects: [{ metricNames: ['mem'], matchers: [] }], ...base, otelLabels: false, labels: false, seriesIds: ['s1', 's3'] }, METRICS_DB);
      expect(lists.sql.match(/\$\d+/g)!.every((x) => Number(x.slice(1)) <= lists.params.length)).toBe(true);
      const points = (await db.run(lists)).map((r) => ({ series_id: idOf(r), t: r.t, v: r.v, stale_t: r.stale_t })).sort((a, b) => a.series_id.localeCompare(b.series_id));
      expect(points.map((r) => r.series_id)).toEqual(['s1', 's3']);
      // Merged with the labels, they build the series a single read with labels builds.
      const merged = points.map((p) => ({ ...(p.series_id === 's3' ? s3[0]! : (recent.find((r) => r.series_id === p.series_id) as unknown as SeriesRow)), t: p.t, v: p.v, stale_t: p.stale_t }));
      const whole = (await db.run(planMetricSeriesPoints({ kind: 'metric_series_points', window, selects: [{ metricNames: ['mem'], matchers: [] }], ...base, otelLabels: false }, METRICS_DB))) as unknown as SeriesPointsRow[];
      const expected = buildPlainSeries(whole.filter((r) => r.series_id !== 's2'));
      const got = buildPlainSeries(merged as SeriesPointsRow[]);
      const plainOf = (s: typeof got) => s.map((x) => ({ labels: { ...x.labels }, t: Array.from(x.t), v: Array.from(x.v) })).sort((a, b) => a.labels.instance!.localeCompare(b.labels.instance!));
      expect(plainOf(got)).toEqual(plainOf(expected));
      expect(plainOf(got).map((x) => x.labels.instance)).toEqual(['a', 'c']);
    } finally {
      db.close();
    }
  });
});

describe('label matchers on materialized label columns', () => {
  const at = 1_500_000_000n;
  const rw = (seriesId: string, labels: Record<string, string>, value: number): MetricRow => ({
    scope: REMOTE_WRITE_SCOPE, service: labels.job, timeNs: at, name: 'http_requests_total', type: 'sum', isMonotonic: true, seriesId, value,
    point: { str: labels },
    // As remote write sets them: job and instance again, as the resource's service.name and service.instance.id.
    resource: { str: { 'service.name': labels.job!, ...(labels.instance ? { 'service.instance.id': labels.instance } : {}) } },
  });
  const rows: MetricRow[] = [
    rw('s1', { job: 'api', instance: 'a:80', status: '500' }, 1),
    rw('s2', { job: 'api', instance: 'b:80', status: '200' }, 2),
    rw('s3', { job: 'web', instance: 'a:80', status: '503' }, 3),
    rw('s4', { job: 'web', instance: 'c:80' }, 4),
    // A label spelt like a resource key: absent on s1-s4, where the column would take the resource's value.
    rw('s5', { job: 'web', 'service.instance.id': 'x' }, 5),
    // An OpenTelemetry row (not remote-written) whose attribute would fail every matcher: never filtered in SQL.
    { timeNs: at, name: 'http_requests_total', type: 'sum', isMonotonic: true, seriesId: 'o1', value: 6, point: { str: { status: 'nope' } } },
  ];
  const labels = { label_status: 'status', label_instance: 'instance', label_service_instance_id: 'service.instance.id' };
  const TABLE: PlannerTable = { name: 'metrics', columns: [...METRICS_DB.columns, ...Object.entries(labels).map(([name, attributeKey]) => ({ name, attributeKey }))] };
  const selectOf = (m: MetricSelect['matchers']): MetricSelect[] => [{ metricNames: ['http_requests_total'], matchers: m }];
  const plan = (table: PlannerTable, m: MetricSelect['matchers']) =>
    planMetricSeriesPoints({ kind: 'metric_series_points', window, selects: selectOf(m), metricTypes: ['gauge', 'sum'], otelLabels: false }, table);

  it('reads a label from its column instead of the label map, with the same rows', async () => {
    const db = await openMetricsDb(rows, labels);
    try {
      const cases: Array<{ m: MetricSelect['matchers']; want: string[] }> = [
        { m: [{ label: 'status', op: '=~', value: '5..' }], want: ['o1', 's1', 's3'] },
        { m: [{ label: 'status', op: '!=', value: '500' }], want: ['o1', 's2', 's3', 's4', 's5'] },
        { m: [{ label: 'status', op: '=', value: '' }], want: ['o1', 's4', 's5'] },
        { m: [{ label: 'instance', op: '=', value: 'a:80' }, { label: 'status', op: '!~', value: '2..' }], want: ['o1', 's1', 's3'] },
        { m: [{ label: 'service.instance.id', op: '=', value: 'x' }], want: ['o1', 's5'] },
        { m: [{ label: 'service.instance.id', op: '!=', value: '' }], want: ['o1', 's5'] },
      ];
      for (const { m, want } of cases) {
        const withColumns = plan(TABLE, m);
        const viaMaps = plan(METRICS_DB, m);
        const ids = async (p: typeof withColumns) => (await db.run(p)).map((r) => String(r.series_id)).sort();
        expect(await ids(withColumns), JSON.stringify(m)).toEqual(want);
        expect(await ids(viaMaps), JSON.stringify(m)).toEqual(want);
      }
    } finally {
      db.close();
    }
  });

  it('uses the column of the exact key, and never for the resource keys remote write sets', () => {
    const p = plan(TABLE, [
      { label: 'status', op: '=~', value: '5..' },
      { label: 'instance', op: '=', value: 'a:80' },
      { label: 'service.instance.id', op: '=', value: 'x' },
      { label: 'Status', op: '=', value: '500' },
    ]);
    expect(p.sql).toContain(`regexp_full_match(coalesce("label_status", ''), $`);
    expect(p.sql).toContain(`coalesce("label_instance", '') = $`);
    expect(p.sql).not.toContain('label_service_instance_id');
    expect(p.sql).toContain(`coalesce("point_attr_str"[$${p.params.indexOf('service.instance.id') + 1}], '')`);
    expect(p.sql).toContain(`coalesce("point_attr_str"[$${p.params.indexOf('Status') + 1}], '')`);
    expect(p.params).not.toContain('status');
    expect(p.params).not.toContain('instance');
  });
});
