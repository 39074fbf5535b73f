import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromMetricMetadata_MetricType, PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import {
  REMOTE_WRITE_HEADERS,
  postProfiles,
  promMetadata,
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
 * `floe logs|metrics|traces|profiles|query …` (spec 1: "a command-line client whose verbs mirror
 * the endpoints"; profile query rule 5) through the real CLI process against an embedded Floe
 * that holds a trace, logs and profiles sent by the OpenTelemetry SDK and OTLP and a
 * remote-written series with metadata and an exemplar: each verb prints the router's own body,
 * byte for byte; the router's errors go to stderr with exit code 1; a usage mistake (a missing
 * tenant, Query IR that is not JSON) exits 2. One Floe for the whole file: starting one is slow.
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
  /** The remote-written series: samples 0…9 a second apart ending at a whole second a minute ago, one exemplar. */
  const gauge = 'cli_queue_depth';
  const writtenMs = Math.floor(Date.now() / 1000) * 1000 - 60_000;
  const exemplarTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const tmp = mkdtempSync(join(tmpdir(), 'floe-query-cli-'));

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
    const write = create(PromWriteRequestSchema, {
      timeseries: [
        {
          labels: [{ name: '__name__', value: gauge }, { name: 'job', value: 'cli' }, { name: 'instance', value: 'a' }],
          samples: Array.from({ length: 10 }, (_, i) => ({ value: i, timestamp: BigInt(writtenMs - (9 - i) * 1000) })),
          exemplars: [{ labels: [{ name: 'trace_id', value: exemplarTraceId }], value: 7.5, timestamp: BigInt(writtenMs - 2000) }],
        },
      ],
      metadata: promMetadata([[gauge, PromMetricMetadata_MetricType.GAUGE, 'Items waiting.']]),
    });
    const written = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body: compress(toBinary(PromWriteRequestSchema, write)), headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(written.status).toBe(204);
    const json = async (path: string) => {
      const res = await fetch(`${floe.routerUrl}${path}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
      return res.ok ? ((await res.json()) as any) : undefined;
    };
    await waitFor('the trace, logs and profiles queryable', async () => {
      const [traceBody, logBody, profileBody, metricBody] = await Promise.all([
        json(`/tracequery/api/traces/${trace.traceId}`),
        json(`/logquery/api/v1/query_range?${q({ query: `{service_name="${logService}"}`, limit: '100' })}`),
        json(`/api/profiles/trace/${trace.traceId}`),
        json(`/metricquery/api/v1/query?${q({ query: `count_over_time(${gauge}[1m])`, time: String(writtenMs / 1000 + 0.5) })}`),
      ]);
      const lines = (logBody?.data?.result ?? []).flatMap((s: { values: unknown[] }) => s.values).length;
      const samples = Number(metricBody?.data?.result?.[0]?.value?.[1] ?? 0);
      return traceBody && traceSpanCount(traceBody) === trace.spanIds.length && lines === logs.records.length && profileBody?.profiles?.length > 0 && samples === 10 ? true : undefined;
    }, 60_000, 250);
  }, 180_000);
  afterAll(async () => {
    await floe?.stop();
    rmSync(tmp, { recursive: true, force: true });
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

  it('traces get --include-profiles adds the linked profiles; --v2 answers Tempo’s v2 shape', async () => {
    const linked = await ok(['traces', 'get', trace.traceId, '--include-profiles']);
    expect(linked.stdout).toBe(`${await api(`/tracequery/api/traces/${trace.traceId}?include_profiles=true`)}\n`);
    expect(linked.body.batches.length).toBeGreaterThan(0);
    const byTrace = JSON.parse(await api(`/api/profiles/trace/${trace.traceId}`)) as { profiles: unknown[] };
    expect(linked.body.profiles).toEqual(byTrace.profiles);
    expect(linked.body.profiles.length).toBeGreaterThan(0);
    // Without the flag the answer has no profiles at all.
    expect((await ok(['traces', 'get', trace.traceId])).body).not.toHaveProperty('profiles');

    const v2 = await ok(['traces', 'get', trace.traceId, '--v2', '--include-profiles']);
    expect(v2.stdout).toBe(`${await api(`/tracequery/api/v2/traces/${trace.traceId}?include_profiles=true`)}\n`);
    expect(v2.body.trace.resourceSpans.length).toBe(linked.body.batches.length);
    expect(v2.body.profiles).toEqual(byTrace.profiles);
  });

  it('logs stats, volume, volume-range, detected-*, patterns and format-query read the logs back', async () => {
    const selector = `{service_name="${logService}"}`;
    const stats = await ok(['logs', 'stats', selector, '--since', '2h']);
    expect(stats.body).toMatchObject({ streams: expect.any(Number), entries: logs.records.length });
    expect(stats.body.bytes).toBeGreaterThan(0);

    const volume = await ok(['logs', 'volume', selector, '--since', '2h']);
    expect(volume.body).toMatchObject({ status: 'success', data: { resultType: 'vector', result: [{ metric: { service_name: logService } }] } });
    const bytes = Number(volume.body.data.result[0].value[1]);
    expect(bytes).toBeGreaterThan(0);
    const byLabel = await ok(['logs', 'volume', selector, '--since', '2h', '--target-labels', 'service_name,level', '--aggregate-by', 'labels', '--limit', '1']);
    expect(byLabel.body.data.result).toHaveLength(1);
    const [[label, empty]] = Object.entries(byLabel.body.data.result[0].metric as Record<string, string>) as [[string, string]];
    expect(['service_name', 'level']).toContain(label);
    expect(empty).toBe('');
    const range = await ok(['logs', 'volume-range', selector, '--since', '2h', '--step', '1h']);
    expect(range.body).toMatchObject({ status: 'success', data: { resultType: 'matrix', result: [{ metric: { service_name: logService } }] } });
    // Each line counts in exactly one step-wide window: the points add up to the instant volume.
    expect(range.body.data.result[0].values.reduce((sum: number, [, v]: [number, string]) => sum + Number(v), 0)).toBe(bytes);

    const fields = await ok(['logs', 'detected-fields', selector, '--since', '2h', '--limit', '50', '--line-limit', '100']);
    expect(fields.body.limit).toBe(50);
    expect(fields.stdout).toBe(`${await api(`/logquery/api/v1/detected_fields?${q({ query: selector, since: '2h', limit: '50', line_limit: '100' })}`)}\n`);
    expect(fields.body.fields).toContainEqual({ label: 'order.id', type: 'string', cardinality: 1, parsers: null });
    expect(fields.body.fields).toContainEqual({ label: 'http.status_code', type: 'int', cardinality: 1, parsers: null });
    const values = await ok(['logs', 'detected-field-values', 'order.id', selector, '--since', '2h', '--limit', '10']);
    expect(values.body).toEqual({ values: ['o-42'], limit: 10 });

    const labels = await ok(['logs', 'detected-labels', '--query', selector]);
    expect(labels.body.detectedLabels).toContainEqual({ label: 'service_name', cardinality: 1 });
    // The sample's levels: info (INFO and INFO4), error, warn, debug, trace and fatal.
    expect(labels.body.detectedLabels).toContainEqual({ label: 'level', cardinality: 6 });

    // Every line of the sample is its own template here; each counts once in its minute.
    const patterns = await ok(['logs', 'patterns', selector, '--since', '2h', '--step', '1m']);
    expect(patterns.body.status).toBe('success');
    expect(patterns.body.data).toContainEqual({ pattern: 'payment accepted for order 42', level: 'info', samples: [[expect.any(Number), 1]] });
    expect(patterns.body.data.map((p: { pattern: string }) => p.pattern).sort()).toEqual(logs.records.map((r) => r.body).filter((b) => b !== '').sort());

    expect((await ok(['logs', 'format-query', `${selector}|="x"`])).body).toEqual({ status: 'success', data: `${selector} |= "x"` });
  });

  it('metrics metadata, query-exemplars, tsdb-status, format-query and parse-query answer from the remote-written series', async () => {
    const metadata = await ok(['metrics', 'metadata', gauge]);
    expect(metadata.body).toEqual({ status: 'success', data: { [gauge]: [{ type: 'gauge', help: 'Items waiting.', unit: '' }] } });
    expect((await ok(['metrics', 'metadata', '--limit', '1'])).body.data).toSatisfy((d: object) => Object.keys(d).length === 1);

    const start = String(Math.floor(writtenMs / 1000) - 60);
    const end = String(Math.ceil(writtenMs / 1000) + 1);
    const exemplars = await ok(['metrics', 'query-exemplars', gauge, '--start', start, '--end', end]);
    expect(exemplars.body).toEqual({
      status: 'success',
      data: [{ seriesLabels: { __name__: gauge, job: 'cli', instance: 'a' }, exemplars: [{ labels: { trace_id: exemplarTraceId }, value: '7.5', timestamp: (writtenMs - 2000) / 1000 }] }],
    });
    expect(exemplars.stdout).toBe(`${await api(`/metricquery/api/v1/query_exemplars?${q({ query: gauge, start, end })}`)}\n`);

    const tsdb = await ok(['metrics', 'tsdb-status', '--limit', '5']);
    expect(tsdb.body.status).toBe('success');
    expect(tsdb.body.data.seriesCountByMetricName).toContainEqual({ name: gauge, value: 1 });

    expect((await ok(['metrics', 'format-query', 'sum by(job)(rate(x[5m]))'])).body).toEqual({ status: 'success', data: 'sum by (job) (rate(x[5m]))' });
    const parsed = await ok(['metrics', 'parse-query', gauge]);
    expect(parsed.body).toMatchObject({ status: 'success', data: { type: 'selector', name: gauge, matchers: [{ name: '__name__', op: '=', value: gauge }] } });
    expect(parsed.stdout).toBe(`${await api(`/metricquery/api/v1/parse_query?${q({ query: gauge })}`)}\n`);
  });

  it('metrics and logs rule verbs set, print, list and delete rule groups through the ruler config API', async () => {
    const file = join(tmp, 'group.yaml');
    writeFileSync(file, `name: cli-group\ninterval: 1m\nrules:\n  - record: cli:depth:max\n    expr: max(${gauge})\n`);
    const set = await ok(['metrics', 'set-rule-group', 'cli-ns', file]);
    expect(set.body).toEqual({ status: 'success', data: null, errorType: '', error: '' });
    const yaml = await cli(['metrics', 'rule-groups', 'cli-ns', 'cli-group']);
    expect(yaml.code).toBe(0);
    expect(yaml.stdout).toBe(await api('/metricquery/config/v1/rules/cli-ns/cli-group'));
    expect(yaml.stdout).toContain('record: cli:depth:max');
    expect((await cli(['metrics', 'rule-groups'])).stdout).toMatch(/^cli-ns:\n/);
    const rules = await ok(['metrics', 'rules', '--type', 'record', '--namespace', 'cli-ns']);
    expect(rules.body.data.groups).toMatchObject([{ name: 'cli-group', file: 'cli-ns', rules: [{ name: 'cli:depth:max', type: 'recording', query: `max(${gauge})` }] }]);
    expect((await ok(['metrics', 'alerts'])).body).toEqual({ status: 'success', data: { alerts: [] } });

    writeFileSync(file, 'name: broken\nrules:\n  - record: x\n    expr: max(\n');
    const broken = await cli(['metrics', 'set-rule-group', 'cli-ns', file]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('could not parse expression');
    expect((await cli(['metrics', 'set-rule-group', 'cli-ns', join(tmp, 'missing.yaml')])).code).toBe(2);

    writeFileSync(file, `name: cli-logs\nrules:\n  - record: cli:log_lines:count1m\n    expr: sum(count_over_time({service_name="${logService}"}[1m]))\n`);
    expect((await ok(['logs', 'set-rule-group', 'cli-logs-ns', file])).body.status).toBe('success');
    expect((await ok(['logs', 'rules'])).body.data.groups.map((g: { name: string }) => g.name)).toEqual(['cli-logs']);
    expect((await ok(['logs', 'delete-rule-group', 'cli-logs-ns'])).body.status).toBe('success');
    expect((await ok(['metrics', 'delete-rule-group', 'cli-ns', 'cli-group'])).body.status).toBe('success');
    const gone = await cli(['metrics', 'rule-groups', 'cli-ns']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('no rule groups found');
  });

  it('metrics query and query-range take --limit, --timeout and --lookback-delta; labels take --limit', async () => {
    // Two series: {x="a"} and {x="b"}.
    const two = 'label_replace(vector(1), "x", "a", "", "") or label_replace(vector(2), "x", "b", "", "")';
    const all = await ok(['metrics', 'query', two, '--time', '1700000000']);
    expect(all.body.data.result).toHaveLength(2);
    expect(all.body).not.toHaveProperty('warnings');
    const cut = await ok(['metrics', 'query', two, '--time', '1700000000', '--limit', '1']);
    expect(cut.body).toMatchObject({ status: 'success', data: { resultType: 'vector' }, warnings: ['results truncated due to limit'] });
    expect(cut.body.data.result).toHaveLength(1);
    expect(cut.stdout).toBe(`${await api(`/metricquery/api/v1/query?${q({ query: two, time: '1700000000', limit: '1' })}`)}\n`);
    const range = await ok(['metrics', 'query-range', two, '--start', '1700000000', '--end', '1700000060', '--step', '30s', '--limit', '1', '--timeout', '30s', '--lookback-delta', '1m']);
    expect(range.body).toMatchObject({ status: 'success', data: { resultType: 'matrix' }, warnings: ['results truncated due to limit'] });
    expect(range.body.data.result).toHaveLength(1);

    // Two minutes after the last sample: within the default 5m lookback, outside a 1m one.
    const later = String(writtenMs / 1000 + 120);
    expect((await ok(['metrics', 'query', gauge, '--time', later])).body.data.result).toEqual([{ metric: { __name__: gauge, job: 'cli', instance: 'a' }, value: [Number(later), '9'] }]);
    expect((await ok(['metrics', 'query', gauge, '--time', later, '--lookback-delta', '1m'])).body.data.result).toEqual([]);
    const badTimeout = await cli(['metrics', 'query', gauge, '--timeout', 'soon']);
    expect(badTimeout).toMatchObject({ code: 1, stdout: '' });
    expect(badTimeout.stderr).toMatch(/^floe metrics query: invalid parameter "timeout": .+ \(HTTP 400 bad_data\)\n$/);

    // The written series has three label names: __name__, instance and job.
    const start = String(Math.floor(writtenMs / 1000) - 60);
    const names = await ok(['metrics', 'labels', '--match', gauge, '--start', start]);
    expect(names.body.data).toEqual(['__name__', 'instance', 'job']);
    expect((await ok(['metrics', 'labels', '--match', gauge, '--start', start, '--limit', '1'])).body).toEqual({ status: 'success', data: ['__name__'], warnings: ['results truncated due to limit'] });
    expect((await ok(['metrics', 'series', gauge, '--start', start, '--limit', '1'])).body).toEqual({ status: 'success', data: [{ __name__: gauge, job: 'cli', instance: 'a' }] });
  });

  it('traces tags take --q and --limit; tag-values takes --limit', async () => {
    const all = await ok(['traces', 'tags']);
    expect(all.body.tagNames).toEqual(expect.arrayContaining(['service.name', 'deployment.environment', 'db.system']));
    // --q narrows the keys to those of the spans it matches: none here, leaving the intrinsics.
    const none = await ok(['traces', 'tags', '--q', '{ resource.service.name = "nobody" }']);
    expect(none.body.tagNames).not.toContain('service.name');
    expect(none.body.tagNames.length).toBeLessThan(all.body.tagNames.length);
    expect(none.stdout).toBe(`${await api(`/tracequery/api/search/tags?${q({ q: '{ resource.service.name = "nobody" }' })}`)}\n`);
    const ours = await ok(['traces', 'tags', '--q', `{ resource.service.name = "${service}" }`]);
    expect(ours.body.tagNames).toContain('service.name');

    const limited = await ok(['traces', 'tags', '--v2', '--scope', 'resource', '--limit', '1']);
    expect(limited.body.scopes).toEqual([{ name: 'resource', tags: [expect.any(String)] }]);

    // The sample trace's three span names, or one of them.
    expect((await ok(['traces', 'tag-values', 'name'])).body.tagValues).toHaveLength(3);
    expect((await ok(['traces', 'tag-values', 'name', '--limit', '1'])).body.tagValues).toHaveLength(1);
  });

  it('profiles render takes --format dot, --group-by and --aggregation; types takes --query', async () => {
    const selector = `${CPU}{service_name="${service}"}`;
    const dot = await cli(['profiles', 'render', selector, '--format', 'dot', '--max-nodes', '2']);
    expect(dot).toMatchObject({ code: 0, stderr: '' });
    expect(dot.stdout).toMatch(/^digraph "process_cpu:cpu" \{\n/);
    expect(dot.stdout).toMatch(/Showing 2 of \d+ nodes/);
    expect(dot.stdout.endsWith('}\n')).toBe(true);

    const grouped = await ok(['profiles', 'render', selector, '--group-by', 'service_name', '--aggregation', 'avg']);
    expect(Object.keys(grouped.body.groups)).toEqual([service]);
    expect(grouped.body.flamebearer.names).toEqual(expect.arrayContaining(['handleCheckout', 'main']));
    expect(await cli(['profiles', 'render', selector, '--aggregation', 'median'])).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'floe profiles render: invalid aggregation "median": expected sum or avg (HTTP 400 bad_data)\n',
    });

    expect((await ok(['profiles', 'types', '--query', selector])).body.profileTypes.map((t: { ID: string }) => t.ID)).toContain(CPU);
    expect((await ok(['profiles', 'types', '--query', `${CPU}{service_name="nobody"}`])).body).toEqual({ profileTypes: [] });
  });

  it('query runs Query IR given inline, as @file or on stdin; query sources lists the sources', async () => {
    const sources = await ok(['query', 'sources']);
    expect(sources.body).toMatchObject({ tenant, dataset: 'default' });
    expect(sources.body.sources.map((s: { name: string }) => s.name)).toEqual(['logs', 'metrics', 'traces', 'profiles']);
    expect(sources.stdout).toBe(`${await api('/api/v1/query/sources')}\n`);

    const range = { start: new Date(Date.now() - 2 * 3600_000).toISOString(), end: new Date(Date.now() + 60_000).toISOString() };
    const logsIr = { source: 'logs', range, streams: [{ label: 'service_name', op: '=', value: logService }], filters: [{ type: 'line', op: 'contains', value: 'payment' }], limit: 10 };
    const inline = await ok(['query', JSON.stringify(logsIr)]);
    expect(inline.body).toMatchObject({ source: 'logs', truncated: false, rows: [{ line: 'payment accepted for order 42', labels: { service_name: logService } }] });
    expect(inline.body.rows).toHaveLength(1);

    const file = join(tmp, 'traces.json');
    writeFileSync(file, JSON.stringify({ source: 'traces', range, conditions: [{ field: 'resource.service.name', value: service }] }));
    const fromFile = await ok(['query', `@${file}`, '--tenant', tenant]);
    expect(fromFile.body.traces.map((t: { trace_id: string }) => t.trace_id)).toEqual([trace.traceId]);

    // Points at the written second minus 5 s and at it: the samples 4 and 9.
    const at = writtenMs / 1000;
    const stdin = await runFloeCli(['query', '@-'], env(), JSON.stringify({ source: 'metrics', range: { start: String(at - 5), end: String(at + 1) }, promql: `max(${gauge})`, step: '5s' }));
    expect(stdin).toMatchObject({ code: 0, stderr: '' });
    const ns = (s: number) => String(BigInt(s) * 1_000_000_000n);
    expect(JSON.parse(stdin.stdout)).toEqual({ source: 'metrics', truncated: false, series: [{ labels: {}, points: [{ time: ns(at - 5), value: '4' }, { time: ns(at), value: '9' }] }] });

    // The explicit subcommand is the same verb.
    expect((await ok(['query', 'run', JSON.stringify(logsIr)])).stdout).toBe(inline.stdout);
  });

  it('query refuses IR that is not JSON or a file it cannot read (exit 2), and prints the router’s 400 for invalid IR (exit 1)', async () => {
    const notJson = await cli(['query', '{source: logs}']);
    expect(notJson).toMatchObject({ code: 2, stdout: '' });
    expect(notJson.stderr).toMatch(/^floe query: the query is not JSON: .+ \(pass the IR as JSON, @file or @- for stdin\)\n$/);
    const missing = join(tmp, 'absent.json');
    expect(await cli(['query', `@${missing}`])).toMatchObject({ code: 2, stdout: '', stderr: `floe query: cannot read the query from ${missing}: ENOENT\n` });

    const invalid = { source: 'logs', range: { start: '1', end: '2' }, filters: [{ type: 'line', op: 'equals', value: 'a' }] };
    const res = await fetch(`${floe.routerUrl}/api/v1/query`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/json' }, body: JSON.stringify(invalid) });
    expect(res.status).toBe(400);
    const envelope = (await res.json()) as { error: string };
    expect(envelope.error).toContain('body.filters[0].op');
    expect(await cli(['query', JSON.stringify(invalid)])).toMatchObject({ code: 1, stdout: '', stderr: `floe query: ${envelope.error} (HTTP 400 bad_data)\n` });
  });

  it('the new log and metric verbs print the router’s refusal of a bad argument (exit 1)', async () => {
    const selector = `{service_name="${logService}"}`;
    expect(await cli(['logs', 'volume', selector, '--aggregate-by', 'streams'])).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'floe logs volume: invalid aggregateBy "streams": expected series or labels (HTTP 400 bad_data)\n',
    });
    expect(await cli(['logs', 'patterns', `count_over_time(${selector}[1m])`])).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'floe logs patterns: patterns takes a log query (a stream selector with optional filters), not a metric query (HTTP 400 bad_data)\n',
    });
    expect(await cli(['logs', 'detected-fields', selector, '--line-limit', '0'])).toMatchObject({ code: 1, stderr: 'floe logs detected-fields: invalid line_limit "0": expected a positive integer (HTTP 400 bad_data)\n' });
    const badPromql = await cli(['metrics', 'format-query', 'sum(']);
    expect(badPromql).toMatchObject({ code: 1, stdout: '' });
    expect(badPromql.stderr).toMatch(/^floe metrics format-query: .+ \(HTTP 400 bad_data\)\n$/);
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
