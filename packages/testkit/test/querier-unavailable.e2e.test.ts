import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts, startFloe, type FloeUnderTest } from '../src/index.ts';

/**
 * A router whose querier cannot be reached answers every query API (traces, logs, metrics,
 * profiles) with 503 `unavailable` in the shared envelope (a caller may retry elsewhere), never a
 * 500, nor a 504 after waiting out the query deadline. The router is pointed at a loopback port
 * nothing listens on (its own process's querier is then not used).
 */
describe('a router without a reachable querier', () => {
  let floe: FloeUnderTest;
  let key: string;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { router: { querier_urls: [`127.0.0.1:${(await freePorts(1))[0]}`], query_timeout: '20s' } } });
    key = (await floe.bootstrap('acme')).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it.each([
    ['trace by id', '/tracequery/api/traces/0123456789abcdef0123456789abcdef'],
    ['log query', `/logquery/loki/api/v1/query_range?${new URLSearchParams({ query: '{service_name="web"}' })}`],
    ['PromQL query', `/metricquery/api/v1/query?${new URLSearchParams({ query: 'up' })}`],
    ['flamegraph', `/profilequery/render?${new URLSearchParams({ query: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="web"}', from: 'now-1h', until: 'now' })}`],
    ['profile label names', '/profilequery/label-names'],
    ['profiles of a trace', '/api/profiles/trace/0123456789abcdef0123456789abcdef'],
  ])('%s: 503 unavailable in the envelope', async (_name, path) => {
    const res = await fetch(`${floe.routerUrl}${path}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' } });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'error', errorType: 'unavailable', error: 'querier unavailable' });
  });
});
