import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * PromQL label matchers on a metrics table with materialized label columns (schema.
 * materialized_labels): remote-written series are filtered on the columns, with the answers the
 * label maps give, also for a key the column would fill from the resource (service.instance.id,
 * which remote write sets from `instance`); and labels a column holds are no query demand.
 */
describe('PromQL over materialized label columns', () => {
  let floe: FloeUnderTest;
  let key: string;
  const now = Math.floor(Date.now() / 60_000) * 60_000;
  const min = 60_000;
  const auth = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' });

  type Result = Array<{ metric: Record<string, string>; value?: [number, string]; values?: Array<[number, string]> }>;
  const query = async (path: 'query' | 'query_range', params: Record<string, string>): Promise<Result> => {
    const res = await fetch(`${floe.routerUrl}/metricquery/api/v1/${path}`, {
      method: 'POST',
      body: new URLSearchParams(params),
      headers: { ...auth(), 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { data: { result: Result } }).data.result;
  };
  const instant = (q: string) => query('query', { query: q, time: String(now / 1000) });
  const range = (q: string) => query('query_range', { query: q, start: String((now - 10 * min) / 1000), end: String(now / 1000), step: '60' });
  const sorted = (r: Result) => r.map((s) => ({ ...s.metric })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

  beforeAll(async () => {
    floe = await startFloe({
      mode: 'embedded',
      config: { router: { query_demand_flush_interval: '100ms' }, schema: { materialized_labels: ['status', 'service.instance.id', 'route'] } },
    });
    key = (await floe.bootstrap('acme')).api_key;
    const series: Array<[Record<string, string>, number]> = [
      [{ instance: 'a:80', status: '500' }, 1],
      [{ instance: 'b:80', status: '200' }, 2],
      [{ instance: 'a:80', status: '503' }, 3],
      [{ instance: 'c:80' }, 4],
      // A Prometheus label spelt like the resource key remote write fills from `instance`.
      [{ instance: 'd:80', 'service.instance.id': 'x' }, 5],
    ];
    const timeseries = series.map(([labels, v]) => ({
      labels: [{ name: '__name__', value: 'errors_seen' }, { name: 'job', value: 'api' }, ...Object.entries(labels).map(([name, value]) => ({ name, value }))].sort((x, y) => (x.name < y.name ? -1 : 1)),
      samples: [{ value: v, timestamp: BigInt(now - 2 * min + 500) }],
    }));
    const body = compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries })));
    const res = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body, headers: { ...REMOTE_WRITE_HEADERS, ...auth() } });
    expect(res.status).toBe(204);
    await waitFor('the series to be queryable', async () => ((await instant('errors_seen')).length === 5 ? true : undefined), 30_000, 200);
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it('stores the labels in their columns', async () => {
    const table = await flightDoGet({
      url: floe.flightAddress,
      ticket: Buffer.from('SELECT label_status, label_service_instance_id FROM metrics ORDER BY value'),
      metadata: auth(),
      deadlineMs: 20_000,
    });
    const rows = table.toArray().map((r) => [r.label_status, r.label_service_instance_id]);
    // service.instance.id: the point's own label on d:80, the resource's (from `instance`) elsewhere.
    expect(rows).toEqual([['500', 'a:80'], ['200', 'b:80'], ['503', 'a:80'], [null, 'c:80'], [null, 'x']]);
  });

  it('answers label matchers as the label maps do', async () => {
    expect(sorted(await instant('errors_seen{status=~"5.."}')).map((m) => m.status)).toEqual(['500', '503']);
    expect(sorted(await instant('errors_seen{status!="500"}')).map((m) => m.instance)).toEqual(['a:80', 'b:80', 'c:80', 'd:80']);
    expect(sorted(await instant('errors_seen{status=""}')).map((m) => m.instance)).toEqual(['c:80', 'd:80']);
    // Only d:80 has the label; the column holds the resource's value on the others, which must not match.
    expect(sorted(await instant('errors_seen{"service.instance.id"="x"}')).map((m) => m.instance)).toEqual(['d:80']);
    expect(sorted(await instant('errors_seen{"service.instance.id"="a:80"}'))).toEqual([]);
    const summed = await range('sum by (instance) (errors_seen{status=~"5..", instance="a:80"})');
    expect(summed.map((s) => s.metric)).toEqual([{ instance: 'a:80' }]);
    expect(summed[0]!.values!.at(-1)).toEqual([now / 1000, '4']);
  });

  it('counts only labels without a column as query demand', async () => {
    expect((await instant('errors_seen{route="/x", team="core"}')).length).toBe(0);
    type Stats = { query_demand: Array<{ table: string; key: string; count: number }> };
    const stats = await waitFor('query demand flushed', async () => {
      const res = await fetch(`${floe.routerUrl}/api/v1/tenants/acme/datasets/default/attribute-stats`, { headers: { authorization: `Bearer ${floe.adminApiKey}` } });
      const body = (await res.json()) as Stats;
      return body.query_demand.some((d) => d.key === 'team') ? body : undefined;
    }, 20_000, 100);
    const keys = stats.query_demand.filter((d) => d.table === 'metrics').map((d) => d.key);
    expect(keys).toContain('team');
    expect(keys).toContain('instance');
    expect(keys).not.toContain('status');
    expect(keys).not.toContain('route');
    expect(keys).not.toContain('service.instance.id');
  });
});
