import { describe, expect, it } from 'vitest';
import { planMetricSeries, planMetricSeriesPoints, planMetricTargetInfo } from './metrics.ts';
import type { PlannerTable } from './printer.ts';

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
    const series = planMetricSeries({ kind: 'metric_series', window, metricNames: ['lat'], selects: [{ metricNames: ['lat'], matchers: [{ label: 'le', op: '=', value: '0.5' }] }], metricTypes: ['histogram'] }, METRICS);
    expect(series.sql).toContain(`coalesce("point_attr_str"[$`);
    expect(series.params).toEqual(expect.arrayContaining(['le', '0.5', 'histogram']));
    const ti = planMetricTargetInfo({ kind: 'metric_target_info', window }, METRICS);
    expect(ti.sql).toContain(`coalesce("scope_name", '') <> $1`);
    expect(ti.sql).toContain('GROUP BY CAST("resource_attr_str" AS VARCHAR)');
    expect(ti.params[0]).toBe('floe.prometheus.remote_write');
  });
});
