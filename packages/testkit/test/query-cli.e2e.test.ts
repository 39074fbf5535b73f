import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  postProfiles,
  protoLogExporter,
  protoTraceExporter,
  runFloeCli,
  sampleProfilesRequest,
  sendSampleLogs,
  sendSampleTrace,
  startFloe,
  traceSpanCount,
  waitFor,
  type FloeUnderTest,
  type SentLogs,
  type SentTrace,
} from '../src/index.ts';

/**
 * `floe logs|metrics|traces|profiles …` (spec 1: "a command-line client whose verbs mirror the
 * endpoints"; profile query rule 5) through the real CLI process against an embedded Floe that
 * holds a trace, logs and profiles sent by the OpenTelemetry SDK and OTLP: each verb prints the
 * router's own body, byte for byte; the router's errors go to stderr with exit code 1; a missing
 * tenant is a usage error (exit 2). One Floe for the whole file: starting one is slow.
 */
describe('query CLI (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  let trace: SentTrace;
  let logs: SentLogs;
  const tenant = 'clique';
  const service = 'cli-shop';
  const logService = 'cli-logs';
  const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';

  const env = () => ({ FLOE_URL: floe.routerUrl, FLOE_API_KEY: key, FLOE_TENANT: tenant, FLOE_DATASET: '' });
  const cli = (args: string[], extraEnv: Record<string, string> = {}) => runFloeCli(args, { ...env(), ...extraEnv });
  /** The router's answer to the same request, as the CLI should print it. */
  const api = async (path: string, status = 200) => {
    const res = await fetch(`${floe.routerUrl}${path}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, accept: 'application/json' } });
    const text = await res.text();
    expect(res.status, `${path}: ${text}`).toBe(status);
    return text;
  };
  /** Runs a verb that must succeed; returns its stdout (one JSON line) parsed. */
  const ok = async (args: string[], extraEnv: Record<string, string> = {}) => {
    const r = await cli(args, extraEnv);
    expect(r.stderr, args.join(' ')).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.endsWith('\n') && !r.stdout.slice(0, -1).includes('\n')).toBe(true);
    return { stdout: r.stdout, body: JSON.parse(r.stdout) as any };
  };
  const q = (params: Record<string, string>) => new URLSearchParams(params).toString();

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    key = (await floe.bootstrap(tenant)).api_key;
    const creds = { apiKey: key, tenant };
    trace = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, creds), service);
    logs = await sendSampleLogs(protoLogExporter(floe.otlpHttpUrl, creds), logService);
    const sent = await postProfiles(floe.otlpHttpUrl, creds, sampleProfilesRequest(service, { traceId: trace.traceId, spanId: trace.spanIds[1]! }, BigInt(Date.now()) * 1_000_000n));
    expect(sent.status).toBe(200);
    const json = async (path: string) => {
      const res = await fetch(`${floe.routerUrl}${path}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
      return res.ok ? ((await res.json()) as any) : undefined;
    };
    await waitFor('the trace, logs and profiles queryable', async () => {
      const [traceBody, logBody, profileBody] = await Promise.all([
        json(`/tracequery/api/traces/${trace.traceId}`),
        json(`/logquery/api/v1/query_range?${q({ query: `{service_name="${logService}"}`, limit: '100' })}`),
        json(`/api/profiles/trace/${trace.traceId}`),
      ]);
      const lines = (logBody?.data?.result ?? []).flatMap((s: { values: unknown[] }) => s.values).length;
      return traceBody && traceSpanCount(traceBody) === trace.spanIds.length && lines === logs.records.length && profileBody?.profiles?.length > 0 ? true : undefined;
    }, 60_000, 250);
  }, 180_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('traces get prints what GET /tracequery/api/traces/{id} answers', async () => {
    const { stdout, body } = await ok(['traces', 'get', trace.traceId]);
    expect(body).toEqual(JSON.parse(await api(`/tracequery/api/traces/${trace.traceId}`)));
    expect(body.batches.length).toBeGreaterThan(0);
    // Unchanged: the router's bytes, not a re-serialisation (numbers such as nanosecond times survive).
    expect(stdout).toBe(`${await api(`/tracequery/api/traces/${trace.traceId}`)}\n`);
  });

  it('traces search, tags and tag-values answer with the stored trace', async () => {
    const start = String(Math.floor(Date.now() / 1000) - 3600);
    const found = await ok(['traces', 'search', `{ resource.service.name = "${service}" }`, '--start', start, '--spss', '1']);
    expect(found.body.traces.map((t: { traceID: string }) => t.traceID)).toEqual([trace.traceId]);
    expect(found.body.traces[0].spanSets[0].spans).toHaveLength(1);
    expect((await ok(['traces', 'search', '{ resource.service.name = "nobody" }'])).body.traces).toEqual([]);

    const values = await ok(['traces', 'tag-values', 'service.name']);
    expect(values.body.tagValues).toContain(service);
    expect(values.stdout).toBe(`${await api('/tracequery/api/search/tag/service.name/values')}\n`);
    const typed = await ok(['traces', 'tag-values', 'resource.service.name', '--v2']);
    expect(typed.body.tagValues).toContainEqual({ type: 'string', value: service });

    expect((await ok(['traces', 'tags'])).body.tagNames).toContain('service.name');
    expect((await ok(['traces', 'tags', '--v2', '--scope', 'resource'])).body.scopes).toEqual([{ name: 'resource', tags: expect.arrayContaining(['service.name']) }]);
  });

  it('logs query-range, query, labels, label-values and series read the logs back', async () => {
    const selector = `{service_name="${logService}"}`;
    const range = await ok(['logs', 'query-range', selector, '--since', '2h', '--limit', '100', '--direction', 'forward']);
    expect(range.body.status).toBe('success');
    expect(range.body.data.resultType).toBe('streams');
    const lines = range.body.data.result.flatMap((s: { values: Array<[string, string]> }) => s.values);
    expect(lines.map(([, line]: [string, string]) => line).sort()).toEqual(logs.records.map((r) => r.body).sort());
    // --direction forward: each stream oldest first.
    for (const s of range.body.data.result as Array<{ values: Array<[string, string]> }>) {
      const times = s.values.map(([t]) => BigInt(t));
      expect(times).toEqual([...times].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    }

    const instant = await ok(['logs', 'query', `${selector} |= "payment accepted"`, '--limit', '5']);
    expect(instant.body.data.result.flatMap((s: { values: Array<[string, string]> }) => s.values.map(([, l]) => l))).toEqual(['payment accepted for order 42']);

    expect((await ok(['logs', 'labels'])).body.data).toContain('service_name');
    expect((await ok(['logs', 'label-values', 'service_name'])).body.data).toContain(logService);
    const series = await ok(['logs', 'series', selector, '{service_name="absent"}']);
    expect(series.body.data).toContainEqual(expect.objectContaining({ service_name: logService }));
  });

  it('metrics query and query-range answer in the Prometheus shape', async () => {
    const instant = await ok(['metrics', 'query', 'vector(1)', '--time', '1700000000']);
    expect(instant.body).toMatchObject({ status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [1700000000, '1'] }] } });
    expect(instant.stdout).toBe(`${await api(`/metricquery/api/v1/query?${q({ query: 'vector(1)', time: '1700000000' })}`)}\n`);
    const range = await ok(['metrics', 'query-range', 'vector(2)', '--start', '1700000000', '--end', '1700000060', '--step', '30s']);
    expect(range.body).toMatchObject({ status: 'success', data: { resultType: 'matrix', result: [{ metric: {}, values: [[1700000000, '2'], [1700000030, '2'], [1700000060, '2']] }] } });
    expect((await ok(['metrics', 'labels'])).body).toMatchObject({ status: 'success', data: expect.any(Array) });
    expect((await ok(['metrics', 'series', 'up', '{job="none"}'])).body).toEqual({ status: 'success', data: [] });

    const usage = await cli(['metrics', 'query-range', 'vector(1)', '--start', '1700000000']);
    expect(usage).toMatchObject({ code: 2, stdout: '', stderr: 'floe metrics query-range: --start, --end and --step are required\n' });
  });

  it('profiles types, labels, label-values, render, diff and by-trace answer from the profile API', async () => {
    const types = await ok(['profiles', 'types']);
    expect(types.body.profileTypes.map((t: { ID: string }) => t.ID)).toContain(CPU);
    expect(types.stdout).toBe(`${await api('/profilequery/profile-types')}\n`);
    expect((await ok(['profiles', 'labels'])).body).toContain('service_name');
    expect((await ok(['profiles', 'label-values', 'service_name'])).body).toContain(service);

    const selector = `${CPU}{service_name="${service}"}`;
    const render = await ok(['profiles', 'render', selector, '--from', 'now-1h', '--until', 'now']);
    expect(render.body.flamebearer.names).toEqual(expect.arrayContaining(['handleCheckout', 'main']));
    const diff = await ok(['profiles', 'diff', selector, '--left-from', 'now-2h', '--left-until', 'now-1h', '--right-from', 'now-1h', '--right-until', 'now']);
    expect(diff.body.flamebearer.names).toEqual(expect.arrayContaining(['handleCheckout', 'main']));

    const linked = await ok(['profiles', 'by-trace', trace.traceId]);
    expect(linked.body.traceID).toBe(trace.traceId);
    expect(linked.body.profiles.length).toBeGreaterThan(0);
  });

  it('the router’s errors go to stderr with exit code 1; a missing tenant is a usage error (exit 2)', async () => {
    const bad = '{ resource.service.name }';
    const envelope = JSON.parse(await api(`/tracequery/api/search?${q({ q: bad })}`, 400)) as { errorType: string; error: string };
    expect(envelope.errorType).toBe('bad_data');
    const r = await cli(['traces', 'search', bad]);
    expect(r).toMatchObject({ code: 1, stdout: '', stderr: `floe traces search: ${envelope.error} (HTTP 400 bad_data)\n` });

    const missing = await cli(['traces', 'get', '0123456789abcdef0123456789abcdef']);
    expect(missing).toMatchObject({ code: 1, stdout: '', stderr: 'floe traces get: trace not found (HTTP 404 not_found)\n' });

    const noTenant = await cli(['profiles', 'types'], { FLOE_TENANT: '' });
    expect(noTenant).toMatchObject({ code: 2, stdout: '', stderr: 'floe profiles types: --tenant (or FLOE_TENANT) is required\n' });
    const flag = await cli(['logs', 'labels', '--tenant', tenant], { FLOE_TENANT: '' });
    expect(flag.code).toBe(0);
  });

  it('--dataset (or FLOE_DATASET) is sent as X-Dataset-ID', async () => {
    const created = await fetch(`${floe.routerUrl}/api/v1/tenants/${tenant}/datasets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'empty' }),
    });
    expect(created.status).toBe(201);
    // The trace lives in the default dataset only.
    expect((await cli(['traces', 'get', trace.traceId, '--dataset', 'empty'])).stderr).toBe('floe traces get: trace not found (HTTP 404 not_found)\n');
    expect((await cli(['traces', 'get', trace.traceId], { FLOE_DATASET: 'empty' })).code).toBe(1);
    expect((await ok(['traces', 'get', trace.traceId, '--dataset', 'default'])).body.batches.length).toBeGreaterThan(0);
  });
});
