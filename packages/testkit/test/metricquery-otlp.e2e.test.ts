import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protoMetricExporter, sendSampleMetrics, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * The metric query API over OpenTelemetry metrics (issue 6, deliverable 3): every instrument kind
 * sent with the OpenTelemetry JS SDK (testkit's sendSampleMetrics) is queryable under its
 * Prometheus name (unit and `_total` suffixes, dots to underscores), histograms as `_bucket{le}` /
 * `_count` / `_sum` (exponential ones downsampled to classic buckets), job from service.name; and
 * the API around queries: labels, label values, series, metadata, buildinfo without `features`,
 * format_query, Prometheus's error envelope (400 with position, 422), auth.
 */

type Vector = Array<{ metric: Record<string, string>; value: [number, string] }>;

describe('metric query API over OTLP metrics', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'promotel';
  const service = 'otel-svc';

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { router: { query_demand_flush_interval: '100ms' } } });
    key = (await floe.bootstrap(tenant)).api_key;
    await sendSampleMetrics(protoMetricExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), service);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const api = async (path: string, params: Record<string, string | string[]> = {}, method: 'GET' | 'POST' = 'POST', auth = true) => {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x);
    const headers: Record<string, string> = auth ? { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } : {};
    const url = `${floe.routerUrl}/metricquery/api/v1/${path}`;
    const res =
      method === 'POST'
        ? await fetch(url, { method, body: body.toString(), headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' } })
        : await fetch(`${url}?${body.toString()}`, { headers });
    return { status: res.status, body: (await res.json()) as { status: string; data: unknown; errorType?: string; error?: string } };
  };
  const instant = async (query: string): Promise<Vector> => {
    const r = await api('query', { query, time: (Date.now() / 1000).toFixed(3) });
    expect(r.body.status, JSON.stringify(r.body)).toBe('success');
    return (r.body.data as { result: Vector }).result;
  };
  const value = async (query: string) => {
    const r = await instant(query);
    expect(r, query).toHaveLength(1);
    return Number(r[0]!.value[1]);
  };

  it('serves every OTLP kind under its Prometheus name', async () => {
    await waitFor('the OTLP metrics', async () => ((await instant('e2e_items_total')).length > 0 ? true : undefined), 60_000, 500);
    const items = await instant('e2e_items_total');
    expect(items[0]!.metric).toEqual({ __name__: 'e2e_items_total', job: service, route: '/checkout' });
    expect(Number(items[0]!.value[1])).toBe(5);
    // Counter with typed attributes: values as Prometheus's translator prints them.
    expect(await value('e2e_requests_total{route="/checkout", code="200", ok="true", ratio="0.25"}')).toBe(7.5);
    expect(await value('e2e_requests_total{route="/cart"}')).toBe(1);
    // Non-monotonic sum: a gauge without _total; gauge units become suffixes.
    expect(await value('e2e_queue_depth')).toBe(-3);
    expect(await value('e2e_temperature_celsius{room="lab"}')).toBe(-12.25);
    expect(await value('e2e_connections{pool="main"}')).toBe(42);
    // Explicit-bucket histogram: cumulative _bucket series, _count, _sum.
    const buckets = await instant('e2e_latency_seconds_bucket{route="/checkout"}');
    expect(Object.fromEntries(buckets.map((b) => [b.metric.le, Number(b.value[1])]))).toEqual({ '0.1': 1, '1': 2, '10': 3, '+Inf': 4 });
    expect(await value('e2e_latency_seconds_count')).toBe(4);
    expect(await value('e2e_latency_seconds_sum')).toBeCloseTo(55.55, 9);
    expect(await value('histogram_quantile(0.5, e2e_latency_seconds_bucket)')).toBeCloseTo(1, 9);
    // Exponential histograms, downsampled to classic buckets by le from the scale.
    expect(await value('e2e_payload_size_bytes_count')).toBe(5);
    expect(await value('e2e_payload_size_bytes_sum')).toBe(2027);
    const exp = await instant('e2e_payload_size_bytes_bucket');
    const les = exp.map((b) => ({ le: b.metric.le === '+Inf' ? Infinity : Number(b.metric.le), n: Number(b.value[1]) })).sort((a, b) => a.le - b.le);
    expect(les[les.length - 1]).toEqual({ le: Infinity, n: 5 });
    expect(les.find((b) => b.le === 0)?.n).toBe(1);
    // Counts are cumulative and everything ≤ 1024 is inside the last finite bucket.
    for (let i = 1; i < les.length; i++) expect(les[i]!.n).toBeGreaterThanOrEqual(les[i - 1]!.n);
    expect(les[les.length - 2]!.n).toBe(5);
    expect(les.filter((b) => b.le >= 1024 && b.le !== Infinity).length).toBeGreaterThan(0);
    // Negative buckets (a gauge aggregated as an exponential histogram).
    expect(await value('e2e_balance_count')).toBe(4);
    const balance = await instant('e2e_balance_bucket');
    expect(balance.some((b) => Number(b.metric.le) < 0)).toBe(true);
  });

  it("takes OTLP metrics at Prometheus's own OTLP receiver path too (/api/v1/otlp/v1/metrics)", async () => {
    // A collector pointed at Prometheus's OTLP endpoint needs only its host changed. (A tenant of its own: the others count this one's series.)
    const own = { apiKey: (await floe.bootstrap('prom-path')).api_key, tenant: 'prom-path' };
    await sendSampleMetrics(protoMetricExporter(`${floe.otlpHttpUrl}/api/v1/otlp`, own), 'prom-path-svc');
    const items = await waitFor('the metrics sent to the Prometheus path', async () => {
      const res = await fetch(`${floe.routerUrl}/metricquery/api/v1/query?${new URLSearchParams({ query: 'e2e_items_total' })}`, { headers: { authorization: `Bearer ${own.apiKey}`, 'x-tenant-id': own.tenant } });
      const result = ((await res.json()) as { data: { result: Vector } }).data.result;
      return result.length > 0 ? result : undefined;
    }, 60_000, 500);
    expect(items.map((r) => [r.metric.job, r.value[1]])).toEqual([['prom-path-svc', '5']]);
  });

  it('serves target_info from the resource attributes, job from service.name', async () => {
    await waitFor('the OTLP metrics', async () => ((await instant('e2e_items_total')).length > 0 ? true : undefined), 60_000, 500);
    const info = await instant('target_info');
    expect(info).toHaveLength(1);
    // Resource attributes of every type as labels (dots to underscores); service.name is the job.
    expect(info[0]!.metric).toMatchObject({ __name__: 'target_info', job: service, deployment_environment: 'e2e', host_cpus: '4', sample_ratio: '0.5', feature_on: 'true' });
    expect(info[0]!.metric).not.toHaveProperty('service_name');
    expect(info[0]!.value[1]).toBe('1');
    // Joined to a metric as Prometheus users do.
    const joined = await instant('e2e_items_total * on (job) group_left (deployment_environment) target_info');
    expect(joined[0]!.metric).toMatchObject({ job: service, deployment_environment: 'e2e', route: '/checkout' });
    expect(Number(joined[0]!.value[1])).toBe(5);
    const names = await api('label/__name__/values', {}, 'GET');
    expect(names.body.data).toContain('target_info');
  });

  it('counts the label names of query selectors without a column as query demand (table metrics)', async () => {
    await instant('e2e_requests_total{route="/cart", code!="500", job="otel-svc"}');
    await api('series', { 'match[]': 'e2e_items_total{route=~"/c.*"}' });
    type Stats = { query_demand: Array<{ table: string; key: string; count: number }> };
    const stats = await waitFor(
      'query demand flushed',
      async () => {
        const res = await fetch(`${floe.routerUrl}/api/v1/tenants/${tenant}/datasets/default/attribute-stats`, { headers: { authorization: `Bearer ${floe.adminApiKey}` } });
        if (res.status !== 200) return undefined;
        const body = (await res.json()) as Stats;
        const route = body.query_demand.find((d) => d.table === 'metrics' && d.key === 'route');
        return route && route.count >= 2 ? body : undefined;
      },
      30_000,
      200,
    );
    const keys = stats.query_demand.filter((d) => d.table === 'metrics').map((d) => d.key);
    expect(keys).toEqual(expect.arrayContaining(['code', 'route']));
    // __name__ and job have columns (metric_name, service_name): never counted.
    expect(keys).not.toContain('__name__');
    expect(keys).not.toContain('job');
  });

  it('labels, label values, series and metadata under Prometheus names', async () => {
    const names = await api('label/__name__/values', {}, 'GET');
    expect(names.body.data).toEqual(expect.arrayContaining(['e2e_items_total', 'e2e_latency_seconds_bucket', 'e2e_latency_seconds_count', 'e2e_queue_depth', 'e2e_temperature_celsius']));
    const labels = await api('labels', { 'match[]': 'e2e_latency_seconds_bucket' });
    expect(labels.body.data).toEqual(['__name__', 'job', 'le', 'route']);
    const rooms = await api('label/room/values', { 'match[]': '{__name__=~"e2e_.*"}' }, 'GET');
    expect(rooms.body.data).toEqual(['lab']);
    const series = await api('series', { 'match[]': ['e2e_items_total', 'e2e_connections'] });
    expect(series.body.data).toEqual(
      expect.arrayContaining([
        { __name__: 'e2e_items_total', job: service, route: '/checkout' },
        { __name__: 'e2e_connections', job: service, pool: 'main' },
      ]),
    );
    expect(await api('series', {})).toMatchObject({ status: 400, body: { status: 'error', errorType: 'bad_data' } });
    const meta = await api('metadata', {}, 'GET');
    const data = meta.body.data as Record<string, Array<{ type: string; help: string }>>;
    expect(data.e2e_requests_total).toEqual([{ type: 'counter', help: 'requests served', unit: '' }]);
    expect(data.e2e_latency_seconds![0]!.type).toBe('histogram');
  });

  it('answers Grafana’s connection test, buildinfo with the ruler feature, format_query, and errors in the envelope', async () => {
    const one = await api('query', { query: '1+1', time: '1700000000' });
    expect(one.body).toEqual({ status: 'success', data: { resultType: 'scalar', result: [1700000000, '2'] } });
    const info = await api('status/buildinfo', {}, 'GET');
    expect(info.status).toBe(200);
    // Mimir's `features`: Grafana's alerting then manages this data source's rules through <url>/config/v1/rules.
    expect((info.body.data as { features: Record<string, string> }).features).toMatchObject({ ruler_config_api: 'true' });
    expect((info.body.data as { version: string }).version).toMatch(/^\d+\.\d+\.\d+/);
    // Grafana's alert list asks a Prometheus data source for its rules and alerts: none set, not an error.
    expect(await api('rules', {}, 'GET')).toMatchObject({ status: 200, body: { status: 'success', data: { groups: [] } } });
    expect(await api('alerts', {}, 'GET')).toMatchObject({ status: 200, body: { status: 'success', data: { alerts: [] } } });
    const fmt = await api('format_query', { query: 'sum(rate(x{a="b"}[5m]))by(a)' });
    expect(fmt.body.data).toBe('sum by (a) (rate(x{a="b"}[5m]))');
    const bad = await api('query', { query: 'sum(rate(x[5m])' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ status: 'error', errorType: 'bad_data' });
    expect(bad.body.error).toMatch(/^parse error at line 1, col \d+:/);
    const exec = await api('query', { query: 'e2e_requests_total + on(job) e2e_requests_total' });
    expect(exec.status).toBe(422);
    expect(exec.body).toMatchObject({ status: 'error', errorType: 'execution' });
    const range = await api('query_range', { query: 'e2e_items_total', start: String(Date.now() / 1000 - 600), end: String(Date.now() / 1000), step: '30' }, 'GET');
    expect(range.body.status).toBe('success');
    const matrix = range.body.data as { resultType: string; result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> };
    expect(matrix.resultType).toBe('matrix');
    expect(matrix.result.map((s) => s.metric)).toEqual([{ __name__: 'e2e_items_total', job: service, route: '/checkout' }]);
    expect(matrix.result[0]!.values.length).toBeGreaterThan(0);
    expect(new Set(matrix.result[0]!.values.map(([, v]) => v))).toEqual(new Set(['5']));
    // Over four hours, plain series are read series first (ids, labels, then the matching points).
    const end = Date.now() / 1000;
    for (const [query, name, last] of [
      ['e2e_requests_total{route="/checkout", code="200"}', 'e2e_requests_total', '7.5'],
      ['e2e_queue_depth', 'e2e_queue_depth', '-3'],
    ] as const) {
      const long = await api('query_range', { query, start: String(end - 4 * 3600), end: String(end), step: '300' });
      const m = long.body.data as { result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> };
      expect(m.result.map((r) => r.metric.__name__), query).toEqual([name]);
      expect(m.result[0]!.values.at(-1)![1], query).toBe(last);
    }
    expect((await api('query_range', { query: 'x', start: '10', end: '20', step: '0' })).status).toBe(400);
    expect((await api('query', { query: 'up' }, 'GET', false)).status).toBe(401);
  });
});
