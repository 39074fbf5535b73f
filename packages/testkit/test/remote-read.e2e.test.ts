import { compress, uncompress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromLabelMatcher_Type, PromReadRequest_ResponseType, PromReadRequestSchema, PromReadResponseSchema, PromWriteRequestSchema, create, fromBinary, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, STALE_PLACEHOLDER, readStreamedFrames, startFloe, startPrometheus, waitFor, withStaleMarkers, type FloeMode, type FloeUnderTest, type PrometheusUnderTest, type StreamedFrame } from '../src/index.ts';

/**
 * Prometheus remote read (`POST /metricquery/api/v1/read`): a real Prometheus (Debian package)
 * whose own TSDB is empty reads Floe's series through its `remote_read` entry, and answers range
 * and instant queries over them exactly as Floe's own PromQL API does, staleness markers
 * included; streamed XOR chunks decoded to the same samples, to the bit, as a second real
 * Prometheus (the reference server) streams for the same remote-written series; the raw
 * protocol's refusals; and no tenant reads another's series.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('Prometheus remote read (%s)', (mode) => {
  let floe: FloeUnderTest;
  let prom: PrometheusUnderTest;
  let reference: PrometheusUnderTest | undefined;
  let key: string;
  let otherKey: string;
  const tenant = 'readers';
  // Two series a minute apart from t0, 15 s a sample; room b ends with a staleness marker.
  const t0 = Math.floor(Date.now() / 60_000) * 60_000 - 20 * 60_000;
  const steps = 40;
  const valueOf = (room: string, i: number) => (room === 'a' ? 20 + i / 4 : 100 - i);
  const lastB = 30;

  const read = (body: Uint8Array, k = key, headers: Record<string, string> = {}) =>
    fetch(`${floe.routerUrl}/metricquery/api/v1/read`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', 'x-prometheus-remote-read-version': '0.1.0', authorization: `Bearer ${k}`, 'x-tenant-id': tenant, ...headers },
    });
  const readRequest = (start: number, end: number, types: PromReadRequest_ResponseType[] = [], name: { type: PromLabelMatcher_Type; value: string } = { type: PromLabelMatcher_Type.EQ, value: 'floe_rr_temperature' }) =>
    Buffer.from(
      compress(
        toBinary(
          PromReadRequestSchema,
          create(PromReadRequestSchema, {
            queries: [{ startTimestampMs: BigInt(start), endTimestampMs: BigInt(end), matchers: [{ type: name.type, name: '__name__', value: name.value }, { type: PromLabelMatcher_Type.RE, name: 'room', value: 'a|b|' }] }],
            acceptedResponseTypes: types,
          }),
        ),
      ),
    );
  // A series longer than a chunk (120 samples) with irregular times, so that the times' deltas of
  // deltas take every width of the XOR encoding (0, 14, 17, 20 and 64 bits), and values whose
  // XORs take new and reused bit windows; it starts half an hour before t0.
  const longStart = t0 - 30 * 60_000;
  const longDeltas = [1000, 1001, 1000, 9000, 500, 3000, 1, 1, 20000, 5000];
  const longValues = [7, 7, -10.5, 1e300, 1e-300, 0, 3.14159, 3.14159 + 1e-12, Number.MAX_VALUE, 42, 42, 42.5, -123456789.125];
  const longSamples = (() => {
    const out: { timestamp: bigint; value: number }[] = [];
    let t = longStart;
    for (let i = 0; i < 250; i++) {
      out.push({ timestamp: BigInt(t), value: longValues[i % longValues.length]! * (i % 3 === 2 ? i : 1) });
      t += i === 100 ? 200_000 : i === 180 ? 600_000 : longDeltas[i % longDeltas.length]!;
    }
    return out;
  })();

  beforeAll(async () => {
    // A low answer limit, so one test can pass it; the other reads stay under it.
    floe = await startFloe({ mode, config: { router: { remote_read_max_samples: 400 } } });
    key = (await floe.bootstrap(tenant)).api_key;
    otherKey = (await floe.bootstrap('outsiders')).api_key;
    const many = { labels: [{ name: '__name__', value: 'floe_rr_many' }], samples: Array.from({ length: 450 }, (_, i) => ({ timestamp: BigInt(t0 + i * 1000), value: i })) };
    const long = { labels: [{ name: '__name__', value: 'floe_rr_long' }, { name: 'job', value: 'sensors' }], samples: longSamples };
    const timeseries = ['a', 'b'].map((room) => ({
      labels: [
        { name: '__name__', value: 'floe_rr_temperature' },
        { name: 'job', value: 'sensors' },
        { name: 'room', value: room },
      ],
      samples: Array.from({ length: room === 'a' ? steps : lastB + 1 }, (_, i) => ({ timestamp: BigInt(t0 + i * 15_000), value: room === 'b' && i === lastB ? STALE_PLACEHOLDER : valueOf(room, i) })),
    }));
    const body = compress(withStaleMarkers(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries: [...timeseries, many, long] }))));
    const res = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body, headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(204);
    // The reference: a Prometheus that takes the same series by remote write and streams them from its own TSDB.
    reference = await startPrometheus({ scrapeSelf: false, remoteWriteReceiver: true });
    const toReference = await fetch(`${reference.url}/api/v1/write`, { method: 'POST', body, headers: REMOTE_WRITE_HEADERS });
    expect(toReference.status, await toReference.text()).toBe(204);
    await waitFor('the samples in Floe', async () => {
      const r = await fetch(`${floe.routerUrl}/metricquery/api/v1/query?${new URLSearchParams({ query: 'count_over_time(floe_rr_temperature[1h])', time: String((t0 + steps * 15_000) / 1000) })}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
      const data = ((await r.json()) as { data: { result: Array<{ value: [number, string] }> } }).data;
      return data.result.length === 2 ? true : undefined;
    }, 30_000, 250);
    prom = await startPrometheus({ scrapeSelf: false, remoteRead: { url: `${floe.routerUrl}/metricquery/api/v1/read`, apiKey: key, tenant } });
  }, 180_000);
  afterAll(async () => {
    await prom?.stop();
    await reference?.stop();
    await floe?.stop();
  });

  it('a Prometheus with remote_read answers queries over Floe’s series as Floe does, staleness included', async () => {
    const floeApi = async (path: string, params: Record<string, string>) => {
      const r = await fetch(`${floe.routerUrl}/metricquery/api/v1/${path}?${new URLSearchParams(params)}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
      return ((await r.json()) as { data: unknown }).data;
    };
    const range = { query: 'floe_rr_temperature', start: String(t0 / 1000), end: String((t0 + steps * 15_000) / 1000), step: '15' };
    const fromProm = await prom.api<Array<{ metric: Record<string, string>; values: Array<[number, string]> }>>('query_range', range).then((d) => (d as unknown as { result: unknown }).result);
    const fromFloe = ((await floeApi('query_range', range)) as { result: unknown }).result;
    expect(fromProm).toEqual(fromFloe);
    const series = fromProm as Array<{ metric: Record<string, string>; values: Array<[number, string]> }>;
    expect(series.map((s) => s.metric)).toEqual([
      { __name__: 'floe_rr_temperature', job: 'sensors', room: 'a' },
      { __name__: 'floe_rr_temperature', job: 'sensors', room: 'b' },
    ]);
    // Room b's marker ends it: no point at or after it (a NaN that lost its marker bits would show as "NaN").
    expect(series[1]!.values.at(-1)).toEqual([(t0 + (lastB - 1) * 15_000) / 1000, String(valueOf('b', lastB - 1))]);
    // Between samples: Prometheus 2's range selectors include a sample at the window's start, Floe's (Prometheus 3's) do not.
    const instant = { query: 'sum by (job) (rate(floe_rr_temperature[5m]))', time: String((t0 + 20 * 15_000 + 7_000) / 1000) };
    type Vector = { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
    const [p, f] = [(await prom.api('query', instant)) as Vector, (await floeApi('query', instant)) as Vector];
    expect(p.result.map((r) => r.metric)).toEqual(f.result.map((r) => r.metric));
    // Summed in another order (Prometheus 3 sums with compensation): equal to the last bits or so.
    expect(Number(p.result[0]!.value[1])).toBeCloseTo(Number(f.result[0]!.value[1]), 9);
    const exact = { query: 'max by (room) (max_over_time(floe_rr_temperature[5m]))', time: instant.time };
    expect(((await prom.api('query', exact)) as Vector).result).toEqual(((await floeApi('query', exact)) as Vector).result);
  });

  it('answers the raw protocol: samples in the window, the exact staleness marker, and refusals with the error envelope', async () => {
    const end = t0 + steps * 15_000;
    const res = await read(readRequest(t0 + 15_000, end));
    expect(res.status).toBe(200);
    expect([res.headers.get('content-type'), res.headers.get('content-encoding')]).toEqual(['application/x-protobuf', 'snappy']);
    const raw = Buffer.from(uncompress(new Uint8Array(await res.arrayBuffer())));
    const answer = fromBinary(PromReadResponseSchema, raw);
    expect(answer.results).toHaveLength(1);
    const [a, b] = answer.results[0]!.timeseries;
    expect(a!.labels.map((l) => `${l.name}=${l.value}`)).toEqual(['__name__=floe_rr_temperature', 'job=sensors', 'room=a']);
    // The window includes its start: the sample at t0 is out, the one at t0 + 15 s in.
    expect(a!.samples.map((s) => Number(s.timestamp))).toEqual(Array.from({ length: steps - 1 }, (_, i) => t0 + (i + 1) * 15_000));
    expect(a!.samples.map((s) => s.value)).toEqual(Array.from({ length: steps - 1 }, (_, i) => valueOf('a', i + 1)));
    expect(b!.samples).toHaveLength(lastB);
    // The marker travels as its exact bits, 0x7ff0000000000002.
    expect(raw.includes(Buffer.from('09020000000000f07f', 'hex'))).toBe(true);

    const error = async (r: Response, status: number, text: RegExp) => {
      expect(r.status).toBe(status);
      expect(await r.json()).toMatchObject({ status: 'error', error: expect.stringMatching(text) });
    };
    await error(await read(Buffer.from('not snappy at all')), 400, /snappy/);
    await error(await read(Buffer.from(compress(Buffer.from([0x0a, 0xff, 0xff])))), 400, /ReadRequest/);
    await error(await read(readRequest(t0, end, [5 as PromReadRequest_ResponseType])), 400, /none of the accepted response types/);
    await error(await read(readRequest(end, t0)), 400, /before start/);
    await error(await read(readRequest(t0, end), 'floe_not-a-key'), 401, /./);
    // A regex that is not RE2 is the client's error, as in a PromQL query.
    const badRegex = Buffer.from(compress(toBinary(PromReadRequestSchema, create(PromReadRequestSchema, { queries: [{ startTimestampMs: BigInt(t0), endTimestampMs: BigInt(end), matchers: [{ type: PromLabelMatcher_Type.RE, name: 'room', value: '(' }] }] }))));
    await error(await read(badRegex), 400, /./);
    // More samples than router.remote_read_max_samples (400 here) in one answer: 422, as past Prometheus's read sample limit.
    const manyRequest = Buffer.from(compress(toBinary(PromReadRequestSchema, create(PromReadRequestSchema, { queries: [{ startTimestampMs: BigInt(t0), endTimestampMs: BigInt(end), matchers: [{ type: PromLabelMatcher_Type.EQ, name: '__name__', value: 'floe_rr_many' }] }] }))));
    await error(await read(manyRequest), 422, /more than 400 samples/);
  });

  it('streams XOR chunks (STREAMED_XOR_CHUNKS) that decode to the samples a real Prometheus streams for the same series, to the bit', async () => {
    const start = longStart - 60_000;
    const end = t0 + steps * 15_000;
    const names = { type: PromLabelMatcher_Type.RE, value: 'floe_rr_temperature|floe_rr_long' };
    const streamed = async (url: string, headers: Record<string, string>) => {
      const res = await fetch(url, { method: 'POST', body: readRequest(start, end, [PromReadRequest_ResponseType.STREAMED_XOR_CHUNKS, PromReadRequest_ResponseType.SAMPLES], names), headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', 'x-prometheus-remote-read-version': '0.1.0', ...headers } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse');
      return readStreamedFrames(new Uint8Array(await res.arrayBuffer()));
    };
    const fromFloe = await streamed(`${floe.routerUrl}/metricquery/api/v1/read`, { authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
    const fromPrometheus = await streamed(`${reference!.url}/api/v1/read`, {});
    // Series by labels, their samples in the window (Prometheus sends whole stored chunks), values as bits.
    const samplesOf = (frames: StreamedFrame[]) => {
      const bySeries = new Map<string, string[]>();
      for (const f of frames) {
        expect(f.queryIndex).toBe(0);
        for (const s of f.series) {
          const key = JSON.stringify(Object.entries(s.labels).sort());
          const list = bySeries.get(key) ?? [];
          for (const c of s.chunks) for (const x of c.samples) if (x.t >= start && x.t <= end) list.push(`${x.t} ${x.bits}`);
          bySeries.set(key, list);
        }
      }
      return [...bySeries].sort();
    };
    const floeSeries = samplesOf(fromFloe);
    expect(floeSeries.map(([k]) => k)).toEqual(
      [
        [['__name__', 'floe_rr_long'], ['job', 'sensors']],
        [['__name__', 'floe_rr_temperature'], ['job', 'sensors'], ['room', 'a']],
        [['__name__', 'floe_rr_temperature'], ['job', 'sensors'], ['room', 'b']],
      ].map((l) => JSON.stringify(l)),
    );
    expect(floeSeries.map(([, v]) => v.length)).toEqual([250, steps, lastB + 1]);
    expect(floeSeries).toEqual(samplesOf(fromPrometheus));
    // Room b's last sample is the staleness marker, as its exact bits.
    expect(floeSeries[2]![1].at(-1)).toBe(`${t0 + lastB * 15_000} 7ff0000000000002`);
    // Floe's chunks: at most 120 samples, min and max times those of their samples, XOR encoded.
    const chunks = fromFloe.flatMap((f) => f.series.flatMap((s) => s.chunks));
    expect(chunks.map((c) => c.samples.length)).toEqual([120, 120, 10, steps, lastB + 1]);
    for (const c of chunks) expect([c.type, c.minTimeMs, c.maxTimeMs]).toEqual([1, c.samples[0]!.t, c.samples.at(-1)!.t]);
  });

  it('reads only the caller’s own tenant', async () => {
    const res = await read(readRequest(t0, t0 + steps * 15_000), otherKey, { 'x-tenant-id': 'outsiders' });
    expect(res.status).toBe(200);
    const answer = fromBinary(PromReadResponseSchema, Buffer.from(uncompress(new Uint8Array(await res.arrayBuffer()))));
    expect(answer.results).toEqual([expect.objectContaining({ timeseries: [] })]);
    // Naming the other tenant with one's own key is refused.
    expect((await read(readRequest(t0, t0 + 60_000), otherKey)).status).toBe(403);
  });
});
