import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AggregationTemporality, ExportMetricsServiceRequestSchema, create, type MessageInitShape } from '@floe/proto';
import { decodeMessage } from './decode.ts';
import { AcceptedTimes } from './accepted-times.ts';
import { metricsToRows } from './metrics-to-rows.ts';
import { batchRows } from './rows.ts';

type Init = MessageInitShape<typeof ExportMetricsServiceRequestSchema>;
type MetricInit = NonNullable<NonNullable<NonNullable<Init['resourceMetrics']>[number]['scopeMetrics']>[number]['metrics']>[number];

const HOUR = 3_600_000_000_000n;
const T = 490_000n * HOUR + 1_234_567_891n; // inside hour 490000
const START = T - 60_000_000_000n;

const str = (value: string) => ({ value: { case: 'stringValue' as const, value } });
const int = (value: bigint) => ({ value: { case: 'intValue' as const, value } });
const dbl = (value: number) => ({ value: { case: 'doubleValue' as const, value } });
const bool = (value: boolean) => ({ value: { case: 'boolValue' as const, value } });
const bytes = (value: Uint8Array) => ({ value: { case: 'bytesValue' as const, value } });
const arr = (...values: object[]) => ({ value: { case: 'arrayValue' as const, value: { values } } });
const kv = (entries: Record<string, object>) => ({ value: { case: 'kvlistValue' as const, value: { values: Object.entries(entries).map(([key, value]) => ({ key, value })) } } });
const attr = (key: string, value: object) => ({ key, value });

/** Every attribute value type, as the typed maps split them. */
const everyType = (prefix: string) => [
  attr(`${prefix}.s`, str('text')),
  attr(`${prefix}.i`, int(42n)),
  attr(`${prefix}.big`, int(9_007_199_254_740_993n)),
  attr(`${prefix}.d`, dbl(0.25)),
  attr(`${prefix}.inf`, dbl(Number.POSITIVE_INFINITY)),
  attr(`${prefix}.b`, bool(true)),
  attr(`${prefix}.arr`, arr(str('a'), int(1n))),
  attr(`${prefix}.kv`, kv({ k: str('v') })),
  attr(`${prefix}.bytes`, bytes(Uint8Array.of(1, 2, 3))),
];

const everyTypeMaps = (prefix: string) => ({
  str: {
    [`${prefix}.s`]: 'text',
    [`${prefix}.arr`]: '{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"1"}]}}',
    [`${prefix}.kv`]: '{"kvlistValue":{"values":[{"key":"k","value":{"stringValue":"v"}}]}}',
    [`${prefix}.bytes`]: 'AQID',
  },
  int: { [`${prefix}.i`]: 42, [`${prefix}.big`]: '9007199254740993' },
  double: { [`${prefix}.d`]: 0.25, [`${prefix}.inf`]: 'Infinity' },
  bool: { [`${prefix}.b`]: true },
});

const TRACE = Uint8Array.from({ length: 16 }, (_, i) => i + 1);
const SPAN = Uint8Array.from({ length: 8 }, (_, i) => 0xa0 + i);

function request(metrics: MetricInit[], opts: { resource?: boolean; scope?: string } = {}): Init {
  return {
    resourceMetrics: [
      {
        resource: opts.resource === false ? undefined : { attributes: [attr('service.name', str('shop')), ...everyType('res')] },
        scopeMetrics: [{ scope: { name: opts.scope ?? 'floe-test', version: '1.2.3', attributes: everyType('scope') }, metrics }],
      },
    ],
  };
}

type Row = Record<string, unknown>;
const convert = (init: Init) => {
  const out = metricsToRows(create(ExportMetricsServiceRequestSchema, init));
  const flat = (c: typeof out.points) => [...c.byHour.values()].flatMap((b) => batchRows(b).map((r): Row => ({ hour: b.hour, ...(r as Row) })));
  return { out, rows: flat(out.points), exemplars: flat(out.exemplars) };
};

/** The columns every row of the request above shares. */
const shared = (metric: string, type: string) => {
  const res = everyTypeMaps('res');
  const scope = everyTypeMaps('scope');
  return {
    metric_name: metric,
    metric_type: type,
    service_name: 'shop',
    scope_name: 'floe-test',
    scope_version: '1.2.3',
    resource_attr_str: { 'service.name': 'shop', ...res.str },
    resource_attr_int: res.int,
    resource_attr_double: res.double,
    resource_attr_bool: res.bool,
    scope_attr_str: scope.str,
    scope_attr_int: scope.int,
    scope_attr_double: scope.double,
    scope_attr_bool: scope.bool,
  };
};
const noPointAttrs = { point_attr_str: {}, point_attr_int: {}, point_attr_double: {}, point_attr_bool: {} };

describe('metricsToRows', () => {
  it('gauge: double and integer points (exact beyond 2^53), description, unit, every attribute type at every level', () => {
    const { out, rows } = convert(
      request([
        {
          name: 'queue.size',
          description: 'items waiting',
          unit: '{item}',
          data: {
            case: 'gauge',
            value: {
              dataPoints: [
                { timeUnixNano: T, startTimeUnixNano: START, value: { case: 'asDouble', value: 1.5 }, attributes: everyType('pt') },
                { timeUnixNano: T + 1n, value: { case: 'asInt', value: 9_007_199_254_740_993n } },
                { timeUnixNano: T + 2n, value: { case: 'asDouble', value: Number.NaN } },
              ],
            },
          },
        },
      ]),
    );
    expect(out.points).toMatchObject({ accepted: 3, rejected: 0, rejectReason: undefined });
    const pt = everyTypeMaps('pt');
    expect(rows).toEqual([
      {
        hour: 490_000,
        ...shared('queue.size', 'gauge'),
        description: 'items waiting',
        unit: '{item}',
        temporality: null,
        is_monotonic: null,
        series_id: rows[0]!.series_id,
        start_unix_nano: START.toString(),
        time_unix_nano: T.toString(),
        value: 1.5,
        value_int: null,
        flags: 0,
        point_attr_str: pt.str,
        point_attr_int: pt.int,
        point_attr_double: pt.double,
        point_attr_bool: pt.bool,
      },
      {
        hour: 490_000,
        ...shared('queue.size', 'gauge'),
        description: 'items waiting',
        unit: '{item}',
        temporality: null,
        is_monotonic: null,
        series_id: rows[1]!.series_id,
        start_unix_nano: null,
        time_unix_nano: (T + 1n).toString(),
        value: 9_007_199_254_740_992,
        value_int: '9007199254740993',
        flags: 0,
        ...noPointAttrs,
      },
      expect.objectContaining({ value: 'NaN', value_int: null, time_unix_nano: (T + 2n).toString() }),
    ]);
    expect(rows[0]!.series_id).toMatch(/^[0-9a-f]{16}$/);
    // Same metric and attributes → same series; other attributes → another.
    expect(rows[1]!.series_id).toBe(rows[2]!.series_id);
    expect(rows[0]!.series_id).not.toBe(rows[1]!.series_id);
  });

  it.each([
    ['cumulative monotonic (a counter)', AggregationTemporality.CUMULATIVE, true, 'cumulative'],
    ['delta non-monotonic', AggregationTemporality.DELTA, false, 'delta'],
    ['unspecified temporality', AggregationTemporality.UNSPECIFIED, false, 'unspecified'],
  ] as const)('sum: %s', (_name, temporality, isMonotonic, stored) => {
    const { rows } = convert(
      request([
        {
          name: 'http.requests',
          unit: '{request}',
          data: {
            case: 'sum',
            value: {
              aggregationTemporality: temporality,
              isMonotonic,
              dataPoints: [{ timeUnixNano: T, startTimeUnixNano: START, value: { case: 'asInt', value: 7n }, attributes: [attr('route', str('/a'))] }],
            },
          },
        },
      ]),
    );
    expect(rows).toEqual([
      expect.objectContaining({
        metric_type: 'sum',
        temporality: stored,
        is_monotonic: isMonotonic,
        value: 7,
        value_int: 7,
        start_unix_nano: START.toString(),
        point_attr_str: { route: '/a' },
      }),
    ]);
  });

  it('histogram: count, sum, min, max, bounds and bucket counts; sum/min/max NULL when not sent', () => {
    const { rows } = convert(
      request([
        {
          name: 'http.server.duration',
          unit: 'ms',
          data: {
            case: 'histogram',
            value: {
              aggregationTemporality: AggregationTemporality.DELTA,
              dataPoints: [
                { timeUnixNano: T, startTimeUnixNano: START, count: 6n, sum: 12.5, min: 0.5, max: 7, explicitBounds: [1, 5], bucketCounts: [1n, 3n, 2n] },
                { timeUnixNano: T + 5n, count: 0n, explicitBounds: [], bucketCounts: [] },
              ],
            },
          },
        },
      ]),
    );
    expect(rows).toEqual([
      {
        hour: 490_000,
        ...shared('http.server.duration', 'histogram'),
        description: '',
        unit: 'ms',
        temporality: 'delta',
        is_monotonic: null,
        series_id: rows[0]!.series_id,
        start_unix_nano: START.toString(),
        time_unix_nano: T.toString(),
        count: 6,
        sum: 12.5,
        min: 0.5,
        max: 7,
        explicit_bounds: [1, 5],
        bucket_counts: [1, 3, 2],
        flags: 0,
        ...noPointAttrs,
      },
      expect.objectContaining({ count: 0, sum: null, min: null, max: null, explicit_bounds: [], bucket_counts: [] }),
    ]);
  });

  it('exponential histogram: scale, zero bucket, positive and negative offsets and buckets', () => {
    const { rows } = convert(
      request([
        {
          name: 'latency',
          data: {
            case: 'exponentialHistogram',
            value: {
              aggregationTemporality: AggregationTemporality.CUMULATIVE,
              dataPoints: [
                {
                  timeUnixNano: T,
                  startTimeUnixNano: START,
                  count: 10n,
                  sum: -3.25,
                  min: -4,
                  max: 8,
                  scale: -2,
                  zeroCount: 1n,
                  zeroThreshold: 0.001,
                  positive: { offset: -3, bucketCounts: [1n, 0n, 4n] },
                  negative: { offset: 2, bucketCounts: [3n, 1n] },
                },
                { timeUnixNano: T + 1n, count: 0n, scale: 20 },
              ],
            },
          },
        },
      ]),
    );
    expect(rows[0]).toEqual({
      hour: 490_000,
      ...shared('latency', 'exponential_histogram'),
      description: '',
      unit: '',
      temporality: 'cumulative',
      is_monotonic: null,
      series_id: rows[0]!.series_id,
      start_unix_nano: START.toString(),
      time_unix_nano: T.toString(),
      count: 10,
      sum: -3.25,
      min: -4,
      max: 8,
      exp_scale: -2,
      exp_zero_count: 1,
      exp_zero_threshold: 0.001,
      exp_positive_offset: -3,
      exp_positive_bucket_counts: [1, 0, 4],
      exp_negative_offset: 2,
      exp_negative_bucket_counts: [3, 1],
      flags: 0,
      ...noPointAttrs,
    });
    // No buckets sent: OTLP's defaults (offset 0, no counts).
    expect(rows[1]).toMatchObject({ exp_scale: 20, exp_positive_offset: 0, exp_positive_bucket_counts: [], exp_negative_offset: 0, exp_negative_bucket_counts: [], sum: null });
  });

  it('summary: count, sum and quantiles in the order sent (NaN and infinities as text)', () => {
    const { rows } = convert(
      request([
        {
          name: 'rpc.duration',
          data: {
            case: 'summary',
            value: {
              dataPoints: [
                {
                  timeUnixNano: T,
                  startTimeUnixNano: START,
                  count: 3n,
                  sum: 1.5,
                  quantileValues: [
                    { quantile: 0.99, value: Number.POSITIVE_INFINITY },
                    { quantile: 0.5, value: 0.4 },
                    { quantile: 0, value: Number.NaN },
                  ],
                },
              ],
            },
          },
        },
      ]),
    );
    expect(rows).toEqual([
      {
        hour: 490_000,
        ...shared('rpc.duration', 'summary'),
        description: '',
        unit: '',
        temporality: null,
        is_monotonic: null,
        series_id: rows[0]!.series_id,
        start_unix_nano: START.toString(),
        time_unix_nano: T.toString(),
        count: 3,
        sum: 1.5,
        quantiles: [
          { quantile: 0.99, value: 'Infinity' },
          { quantile: 0.5, value: 0.4 },
          { quantile: 0, value: 'NaN' },
        ],
        flags: 0,
        ...noPointAttrs,
      },
    ]);
  });

  it('flags: no-recorded-value (staleness) is stored on every kind', () => {
    const point = { timeUnixNano: T, flags: 1 };
    const { rows } = convert(
      request([
        { name: 'g', data: { case: 'gauge', value: { dataPoints: [point] } } },
        { name: 's', data: { case: 'sum', value: { dataPoints: [point] } } },
        { name: 'h', data: { case: 'histogram', value: { dataPoints: [point] } } },
        { name: 'e', data: { case: 'exponentialHistogram', value: { dataPoints: [point] } } },
        { name: 'q', data: { case: 'summary', value: { dataPoints: [point] } } },
      ]),
    );
    expect(rows.map((r) => [r.metric_name, r.flags])).toEqual([
      ['g', 1],
      ['s', 1],
      ['h', 1],
      ['e', 1],
      ['q', 1],
    ]);
    // A number point without a value has no value.
    expect(rows[0]).toMatchObject({ value: null, value_int: null });
  });

  it('exemplars of every point kind go to metric_exemplars with their series, trace, value and filtered attributes', () => {
    const ex = [
      { timeUnixNano: T - 7n, value: { case: 'asDouble' as const, value: 0.7 }, traceId: TRACE, spanId: SPAN, filteredAttributes: [attr('user', str('u1')), attr('n', int(3n))] },
      { timeUnixNano: 0n, value: { case: 'asInt' as const, value: 5n } },
    ];
    const { out, rows, exemplars } = convert(
      request([
        { name: 'hist', data: { case: 'histogram', value: { dataPoints: [{ timeUnixNano: T, count: 1n, bucketCounts: [1n], exemplars: ex, attributes: [attr('route', str('/a'))] }] } } },
        { name: 'gauge', data: { case: 'gauge', value: { dataPoints: [{ timeUnixNano: T, value: { case: 'asDouble', value: 1 }, exemplars: [ex[0]!] }] } } },
        { name: 'sum', data: { case: 'sum', value: { dataPoints: [{ timeUnixNano: T, value: { case: 'asDouble', value: 1 }, exemplars: [ex[0]!] }] } } },
        { name: 'exp', data: { case: 'exponentialHistogram', value: { dataPoints: [{ timeUnixNano: T, exemplars: [ex[0]!] }] } } },
      ]),
    );
    expect(out.exemplars).toMatchObject({ accepted: 5, rejected: 0 });
    const res = everyTypeMaps('res');
    const hist = rows.find((r) => r.metric_name === 'hist')!;
    expect(exemplars.filter((e) => e.metric_name === 'hist')).toEqual([
      {
        hour: 490_000,
        metric_name: 'hist',
        metric_type: 'histogram',
        series_id: hist.series_id,
        service_name: 'shop',
        time_unix_nano: (T - 7n).toString(),
        value: 0.7,
        value_int: null,
        trace_id: '0102030405060708090a0b0c0d0e0f10',
        span_id: 'a0a1a2a3a4a5a6a7',
        filtered_attr_str: { user: 'u1' },
        filtered_attr_int: { n: 3 },
        filtered_attr_double: {},
        filtered_attr_bool: {},
        point_attr_str: { route: '/a' },
        point_attr_int: {},
        point_attr_double: {},
        point_attr_bool: {},
        resource_attr_str: { 'service.name': 'shop', ...res.str },
        resource_attr_int: res.int,
        resource_attr_double: res.double,
        resource_attr_bool: res.bool,
      },
      // No time: placed at its data point's time. No ids: NULL.
      expect.objectContaining({ time_unix_nano: T.toString(), value: 5, value_int: 5, trace_id: null, span_id: null, filtered_attr_str: {} }),
    ]);
    expect(exemplars.map((e) => e.metric_type).sort()).toEqual(['exponential_histogram', 'gauge', 'histogram', 'histogram', 'sum']);
    for (const e of exemplars) expect(e.series_id).toBe(rows.find((r) => r.metric_name === e.metric_name)!.series_id);
  });

  it.each([
    ['no time', { timeUnixNano: 0n }, 'data point has no time_unix_nano'],
    ['time beyond int64', { timeUnixNano: 1n << 63n }, 'data point has a time beyond the int64 range of unix nanoseconds'],
    ['start beyond int64', { timeUnixNano: T, startTimeUnixNano: (1n << 64n) - 1n }, 'data point has a time beyond the int64 range of unix nanoseconds'],
    ['exemplar with a 15-byte trace id', { timeUnixNano: T, exemplars: [{ timeUnixNano: T, traceId: new Uint8Array(15) }] }, 'data point has an exemplar with an invalid trace_id (must be empty or 16 bytes)'],
    ['exemplar with a 3-byte span id', { timeUnixNano: T, exemplars: [{ timeUnixNano: T, spanId: new Uint8Array(3) }] }, 'data point has an exemplar with an invalid span_id (must be empty or 8 bytes)'],
    ['exemplar time beyond int64', { timeUnixNano: T, exemplars: [{ timeUnixNano: 1n << 63n }] }, 'data point has a time beyond the int64 range of unix nanoseconds'],
  ])('rejects a point with %s (partial success); the valid point and its exemplar land', (_name, bad, reason) => {
    const good = { timeUnixNano: T, value: { case: 'asDouble' as const, value: 2 }, exemplars: [{ timeUnixNano: T, value: { case: 'asDouble' as const, value: 2 } }] };
    const { out, rows, exemplars } = convert(request([{ name: 'm', data: { case: 'gauge', value: { dataPoints: [{ ...bad, value: { case: 'asDouble', value: 1 } }, good] } } }]));
    expect(out.points).toMatchObject({ accepted: 1, rejected: 1, rejectReason: reason });
    expect(rows.map((r) => r.value)).toEqual([2]);
    expect(exemplars.map((e) => e.value)).toEqual([2]);
  });

  it.each([
    ['histogram count beyond int64', { name: 'h', data: { case: 'histogram', value: { dataPoints: [{ timeUnixNano: T, count: 1n << 63n }] } } }, 'data point has a count beyond the int64 range'],
    ['histogram bucket count beyond int64', { name: 'h', data: { case: 'histogram', value: { dataPoints: [{ timeUnixNano: T, bucketCounts: [1n << 63n] }] } } }, 'data point has a count beyond the int64 range'],
    [
      'histogram buckets that do not fit the bounds',
      { name: 'h', data: { case: 'histogram', value: { dataPoints: [{ timeUnixNano: T, explicitBounds: [1, 2], bucketCounts: [1n, 2n] }] } } },
      'histogram data point has bucket_counts that do not fit explicit_bounds (need one more count than bounds)',
    ],
    ['exponential bucket count beyond int64', { name: 'e', data: { case: 'exponentialHistogram', value: { dataPoints: [{ timeUnixNano: T, negative: { bucketCounts: [1n << 64n] } }] } } }, 'data point has a count beyond the int64 range'],
    ['summary count beyond int64', { name: 's', data: { case: 'summary', value: { dataPoints: [{ timeUnixNano: T, count: 1n << 63n }] } } }, 'data point has a count beyond the int64 range'],
    ['a metric without a name', { name: '', data: { case: 'gauge', value: { dataPoints: [{ timeUnixNano: T }] } } }, 'metric has no name'],
  ] as Array<[string, MetricInit, string]>)('rejects %s', (_name, metric, reason) => {
    const { out, rows } = convert(request([metric, { name: 'ok', data: { case: 'gauge', value: { dataPoints: [{ timeUnixNano: T }] } } }]));
    expect(out.points).toMatchObject({ accepted: 1, rejected: 1, rejectReason: reason });
    expect(rows.map((r) => r.metric_name)).toEqual(['ok']);
  });

  it('a metric without data is skipped, not counted; an empty request converts to nothing', () => {
    expect(convert(request([{ name: 'empty' }])).out.points).toMatchObject({ accepted: 0, rejected: 0 });
    expect(convert({}).out.points.byHour.size).toBe(0);
  });

  it('series_id: stable, independent of attribute order, and different for type, metric, resource or scope', () => {
    const point = (attributes: object[]) => ({ timeUnixNano: T, value: { case: 'asDouble' as const, value: 1 }, attributes });
    const idOf = (metric: string, attributes: object[], opts: { resource?: boolean; scope?: string } = {}) =>
      convert(request([{ name: metric, data: { case: 'gauge', value: { dataPoints: [point(attributes)] } } }], opts)).rows[0]!.series_id;
    const a = idOf('m', [attr('x', str('1')), attr('y', int(2n))]);
    expect(idOf('m', [attr('y', int(2n)), attr('x', str('1'))])).toBe(a);
    expect(idOf('m', [attr('x', str('1')), attr('y', int(2n))])).toBe(a);
    const others = [
      idOf('m', [attr('x', int(1n)), attr('y', int(2n))]),
      idOf('m', [attr('x', str('1')), attr('y', dbl(2))]),
      idOf('m', [attr('x', str('1'))]),
      idOf('n', [attr('x', str('1')), attr('y', int(2n))]),
      idOf('m', [attr('x', str('1')), attr('y', int(2n))], { resource: false }),
      idOf('m', [attr('x', str('1')), attr('y', int(2n))], { scope: 'other' }),
    ];
    expect(new Set([a, ...others]).size).toBe(7);
    // A fixed value: the id is stored, so its text must never drift. The first two digits of
    // sha256 of the job ('', no service.name), two of sha256 of the resource ('[]'), then twelve
    // of sha256 of '["fixed","",""]\n[]\n[["k","s","v"]]' (metric, scope name, version; resource; point).
    expect(
      metricsToRows(
        create(ExportMetricsServiceRequestSchema, {
          resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'fixed', data: { case: 'gauge', value: { dataPoints: [{ timeUnixNano: T, attributes: [attr('k', str('v'))] }] } } }] }] }],
        }),
      ).points.byHour.get(490_000)!.items[0],
    ).toMatchObject({ series_id: 'e34f44d110a6a364' });
  });

  it("series_id begins with its job's digits (service.namespace/service.name), then its resource's", () => {
    const idOf = (resource: object[], metric = 'm') =>
      convert({
        resourceMetrics: [{ resource: { attributes: resource }, scopeMetrics: [{ metrics: [{ name: metric, data: { case: 'gauge', value: { dataPoints: [{ timeUnixNano: T, attributes: [] }] } } }] }] }],
      }).rows[0]!.series_id as string;
    const target = (instance: string) => [attr('service.namespace', str('shop')), attr('service.name', str('api')), attr('service.instance.id', str(instance))];
    const a = idOf(target('i-1'));
    const jobDigits = createHash('sha256').update('shop/api').digest('hex').slice(0, 2);
    expect(a.slice(0, 2)).toBe(jobDigits);
    expect(idOf(target('i-2')).slice(0, 2)).toBe(jobDigits);
    expect(idOf(target('i-1'), 'other').slice(0, 4)).toBe(a.slice(0, 4));
    // Without a namespace the job is the service name, as remote write's job label is.
    expect(idOf([attr('service.name', str('shop/api'))]).slice(0, 2)).toBe(jobDigits);
  });

  it('rows are grouped by the hour of their own time; exemplars by theirs', () => {
    const { out } = convert(
      request([
        {
          name: 'm',
          data: {
            case: 'gauge',
            value: {
              dataPoints: [
                { timeUnixNano: T, value: { case: 'asDouble', value: 1 }, exemplars: [{ timeUnixNano: T - HOUR }] },
                { timeUnixNano: T + HOUR, value: { case: 'asDouble', value: 2 } },
              ],
            },
          },
        },
      ]),
    );
    expect([...out.points.byHour.keys()]).toEqual([490_000, 490_001]);
    expect([...out.exemplars.byHour.keys()]).toEqual([489_999]);
  });

  it('OTLP/JSON bodies: int64 as strings, hex exemplar ids', () => {
    const body = JSON.stringify({
      resourceMetrics: [
        {
          scopeMetrics: [
            {
              metrics: [
                {
                  name: 'requests',
                  sum: {
                    aggregationTemporality: 2,
                    isMonotonic: true,
                    dataPoints: [
                      {
                        timeUnixNano: T.toString(),
                        startTimeUnixNano: START.toString(),
                        asInt: '12',
                        exemplars: [{ timeUnixNano: T.toString(), asDouble: 1.5, traceId: '0102030405060708090a0b0c0d0e0f10', spanId: 'a0a1a2a3a4a5a6a7' }],
                      },
                    ],
                  },
                },
              ],
            },
          ],
        },
      ],
    });
    const out = metricsToRows(decodeMessage(ExportMetricsServiceRequestSchema, Buffer.from(body), 'json'));
    const row = batchRows(out.points.byHour.get(490_000)!)[0] as Row;
    expect(row).toMatchObject({ metric_type: 'sum', temporality: 'cumulative', is_monotonic: true, value: 12, value_int: 12, service_name: 'unknown_service', start_unix_nano: START.toString() });
    const ex = batchRows(out.exemplars.byHour.get(490_000)!)[0] as Row;
    expect(ex).toMatchObject({ trace_id: '0102030405060708090a0b0c0d0e0f10', span_id: 'a0a1a2a3a4a5a6a7', value: 1.5 });
  });
  it('accepted times: a point outside is rejected and named; an exemplar outside its point\'s window is dropped, not counted', () => {
    // T - 1 h to T + 1 m.
    const times = new AcceptedTimes(Number(T / 1_000_000n), 3_600_000, 60_000);
    const gauge = (time: bigint, exemplarTime?: bigint) => ({
      timeUnixNano: time,
      value: { case: 'asDouble' as const, value: Number((time - T) / 1_000_000_000n) },
      exemplars: exemplarTime === undefined ? [] : [{ timeUnixNano: exemplarTime, value: { case: 'asDouble' as const, value: 1 }, traceId: TRACE, spanId: SPAN }],
    });
    const out = metricsToRows(
      create(ExportMetricsServiceRequestSchema, request([{ name: 'g', data: { case: 'gauge', value: { dataPoints: [gauge(T - 2n * HOUR), gauge(T, T - 2n * HOUR), gauge(T + 59_000_000_000n, T), gauge(T + HOUR)] } } }])),
      times,
    );
    expect([out.points.accepted, out.points.rejected]).toEqual([2, 2]);
    expect(out.points.refusedBy).toEqual({ too_old: 1, too_new: 1 });
    expect(out.points.rejectReason).toMatch(/^data point time is more than 1h in the past \(limits\.ingest_max_age; oldest accepted: /);
    expect([...out.points.byHour.values()].flatMap((b) => batchRows(b).map((r) => r.value))).toEqual([0, 59]);
    // The exemplar two hours back is dropped with its point kept; the one at T is kept.
    expect([...out.exemplars.byHour.values()].flatMap((b) => batchRows(b).map((r) => r.time_unix_nano))).toEqual([T.toString()]);
  });
});
