import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Prometheus's delete_series end to end, in both modes: a key with the delete scope deletes the
 * recent half of one series; the router asks the compactor for a pass and answers once it is
 * done, so PromQL and SQL right after see the series' older half only, its exemplar in the window is gone, and the other series and
 * the other tenant's identical data are whole. Refusals and clean_tombstones are checked too.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('series deletion (%s)', (mode) => {
  let floe: FloeUnderTest;
  const keys: Record<string, string> = {};
  let deleteKey = '';
  const nowMs = Date.now() - 60_000;
  const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

  const series = (name: string, instance: string, exemplar: boolean) => ({
    labels: [{ name: '__name__', value: name }, { name: 'job', value: 'q' }, { name: 'instance', value: instance }],
    samples: Array.from({ length: 10 }, (_, i) => ({ value: i, timestamp: BigInt(nowMs - (9 - i) * 1000) })),
    exemplars: exemplar ? [{ labels: [{ name: 'trace_id', value: TRACE_ID }], value: 7.5, timestamp: BigInt(nowMs - 2000) }] : [],
  });
  const count = async (tenant: string, selector: string, key = keys[tenant]!) => {
    const params = new URLSearchParams({ query: `count_over_time(${selector}[1m])`, time: String(nowMs / 1000 + 0.5) });
    const res = await fetch(`${floe.routerUrl}/metricquery/api/v1/query?${params}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    return Object.fromEntries(body.data.result.map((r) => [`${r.metric.instance}`, Number(r.value[1])]));
  };
  const sql = async (tenant: string, query: string) => {
    const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(query), metadata: { authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant }, deadlineMs: 20_000 });
    return table.toArray().map((r) => Number(r.n));
  };
  const admin = (path: string, params: Record<string, string> | URLSearchParams, key = deleteKey, method = 'POST') =>
    fetch(`${floe.routerUrl}/metricquery/api/v1/admin/tsdb/${path}?${new URLSearchParams(params)}`, { method, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' } });

  beforeAll(async () => {
    floe = await startFloe({ mode, config: { compactor: { interval: '1h', open_hour_interval: '0s' } } });
    for (const tenant of ['acme', 'other']) {
      keys[tenant] = (await floe.bootstrap(tenant)).api_key;
      const body = toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries: [series('queue_depth', 'a', true), series('queue_depth', 'b', false), series('other_metric', 'a', false)] }));
      const res = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body: compress(body), headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant } });
      expect(res.status).toBe(204);
    }
    for (const tenant of ['acme', 'other']) {
      await waitFor(`the series of ${tenant}`, async () => {
        const c = await count(tenant, 'queue_depth');
        return c.a === 10 && c.b === 10 ? true : undefined;
      }, 30_000, 200);
    }
    const created = await fetch(`${floe.routerUrl}/api/v1/tenants/acme/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.acme}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'cleanup', scopes: ['query', 'delete'] }),
    });
    expect(created.status).toBe(201);
    deleteKey = ((await created.json()) as { secret: string }).secret;
  }, 180_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('refuses keys without the delete scope and bad selectors or windows', async () => {
    const noScope = await admin('delete_series', { 'match[]': 'queue_depth' }, keys.acme!);
    expect(noScope.status).toBe(403);
    expect(((await noScope.json()) as { error: string }).error).toBe('API key lacks the delete scope');
    for (const [params, text] of [
      [{}, 'no match[] parameter provided'],
      [{ 'match[]': 'sum(queue_depth)' }, 'is not a series selector'],
      [{ 'match[]': 'queue_depth', start: '200', end: '100' }, 'end timestamp must not be before start time'],
    ] as const) {
      const res = await admin('delete_series', params);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toContain(text);
    }
    // A selector that matches nothing records nothing.
    const none = await admin('delete_series', { 'match[]': 'no_such_metric' });
    expect(none.status).toBe(204);
    expect(none.headers.get('x-floe-delete-request-id')).toBeNull();
    expect((await admin('clean_tombstones', {})).status).toBe(204);
    expect(await count('acme', 'queue_depth')).toEqual({ a: 10, b: 10 });
  });

  it('deletes the window of the matching series and its exemplars, and nothing else', async () => {
    const res = await admin('delete_series', { 'match[]': 'queue_depth{instance="a"}', start: String((nowMs - 4500) / 1000) }, deleteKey, 'PUT');
    expect(res.status).toBe(204);
    expect(res.headers.get('x-floe-delete-request-id')).toMatch(/^[0-9a-f]{16}$/);
    // As Prometheus's, the answer comes once the samples are gone (the compactor's pass was asked for and awaited).
    expect(await count('acme', 'queue_depth')).toEqual({ a: 5, b: 10 });
    expect(await count('acme', 'other_metric')).toEqual({ a: 10 });
    expect(await sql('acme', `SELECT count(*) AS n FROM acme.default.metrics WHERE metric_name = 'queue_depth'`)).toEqual([15]);
    expect(await sql('acme', 'SELECT count(*) AS n FROM acme.default.metric_exemplars')).toEqual([0]);

    expect(await count('other', 'queue_depth')).toEqual({ a: 10, b: 10 });
    expect(await sql('other', 'SELECT count(*) AS n FROM other.default.metric_exemplars')).toEqual([1]);
  });
});
