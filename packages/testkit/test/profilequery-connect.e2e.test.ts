import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PyroDiffRequestSchema,
  PyroDiffResponseSchema,
  PyroExemplarType,
  PyroGetProfileStatsRequestSchema,
  PyroGetProfileStatsResponseSchema,
  PyroLabelNamesRequestSchema,
  PyroLabelNamesResponseSchema,
  PyroLabelValuesRequestSchema,
  PyroLabelValuesResponseSchema,
  PyroProfileFormat,
  PyroProfileTypesRequestSchema,
  PyroProfileTypesResponseSchema,
  PprofProfileSchema,
  PyroSelectMergeProfileRequestSchema,
  PyroSelectMergeSpanProfileRequestSchema,
  PyroSelectMergeSpanProfileResponseSchema,
  PyroSelectMergeStacktracesRequestSchema,
  PyroSelectMergeStacktracesResponseSchema,
  PyroSelectSeriesRequestSchema,
  PyroSelectSeriesResponseSchema,
  PyroSeriesRequestSchema,
  PyroSeriesResponseSchema,
  PyroTimeSeriesAggregationType,
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
  type PyroFlameGraph,
} from '@floe/proto';
import { SAMPLE_CPU_STACKS, SAMPLE_PROFILE_ID_HEX, postProfiles, sampleProfilesRequest, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Pyroscope's Connect API under /profilequery end to end, as Grafana's Pyroscope data source
 * calls it (reference/api-contracts.md §0 S1, §4.4, §4.5): the testkit's sample profiles go in
 * over OTLP/HTTP, then every request is a POST of a binary protobuf message encoded with
 * @floe/proto's generated schemas (`Content-Type: application/proto`, `Connect-Protocol-Version:
 * 1`), and every answer is decoded the same way. The flamegraph is checked against the legacy
 * /profilequery/render answer for the same selector and window, the series against the profile's
 * known total (65 ms of CPU). Embedded mode only: the Connect layer is the router's alone.
 */

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const HEAP = 'memory:alloc_space:bytes:space:bytes';
const MS = 1_000_000;
const SERVICE_PATH = '/profilequery/querier.v1.QuerierService';

interface Flamebearer {
  flamebearer: { names: string[]; levels: number[][]; numTicks: number; maxSelf: number };
}

interface ConnectAnswer<T> {
  status: number;
  contentType: string | null;
  message?: T;
  error?: { code: string; message: string };
}

describe('Pyroscope Connect API end to end (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  let nowMs: number;
  const tenant = 'acme';
  const other = 'globex';
  const service = 'checkout-connect';

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    key = (await floe.bootstrap(tenant)).api_key;
    otherKey = (await floe.bootstrap(other)).api_key;
    nowMs = Date.now();
    const link = { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8) };
    const res = await postProfiles(floe.otlpHttpUrl, { apiKey: key, tenant }, sampleProfilesRequest(service, link, BigInt(nowMs) * 1_000_000n));
    expect(res.status).toBe(200);
    await waitFor(
      'the CPU profile to be queryable over Connect',
      async () => {
        const r = await call('SelectMergeStacktraces', PyroSelectMergeStacktracesRequestSchema, { profileTypeID: CPU, labelSelector: '{}', ...window() }, PyroSelectMergeStacktracesResponseSchema);
        return r.message?.flamegraph?.total === BigInt(65 * MS) ? true : undefined;
      },
      60_000,
      250,
    );
  });
  afterAll(async () => {
    await floe?.stop();
  });

  /** Two minutes around the profile, unix milliseconds as Connect sends them. */
  const window = () => ({ start: BigInt(nowMs - 60_000), end: BigInt(nowMs + 60_000) });
  const emptyWindow = () => ({ start: BigInt(nowMs - 3 * 3_600_000), end: BigInt(nowMs - 2 * 3_600_000) });

  const headersOf = (as: { key?: string | null; tenant?: string }, contentType = 'application/proto'): Record<string, string> => {
    const h: Record<string, string> = { 'content-type': contentType, 'connect-protocol-version': '1', 'x-tenant-id': as.tenant ?? tenant };
    if (as.key !== null) h.authorization = `Bearer ${as.key ?? key}`;
    return h;
  };

  async function answerOf<O extends DescMessage>(res: Response, output: O): Promise<ConnectAnswer<MessageShape<O>>> {
    const contentType = res.headers.get('content-type');
    if (res.status !== 200) return { status: res.status, contentType, error: (await res.json()) as { code: string; message: string } };
    expect(contentType).toBe('application/proto');
    return { status: res.status, contentType, message: fromBinary(output, new Uint8Array(await res.arrayBuffer())) };
  }

  /** One unary call as Grafana's connect-go client makes it: binary protobuf both ways. */
  async function call<I extends DescMessage, O extends DescMessage>(
    method: string,
    input: I,
    init: MessageInitShape<I>,
    output: O,
    as: { key?: string | null; tenant?: string } = {},
  ): Promise<ConnectAnswer<MessageShape<O>>> {
    const res = await fetch(`${floe.routerUrl}${SERVICE_PATH}/${method}`, { method: 'POST', headers: headersOf(as), body: toBinary(input, create(input, init)) });
    return answerOf(res, output);
  }

  const flamegraphOf = (fg: PyroFlameGraph) => ({ names: fg.names, levels: fg.levels.map((l) => l.values.map(Number)), numTicks: Number(fg.total), maxSelf: Number(fg.maxSelf) });

  async function legacyRender(query: string, extra: Record<string, string> = {}): Promise<Flamebearer['flamebearer']> {
    const w = window();
    const qs = new URLSearchParams({ query, from: String(w.start), until: String(w.end), ...extra });
    const res = await fetch(`${floe.routerUrl}/profilequery/render?${qs}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(200);
    return ((await res.json()) as Flamebearer).flamebearer;
  }

  it('ProfileTypes lists both stored types with the five parts', async () => {
    const r = await call('ProfileTypes', PyroProfileTypesRequestSchema, window(), PyroProfileTypesResponseSchema);
    expect(r.status).toBe(200);
    expect(r.message!.profileTypes.map(({ ID, name, sampleType, sampleUnit, periodType, periodUnit }) => ({ ID, name, sampleType, sampleUnit, periodType, periodUnit }))).toEqual([
      { ID: HEAP, name: 'memory', sampleType: 'alloc_space', sampleUnit: 'bytes', periodType: 'space', periodUnit: 'bytes' },
      { ID: CPU, name: 'process_cpu', sampleType: 'cpu', sampleUnit: 'nanoseconds', periodType: 'cpu', periodUnit: 'nanoseconds' },
    ]);
    expect((await call('ProfileTypes', PyroProfileTypesRequestSchema, emptyWindow(), PyroProfileTypesResponseSchema)).message!.profileTypes).toEqual([]);
  });

  it('LabelNames and LabelValues, with Grafana\'s "{}" and a typed matcher', async () => {
    const names = await call('LabelNames', PyroLabelNamesRequestSchema, { matchers: ['{}'], ...window() }, PyroLabelNamesResponseSchema);
    expect(names.message!.names).toEqual(['__name__', '__profile_type__', 'host.cpus', 'load', 'sampled', 'service_name', 'thread.id', 'thread.name']);
    const heap = await call('LabelNames', PyroLabelNamesRequestSchema, { matchers: [`${HEAP}{service_name="${service}"}`], ...window() }, PyroLabelNamesResponseSchema);
    expect(heap.message!.names).toEqual(['__name__', '__profile_type__', 'host.cpus', 'service_name']);

    const services = await call('LabelValues', PyroLabelValuesRequestSchema, { name: 'service_name', matchers: ['{}'], ...window() }, PyroLabelValuesResponseSchema);
    expect(services.message!.names).toEqual([service]);
    const threads = await call('LabelValues', PyroLabelValuesRequestSchema, { name: 'thread.id', matchers: [`{__profile_type__="${CPU}"}`], ...window() }, PyroLabelValuesResponseSchema);
    expect(threads.message!.names).toEqual(['42']);
    const types = await call('LabelValues', PyroLabelValuesRequestSchema, { name: '__name__', ...window() }, PyroLabelValuesResponseSchema);
    expect(types.message!.names).toEqual(['memory', 'process_cpu']);
  });

  it('Series: the distinct label sets, or only the requested labels', async () => {
    const all = await call('Series', PyroSeriesRequestSchema, { matchers: ['{}'], ...window() }, PyroSeriesResponseSchema);
    const sets = all.message!.labelsSet.map((s) => Object.fromEntries(s.labels.map((l) => [l.name, l.value])));
    expect(sets).toEqual([
      { __name__: 'memory', __profile_type__: HEAP, service_name: service },
      { __name__: 'process_cpu', __profile_type__: CPU, service_name: service },
    ]);
    const threads = await call('Series', PyroSeriesRequestSchema, { matchers: [`${CPU}{}`], labelNames: ['thread.name'], ...window() }, PyroSeriesResponseSchema);
    expect(threads.message!.labelsSet.map((s) => s.labels.map(({ name, value }) => ({ name, value })))).toEqual([[{ name: 'thread.name', value: 'worker-1' }]]);
  });

  it('SelectMergeProfile: the merge as one pprof profile, stacks leaf first with their merged values, in protobuf and proto-JSON', async () => {
    const request = { profileTypeID: CPU, labelSelector: `{service_name="${service}"}`, ...window() };
    const r = await call('SelectMergeProfile', PyroSelectMergeProfileRequestSchema, request, PprofProfileSchema);
    expect(r.status).toBe(200);
    const p = r.message!;
    const s = (i: bigint) => p.stringTable[Number(i)];
    expect(p.sampleType.map((t) => [s(t.type), s(t.unit)])).toEqual([['cpu', 'nanoseconds']]);
    expect([s(p.periodType!.type), s(p.periodType!.unit), s(p.defaultSampleType)]).toEqual(['cpu', 'nanoseconds', 'cpu']);
    expect([p.timeNanos, p.durationNanos]).toEqual([request.start * 1_000_000n, 120_000_000_000n]);
    const functionName = new Map(p.function.map((f) => [f.id, s(f.name)]));
    const frame = new Map(p.location.map((l) => [l.id, functionName.get(l.line[0]!.functionId)]));
    const samples = p.sample.map((x) => ({ stack: x.locationId.map((id) => frame.get(id)), value: Number(x.value[0]) })).sort((a, b) => b.value - a.value);
    // The first stack was sent twice (30 + 10 ms): merged.
    expect(samples).toEqual([
      { stack: SAMPLE_CPU_STACKS[0], value: 40 * MS },
      { stack: SAMPLE_CPU_STACKS[1], value: 20 * MS },
      { stack: SAMPLE_CPU_STACKS[2], value: 5 * MS },
    ]);

    // max_nodes cuts the call tree as the flamegraph does: at most 3 nodes, the rest "other", no value lost.
    const cut = (await call('SelectMergeProfile', PyroSelectMergeProfileRequestSchema, { ...request, maxNodes: 3n }, PprofProfileSchema)).message!;
    const cutName = new Map(cut.function.map((f) => [f.id, cut.stringTable[Number(f.name)]]));
    const cutFrame = new Map(cut.location.map((l) => [l.id, cutName.get(l.line[0]!.functionId)]));
    const cutStacks = cut.sample.map((x) => ({ rootFirst: x.locationId.map((id) => cutFrame.get(id)!).reverse(), value: Number(x.value[0]) }));
    const nodes = new Set(cutStacks.flatMap(({ rootFirst }) => rootFirst.map((_, i) => rootFirst.slice(0, i + 1).join(';'))));
    expect(nodes.size).toBeLessThanOrEqual(3);
    expect(cutStacks.some(({ rootFirst }) => rootFirst.at(-1) === 'other')).toBe(true);
    expect(cutStacks.reduce((n, x) => n + x.value, 0)).toBe(65 * MS);

    const json = await fetch(`${floe.routerUrl}${SERVICE_PATH}/SelectMergeProfile`, {
      method: 'POST',
      headers: headersOf({}, 'application/json'),
      body: JSON.stringify({ profileTypeID: CPU, labelSelector: '{}', start: String(request.start), end: String(request.end) }),
    });
    expect(json.status).toBe(200);
    const body = (await json.json()) as { sample: Array<{ value: string[] }>; stringTable: string[] };
    expect(body.sample.reduce((n, x) => n + Number(x.value[0]), 0)).toBe(65 * MS);
    expect(body.stringTable).toEqual(expect.arrayContaining(['memmove', 'handleCheckout']));

    const elsewhere = await call('SelectMergeProfile', PyroSelectMergeProfileRequestSchema, request, PprofProfileSchema, { key: otherKey, tenant: other });
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.message!.sample).toEqual([]);
  });

  it('SelectMergeStacktraces: the same names, levels and total as /render, node cap included', async () => {
    const selector = `{service_name="${service}"}`;
    const r = await call('SelectMergeStacktraces', PyroSelectMergeStacktracesRequestSchema, { profileTypeID: CPU, labelSelector: selector, ...window() }, PyroSelectMergeStacktracesResponseSchema);
    expect(r.status).toBe(200);
    const legacy = await legacyRender(`${CPU}${selector}`);
    expect(legacy.numTicks).toBe(65 * MS);
    expect(flamegraphOf(r.message!.flamegraph!)).toEqual(legacy);

    const capped = await call('SelectMergeStacktraces', PyroSelectMergeStacktracesRequestSchema, { profileTypeID: CPU, labelSelector: selector, maxNodes: 3n, ...window() }, PyroSelectMergeStacktracesResponseSchema);
    expect(flamegraphOf(capped.message!.flamegraph!)).toEqual(await legacyRender(`${CPU}${selector}`, { 'max-nodes': '3' }));
    expect(capped.message!.flamegraph!.names).toContain('other');

    // Nothing selected: no flamegraph at all, which Grafana shows as "no data".
    const none = await call('SelectMergeStacktraces', PyroSelectMergeStacktracesRequestSchema, { profileTypeID: CPU, labelSelector: '{}', ...emptyWindow() }, PyroSelectMergeStacktracesResponseSchema);
    expect(none.status).toBe(200);
    expect(none.message!.flamegraph).toBeUndefined();
  });

  it("SelectMergeSpanProfile: the samples linked to the span only (Grafana's profile of a span)", async () => {
    const ask = (spanSelector: string[], labelSelector = `{service_name="${service}"}`) =>
      call('SelectMergeSpanProfile', PyroSelectMergeSpanProfileRequestSchema, { profileTypeID: CPU, labelSelector, spanSelector, ...window() }, PyroSelectMergeSpanProfileResponseSchema);
    // Three of the CPU profile's four samples (30 + 20 + 10 ms) link the span; the 5 ms one does not.
    const linked = await ask(['CD'.repeat(8)]);
    expect(linked.status).toBe(200);
    const fg = linked.message!.flamegraph!;
    expect(fg.total).toBe(BigInt(60 * MS));
    expect(fg.names).toEqual(expect.arrayContaining(['total']));
    const all = await call('SelectMergeStacktraces', PyroSelectMergeStacktracesRequestSchema, { profileTypeID: CPU, labelSelector: `{service_name="${service}"}`, ...window() }, PyroSelectMergeStacktracesResponseSchema);
    const unlinked = all.message!.flamegraph!.names.filter((n) => !fg.names.includes(n));
    expect(unlinked.length).toBeGreaterThan(0);
    // Another span, or no span at all: nothing.
    expect((await ask(['ef'.repeat(8)])).message!.flamegraph).toBeUndefined();
    expect((await ask([])).message!.flamegraph).toBeUndefined();
    const bad = await ask(['not-a-span']);
    expect(bad).toMatchObject({ status: 400, error: { code: 'invalid_argument', message: expect.stringContaining('invalid span id') } });
    // The other tenant's key sees nothing of it.
    const foreign = await call('SelectMergeSpanProfile', PyroSelectMergeSpanProfileRequestSchema, { profileTypeID: CPU, labelSelector: '{}', spanSelector: ['cd'.repeat(8)], ...window() }, PyroSelectMergeSpanProfileResponseSchema, { key: otherKey, tenant: other });
    expect(foreign.message!.flamegraph).toBeUndefined();
  });

  it("SelectSeries: points sum to the profile's total, per group, sum and average", async () => {
    const w = window();
    const r = await call(
      'SelectSeries',
      PyroSelectSeriesRequestSchema,
      { profileTypeID: CPU, labelSelector: '{}', groupBy: ['service_name'], step: 15, ...w },
      PyroSelectSeriesResponseSchema,
    );
    expect(r.status).toBe(200);
    const series = r.message!.series;
    expect(series).toHaveLength(1);
    expect(series[0]!.labels.map(({ name, value }) => ({ name, value }))).toEqual([{ name: 'service_name', value: service }]);
    const points = series[0]!.points;
    expect(points.reduce((a, p) => a + p.value, 0)).toBe(65 * MS);
    // The profile's step is the one ending at or after it, on the 15 s grid from start.
    const slot = Math.ceil((nowMs - Number(w.start)) / 15_000);
    expect(points.map((p) => Number(p.timestamp))).toEqual([Number(w.start) + slot * 15_000]);

    const avg = await call(
      'SelectSeries',
      PyroSelectSeriesRequestSchema,
      { profileTypeID: HEAP, labelSelector: `{service_name="${service}"}`, step: 60, aggregation: PyroTimeSeriesAggregationType.AVERAGE, limit: 5n, ...w },
      PyroSelectSeriesResponseSchema,
    );
    expect(avg.message!.series.map((s) => ({ labels: s.labels.length, values: s.points.map((p) => p.value) }))).toEqual([{ labels: 0, values: [5120] }]);
  });

  it("SelectSeries's exemplars name each point's profile, whose id then selects it in the merges; a call site and Go PGO's leaf cut select stacks", async () => {
    const w = window();
    const selector = `{service_name="${service}"}`;
    const seriesOf = async (extra: object) => {
      const request = { profileTypeID: CPU, labelSelector: selector, step: 15, ...w, ...extra } as MessageInitShape<typeof PyroSelectSeriesRequestSchema>;
      const r = await call('SelectSeries', PyroSelectSeriesRequestSchema, request, PyroSelectSeriesResponseSchema);
      expect(r.status).toBe(200);
      return r.message!.series[0]!.points;
    };
    const [point] = await seriesOf({ exemplarType: PyroExemplarType.INDIVIDUAL });
    expect(point!.exemplars.map((e) => ({ profileId: e.profileId, value: e.value, timestamp: e.timestamp, spanId: e.spanId, traceId: e.traceId }))).toEqual([
      { profileId: SAMPLE_PROFILE_ID_HEX, value: BigInt(65 * MS), timestamp: BigInt(nowMs), spanId: 'cd'.repeat(8), traceId: 'ab'.repeat(16) },
    ]);
    expect((await seriesOf({ exemplarType: PyroExemplarType.SPAN }))[0]!.exemplars.map((e) => e.spanId)).toEqual(['cd'.repeat(8)]);
    expect((await seriesOf({}))[0]!.exemplars).toEqual([]);

    const merged = async (extra: object) => {
      const request = { profileTypeID: CPU, labelSelector: selector, ...w, ...extra } as MessageInitShape<typeof PyroSelectMergeStacktracesRequestSchema>;
      return (await call('SelectMergeStacktraces', PyroSelectMergeStacktracesRequestSchema, request, PyroSelectMergeStacktracesResponseSchema)).message!.flamegraph?.total;
    };
    expect(await merged({ profileIdSelector: [point!.exemplars[0]!.profileId] })).toBe(BigInt(65 * MS));
    expect(await merged({ profileIdSelector: ['00'.repeat(16)] })).toBeUndefined();
    // main > handleCheckout > computeTotal holds the first two stacks: 40 + 20 ms.
    const callSite = { callSite: ['main', 'handleCheckout', 'computeTotal'].map((name) => ({ name })) };
    expect(await merged({ stackTraceSelector: callSite })).toBe(BigInt(60 * MS));
    expect((await seriesOf({ stackTraceSelector: callSite })).map((p) => p.value)).toEqual([60 * MS]);
    expect(await merged({ stackTraceSelector: { callSite: [{ name: 'handleCheckout' }] } })).toBeUndefined();

    const pgo = await call('SelectMergeProfile', PyroSelectMergeProfileRequestSchema, { profileTypeID: CPU, labelSelector: selector, ...w, stackTraceSelector: { goPgo: { keepLocations: 1 } } }, PprofProfileSchema);
    const p = pgo.message!;
    const name = new Map(p.function.map((f) => [f.id, p.stringTable[Number(f.name)]]));
    const frame = new Map(p.location.map((l) => [l.id, name.get(l.line[0]!.functionId)]));
    expect(p.sample.map((x) => ({ stack: x.locationId.map((id) => frame.get(id)), value: Number(x.value[0]) })).sort((a, b) => b.value - a.value)).toEqual([
      { stack: ['memmove'], value: 40 * MS },
      { stack: ['hash'], value: 20 * MS },
      { stack: ['/usr/lib/x86_64-linux-gnu/libc.so.6'], value: 5 * MS },
    ]);
  });

  it('Diff: one flamegraph of both sides with leftTicks and rightTicks', async () => {
    const side = (w: { start: bigint; end: bigint }) => ({ profileTypeID: CPU, labelSelector: `{service_name="${service}"}`, ...w });
    const r = await call('Diff', PyroDiffRequestSchema, { left: side(window()), right: side(emptyWindow()) }, PyroDiffResponseSchema);
    expect(r.status).toBe(200);
    const fg = r.message!.flamegraph!;
    expect([fg.leftTicks, fg.rightTicks, fg.total]).toEqual([BigInt(65 * MS), 0n, BigInt(65 * MS)]);
    expect(fg.names).toEqual((await legacyRender(CPU)).names);
    expect(fg.levels[3]!.values.map(Number)).toEqual([0, 5 * MS, 5 * MS, 0, 0, 0, 3, 0, 60 * MS, 0, 0, 0, 0, 4]);
    const mixed = await call('Diff', PyroDiffRequestSchema, { left: side(window()), right: { ...side(window()), profileTypeID: HEAP } }, PyroDiffResponseSchema);
    expect(mixed).toMatchObject({ status: 400, error: { code: 'invalid_argument', message: 'left and right must select the same profile type' } });
  });

  it('GetProfileStats: data ingested, oldest and newest profile time in ms', async () => {
    const r = await call('GetProfileStats', PyroGetProfileStatsRequestSchema, {}, PyroGetProfileStatsResponseSchema);
    expect({ data: r.message!.dataIngested, oldest: r.message!.oldestProfileTime, newest: r.message!.newestProfileTime }).toEqual({ data: true, oldest: BigInt(nowMs), newest: BigInt(nowMs) });
  });

  it('JSON requests (proto-JSON names, int64 as strings) and gzip bodies work too', async () => {
    const w = window();
    const body = JSON.stringify({ profileTypeID: CPU, labelSelector: `{service_name="${service}"}`, start: String(w.start), end: String(w.end), maxNodes: '8192' });
    const res = await fetch(`${floe.routerUrl}${SERVICE_PATH}/SelectMergeStacktraces`, { method: 'POST', headers: headersOf({}, 'application/json'), body });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const json = (await res.json()) as { flamegraph: { names: string[]; total: string; maxSelf: string; levels: Array<{ values: string[] }> } };
    const legacy = await legacyRender(`${CPU}{service_name="${service}"}`);
    expect({ names: json.flamegraph.names, total: json.flamegraph.total, levels: json.flamegraph.levels.map((l) => l.values.map(Number)) }).toEqual({
      names: legacy.names,
      total: String(65 * MS),
      levels: legacy.levels,
    });

    const types = await fetch(`${floe.routerUrl}${SERVICE_PATH}/ProfileTypes`, { method: 'POST', headers: headersOf({}, 'application/json'), body: JSON.stringify({ start: String(w.start), end: String(w.end) }) });
    expect(((await types.json()) as { profileTypes: Array<{ ID: string }> }).profileTypes.map((t) => t.ID)).toEqual([HEAP, CPU]);

    const gz = await fetch(`${floe.routerUrl}${SERVICE_PATH}/LabelValues`, {
      method: 'POST',
      headers: { ...headersOf({}), 'content-encoding': 'gzip' },
      body: gzipSync(toBinary(PyroLabelValuesRequestSchema, create(PyroLabelValuesRequestSchema, { name: 'service_name', ...w }))),
    });
    expect((await answerOf(gz, PyroLabelValuesResponseSchema)).message!.names).toEqual([service]);
  });

  it('errors in Connect JSON: bad selector 400, no auth 401, unimplemented 501, wrong codec 415', async () => {
    const badSelector = await call('SelectMergeStacktraces', PyroSelectMergeStacktracesRequestSchema, { profileTypeID: CPU, labelSelector: '{service_name=}', ...window() }, PyroSelectMergeStacktracesResponseSchema);
    expect(badSelector).toEqual({ status: 400, contentType: expect.stringMatching(/^application\/json/), error: { code: 'invalid_argument', message: expect.stringMatching(/^parse error/) } });
    const badType = await call('SelectSeries', PyroSelectSeriesRequestSchema, { profileTypeID: 'process_cpu', step: 10, ...window() }, PyroSelectSeriesResponseSchema);
    expect(badType).toMatchObject({ status: 400, error: { code: 'invalid_argument', message: expect.stringMatching(/invalid profile type "process_cpu"/) } });
    const badLabels = await call('LabelNames', PyroLabelNamesRequestSchema, { matchers: ['sum(x)'], ...window() }, PyroLabelNamesResponseSchema);
    expect(badLabels).toMatchObject({ status: 400, error: { code: 'invalid_argument' } });

    const noAuth = await call('ProfileTypes', PyroProfileTypesRequestSchema, window(), PyroProfileTypesResponseSchema, { key: null });
    expect(noAuth).toMatchObject({ status: 401, error: { code: 'unauthenticated' } });

    for (const method of ['SelectHeatmap', 'AnalyzeQuery']) {
      const r = await call(method, PyroProfileTypesRequestSchema, {}, PyroProfileTypesResponseSchema);
      expect(r).toMatchObject({ status: 501, error: { code: 'unimplemented', message: expect.stringContaining(`querier.v1.QuerierService/${method} is not implemented`) } });
    }
    expect(await call('NoSuchMethod', PyroProfileTypesRequestSchema, {}, PyroProfileTypesResponseSchema)).toMatchObject({ status: 501, error: { code: 'unimplemented' } });
    const tree = await call('SelectMergeStacktraces', PyroSelectMergeStacktracesRequestSchema, { profileTypeID: CPU, format: PyroProfileFormat.TREE, ...window() }, PyroSelectMergeStacktracesResponseSchema);
    expect(tree).toEqual({ status: 501, contentType: expect.any(String), error: { code: 'unimplemented', message: 'format PROFILE_FORMAT_TREE is not available: only PROFILE_FORMAT_FLAMEGRAPH' } });

    const form = await fetch(`${floe.routerUrl}${SERVICE_PATH}/ProfileTypes`, { method: 'POST', headers: headersOf({}, 'application/x-www-form-urlencoded'), body: 'start=1' });
    expect(form.status).toBe(415);
    expect(await form.json()).toMatchObject({ code: 'invalid_argument' });
  });

  it("tenancy: another tenant's key is refused, and another tenant sees nothing", async () => {
    const crossed = await call('ProfileTypes', PyroProfileTypesRequestSchema, window(), PyroProfileTypesResponseSchema, { key: otherKey });
    expect(crossed).toMatchObject({ status: 403, error: { code: 'permission_denied' } });
    const as = { key: otherKey, tenant: other };
    expect((await call('ProfileTypes', PyroProfileTypesRequestSchema, window(), PyroProfileTypesResponseSchema, as)).message!.profileTypes).toEqual([]);
    expect((await call('LabelValues', PyroLabelValuesRequestSchema, { name: 'service_name', ...window() }, PyroLabelValuesResponseSchema, as)).message!.names).toEqual([]);
    const fg = await call('SelectMergeStacktraces', PyroSelectMergeStacktracesRequestSchema, { profileTypeID: CPU, labelSelector: '{}', ...window() }, PyroSelectMergeStacktracesResponseSchema, as);
    expect(fg.status).toBe(200);
    expect(fg.message!.flamegraph).toBeUndefined();
    const series = await call('SelectSeries', PyroSelectSeriesRequestSchema, { profileTypeID: CPU, labelSelector: '{}', step: 15, ...window() }, PyroSelectSeriesResponseSchema, as);
    expect(series.message!.series).toEqual([]);
    const stats = await call('GetProfileStats', PyroGetProfileStatsRequestSchema, {}, PyroGetProfileStatsResponseSchema, as);
    expect(stats.message!.dataIngested).toBe(false);
  });
});
