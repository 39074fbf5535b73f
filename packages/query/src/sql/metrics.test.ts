import { describe, expect, it } from 'vitest';
import { planMetricCatalog, planMetricExemplars, planMetricPoints, planMetricSeries } from './metrics.ts';
import type { PlannerTable } from './printer.ts';

const cols = (names: string[]): PlannerTable['columns'] => names.map((name) => ({ name }));
const METRICS: PlannerTable = {
  name: 'metrics',
  columns: cols([
    'time_unix_nano', 'metric_name', 'metric_type', 'unit', 'description', 'is_monotonic', 'temporality', 'scope_name', 'series_id', 'value', 'flags', 'count', 'sum',
    'explicit_bounds', 'bucket_counts', 'quantiles', 'exp_scale', 'exp_zero_count', 'exp_zero_threshold', 'exp_positive_offset', 'exp_positive_bucket_counts',
    'exp_negative_offset', 'exp_negative_bucket_counts', 'point_attr_str', 'point_attr_int', 'point_attr_double', 'point_attr_bool', 'resource_attr_str',
  ]),
};
const EXEMPLARS: PlannerTable = { name: 'metric_exemplars', columns: cols(['series_id', 'metric_name', 'time_unix_nano', 'value', 'trace_id', 'span_id', 'filtered_attr_str']) };
const window = { startNs: 1_000_000_000n, endNs: 2_000_000_000n };
const EVIL = ["x' OR 1=1 --", 'a"; DROP TABLE metrics; --', "read_parquet('/etc/passwd')", 'n\\u0000ul', "') UNION SELECT * FROM duckdb_tables() --"];

describe('metric planner', () => {
  it('prints metric names and times only as parameters, over the unqualified views', () => {
    for (const plan of [
      planMetricCatalog({ kind: 'metric_catalog', window }, METRICS),
      planMetricSeries({ kind: 'metric_series', window, metricNames: EVIL }, METRICS),
      planMetricPoints({ kind: 'metric_points', window, metricNames: EVIL, distributions: true }, METRICS),
      planMetricExemplars({ kind: 'metric_exemplars', window, metricNames: EVIL }, EXEMPLARS),
    ]) {
      for (const e of EVIL) expect(plan.sql).not.toContain(e);
      expect(plan.sql).not.toMatch(/read_parquet|duckdb_|UNION|;/i);
      expect(plan.sql).toMatch(/FROM "(metrics|metric_exemplars)"\n/);
      expect(plan.sql).toContain('"time_unix_nano" > CAST($');
      expect(plan.hints).toEqual({ start_ns: '1000000001', end_ns: '2000000000' });
    }
    const points = planMetricPoints({ kind: 'metric_points', window, metricNames: EVIL, distributions: false }, METRICS);
    expect(points.params).toEqual(expect.arrayContaining(EVIL));
    expect(points.sql).not.toContain('bucket_counts');
  });

  it('selects nothing for no names and refuses tables it was not given', () => {
    expect(planMetricPoints({ kind: 'metric_points', window, metricNames: [], distributions: false }, METRICS).sql).toContain('AND FALSE');
    expect(() => planMetricCatalog({ kind: 'metric_catalog', window }, EXEMPLARS)).toThrow(/metric plan/);
    expect(() => planMetricPoints({ kind: 'metric_points', window, metricNames: ['a'], distributions: false }, { name: 'metrics', columns: cols(['metric_name']) })).toThrow(/unknown column/);
  });
});
