import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import {
  SAMPLE_PROFILE_ID_HEX,
  postProfiles,
  protoTraceExporter,
  sampleProfilesRequest,
  sendSampleTrace,
  startFloe,
  waitFor,
  type FloeMode,
  type FloeUnderTest,
  type SentTrace,
} from '../src/index.ts';

/**
 * The profile query API end to end, in both modes (spec 1, "Profile query API"): the testkit's
 * hand-built OTLP profiles export (a CPU profile of 65 ms over three stacks, linked to a span of a
 * real trace, and a heap profile) goes in over OTLP/HTTP, and the router's /profilequery routes
 * and /api/profiles/trace/{id} read it back: the merged flamebearer with hand-computed names and
 * levels, the timeline, the node cap, a diff, discovery, errors in the shared envelope, and
 * tenancy.
 */

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const HEAP = 'memory:alloc_space:bytes:space:bytes';
const LIBC = '/usr/lib/x86_64-linux-gnu/libc.so.6';
const MS = 1_000_000;

/**
 * The CPU profile's call tree (stacks as sent: memmove←hash←computeTotal←handleCheckout←main 30+10
 * ms, hash←computeTotal←handleCheckout←main 20 ms, libc←handleCheckout←main 5 ms):
 *
 *   total 65 ── main 65 ── handleCheckout 65 ─┬─ libc 5 (self 5)
 *                                             └─ computeTotal 60 ── hash 60 (self 20) ── memmove 40 (self 40)
 *
 * libc sorts before computeTotal ('/' < 'c'), so hash and memmove start 5 ms in.
 */
const CPU_FLAMEBEARER = {
  names: ['total', 'main', 'handleCheckout', LIBC, 'computeTotal', 'hash', 'memmove'],
  levels: [
    [0, 65 * MS, 0, 0],
    [0, 65 * MS, 0, 1],
    [0, 65 * MS, 0, 2],
    [0, 5 * MS, 5 * MS, 3, 0, 60 * MS, 0, 4],
    [5 * MS, 60 * MS, 20 * MS, 5],
    [5 * MS, 40 * MS, 40 * MS, 6],
  ],
  numTicks: 65 * MS,
  maxSelf: 40 * MS,
};

interface Flamebearer {
  version: number;
  flamebearer: { names: string[]; levels: number[][]; numTicks: number; maxSelf: number };
  metadata: Record<string, unknown>;
  timeline: { startTime: number; samples: number[]; durationDelta: number } | null;
  leftTicks?: number;
  rightTicks?: number;
}

describe.each<FloeMode>(['embedded', 'cluster'])('profile query API end to end (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  let trace: SentTrace;
  let nowMs: number;
  const tenant = 'acme';
  const other = 'globex';
  const service = 'checkout-profiled';

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
    otherKey = (await floe.bootstrap(other)).api_key;
    trace = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'checkout-traced');
    nowMs = Date.now();
    const res = await postProfiles(floe.otlpHttpUrl, { apiKey: key, tenant }, sampleProfilesRequest(service, { traceId: trace.traceId, spanId: trace.spanIds[1]! }, BigInt(nowMs) * 1_000_000n));
    expect(res.status).toBe(200);
    await waitFor(
      'the CPU profile to be queryable',
      async () => {
        const r = await get<Flamebearer>('/profilequery/render', { query: CPU, from: 'now-1h', until: 'now' });
        return r.status === 200 && r.body.flamebearer.numTicks === 65 * MS ? true : undefined;
      },
      60_000,
      250,
    );
  });
  afterAll(async () => {
    await floe?.stop();
  });

  async function get<T = unknown>(path: string, params: Record<string, string> = {}, as: { key?: string; tenant?: string } = {}): Promise<{ status: number; body: T }> {
    const qs = new URLSearchParams(params).toString();
    const res = await fetch(`${floe.routerUrl}${path}${qs ? `?${qs}` : ''}`, { headers: { authorization: `Bearer ${as.key ?? key}`, 'x-tenant-id': as.tenant ?? tenant } });
    return { status: res.status, body: (await res.json()) as T };
  }

  /** A window of two minutes around the profile, in unix milliseconds. */
  const around = () => ({ from: String(nowMs - 60_000), until: String(nowMs + 60_000) });

  it('render: the merged flamebearer, its metadata and its timeline', async () => {
    const r = await get<Flamebearer>('/profilequery/render', { query: `${CPU}{service_name="${service}"}`, ...around() });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      version: 1,
      flamebearer: CPU_FLAMEBEARER,
      metadata: { format: 'single', spyName: '', sampleRate: 1_000_000_000, units: 'samples', name: 'cpu' },
      timeline: { startTime: Math.floor((nowMs - 60_000) / 1000), samples: expect.any(Array), durationDelta: 10, watermarks: null },
      groups: null,
      heatmap: null,
    });
    // 120 s in 10 s slots; the profile is 60 s after the start.
    const samples = r.body.timeline!.samples;
    expect(samples).toHaveLength(12);
    expect(samples[6]).toBe(65 * MS);
    expect(samples.reduce((a, b) => a + b, 0)).toBe(65 * MS);
  });

  it('render: unix seconds, a three-part type, attribute matchers, and the heap profile', async () => {
    const seconds = { from: String(Math.floor(nowMs / 1000) - 60), until: String(Math.floor(nowMs / 1000) + 60) };
    const byThread = await get<Flamebearer>('/profilequery/render', { query: `process_cpu:cpu:nanoseconds{"thread.name"="worker-1", "host.cpus"="8"}`, ...seconds });
    expect(byThread.body.flamebearer).toEqual(CPU_FLAMEBEARER);
    const heap = await get<Flamebearer>('/profilequery/render', { query: `${HEAP}{service_name="${service}"}`, ...around() });
    expect(heap.body.flamebearer).toEqual({
      names: ['total', 'main', 'handleCheckout', 'computeTotal', 'hash'],
      levels: [
        [0, 5120, 0, 0],
        [0, 5120, 0, 1],
        [0, 5120, 1024, 2],
        [0, 4096, 0, 3],
        [0, 4096, 4096, 4],
      ],
      numTicks: 5120,
      maxSelf: 4096,
    });
    expect(heap.body.metadata).toEqual({ format: 'single', spyName: '', sampleRate: 100, units: 'bytes', name: 'alloc_space' });
  });

  it('render: max-nodes folds the lightest nodes into "other"', async () => {
    const r = await get<Flamebearer>('/profilequery/render', { query: CPU, ...around(), 'max-nodes': '3' });
    expect(r.body.flamebearer).toEqual({
      names: ['total', 'main', 'handleCheckout', 'other'],
      levels: [
        [0, 65 * MS, 0, 0],
        [0, 65 * MS, 0, 1],
        [0, 65 * MS, 0, 2],
        [0, 65 * MS, 65 * MS, 3],
      ],
      numTicks: 65 * MS,
      maxSelf: 65 * MS,
    });
  });

  it("render: groupBy adds a timeline per value, aggregation=avg, format=dot a call graph, and Pyroscope's /pyroscope paths", async () => {
    const query = `${CPU}{service_name="${service}"}`;
    const grouped = await get<Flamebearer & { groups: Record<string, { samples: number[]; durationDelta: number }> }>('/profilequery/render', { query, ...around(), groupBy: 'thread.name' });
    expect(grouped.status).toBe(200);
    expect(grouped.body.flamebearer).toEqual(CPU_FLAMEBEARER);
    expect(Object.keys(grouped.body.groups)).toEqual(['worker-1']);
    expect(grouped.body.groups['worker-1']!.samples).toEqual(grouped.body.timeline!.samples);
    const avg = await get<Flamebearer>('/profilequery/render', { query: `${HEAP}{service_name="${service}"}`, ...around(), aggregation: 'avg' });
    expect(avg.body.timeline!.samples.reduce((a, b) => a + b, 0)).toBe(5120);

    const dot = await fetch(`${floe.routerUrl}/profilequery/render?${new URLSearchParams({ query, ...around(), format: 'dot' })}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(dot.status).toBe(200);
    expect(dot.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await dot.text();
    expect(text.startsWith('digraph "process_cpu:cpu" {')).toBe(true);
    // main calls handleCheckout with the whole 65 ms; memmove is a leaf of 40 ms.
    expect(text).toMatch(/label="main\\n0 nanoseconds \(0\.00%\)\\nof 65000000 nanoseconds \(100\.00%\)"/);
    expect(text).toMatch(/label="memmove\\n40000000 nanoseconds/);
    const id = (name: string) => new RegExp(`(N\\d+) \\[label="${name}\\\\n`).exec(text)![1];
    expect(text).toContain(`${id('main')} -> ${id('handleCheckout')} [label=" 65000000"`);

    const upstream = await get<Flamebearer>('/profilequery/pyroscope/render', { query, ...around() });
    expect(upstream).toEqual(await get<Flamebearer>('/profilequery/render', { query, ...around() }));
    expect((await get('/profilequery/pyroscope/label-values', { label: 'service_name' })).body).toEqual([service]);
    for (const bad of [{ format: 'xml' }, { aggregation: 'max' }] as Array<Record<string, string>>) {
      const r = await get<{ errorType: string }>('/profilequery/render', { query, ...around(), ...bad });
      expect({ status: r.status, errorType: r.body.errorType }).toEqual({ status: 400, errorType: 'bad_data' });
    }
  });

  it('render: a window without profiles is 200 with an empty flamegraph', async () => {
    for (const params of [
      { query: CPU, from: 'now-3h', until: 'now-2h' },
      { query: `${CPU}{service_name="nobody"}`, ...around() },
    ]) {
      const r = await get<Flamebearer>('/profilequery/render', params);
      expect(r.status).toBe(200);
      expect(r.body.flamebearer).toEqual({ names: ['total'], levels: [[0, 0, 0, 0]], numTicks: 0, maxSelf: 0 });
      expect(r.body.timeline!.samples.every((v) => v === 0)).toBe(true);
    }
  });

  it('render-diff: the profile against an empty window, 7-int levels', async () => {
    const r = await get<Flamebearer>('/profilequery/render-diff', {
      leftQuery: `${CPU}{service_name="${service}"}`,
      leftFrom: around().from,
      leftUntil: around().until,
      rightQuery: CPU,
      rightFrom: 'now-3h',
      rightUntil: 'now-2h',
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ metadata: { format: 'double', units: 'samples', name: 'cpu' }, leftTicks: 65 * MS, rightTicks: 0 });
    expect(r.body.flamebearer.names).toEqual(CPU_FLAMEBEARER.names);
    expect(r.body.flamebearer.numTicks).toBe(65 * MS);
    expect(r.body.flamebearer.levels[3]).toEqual([0, 5 * MS, 5 * MS, 0, 0, 0, 3, 0, 60 * MS, 0, 0, 0, 0, 4]);
    const mixed = await get<{ errorType: string; error: string }>('/profilequery/render-diff', { leftQuery: CPU, rightQuery: HEAP });
    expect(mixed).toEqual({ status: 400, body: { status: 'error', errorType: 'bad_data', error: 'leftQuery and rightQuery must select the same profile type' } });
  });

  it('profile-types, label-names and label-values', async () => {
    const types = await get('/profilequery/profile-types');
    expect(types).toEqual({
      status: 200,
      body: {
        profileTypes: [
          { ID: HEAP, name: 'memory', sampleType: 'alloc_space', sampleUnit: 'bytes', periodType: 'space', periodUnit: 'bytes' },
          { ID: CPU, name: 'process_cpu', sampleType: 'cpu', sampleUnit: 'nanoseconds', periodType: 'cpu', periodUnit: 'nanoseconds' },
        ],
      },
    });
    expect((await get('/profilequery/profile-types', { from: 'now-3h', until: 'now-2h' })).body).toEqual({ profileTypes: [] });

    const names = await get<string[]>('/profilequery/label-names');
    expect(names).toEqual({ status: 200, body: ['__name__', '__profile_type__', 'host.cpus', 'load', 'sampled', 'service_name', 'thread.id', 'thread.name'] });
    expect((await get('/profilequery/label-names', { query: `${HEAP}{}` })).body).toEqual(['__name__', '__profile_type__', 'host.cpus', 'service_name']);

    expect(await get('/profilequery/label-values', { label: 'service_name' })).toEqual({ status: 200, body: [service] });
    expect((await get('/profilequery/label-values', { label: '__name__' })).body).toEqual(['memory', 'process_cpu']);
    expect((await get('/profilequery/label-values', { label: 'thread.id', query: `${CPU}{}` })).body).toEqual(['42']);
  });

  it('errors: the shared envelope, 400 bad_data, never a 500', async () => {
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['/profilequery/label-values', {}, /missing label parameter/],
      ['/profilequery/label-values', { label: '' }, /missing label parameter/],
      ['/profilequery/render', {}, /missing query parameter/],
      ['/profilequery/render', { query: `${CPU}{service_name=}` }, /^parse error at line 1, col 58/],
      ['/profilequery/render', { query: 'process_cpu{service_name="x"}' }, /invalid profile type "process_cpu"/],
      ['/profilequery/render', { query: '{service_name="x"}' }, /names no profile type/],
      ['/profilequery/render', { query: `${CPU}{a=~"("}` }, /invalid regular expression/],
      ['/profilequery/render', { query: CPU, from: 'yesterday' }, /invalid from/],
      ['/profilequery/render', { query: CPU, from: 'now', until: 'now-1h' }, /until must not be before from/],
      ['/profilequery/render', { query: CPU, 'max-nodes': 'lots' }, /invalid max-nodes/],
      ['/profilequery/label-names', { query: 'sum(x)' }, /invalid profile type/],
      ['/api/profiles/trace/not-hex', {}, /invalid trace id/],
    ];
    for (const [path, params, message] of cases) {
      const r = await get<{ status: string; errorType: string; error: string }>(path, params);
      expect({ path, params, status: r.status }).toEqual({ path, params, status: 400 });
      expect(r.body).toEqual({ status: 'error', errorType: 'bad_data', error: expect.stringMatching(message) });
    }
    const noAuth = await fetch(`${floe.routerUrl}/profilequery/profile-types`);
    expect(noAuth.status).toBe(401);
    expect(await noAuth.json()).toMatchObject({ status: 'error' });
  });

  it("tenancy: another tenant's key cannot read it, and another tenant sees nothing", async () => {
    const crossed = await get('/profilequery/render', { query: CPU, ...around() }, { key: otherKey });
    expect(crossed.status).toBe(403);
    expect((await get(`/api/profiles/trace/${trace.traceId}`, {}, { key: otherKey })).status).toBe(403);
    const as = { key: otherKey, tenant: other };
    const theirs = await get<Flamebearer>('/profilequery/render', { query: CPU, ...around() }, as);
    expect(theirs.status).toBe(200);
    expect(theirs.body.flamebearer.numTicks).toBe(0);
    expect((await get('/profilequery/profile-types', {}, as)).body).toEqual({ profileTypes: [] });
    expect((await get('/profilequery/label-values', { label: 'service_name' }, as)).body).toEqual([]);
    expect((await get(`/api/profiles/trace/${trace.traceId}`, {}, as)).body).toEqual({ traceID: trace.traceId, profiles: [] });
  });

  it('/api/profiles/trace/{id}: the summaries of the linked profiles', async () => {
    const nowNs = BigInt(nowMs) * 1_000_000n;
    const r = await get(`/api/profiles/trace/${trace.traceId}`);
    expect(r).toEqual({
      status: 200,
      body: {
        traceID: trace.traceId,
        profiles: [
          {
            'profile.id': SAMPLE_PROFILE_ID_HEX,
            'profile.type': CPU,
            'sample.type': 'cpu',
            'sample.unit': 'nanoseconds',
            'service.name': service,
            timestamp: `${new Date(nowMs).toISOString().slice(0, 23)}000000Z`,
            time_unix_nano: nowNs.toString(),
            duration: 10_000_000_000,
            'trace.id': trace.traceId,
            'span.id': trace.spanIds[1],
            value: 65 * MS,
            // The first three samples are linked (30 + 20 + 10 ms), the libc one is not.
            linked_value: 60 * MS,
          },
        ],
      },
    });
    const windowed = await get<{ profiles: unknown[] }>(`/api/profiles/trace/${trace.traceId}`, { from: 'now-3h', until: 'now-2h' });
    expect(windowed.body.profiles).toEqual([]);
    expect((await get(`/api/profiles/trace/${'ab'.repeat(16)}`)).body).toEqual({ traceID: 'ab'.repeat(16), profiles: [] });
  });

  it('the trace API attaches the same summaries with include_profiles=true (JSON, v1 and v2)', async () => {
    const { profiles } = (await get<{ profiles: unknown[] }>(`/api/profiles/trace/${trace.traceId}`)).body;
    expect(profiles).toHaveLength(1);
    const v1 = await waitFor('the trace queryable', async () => {
      const r = await get<{ batches: unknown[]; profiles?: unknown[] }>(`/tracequery/api/traces/${trace.traceId}`, { include_profiles: 'true' });
      return r.status === 200 ? r.body : undefined;
    }, 30_000, 200);
    expect(v1.batches).toHaveLength(1);
    expect(v1.profiles).toEqual(profiles);
    const nowS = Math.floor(nowMs / 1000);
    const v2 = await get<{ trace: unknown; profiles?: unknown[] }>(`/tracequery/api/v2/traces/${trace.traceId}`, { include_profiles: 'true', start: String(nowS - 600), end: String(nowS + 600) });
    expect(v2.body.profiles).toEqual(profiles);
    expect((await get<{ profiles?: unknown[] }>(`/tracequery/api/traces/${trace.traceId}`)).body.profiles).toBeUndefined();
    const bad = await get<{ errorType: string }>(`/tracequery/api/traces/${trace.traceId}`, { include_profiles: 'yes' });
    expect([bad.status, bad.body.errorType]).toEqual([400, 'bad_data']);
  });
});

describe('profile queries over a materialized label column (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'labelled';

  const render = async (selector: string) => {
    const qs = new URLSearchParams({ query: `${CPU}${selector}`, from: 'now-1h', until: 'now' });
    const res = await fetch(`${floe.routerUrl}/profilequery/render?${qs}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(200);
    return ((await res.json()) as Flamebearer).flamebearer.numTicks;
  };

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { schema: { materialized_labels: ['host.cpus'] } } });
    key = (await floe.bootstrap(tenant)).api_key;
    const link = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };
    expect((await postProfiles(floe.otlpHttpUrl, { apiKey: key, tenant }, sampleProfilesRequest('labelled-svc', link, BigInt(Date.now()) * 1_000_000n))).status).toBe(200);
    await waitFor('the profile to be queryable', async () => ((await render('')) === 65 * MS ? true : undefined), 60_000, 250);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('stores the resource attribute in its column, and matchers on it answer as on the maps', async () => {
    const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT DISTINCT label_host_cpus FROM profiles'), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 20_000 });
    expect(table.toArray().map((r) => r.label_host_cpus)).toEqual(['8']);
    expect(await render('{"host.cpus"="8"}')).toBe(65 * MS);
    expect(await render('{"host.cpus"!="8"}')).toBe(0);
    expect(await render('{"host.cpus"=~"[0-9]+"}')).toBe(65 * MS);
    expect(await render('{"host.cpus"=""}')).toBe(0);
  });
});
