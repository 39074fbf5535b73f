import { SeverityNumber } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_PROFILE_ID_HEX, emitLogRecords, postProfiles, protoLogExporter, protoTraceExporter, sampleProfilesRequest, sendSampleTrace, startFloe, waitFor, type FloeMode, type FloeUnderTest, type SentTrace } from '../src/index.ts';

/**
 * The native Query IR endpoint (spec 2: POST /api/v1/query, GET /api/v1/query/sources) end to
 * end on the embedded Floe: logs and a trace sent with the OpenTelemetry SDK come back through
 * JSON IR queries, an invalid IR is a 400 naming its field, another tenant's key sees nothing of
 * ours, and a signed-in viewer (no API key) runs the same queries.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('native Query IR (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  let trace: SentTrace;
  const tenant = 'irco';
  const other = 'bystander';
  const startMs = Date.now() - 10 * 60_000;
  const range = () => ({ start: new Date(startMs - 60_000).toISOString(), end: new Date(Date.now() + 60_000).toISOString() });

  const call = async (method: string, path: string, o: { key?: string; tenant?: string; cookie?: string; body?: unknown } = {}) => {
    const headers: Record<string, string> = {};
    if (o.key) headers.authorization = `Bearer ${o.key}`;
    if (o.cookie) headers.cookie = o.cookie;
    if (o.tenant) headers['x-tenant-id'] = o.tenant;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${floe.routerUrl}${path}`, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const query = (body: unknown, o: { key?: string; tenant?: string; cookie?: string } = { key, tenant }) => call('POST', '/api/v1/query', { ...o, body });
  const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
  const logsQuery = () => ({ source: 'logs', range: range(), streams: [{ label: 'service_name', op: '=', value: 'irsvc' }], limit: 10 });

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
    otherKey = (await floe.bootstrap(other)).api_key;
    trace = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'irshop');
    const records = ['first line', 'second line error'].map((body, i) => ({ timeUnixNano: BigInt(startMs + i) * 1_000_000n, severityNumber: SeverityNumber.INFO, severityText: 'INFO', body, attributes: { n: i } }));
    await emitLogRecords(protoLogExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), { 'service.name': 'irsvc' }, { name: 'floe-e2e-query-ir', version: '1.0.0' }, records);
    const profiles = await postProfiles(floe.otlpHttpUrl, { apiKey: key, tenant }, sampleProfilesRequest('irprof', { traceId: trace.traceId, spanId: trace.spanIds[0]! }, BigInt(startMs) * 1_000_000n));
    expect(profiles.status).toBe(200);
    await waitFor('logs, trace and profiles queryable', async () => {
      const [l, t, p] = await Promise.all([query(logsQuery()), query({ source: 'traces', range: range() }), query({ source: 'profiles', range: range(), selector: `${CPU}{}`, view: 'profiles' })]);
      return l.body.rows?.length === 2 && t.body.traces?.length === 1 && p.body.profiles?.length === 1 ? true : undefined;
    }, 30_000, 200);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('lists the sources with their fields and operations', async () => {
    const res = await call('GET', '/api/v1/query/sources', { key, tenant });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ tenant, dataset: 'default' });
    expect(res.body.sources.map((s: { name: string }) => s.name)).toEqual(['logs', 'metrics', 'traces', 'profiles']);
    const logs = res.body.sources[0];
    expect(logs.fields).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'body', type: 'string' }), expect.objectContaining({ name: 'log_attr_int', type: 'map<string,long>' })]));
    expect(logs.query_fields).toContain('filters');
  });

  it('a logs query returns the lines, newest first, with labels and metadata', async () => {
    const res = await query(logsQuery());
    expect(res.status).toBe(200);
    expect(res.body.truncated).toBe(false);
    expect(res.body.rows.map((r: { line: string }) => r.line)).toEqual(['second line error', 'first line']);
    expect(res.body.rows[0]).toMatchObject({ labels: { service_name: 'irsvc', level: 'INFO' }, metadata: { n: '1' }, time: String(BigInt(startMs + 1) * 1_000_000n) });
    const filtered = await query({ ...logsQuery(), filters: [{ type: 'line', op: 'contains', value: 'error' }] });
    expect(filtered.body.rows.map((r: { line: string }) => r.line)).toEqual(['second line error']);
    const cut = await query({ ...logsQuery(), limit: 1 });
    expect(cut.body).toMatchObject({ truncated: true, rows: [{ line: 'second line error' }] });
  });

  it('a trace search returns the trace with its matching spans', async () => {
    const res = await query({ source: 'traces', range: range(), conditions: [{ field: 'resource.service.name', value: 'irshop' }, { field: 'span.http.status_code', value: 500 }] });
    expect(res.status).toBe(200);
    expect(res.body.traces).toHaveLength(1);
    expect(res.body.traces[0]).toMatchObject({ trace_id: trace.traceId, root_service_name: 'irshop', root_name: 'GET /checkout', matched: 1 });
    expect(res.body.traces[0].spans[0].attributes).toMatchObject({ 'http.status_code': 500 });
  });

  it.each([
    [{ source: 'logs', range: { start: 'x' } }, 'body.range'],
    [{ source: 'logs', range: { start: '1', end: '2' }, filters: [{ type: 'line', op: 'equals', value: 'a' }] }, 'body.filters[0].op'],
    [{ source: 'traces', range: { start: '1', end: '2' }, conditions: [{ field: 'name' }] }, 'body.conditions[0]'],
    [{ source: 'logs', range: { start: '1', end: '2' }, colour: 'red' }, 'colour'],
    [{ source: 'widgets', range: { start: '1', end: '2' } }, 'body.source'],
  ])('bad IR %j → 400 naming %s', async (body, field) => {
    const res = await query(body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 'error', errorType: 'bad_data' });
    expect(res.body.error).toContain(field);
  });

  it('a profiles query: top functions, the flamegraph, or the profiles themselves as summaries', async () => {
    const ask = (extra: object) => query({ source: 'profiles', range: range(), selector: `${CPU}{service_name="irprof"}`, ...extra });
    const top = await ask({ limit: 1 });
    expect(top.status).toBe(200);
    expect(top.body).toEqual({ source: 'profiles', functions: [{ name: 'memmove', self: 40_000_000, total: 40_000_000 }], truncated: true });
    expect((await ask({ view: 'flamegraph' })).body.flamegraph.flamebearer.numTicks).toBe(65_000_000);
    const listed = await ask({ view: 'profiles' });
    expect(listed.body).toEqual({
      source: 'profiles',
      truncated: false,
      profiles: [
        {
          'profile.id': SAMPLE_PROFILE_ID_HEX,
          'profile.type': CPU,
          'sample.type': 'cpu',
          'sample.unit': 'nanoseconds',
          'service.name': 'irprof',
          timestamp: new Date(startMs).toISOString().replace('Z', '000000Z'),
          time_unix_nano: String(BigInt(startMs) * 1_000_000n),
          duration: 10_000_000_000,
          'trace.id': trace.traceId,
          'span.id': trace.spanIds[0],
          value: 65_000_000,
        },
      ],
    });
    expect((await ask({ view: 'profiles', limit: 1 })).body.truncated).toBe(false);
    expect((await ask({ view: 'nope' })).status).toBe(400);
  });

  it("holds a metrics query to the PromQL sample budget: a subquery too fine to evaluate is 422, as on /metricquery", async () => {
    const res = await query({ source: 'metrics', range: range(), promql: 'count_over_time(vector(1)[1d:1ms])', step: '60s' });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ status: 'error', errorType: 'execution', error: 'query processing would load too many samples into memory in query execution' });
  });

  it('answers 501 for a valid request it cannot run yet', async () => {
    const res = await query({ source: 'traces', range: range(), conditions: [{ field: 'duration', value: 5 }] });
    expect(res.status).toBe(501);
    expect(res.body.error).toContain('body.conditions[0].field');
  });

  it('keeps tenants apart: another tenant sees none of our data, and cannot name ours', async () => {
    const mine = await query(logsQuery(), { key: otherKey, tenant: other });
    expect(mine.status).toBe(200);
    expect(mine.body.rows).toEqual([]);
    expect((await query({ source: 'traces', range: range() }, { key: otherKey, tenant: other })).body.traces).toEqual([]);
    const theirs = await query(logsQuery(), { key: otherKey, tenant });
    expect(theirs.status).toBe(403);
    expect((await query(logsQuery(), {})).status).toBe(401);
  });

  it('a signed-in viewer runs it with the session cookie, only in its own tenants', async () => {
    const admin = floe.adminApiKey;
    const user = await call('POST', '/api/v1/users', { key: admin, body: { email: 'viewer@example.com', password: 'pa55word!' } });
    expect(user.status).toBe(201);
    expect((await call('POST', `/api/v1/tenants/${tenant}/memberships`, { key: admin, body: { user_id: user.body.id, role: 'viewer' } })).status).toBe(201);
    const login = await fetch(`${floe.routerUrl}/ui/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'viewer@example.com', password: 'pa55word!' }) });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const res = await query(logsQuery(), { cookie, tenant });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.rows).toHaveLength(2);
    expect((await call('GET', '/api/v1/query/sources', { cookie, tenant })).status).toBe(200);
    expect((await query(logsQuery(), { cookie, tenant: other })).status).toBe(403);
  });
});
