import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { protoTraceExporter, sendSampleTrace, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Deadlines on the query APIs (spec 1, Errors): a router whose querier calls cannot finish in
 * time (router.query_timeout of 1 ms, so every call to the querier runs out) answers 504 in the
 * shared envelope on the log, metric, profile and trace query APIs, never a 500; requests that need no querier
 * call still answer.
 */
describe('query deadlines', () => {
  let floe: FloeUnderTest;
  let key: string;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { router: { query_timeout: '1ms' } } });
    key = (await floe.bootstrap('acme')).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const get = (path: string) => fetch(`${floe.routerUrl}${path}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' } });

  it.each([
    '/logquery/loki/api/v1/query_range?query=%7Bservice_name%3D%22a%22%7D',
    '/logquery/loki/api/v1/query?query=sum(count_over_time(%7Bservice_name%3D%22a%22%7D%5B5m%5D))',
    '/metricquery/api/v1/query?query=sum(rate(http_requests_total%5B5m%5D))',
    `/profilequery/render?${new URLSearchParams({ query: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="a"}', from: 'now-1h', until: 'now' })}`,
    '/profilequery/label-names',
  ])('%s → 504 timeout', async (path) => {
    const res = await get(path);
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({ status: 'error', errorType: 'timeout' });
  });

  it('trace by id of a stored trace → 504 timeout (v1 and v2), not 500', async () => {
    const sent = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant: 'acme' }), 'deadline');
    // Stored: asked of the querier itself over Flight, whose own deadline is the default.
    await waitFor('the trace to be stored', async () => {
      const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT count(*) AS n FROM traces WHERE trace_id = '${sent.traceId}'`), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' }, deadlineMs: 20_000 });
      return Number(t.getChildAt(0)!.get(0)) > 0;
    }, 30_000, 200);
    for (const path of [`/tracequery/api/traces/${sent.traceId}`, `/tracequery/api/v2/traces/${sent.traceId}`]) {
      const res = await get(path);
      expect(res.status, path).toBe(504);
      expect(await res.json()).toEqual({ status: 'error', errorType: 'timeout', error: 'query timed out' });
    }
  });

  it('a query that needs no querier call still answers', async () => {
    const res = await get('/metricquery/api/v1/query?query=1%2B1');
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { result: unknown } }).data.result).toEqual([expect.any(Number), '2']);
  });
});
