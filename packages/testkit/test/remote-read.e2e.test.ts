import { compress, uncompress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromLabelMatcher_Type, PromReadRequest_ResponseType, PromReadRequestSchema, PromReadResponseSchema, PromWriteRequestSchema, create, fromBinary, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, STALE_PLACEHOLDER, startFloe, startPrometheus, waitFor, withStaleMarkers, type FloeMode, type FloeUnderTest, type PrometheusUnderTest } from '../src/index.ts';

/**
 * Prometheus remote read (`POST /metricquery/api/v1/read`): a real Prometheus (Debian package)
 * whose own TSDB is empty reads Floe's series through its `remote_read` entry, and answers range
 * and instant queries over them exactly as Floe's own PromQL API does, staleness markers
 * included; the raw protocol's refusals; and no tenant reads another's series.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('Prometheus remote read (%s)', (mode) => {
  let floe: FloeUnderTest;
  let prom: PrometheusUnderTest;
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
  const readRequest = (start: number, end: number, types: PromReadRequest_ResponseType[] = []) =>
    Buffer.from(
      compress(
        toBinary(
          PromReadRequestSchema,
          create(PromReadRequestSchema, {
            queries: [{ startTimestampMs: BigInt(start), endTimestampMs: BigInt(end), matchers: [{ type: PromLabelMatcher_Type.EQ, name: '__name__', value: 'floe_rr_temperature' }, { type: PromLabelMatcher_Type.RE, name: 'room', value: 'a|b' }] }],
            acceptedResponseTypes: types,
          }),
        ),
      ),
    );

  beforeAll(async () => {
    // A low answer limit, so one test can pass it; the other reads stay under it.
    floe = await startFloe({ mode, config: { router: { remote_read_max_samples: 100 } } });
    key = (await floe.bootstrap(tenant)).api_key;
    otherKey = (await floe.bootstrap('outsiders')).api_key;
    const many = { labels: [{ name: '__name__', value: 'floe_rr_many' }], samples: Array.from({ length: 150 }, (_, i) => ({ timestamp: BigInt(t0 + i * 1000), value: i })) };
    const timeseries = ['a', 'b'].map((room) => ({
      labels: [
        { name: '__name__', value: 'floe_rr_temperature' },
        { name: 'job', value: 'sensors' },
        { name: 'room', value: room },
      ],
      samples: Array.from({ length: room === 'a' ? steps : lastB + 1 }, (_, i) => ({ timestamp: BigInt(t0 + i * 15_000), value: room === 'b' && i === lastB ? STALE_PLACEHOLDER : valueOf(room, i) })),
    }));
    const body = compress(withStaleMarkers(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries: [...timeseries, many] }))));
    const res = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body, headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(204);
    await waitFor('the samples in Floe', async () => {
      const r = await fetch(`${floe.routerUrl}/metricquery/api/v1/query?${new URLSearchParams({ query: 'count_over_time(floe_rr_temperature[1h])', time: String((t0 + steps * 15_000) / 1000) })}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
      const data = ((await r.json()) as { data: { result: Array<{ value: [number, string] }> } }).data;
      return data.result.length === 2 ? true : undefined;
    }, 30_000, 250);
    prom = await startPrometheus({ scrapeSelf: false, remoteRead: { url: `${floe.routerUrl}/metricquery/api/v1/read`, apiKey: key, tenant } });
  }, 180_000);
  afterAll(async () => {
    await prom?.stop();
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
    await error(await read(readRequest(t0, end, [PromReadRequest_ResponseType.STREAMED_XOR_CHUNKS])), 400, /SAMPLES only/);
    await error(await read(readRequest(end, t0)), 400, /before start/);
    await error(await read(readRequest(t0, end), 'floe_not-a-key'), 401, /./);
    // A regex that is not RE2 is the client's error, as in a PromQL query.
    const badRegex = Buffer.from(compress(toBinary(PromReadRequestSchema, create(PromReadRequestSchema, { queries: [{ startTimestampMs: BigInt(t0), endTimestampMs: BigInt(end), matchers: [{ type: PromLabelMatcher_Type.RE, name: 'room', value: '(' }] }] }))));
    await error(await read(badRegex), 400, /./);
    // More samples than router.remote_read_max_samples (100 here) in one answer: 422, as past Prometheus's read sample limit.
    const manyRequest = Buffer.from(compress(toBinary(PromReadRequestSchema, create(PromReadRequestSchema, { queries: [{ startTimestampMs: BigInt(t0), endTimestampMs: BigInt(end), matchers: [{ type: PromLabelMatcher_Type.EQ, name: '__name__', value: 'floe_rr_many' }] }] }))));
    await error(await read(manyRequest), 422, /more than 100 samples/);
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
