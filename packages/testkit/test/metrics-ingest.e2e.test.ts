import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { ValueType, type Attributes, type HrTime } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType, type ExponentialHistogram, type Histogram, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AggregationTemporality as OtlpTemporality,
  ExportMetricsServiceRequestSchema,
  ExportMetricsServiceResponseSchema,
  create,
  fromBinary,
  toBinary,
  type MessageInitShape,
} from '@floe/proto';
import { flightDoGet } from '@floe/flight';
import {
  grpcMetricExporter,
  jsonMetricExporter,
  protoMetricExporter,
  sendSampleMetrics,
  plain,
  startFloe,
  waitFor,
  type FloeMode,
  type FloeUnderTest,
  type SentMetrics,
} from '../src/index.ts';

/**
 * OTLP metrics end to end, in both modes: the OpenTelemetry JS SDK's three metric exporters
 * (HTTP JSON with gzip, HTTP protobuf with delta temporality, gRPC) record every instrument
 * kind → acceptor → WAL → writer → `<tenant>.<dataset>.metrics` → SQL over Flight, compared
 * value by value with what the SDK exported. The SDK makes neither summaries nor exemplars, so a
 * hand-built OTLP request carries those (and scope attributes, a staleness point, an invalid
 * point) to `metrics` and `metric_exemplars`. Then bad input on /v1/metrics and
 * MetricsService/Export.
 */

type Row = Record<string, unknown>;
type Typed = { str: Record<string, string>; int: Record<string, bigint>; double: Record<string, number>; bool: Record<string, boolean> };

const ns = (t: HrTime) => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);

/** SDK attributes as the typed maps store them (OTLP/JS: whole numbers are ints, arrays JSON text). */
function typed(attrs: Attributes): Typed {
  const out: Typed = { str: {}, int: {}, double: {}, bool: {} };
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'string') out.str[k] = v;
    else if (typeof v === 'number') {
      if (Number.isInteger(v)) out.int[k] = BigInt(v);
      else out.double[k] = v;
    } else if (typeof v === 'boolean') out.bool[k] = v;
    else if (Array.isArray(v)) out.str[k] = JSON.stringify({ arrayValue: { values: v.map((x) => ({ stringValue: String(x) })) } });
  }
  return out;
}

const KIND_COLUMNS = {
  value: null,
  value_int: null,
  count: null,
  sum: null,
  min: null,
  max: null,
  explicit_bounds: null,
  bucket_counts: null,
  exp_scale: null,
  exp_zero_count: null,
  exp_zero_threshold: null,
  exp_positive_offset: null,
  exp_positive_bucket_counts: null,
  exp_negative_offset: null,
  exp_negative_bucket_counts: null,
  quantiles: null,
};
const COLUMNS = [
  'metric_name',
  'metric_type',
  'description',
  'unit',
  'temporality',
  'is_monotonic',
  'service_name',
  'scope_name',
  'scope_version',
  'start_unix_nano',
  'time_unix_nano',
  ...Object.keys(KIND_COLUMNS),
  'flags',
  'point_attr_str',
  'point_attr_int',
  'point_attr_double',
  'point_attr_bool',
  'resource_attr_str',
  'resource_attr_int',
  'resource_attr_double',
  'resource_attr_bool',
  'scope_attr_str',
  'scope_attr_int',
  'scope_attr_double',
  'scope_attr_bool',
];

const maps = (prefix: string, t: Typed) => ({ [`${prefix}_attr_str`]: t.str, [`${prefix}_attr_int`]: t.int, [`${prefix}_attr_double`]: t.double, [`${prefix}_attr_bool`]: t.bool });
const none: Typed = { str: {}, int: {}, double: {}, bool: {} };

/** The row each exported data point should be, in the columns above. */
function expectedRows(sent: SentMetrics): Row[] {
  const rows: Row[] = [];
  for (const rm of sent.exported as ResourceMetrics[]) {
    const resource = typed(rm.resource.attributes as Attributes);
    for (const sm of rm.scopeMetrics) {
      for (const m of sm.metrics as MetricData[]) {
        const temporality = m.aggregationTemporality === AggregationTemporality.DELTA ? 'delta' : 'cumulative';
        const isInt = m.descriptor.valueType === ValueType.INT;
        for (const p of m.dataPoints) {
          const row: Row = {
            metric_name: m.descriptor.name,
            description: m.descriptor.description,
            unit: m.descriptor.unit,
            temporality: null,
            is_monotonic: null,
            service_name: sent.service,
            scope_name: sm.scope.name,
            scope_version: sm.scope.version ?? '',
            start_unix_nano: ns(p.startTime),
            time_unix_nano: ns(p.endTime),
            ...KIND_COLUMNS,
            flags: 0n,
            ...maps('point', typed(p.attributes)),
            ...maps('resource', resource),
            ...maps('scope', none),
          };
          switch (m.dataPointType) {
            case DataPointType.GAUGE:
            case DataPointType.SUM: {
              const v = p.value as number;
              Object.assign(row, { metric_type: m.dataPointType === DataPointType.SUM ? 'sum' : 'gauge', value: v, value_int: isInt ? BigInt(v) : null });
              if (m.dataPointType === DataPointType.SUM) Object.assign(row, { temporality, is_monotonic: m.isMonotonic });
              break;
            }
            case DataPointType.HISTOGRAM: {
              const h = p.value as Histogram;
              Object.assign(row, {
                metric_type: 'histogram',
                temporality,
                count: BigInt(h.count),
                sum: h.sum ?? null,
                min: h.min ?? null,
                max: h.max ?? null,
                explicit_bounds: h.buckets.boundaries,
                bucket_counts: h.buckets.counts.map(BigInt),
              });
              break;
            }
            case DataPointType.EXPONENTIAL_HISTOGRAM: {
              const h = p.value as ExponentialHistogram;
              Object.assign(row, {
                metric_type: 'exponential_histogram',
                temporality,
                count: BigInt(h.count),
                sum: h.sum ?? null,
                min: h.min ?? null,
                max: h.max ?? null,
                exp_scale: h.scale,
                exp_zero_count: BigInt(h.zeroCount),
                exp_zero_threshold: 0,
                exp_positive_offset: h.positive.offset,
                exp_positive_bucket_counts: h.positive.bucketCounts.map(BigInt),
                exp_negative_offset: h.negative.offset,
                exp_negative_bucket_counts: h.negative.bucketCounts.map(BigInt),
              });
              break;
            }
          }
          rows.push(row);
        }
      }
    }
  }
  return rows;
}

const sortKey = (r: Row) => JSON.stringify([r.metric_name, String(r.time_unix_nano), r.point_attr_str, String(r.value), String(r.count)], (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
const sorted = (rows: Row[]) => [...rows].sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : sortKey(a) > sortKey(b) ? 1 : 0));

describe.each<FloeMode>(['embedded', 'cluster'])('metrics ingest end to end (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'acme';

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const meta = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
  const sql = async (text: string) => {
    const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: meta(), deadlineMs: 20_000 });
    return table.toArray().map((r) => plain(r) as Row);
  };
  const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;
  const waitForRows = (table: string, service: string, count: number, columns: string) =>
    waitFor(
      `${count} ${table} rows of ${service}`,
      async () => {
        const rows = await sql(`SELECT ${columns} FROM ${table} WHERE service_name = ${quote(service)} ORDER BY metric_name, time_unix_nano`);
        return rows.length === count ? rows : undefined;
      },
      30_000,
      200,
    );

  it.each([
    ['otlp-http-json', () => jsonMetricExporter(floe.otlpHttpUrl, { apiKey: key, tenant })],
    ['otlp-proto', () => protoMetricExporter(floe.otlpHttpUrl, { apiKey: key, tenant }, 'delta')],
    ['otlp-grpc', () => grpcMetricExporter(floe.otlpGrpcAddress, { apiKey: key, tenant })],
  ])('every instrument kind exported with %s is stored value by value', async (name, makeExporter) => {
    const sent = await sendSampleMetrics(makeExporter(), `metrics-${name}`);
    const want = expectedRows(sent);
    // Every kind the SDK makes is in the sample.
    expect(new Set(want.map((r) => r.metric_type))).toEqual(new Set(['sum', 'gauge', 'histogram', 'exponential_histogram']));
    expect(want.some((r) => (r.exp_negative_bucket_counts as bigint[] | null)?.length)).toBe(true);
    const rows = await waitForRows('metrics', sent.service, want.length, `${COLUMNS.map((c) => `"${c}"`).join(', ')}, series_id, epoch_us("timestamp") AS timestamp_us`);
    const got = sorted(rows);
    const expected = sorted(want);
    got.forEach((row, i) => {
      const { series_id: _s, timestamp_us, ...stored } = row;
      expect(stored).toEqual(expected[i]);
      expect(timestamp_us).toBe((expected[i]!.time_unix_nano as bigint) / 1000n);
    });
    // One series_id per series (metric, attributes), distinct across series.
    const ids = new Map<string, Set<string>>();
    for (const r of rows) {
      const k = JSON.stringify([r.metric_name, r.point_attr_str, r.point_attr_int, r.point_attr_double, r.point_attr_bool], (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
      ids.set(k, (ids.get(k) ?? new Set()).add(r.series_id as string));
    }
    for (const set of ids.values()) expect(set.size).toBe(1);
    expect(new Set([...ids.values()].map((s) => [...s][0])).size).toBe(ids.size);
    // The tenant-pinned name reads the same rows.
    const pinned = await sql(`SELECT count(*) AS n FROM sql_metrics WHERE service_name = ${quote(sent.service)}`);
    expect(pinned[0]!.n).toBe(BigInt(want.length));
  });

  describe('a hand-built request: summary, exemplars, scope attributes, staleness, partial success', () => {
    const T = BigInt(Date.now()) * 1_000_000n;
    const TRACE = Buffer.from('4bf92f3577b34da6a3ce929d0e0e4736', 'hex');
    const SPAN = Buffer.from('00f067aa0ba902b7', 'hex');
    const s = (value: string) => ({ value: { case: 'stringValue' as const, value } });
    const i = (value: bigint) => ({ value: { case: 'intValue' as const, value } });
    const d = (value: number) => ({ value: { case: 'doubleValue' as const, value } });
    const b = (value: boolean) => ({ value: { case: 'boolValue' as const, value } });
    const every = (p: string) => [
      { key: `${p}.s`, value: s('text') },
      { key: `${p}.i`, value: i(-7n) },
      { key: `${p}.d`, value: d(2.5) },
      { key: `${p}.b`, value: b(false) },
    ];
    const everyMaps = (p: string): Typed => ({ str: { [`${p}.s`]: 'text' }, int: { [`${p}.i`]: -7n }, double: { [`${p}.d`]: 2.5 }, bool: { [`${p}.b`]: false } });
    const init: MessageInitShape<typeof ExportMetricsServiceRequestSchema> = {
      resourceMetrics: [
        {
          resource: { attributes: [{ key: 'service.name', value: s('metrics-handmade') }, ...every('res')] },
          scopeMetrics: [
            {
              scope: { name: 'hand', version: '9', attributes: every('scope') },
              metrics: [
                {
                  name: 'rpc.duration',
                  description: 'server time',
                  unit: 's',
                  data: {
                    case: 'summary',
                    value: {
                      dataPoints: [
                        {
                          timeUnixNano: T,
                          startTimeUnixNano: T - 10_000_000_000n,
                          count: 5n,
                          sum: 2.5,
                          quantileValues: [
                            { quantile: 0.5, value: 0.4 },
                            { quantile: 0.99, value: Number.POSITIVE_INFINITY },
                          ],
                          attributes: every('pt'),
                        },
                      ],
                    },
                  },
                },
                {
                  name: 'queue.size',
                  data: {
                    case: 'gauge',
                    value: {
                      dataPoints: [
                        {
                          timeUnixNano: T,
                          value: { case: 'asInt', value: 3n },
                          attributes: [{ key: 'q', value: s('a') }],
                          exemplars: [
                            { timeUnixNano: T - 5n, value: { case: 'asDouble', value: 2.75 }, traceId: TRACE, spanId: SPAN, filteredAttributes: every('ex') },
                            { timeUnixNano: T - 4n, value: { case: 'asInt', value: 9_007_199_254_740_993n } },
                          ],
                        },
                        // No time: rejected as partial success, its exemplar with it.
                        { timeUnixNano: 0n, value: { case: 'asInt', value: 1n }, exemplars: [{ timeUnixNano: T, value: { case: 'asInt', value: 1n } }] },
                      ],
                    },
                  },
                },
                {
                  name: 'jobs.done',
                  data: { case: 'sum', value: { aggregationTemporality: OtlpTemporality.CUMULATIVE, isMonotonic: true, dataPoints: [{ timeUnixNano: T, startTimeUnixNano: T - 1n, flags: 1 }] } },
                },
                {
                  name: 'signed.values',
                  data: {
                    case: 'exponentialHistogram',
                    value: {
                      aggregationTemporality: OtlpTemporality.DELTA,
                      dataPoints: [
                        {
                          timeUnixNano: T,
                          count: 6n,
                          sum: -1.5,
                          scale: -1,
                          zeroCount: 1n,
                          zeroThreshold: 1e-9,
                          positive: { offset: 2, bucketCounts: [1n, 2n] },
                          negative: { offset: -1, bucketCounts: [2n] },
                          exemplars: [{ timeUnixNano: T, value: { case: 'asDouble', value: -0.5 }, traceId: TRACE }],
                        },
                      ],
                    },
                  },
                },
              ],
            },
          ],
        },
      ],
    };

    it('stores every point and exemplar value by value; the invalid point is OTLP partial success', async () => {
      const res = await fetch(`${floe.otlpHttpUrl}/v1/metrics`, {
        method: 'POST',
        body: toBinary(ExportMetricsServiceRequestSchema, create(ExportMetricsServiceRequestSchema, init)),
        headers: { ...meta(), 'content-type': 'application/x-protobuf' },
      });
      expect(res.status).toBe(200);
      const resp = fromBinary(ExportMetricsServiceResponseSchema, new Uint8Array(await res.arrayBuffer()));
      expect(resp.partialSuccess).toMatchObject({ rejectedDataPoints: 1n, errorMessage: 'data point has no time_unix_nano' });

      const common = {
        description: '',
        unit: '',
        temporality: null,
        is_monotonic: null,
        service_name: 'metrics-handmade',
        scope_name: 'hand',
        scope_version: '9',
        start_unix_nano: null,
        time_unix_nano: T,
        ...KIND_COLUMNS,
        flags: 0n,
        ...maps('point', none),
        ...maps('resource', { ...everyMaps('res'), str: { 'service.name': 'metrics-handmade', 'res.s': 'text' } }),
        ...maps('scope', everyMaps('scope')),
      };
      const rows = await waitForRows('metrics', 'metrics-handmade', 4, COLUMNS.map((c) => `"${c}"`).join(', '));
      expect(rows).toEqual([
        { ...common, metric_name: 'jobs.done', metric_type: 'sum', temporality: 'cumulative', is_monotonic: true, start_unix_nano: T - 1n, flags: 1n },
        { ...common, metric_name: 'queue.size', metric_type: 'gauge', value: 3, value_int: 3n, ...maps('point', { ...none, str: { q: 'a' } }) },
        {
          ...common,
          metric_name: 'rpc.duration',
          metric_type: 'summary',
          description: 'server time',
          unit: 's',
          start_unix_nano: T - 10_000_000_000n,
          count: 5n,
          sum: 2.5,
          quantiles: [
            { quantile: 0.5, value: 0.4 },
            { quantile: 0.99, value: Number.POSITIVE_INFINITY },
          ],
          ...maps('point', everyMaps('pt')),
        },
        {
          ...common,
          metric_name: 'signed.values',
          metric_type: 'exponential_histogram',
          temporality: 'delta',
          count: 6n,
          sum: -1.5,
          exp_scale: -1,
          exp_zero_count: 1n,
          exp_zero_threshold: 1e-9,
          exp_positive_offset: 2,
          exp_positive_bucket_counts: [1n, 2n],
          exp_negative_offset: -1,
          exp_negative_bucket_counts: [2n],
        },
      ]);

      const exCols =
        'metric_name, metric_type, service_name, time_unix_nano, value, value_int, trace_id, span_id, filtered_attr_str, filtered_attr_int, filtered_attr_double, filtered_attr_bool, point_attr_str, resource_attr_str, resource_attr_int, series_id';
      const exemplars = await waitForRows('metric_exemplars', 'metrics-handmade', 3, exCols);
      const seriesOf = async (metric: string) => (await sql(`SELECT series_id FROM metrics WHERE metric_name = ${quote(metric)} AND service_name = 'metrics-handmade'`))[0]!.series_id;
      const exCommon = { service_name: 'metrics-handmade', resource_attr_str: { 'service.name': 'metrics-handmade', 'res.s': 'text' }, resource_attr_int: { 'res.i': -7n } };
      expect(exemplars.sort((a, b) => (a.time_unix_nano as bigint) < (b.time_unix_nano as bigint) ? -1 : 1)).toEqual([
        {
          ...exCommon,
          metric_name: 'queue.size',
          metric_type: 'gauge',
          time_unix_nano: T - 5n,
          value: 2.75,
          value_int: null,
          trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
          span_id: '00f067aa0ba902b7',
          ...maps('filtered', everyMaps('ex')),
          point_attr_str: { q: 'a' },
          series_id: await seriesOf('queue.size'),
        },
        {
          ...exCommon,
          metric_name: 'queue.size',
          metric_type: 'gauge',
          time_unix_nano: T - 4n,
          value: 9_007_199_254_740_992,
          value_int: 9_007_199_254_740_993n,
          trace_id: null,
          span_id: null,
          ...maps('filtered', none),
          point_attr_str: { q: 'a' },
          series_id: await seriesOf('queue.size'),
        },
        {
          ...exCommon,
          metric_name: 'signed.values',
          metric_type: 'exponential_histogram',
          time_unix_nano: T,
          value: -0.5,
          value_int: null,
          trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
          span_id: null,
          ...maps('filtered', none),
          point_attr_str: {},
          series_id: await seriesOf('signed.values'),
        },
      ]);
    });

    it('the same request as gzip OTLP/JSON answers partial success in JSON', async () => {
      const json = JSON.stringify({
        resourceMetrics: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: 'metrics-json' } }] },
            scopeMetrics: [
              {
                metrics: [
                  { name: 'g', gauge: { dataPoints: [{ timeUnixNano: T.toString(), asDouble: 1.25 }, { timeUnixNano: T.toString(), asDouble: 2, exemplars: [{ traceId: 'abcd' }] }] } },
                ],
              },
            ],
          },
        ],
      });
      const res = await fetch(`${floe.otlpHttpUrl}/v1/metrics`, {
        method: 'POST',
        body: gzipSync(json),
        headers: { ...meta(), 'content-type': 'application/json', 'content-encoding': 'gzip' },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ partialSuccess: { rejectedDataPoints: '1', errorMessage: 'data point has an exemplar with an invalid trace_id (must be empty or 16 bytes)' } });
      expect(await waitForRows('metrics', 'metrics-json', 1, 'metric_name, value')).toEqual([{ metric_name: 'g', value: 1.25 }]);
    });
  });

  describe('bad input', () => {
    const post = (body: Uint8Array | string, headers: Record<string, string>) =>
      fetch(`${floe.otlpHttpUrl}/v1/metrics`, { method: 'POST', body, headers: { ...meta(), 'content-type': 'application/x-protobuf', ...headers } });

    it.each([
      { name: 'garbage protobuf', body: Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x99, 0x01]), headers: {} as Record<string, string>, status: 400, kind: 'bad_data', message: /not a valid .*ExportMetricsServiceRequest protobuf/ },
      { name: 'invalid JSON', body: '{"resourceMetrics": [', headers: { 'content-type': 'application/json' } as Record<string, string>, status: 400, kind: 'bad_data', message: /not a valid OTLP JSON/ },
      { name: 'broken gzip', body: Buffer.from('not gzip'), headers: { 'content-encoding': 'gzip' } as Record<string, string>, status: 400, kind: 'bad_data', message: /not valid gzip/ },
      { name: 'wrong content type', body: 'hello', headers: { 'content-type': 'text/plain' } as Record<string, string>, status: 415, kind: 'unsupported_media_type', message: /Content-Type/ },
      { name: 'missing key', body: Buffer.alloc(0), headers: { authorization: '' } as Record<string, string>, status: 401, kind: 'unauthorized', message: /Authorization/ },
      { name: 'invalid key', body: Buffer.alloc(0), headers: { authorization: 'Bearer floe_0000000000000000_nope' } as Record<string, string>, status: 401, kind: 'unauthorized', message: /invalid or revoked/ },
    ])('$name → $status $kind', async ({ body, headers, status, kind, message }) => {
      const res = await post(body, headers);
      expect(res.status).toBe(status);
      const json = (await res.json()) as { status: string; errorType: string; error: string };
      expect(json).toMatchObject({ status: 'error', errorType: kind });
      expect(json.error).toMatch(message);
    });

    it('gRPC MetricsService/Export: garbage INVALID_ARGUMENT, no key UNAUTHENTICATED, partial success', async () => {
      const client = new grpc.Client(floe.otlpGrpcAddress, grpc.credentials.createInsecure());
      const call = (body: Buffer, md: Record<string, string>) =>
        new Promise<{ code: number; details: string; response?: Buffer }>((resolve) => {
          const m = new grpc.Metadata();
          for (const [k, v] of Object.entries(md)) m.set(k, v);
          client.makeUnaryRequest('/opentelemetry.proto.collector.metrics.v1.MetricsService/Export', (x: Buffer) => x, (x: Buffer) => x, body, m, (err, response) =>
            resolve(err ? { code: err.code, details: err.details } : { code: 0, details: '', response }),
          );
        });
      const valid = Buffer.from(
        toBinary(
          ExportMetricsServiceRequestSchema,
          create(ExportMetricsServiceRequestSchema, {
            resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'x', data: { case: 'gauge', value: { dataPoints: [{ timeUnixNano: BigInt(Date.now()) * 1_000_000n }, { timeUnixNano: 1n << 63n }] } } }] }] }],
          }),
        ),
      );
      const garbage = await call(Buffer.from([0xff, 0xff, 0xff]), meta());
      expect(garbage.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(garbage.details).toMatch(/ExportMetricsServiceRequest/);
      expect((await call(valid, { 'x-tenant-id': tenant })).code).toBe(grpc.status.UNAUTHENTICATED);
      const ok = await call(valid, meta());
      expect(ok.code).toBe(0);
      expect(fromBinary(ExportMetricsServiceResponseSchema, ok.response!).partialSuccess).toMatchObject({
        rejectedDataPoints: 1n,
        errorMessage: 'data point has a time beyond the int64 range of unix nanoseconds',
      });
      client.close();
    });
  });
});
