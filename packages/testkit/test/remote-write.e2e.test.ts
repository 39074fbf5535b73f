import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PromMetricMetadata_MetricType,
  PromWriteRequestSchema,
  RwV2Histogram_ResetHint,
  RwV2Metadata_MetricType,
  RwV2RequestSchema,
  create,
  toBinary,
  type MessageInitShape,
} from '@floe/proto';
import { flightDoGet } from '@floe/flight';
import { REMOTE_WRITE_HEADERS, STALE_PLACEHOLDER, plain, startFloe, startPrometheus, waitFor, withStaleMarkers, type FloeMode, type FloeUnderTest, type PrometheusUnderTest } from '../src/index.ts';

/**
 * Prometheus remote write end to end, in both modes: a real Prometheus (Debian package
 * `prometheus`, started here on loopback) scrapes itself and remote-writes (protocol 1.0) to
 * Floe; the samples it reports through its own query API for a few of its series are compared,
 * timestamp by timestamp and value by value, with the rows in `metrics`. Protocol 2.0 (which the
 * Debian Prometheus cannot send) is sent by hand: floats, integer and float native histograms
 * with negative buckets, staleness markers, start timestamps and exemplars land; a custom-bucket
 * histogram is dropped with a warning while the rest of its request is stored. Then every error
 * rule: 400 decode and conversion errors, 415, 401/403, 413, and 503 when the WAL is unavailable.
 */

type Row = Record<string, unknown>;
const REMOTE_WRITE_SCOPE = 'floe.prometheus.remote_write';
const V2_CT = 'application/x-protobuf;proto=io.prometheus.write.v2.Request';

function symbolTable() {
  const symbols = [''];
  const ref = (s: string) => {
    let i = symbols.indexOf(s);
    if (i < 0) i = symbols.push(s) - 1;
    return i;
  };
  return { symbols, ref, refs: (l: Record<string, string>) => Object.entries(l).flatMap(([k, v]) => [ref(k), ref(v)]) };
}

describe.each<FloeMode>(['embedded', 'cluster'])('remote write end to end (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let prom: PrometheusUnderTest | undefined;
  const tenant = 'acme';

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await prom?.stop();
    await floe?.stop();
  });

  const meta = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
  const sql = async (text: string) => {
    const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: meta(), deadlineMs: 20_000 });
    return table.toArray().map((r) => plain(r) as Row);
  };
  const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;
  const write = (body: Uint8Array | string, headers: Record<string, string> = {}) =>
    fetch(`${floe.otlpHttpUrl}/api/v1/write`, {
      method: 'POST',
      body,
      headers: { ...meta(), ...REMOTE_WRITE_HEADERS, ...headers },
    });

  it('a real Prometheus remote-writing its own series: the samples it reports are the rows Floe stores', async () => {
    prom = await startPrometheus({ remoteWrite: { url: `${floe.otlpHttpUrl}/api/v1/write`, apiKey: key, tenant } });
    const p = prom;
    const names = ['prometheus_tsdb_head_samples_appended_total', 'go_goroutines', 'up', 'prometheus_http_requests_total', 'prometheus_http_request_duration_seconds_bucket'];
    const inList = names.map(quote).join(', ');
    // Staleness markers (flags = 1) are stored, but a range vector never shows them.
    const floeSamples = async (cutoffMs: bigint) => {
      const rows = await sql(
        `SELECT metric_name, point_attr_str, time_unix_nano, value FROM metrics WHERE scope_name = '${REMOTE_WRITE_SCOPE}' AND metric_name IN (${inList}) AND flags = 0 AND time_unix_nano <= ${cutoffMs * 1_000_000n}`,
      );
      const out = new Map<string, Map<number, number>>();
      for (const r of rows) {
        const k = labelKey({ __name__: r.metric_name as string, ...(r.point_attr_str as Record<string, string>) });
        if (!out.has(k)) out.set(k, new Map());
        out.get(k)!.set(Number((r.time_unix_nano as bigint) / 1_000_000n), r.value as number);
      }
      return out;
    };

    // Enough scrapes in Floe, then a cutoff a little before the newest, so Prometheus and Floe
    // are compared over samples both must have.
    const newest = await waitFor(
      'five scrapes of Prometheus in Floe',
      async () => {
        const r = await sql(`SELECT count(*) AS n, max(time_unix_nano) AS t FROM metrics WHERE metric_name = 'up' AND scope_name = '${REMOTE_WRITE_SCOPE}'`);
        return (r[0]!.n as bigint) >= 5n ? (r[0]!.t as bigint) : undefined;
      },
      90_000,
      500,
    );
    const cutoffMs = newest / 1_000_000n - 1500n;
    type Matrix = Array<{ metric: Record<string, string>; values: Array<[number, string]> }>;
    const matrix = await p.api<{ resultType: string; result: Matrix }>('query', { query: `{__name__=~"${names.join('|')}"}[15m]`, time: (Number(cutoffMs) / 1000).toFixed(3) });
    expect(matrix.resultType).toBe('matrix');
    const want = new Map<string, Map<number, number>>();
    for (const s of matrix.result) want.set(labelKey(s.metric), new Map(s.values.map(([t, v]) => [Math.round(t * 1000), Number(v)])));
    expect(new Set([...want.keys()].map((k) => Object.fromEntries(JSON.parse(k) as Array<[string, string]>).__name__))).toEqual(new Set(names));
    // Remote write lags the scrape a little: wait until Floe has caught up to the cutoff.
    const got = await waitFor(
      "Floe to hold every sample Prometheus has up to the cutoff",
      async () => {
        const g = await floeSamples(cutoffMs);
        return [...want].every(([k, samples]) => g.get(k)?.size === samples.size) ? g : undefined;
      },
      60_000,
      500,
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n--- prometheus log ---\n${p.log().slice(-3000)}`);
    });
    expect(new Set(got.keys())).toEqual(new Set(want.keys()));
    for (const [series, samples] of want) expect(Object.fromEntries(got.get(series)!), series).toEqual(Object.fromEntries(samples));
    expect([...want.values()].reduce((n, s) => n + s.size, 0)).toBeGreaterThan(20);

    // Typing and the target: counters are monotonic cumulative sums, gauges gauges; job and
    // instance stay labels and make the resource (service.name, service.instance.id).
    const typed = await sql(
      `SELECT DISTINCT metric_name, metric_type, temporality, is_monotonic, service_name, resource_attr_str FROM metrics WHERE scope_name = '${REMOTE_WRITE_SCOPE}' AND metric_name IN ('prometheus_http_requests_total', 'go_goroutines') ORDER BY metric_name`,
    );
    const instance = new URL(p.url).host;
    const resource = { 'service.name': 'prometheus', 'service.instance.id': instance };
    expect(typed).toEqual([
      { metric_name: 'go_goroutines', metric_type: 'gauge', temporality: null, is_monotonic: null, service_name: 'prometheus', resource_attr_str: resource },
      { metric_name: 'prometheus_http_requests_total', metric_type: 'sum', temporality: 'cumulative', is_monotonic: true, service_name: 'prometheus', resource_attr_str: resource },
    ]);

    // Every metric name Prometheus knows reaches Floe, and Floe has no other.
    const promNames = await p.api<string[]>('label/__name__/values');
    const floeNames = await waitFor(
      'every Prometheus metric name in Floe',
      async () => {
        const rows = await sql(`SELECT DISTINCT metric_name FROM metrics WHERE scope_name = '${REMOTE_WRITE_SCOPE}'`);
        const set = new Set(rows.map((r) => r.metric_name as string));
        return promNames.every((n) => set.has(n)) ? set : undefined;
      },
      60_000,
      500,
    );
    const promNamesNow = new Set(await p.api<string[]>('label/__name__/values'));
    for (const n of floeNames) expect(promNamesNow.has(n), n).toBe(true);

    // v1 metadata reaches Floe through its own requests and types later samples: HELP text is kept.
    await waitFor(
      'HELP text of a Prometheus counter in Floe',
      async () => {
        const r = await sql(`SELECT description FROM metrics WHERE metric_name = 'prometheus_http_requests_total' AND description <> '' LIMIT 1`);
        return r.length ? r : undefined;
      },
      60_000,
      500,
    );
    await p.stop();
    prom = undefined;
  }, 300_000);

  it('protocol 2.0: floats, native histograms, staleness, start timestamps, exemplars; a custom-bucket histogram is dropped, the rest stored', async () => {
    const T = BigInt(Date.now());
    const job = `rw2-${mode}`;
    const { symbols, ref, refs } = symbolTable();
    const counter = { __name__: 'rw_requests_total', job, instance: 'i-1', path: '/x' };
    const gauge = { __name__: 'rw_temperature', job };
    const hist = { __name__: 'rw_latency_seconds', job };
    const fhist = { __name__: 'rw_float_hist', job };
    const nhcb = { __name__: 'rw_nhcb_seconds', job };
    const exLabels = { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' };
    const init: MessageInitShape<typeof RwV2RequestSchema> = {
      symbols,
      timeseries: [
        {
          labelsRefs: refs(counter),
          metadata: { type: RwV2Metadata_MetricType.COUNTER, helpRef: ref('Requests served.'), unitRef: ref('requests') },
          createdTimestamp: T - 120_000n,
          samples: [
            { value: 1, timestamp: T, startTimestamp: T - 60_000n },
            { value: 2, timestamp: T + 1000n },
          ],
          exemplars: [{ labelsRefs: refs(exLabels), value: 0.25, timestamp: T + 1000n }],
        },
        {
          labelsRefs: refs(gauge),
          metadata: { type: RwV2Metadata_MetricType.GAUGE },
          samples: [
            { value: 21.5, timestamp: T },
            { value: STALE_PLACEHOLDER, timestamp: T + 1000n },
          ],
        },
        {
          labelsRefs: refs(hist),
          metadata: { type: RwV2Metadata_MetricType.HISTOGRAM },
          histograms: [
            {
              count: { case: 'countInt', value: 8n },
              sum: 0.75,
              schema: 1,
              zeroThreshold: 1e-6,
              zeroCount: { case: 'zeroCountInt', value: 1n },
              positiveSpans: [
                { offset: -2, length: 2 },
                { offset: 1, length: 1 },
              ],
              positiveDeltas: [2n, 1n, -2n],
              negativeSpans: [{ offset: 3, length: 1 }],
              negativeDeltas: [1n],
              resetHint: RwV2Histogram_ResetHint.NO,
              timestamp: T,
              startTimestamp: T - 5000n,
            },
          ],
        },
        {
          labelsRefs: refs(fhist),
          histograms: [{ count: { case: 'countFloat', value: 4 }, sum: 10, schema: 0, positiveSpans: [{ offset: 2, length: 2 }], positiveCounts: [1, 3], timestamp: T }],
        },
        {
          labelsRefs: refs(nhcb),
          histograms: [{ count: { case: 'countInt', value: 2n }, sum: 1, schema: -53, customValues: [0.1, 1], positiveSpans: [{ offset: 0, length: 2 }], positiveDeltas: [1n, 0n], timestamp: T }],
        },
      ],
    };
    const res = await write(compress(withStaleMarkers(toBinary(RwV2RequestSchema, create(RwV2RequestSchema, init)))), { 'content-type': V2_CT, 'x-prometheus-remote-write-version': '2.0.0' });
    expect(res.status).toBe(204);
    expect({
      samples: res.headers.get('x-prometheus-remote-write-samples-written'),
      histograms: res.headers.get('x-prometheus-remote-write-histograms-written'),
      exemplars: res.headers.get('x-prometheus-remote-write-exemplars-written'),
    }).toEqual({ samples: '4', histograms: '2', exemplars: '1' });

    const cols =
      'metric_name, metric_type, description, unit, temporality, is_monotonic, start_unix_nano, time_unix_nano, value, flags, count, sum, exp_scale, exp_zero_count, exp_zero_threshold, exp_positive_offset, exp_positive_bucket_counts, exp_negative_offset, exp_negative_bucket_counts, point_attr_str, resource_attr_str, scope_name, scope_attr_str, series_id';
    const rows = await waitFor(
      'the 2.0 rows',
      async () => {
        const r = await sql(`SELECT ${cols} FROM metrics WHERE service_name = ${quote(job)} ORDER BY metric_name, time_unix_nano`);
        return r.length === 6 ? r : undefined;
      },
      30_000,
      200,
    );
    const ms = (t: bigint) => t * 1_000_000n;
    const none = { count: null, sum: null, exp_scale: null, exp_zero_count: null, exp_zero_threshold: null, exp_positive_offset: null, exp_positive_bucket_counts: null, exp_negative_offset: null, exp_negative_bucket_counts: null };
    const labelsOf = (l: Record<string, string>) => Object.fromEntries(Object.entries(l).filter(([k]) => k !== '__name__'));
    const base = (l: Record<string, string>) => ({
      metric_name: l.__name__,
      description: '',
      unit: '',
      point_attr_str: labelsOf(l),
      resource_attr_str: l.instance ? { 'service.name': job, 'service.instance.id': l.instance } : { 'service.name': job },
      scope_name: REMOTE_WRITE_SCOPE,
      start_unix_nano: null,
      flags: 0n,
      ...none,
    });
    const stored = rows.map(({ series_id: _s, ...r }) => r);
    expect(stored).toEqual([
      {
        ...base(fhist),
        metric_type: 'exponential_histogram',
        temporality: 'cumulative',
        is_monotonic: null,
        time_unix_nano: ms(T),
        value: null,
        scope_attr_str: {},
        count: 4n,
        sum: 10,
        exp_scale: 0,
        exp_zero_count: 0n,
        exp_zero_threshold: 0,
        exp_positive_offset: 1,
        exp_positive_bucket_counts: [1n, 3n],
        exp_negative_offset: 0,
        exp_negative_bucket_counts: [],
      },
      {
        ...base(hist),
        metric_type: 'exponential_histogram',
        temporality: 'cumulative',
        is_monotonic: null,
        start_unix_nano: ms(T - 5000n),
        time_unix_nano: ms(T),
        value: null,
        scope_attr_str: { 'prometheus.type': 'histogram' },
        count: 8n,
        sum: 0.75,
        exp_scale: 1,
        exp_zero_count: 1n,
        exp_zero_threshold: 1e-6,
        // Prometheus indexes -2, -1, (gap) 1 → OTLP offset -3, counts 2, 3, 0, 1.
        exp_positive_offset: -3,
        exp_positive_bucket_counts: [2n, 3n, 0n, 1n],
        exp_negative_offset: 2,
        exp_negative_bucket_counts: [1n],
      },
      {
        ...base(counter),
        metric_type: 'sum',
        description: 'Requests served.',
        unit: 'requests',
        temporality: 'cumulative',
        is_monotonic: true,
        start_unix_nano: ms(T - 60_000n),
        time_unix_nano: ms(T),
        value: 1,
        scope_attr_str: { 'prometheus.type': 'counter' },
      },
      {
        ...base(counter),
        metric_type: 'sum',
        description: 'Requests served.',
        unit: 'requests',
        temporality: 'cumulative',
        is_monotonic: true,
        start_unix_nano: ms(T - 120_000n),
        time_unix_nano: ms(T + 1000n),
        value: 2,
        scope_attr_str: { 'prometheus.type': 'counter' },
      },
      { ...base(gauge), metric_type: 'gauge', temporality: null, is_monotonic: null, time_unix_nano: ms(T), value: 21.5, scope_attr_str: { 'prometheus.type': 'gauge' } },
      // The staleness marker: no recorded value.
      { ...base(gauge), metric_type: 'gauge', temporality: null, is_monotonic: null, time_unix_nano: ms(T + 1000n), value: Number.NaN, flags: 1n, scope_attr_str: { 'prometheus.type': 'gauge' } },
    ]);
    // The custom-bucket histogram was dropped, with a warning in the acceptor's log (cluster:
    // each service logs to a file; embedded Floe logs to this process's stdout).
    if (mode === 'cluster') {
      const warnings = readFileSync(join(floe.dataDir, 'acceptor.log'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('dropped native histograms') && l.includes('rw_nhcb_seconds'));
      expect(warnings).toHaveLength(1);
      expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 'warn', dropped: 1, first: expect.stringMatching(/^custom-bucket native histogram \(schema -53\)/) });
    }

    const exemplars = await waitFor(
      'the exemplar',
      async () => {
        const r = await sql(`SELECT metric_name, metric_type, series_id, time_unix_nano, value, trace_id, span_id, filtered_attr_str, point_attr_str FROM metric_exemplars WHERE service_name = ${quote(job)}`);
        return r.length === 1 ? r : undefined;
      },
      30_000,
      200,
    );
    expect(exemplars).toEqual([
      {
        metric_name: 'rw_requests_total',
        metric_type: 'sum',
        series_id: rows[2]!.series_id,
        time_unix_nano: ms(T + 1000n),
        value: 0.25,
        trace_id: exLabels.trace_id,
        span_id: exLabels.span_id,
        filtered_attr_str: exLabels,
        point_attr_str: labelsOf(counter),
      },
    ]);
  });

  it('protocol 1.0 by hand: metadata types the counter; a series without __name__ is 400 while the rest of the request lands', async () => {
    const T = BigInt(Date.now());
    const job = `rw1-${mode}`;
    const body = toBinary(
      PromWriteRequestSchema,
      create(PromWriteRequestSchema, {
        metadata: [{ type: PromMetricMetadata_MetricType.COUNTER, metricFamilyName: 'rw1_jobs', help: 'Jobs.' }],
        timeseries: [
          { labels: [{ name: '__name__', value: 'rw1_jobs' }, { name: 'job', value: job }], samples: [{ value: 7, timestamp: T }] },
          { labels: [{ name: 'job', value: job }], samples: [{ value: 1, timestamp: T }] },
        ],
      }),
    );
    const res = await write(compress(body));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      status: 'error',
      errorType: 'bad_data',
      error: `1 samples, histograms or exemplars were refused (the rest was stored); first: series has no __name__ label ({job="${job}"})`,
    });
    const rows = await waitFor(
      'the 1.0 row',
      async () => {
        const r = await sql(`SELECT metric_name, metric_type, is_monotonic, description, value FROM metrics WHERE service_name = ${quote(job)}`);
        return r.length === 1 ? r : undefined;
      },
      30_000,
      200,
    );
    expect(rows).toEqual([{ metric_name: 'rw1_jobs', metric_type: 'sum', is_monotonic: true, description: 'Jobs.', value: 7 }]);
  });

  describe('bad input', () => {
    const validV1 = () =>
      toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries: [{ labels: [{ name: '__name__', value: 'x' }], samples: [{ value: 1, timestamp: BigInt(Date.now()) }] }] }));
    // A snappy header promising 100 MiB: refused before anything is allocated or decoded.
    const bomb = Buffer.from([0x80, 0x80, 0x80, 0x32, 0x00]);

    it.each([
      { name: 'a body that is not snappy', body: () => Buffer.from(validV1()), headers: {}, status: 400, kind: 'bad_data', message: /not snappy block-compressed/ },
      { name: 'garbage protobuf (1.0)', body: () => compress(Buffer.from([0xff, 0xff, 0xff, 0x0f])), headers: {}, status: 400, kind: 'bad_data', message: /not a valid prometheus.WriteRequest protobuf/ },
      { name: 'garbage protobuf (2.0)', body: () => compress(Buffer.from([0xff, 0xff, 0xff, 0x0f])), headers: { 'content-type': V2_CT }, status: 400, kind: 'bad_data', message: /io.prometheus.write.v2.Request/ },
      { name: 'a 2.0 symbol reference out of range', body: () => compress(toBinary(RwV2RequestSchema, create(RwV2RequestSchema, { symbols: [''], timeseries: [{ labelsRefs: [1, 2] }] }))), headers: { 'content-type': V2_CT }, status: 400, kind: 'bad_data', message: /references symbol/ },
      { name: 'an empty body', body: () => Buffer.alloc(0), headers: {}, status: 400, kind: 'bad_data', message: /empty body/ },
      { name: 'a snappy header beyond the inflate cap', body: () => bomb, headers: {}, status: 413, kind: 'too_large', message: /inflates beyond/ },
      { name: 'the wrong content type', body: () => compress(validV1()), headers: { 'content-type': 'application/json' }, status: 415, kind: 'unsupported_media_type', message: /Content-Type/ },
      { name: 'an unknown proto', body: () => compress(validV1()), headers: { 'content-type': 'application/x-protobuf;proto=io.prometheus.write.v9.Request' }, status: 415, kind: 'unsupported_media_type', message: /unsupported remote write proto/ },
      { name: 'a gzip content encoding', body: () => compress(validV1()), headers: { 'content-encoding': 'gzip' }, status: 415, kind: 'unsupported_media_type', message: /Content-Encoding/ },
      { name: 'a missing key', body: () => compress(validV1()), headers: { authorization: '' }, status: 401, kind: 'unauthorized', message: /Authorization/ },
      { name: 'an invalid key', body: () => compress(validV1()), headers: { authorization: 'Bearer floe_0000000000000000_nope' }, status: 401, kind: 'unauthorized', message: /invalid or revoked/ },
      { name: 'a missing tenant', body: () => compress(validV1()), headers: { 'x-tenant-id': '' }, status: 401, kind: 'unauthorized', message: /X-Tenant-ID/ },
    ])('$name → $status $kind', async ({ body, headers, status, kind, message }) => {
      const res = await write(body(), headers as Record<string, string>);
      expect(res.status).toBe(status);
      const json = (await res.json()) as { status: string; errorType: string; error: string };
      expect(json).toMatchObject({ status: 'error', errorType: kind });
      expect(json.error).toMatch(message);
    });

    it('a key of another tenant is 403', async () => {
      const other = (await floe.bootstrap(`rw-other-${mode}`)).api_key;
      const res = await write(compress(validV1()), { authorization: `Bearer ${other}` });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { errorType: string }).errorType).toBe('forbidden');
    });

    it('a 2.0 conversion error is 400 with the written counts of what was stored', async () => {
      const { symbols, refs } = symbolTable();
      const body = create(RwV2RequestSchema, {
        symbols,
        timeseries: [
          { labelsRefs: refs({ __name__: 'rw_ok', job: `rw-conv-${mode}` }), samples: [{ value: 1, timestamp: BigInt(Date.now()) }] },
          { labelsRefs: refs({ __name__: 'rw_bad', job: `rw-conv-${mode}` }), samples: [{ value: 1, timestamp: -1n }] },
        ],
      });
      const res = await write(compress(toBinary(RwV2RequestSchema, body)), { 'content-type': V2_CT });
      expect(res.status).toBe(400);
      expect(res.headers.get('x-prometheus-remote-write-samples-written')).toBe('1');
      expect(((await res.json()) as { error: string }).error).toMatch(/no timestamp after the unix epoch \(rw_bad\{job="rw-conv-/);
      await waitFor('the convertible sample', async () => ((await sql(`SELECT 1 FROM metrics WHERE metric_name = 'rw_ok' AND service_name = ${quote(`rw-conv-${mode}`)}`)).length === 1 ? true : undefined), 30_000, 200);
    });
  });
});

describe('remote write with the WAL unavailable', () => {
  let floe: FloeUnderTest;
  let key: string;
  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    key = (await floe.bootstrap('acme')).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it('is 503 unavailable (retryable), and 204 again once the store is back', async () => {
    // A new sample each time: a byte-identical resend of a durable request would be acknowledged
    // without being stored (resend dedup), whatever the store's state.
    let n = 0;
    const body = () =>
      compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries: [{ labels: [{ name: '__name__', value: 'wal_test' }], samples: [{ value: ++n, timestamp: BigInt(Date.now() + n) }] }] })));
    const post = () =>
      fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body: body(), headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' } });
    expect((await post()).status).toBe(204);
    // The object store's root (WAL segments live under it) turns into a file: every write fails.
    const root = join(floe.dataDir, 'data');
    expect(existsSync(root)).toBe(true);
    renameSync(root, `${root}.away`);
    writeFileSync(root, 'not a directory');
    try {
      const res = await post();
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ status: 'error', errorType: 'unavailable', error: expect.stringMatching(/write-ahead log unavailable/) });
    } finally {
      rmSync(root, { force: true });
      renameSync(`${root}.away`, root);
    }
    expect((await post()).status).toBe(204);
  });
});

const labelKey = (l: Record<string, string>) => JSON.stringify(Object.entries(l).sort(([a], [b]) => (a < b ? -1 : 1)));
