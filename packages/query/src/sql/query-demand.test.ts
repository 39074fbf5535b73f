import { describe, expect, it } from 'vitest';
import { lowerLogQuery } from '../logql/lower.ts';
import { lowerMetricQuery } from '../logql/lower-metric.ts';
import { parseLogQL } from '../logql/parse.ts';
import { filterDemand } from './query-demand.ts';
import { LOGS } from './test-db.ts';

const logDemand = (q: string, table = LOGS) => {
  const ir = lowerLogQuery(parseLogQL(q), q, { range: { startNs: 0n, endNs: 1n }, direction: 'backward', limit: 10 });
  return filterDemand([ir], table);
};
const metricDemand = (q: string) => filterDemand(lowerMetricQuery(parseLogQL(q), q).leaves.map((l) => l.sample), LOGS);

describe('filterDemand', () => {
  it('counts attribute keys of stream matchers and label filters once, not column-backed labels', () => {
    expect(logDemand('{service_name="api", k8s.pod.name=~"api-.*", level="error"} | logfmt | http.status_code >= 500 or k8s.pod.name="x" | trace_id!=""')).toEqual([
      'http.status_code',
      'k8s.pod.name',
    ]);
  });

  it('leaves out aliases (service, job, severity) and line filters', () => {
    expect(logDemand('{job="api", service="api", severity="info"} |= "user.id" != "x"')).toEqual([]);
  });

  it('reads every range aggregation of a metric query; grouping and unwrap are not filters', () => {
    expect(metricDemand('sum by (region) (rate({env="prod"} | tenant="a" [5m])) / sum(avg_over_time({env="dev"} | unwrap latency [5m]))')).toEqual(['env', 'tenant']);
  });

  it('a materialized label resolves to its column and is not demand', () => {
    const table = { ...LOGS, columns: [...LOGS.columns, { name: 'label_k8s_pod_name', attributeKey: 'k8s.pod.name' }] };
    expect(logDemand('{k8s.pod.name="p", team="t"}', table)).toEqual(['team']);
  });
});
