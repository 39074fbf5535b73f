import { SeverityNumber } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protoLogExporter, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Query demand (spec 1, Log query API) end to end: attribute keys that LogQL queries filter on
 * without a column of their own are counted per dataset and flushed to the metadata DB, where the
 * management API's attribute statistics show them, most asked-for first; column-backed labels
 * (materialized labels too) and aliases are not counted, and one tenant's queries never show in another's statistics.
 */
interface Stats {
  query_demand: Array<{ table: string; key: string; count: number; last_seen_at: string }>;
  type_mismatches: Array<{ table: string; key: string; reason: string; count: number }>;
}

describe('query demand', () => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;

  const logquery = (query: string, path = 'query_range', o: { key?: string; tenant?: string } = {}) =>
    fetch(`${floe.routerUrl}/logquery/loki/api/v1/${path}?${new URLSearchParams({ query })}`, {
      headers: { authorization: `Bearer ${o.key ?? key}`, 'x-tenant-id': o.tenant ?? 'acme' },
    });
  const stats = async (tenant: string, dataset = 'default') => {
    const res = await fetch(`${floe.routerUrl}/api/v1/tenants/${tenant}/datasets/${dataset}/attribute-stats`, { headers: { authorization: `Bearer ${floe.adminApiKey}` } });
    return { status: res.status, body: (await res.json()) as Stats };
  };

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { router: { query_demand_flush_interval: '100ms' }, schema: { materialized_labels: ['team'] } } });
    key = (await floe.bootstrap('acme')).api_key;
    otherKey = (await floe.bootstrap('globex')).api_key;
    const provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'api', 'k8s.pod.name': 'api-1' }),
      processors: [new SimpleLogRecordProcessor({ exporter: protoLogExporter(floe.otlpHttpUrl, { apiKey: key, tenant: 'acme' }) })],
    });
    provider.getLogger('demand').emit({ severityNumber: SeverityNumber.ERROR, severityText: 'ERROR', body: 'boom', attributes: { 'http.status_code': 500 } });
    await provider.shutdown();
    // Until the table holds the line, its label columns may not be known yet (a selector on a
    // column-backed label asks for none and counts nothing).
    await waitFor('the line to be queryable', async () => {
      const res = await logquery('{service_name="api"}');
      const body = (await res.json()) as { data?: { result?: unknown[] } };
      return res.status === 200 && body.data?.result?.length === 1 ? true : undefined;
    }, 30_000, 100);
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it('counts attribute filters of log and metric queries, not columns, materialized labels, aliases or line filters', async () => {
    const queries: Array<[string, string]> = [
      ['{k8s.pod.name="api-1"} | http.status_code >= 500', 'query_range'],
      ['{service_name="api", k8s.pod.name=~"api-.*"} |= "boom"', 'query_range'],
      ['sum by (level) (count_over_time({job="api"} | team="core" [5m]))', 'query'],
      ['sum(count_over_time({service_name="api"} | http.status_code >= 500 [5m]))', 'query'],
      ['{service="api", level="ERROR"} != "x"', 'query'],
    ];
    for (const [q, path] of queries) expect((await logquery(q, path)).status).toBe(200);
    // A malformed query counts nothing.
    expect((await logquery('{k8s.pod.name=', 'query_range')).status).toBe(400);
    // Counts are noted before a query answers and a flush writes a dataset's keys in one
    // statement, in order: once this last query's key is in, so is everything counted before it.
    expect((await logquery('{flush.sentinel="x"}', 'query_range')).status).toBe(200);
    const body = await waitFor('the counts to be flushed', async () => {
      const r = await stats('acme');
      return r.status === 200 && r.body.query_demand.some((d) => d.key === 'flush.sentinel') ? r.body : undefined;
    }, 20_000, 100);
    // Most asked-for first, ties by key.
    expect(body.query_demand.map(({ table, key: k, count }) => [table, k, count])).toEqual([
      ['logs', 'http.status_code', 2],
      ['logs', 'k8s.pod.name', 2],
      ['logs', 'flush.sentinel', 1],
    ]);
    expect(Number.isNaN(Date.parse(body.query_demand[0]!.last_seen_at))).toBe(false);
    expect(body.type_mismatches).toEqual([]);
  });

  it("keeps each tenant's demand to itself", async () => {
    expect((await logquery('{secret.key="x"}', 'query_range', { key: otherKey, tenant: 'globex' })).status).toBe(200);
    const theirs = await waitFor('globex counts', async () => {
      const r = await stats('globex');
      return r.body.query_demand.length === 1 ? r.body : undefined;
    }, 20_000, 100);
    expect(theirs.query_demand.map((d) => d.key)).toEqual(['secret.key']);
    expect((await stats('acme')).body.query_demand.map((d) => d.key)).not.toContain('secret.key');
    // A tenant's own key cannot read another tenant's statistics.
    const res = await fetch(`${floe.routerUrl}/api/v1/tenants/acme/datasets/default/attribute-stats`, { headers: { authorization: `Bearer ${otherKey}`, 'x-tenant-id': 'globex' } });
    expect(res.status).toBe(403);
    expect((await stats('acme', 'nope')).status).toBe(404);
  });
});
