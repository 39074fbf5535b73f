import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFloe, type StartedFloe } from '@floe/cli';
import { loadConfig } from '@floe/config';
import { createLogger } from '@floe/telemetry';
import { freePorts } from '../src/index.ts';

/**
 * A router whose querier cannot be reached answers every query API (traces, logs, metrics,
 * profiles) with 503 `unavailable` in
 * the shared envelope (a caller may retry elsewhere), never a 500, nor a 504 after waiting out
 * the query deadline.
 */
describe('a router without a reachable querier', () => {
  let floe: StartedFloe;
  let dir: string;
  let key: string;
  let router: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'floe-no-querier-'));
    const config = loadConfig({
      env: {},
      overrides: {
        log: { level: 'error' },
        meta: { kind: 'pglite', data_dir: join(dir, 'meta') },
        storage: { kind: 'fs', root: join(dir, 'data'), cache_dir: join(dir, 'cache') },
        router: { host: '127.0.0.1', port: 0, querier_urls: [`127.0.0.1:${(await freePorts(1))[0]}`], query_timeout: '20s' },
      },
    });
    floe = await startFloe(config, ['router'], createLogger({ level: 'error', name: 'no-querier-test', fd: 2 }));
    router = `http://127.0.0.1:${floe.get('router')!.ports.http}`;
    key = (await floe.bootstrap('acme')).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['trace by id', '/tracequery/api/traces/0123456789abcdef0123456789abcdef'],
    ['log query', `/logquery/loki/api/v1/query_range?${new URLSearchParams({ query: '{service_name="web"}' })}`],
    ['PromQL query', `/metricquery/api/v1/query?${new URLSearchParams({ query: 'up' })}`],
    ['flamegraph', `/profilequery/render?${new URLSearchParams({ query: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="web"}', from: 'now-1h', until: 'now' })}`],
    ['profile label names', '/profilequery/label-names'],
    ['profiles of a trace', '/api/profiles/trace/0123456789abcdef0123456789abcdef'],
  ])('%s: 503 unavailable in the envelope', async (_name, path) => {
    const res = await fetch(`${router}${path}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' } });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'error', errorType: 'unavailable', error: 'querier unavailable' });
  });
});
