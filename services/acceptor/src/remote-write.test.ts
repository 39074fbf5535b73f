import { describe, expect, it } from 'vitest';
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
import { REMOTE_WRITE_SCOPE, isStaleNaN } from '@floe/query';
import {
  RemoteWriteMetadata,
  decodeRemoteWriteV1,
  decodeRemoteWriteV2,
  remoteWriteV1BodyToRows,
  remoteWriteV1ToRows,
  remoteWriteV2ToRows,
  remoteWriteVersion,
  type ConvertedRemoteWrite,
} from './remote-write.ts';
import { AcceptedTimes } from './accepted-times.ts';
import { batchRows } from './rows.ts';

type V1 = MessageInitShape<typeof PromWriteRequestSchema>;
type V2 = MessageInitShape<typeof RwV2RequestSchema>;
type Row = Record<string, unknown>;

const HOUR_MS = 3_600_000n;
const MS = 490_000n * HOUR_MS + 1_234n; // inside hour 490000
const NS = (ms: bigint) => (ms * 1_000_000n).toString();

/** A placeholder value whose 8 bytes are patched into Prometheus's staleness NaN on the wire. */
const STALE_PLACEHOLDER = 1.2345678901234567e-300;
function withStaleMarkers(bytes: Uint8Array): Uint8Array {
  const out = Buffer.from(bytes);
  const needle = Buffer.alloc(8);
  needle.writeDoubleLE(STALE_PLACEHOLDER);
  const stale = Buffer.from('020000000000f07f', 'hex'); // 0x7ff0000000000002, little-endian
  for (let i = out.indexOf(needle); i >= 0; i = out.indexOf(needle, i + 8)) stale.copy(out, i);
  return out;
}

const flat = (c: ConvertedRemoteWrite['points']) => [...c.byHour.values()].flatMap((b) => batchRows(b) as Row[]);
const v1 = (init: V1, cache?: RemoteWriteMetadata) => {
  const out = remoteWriteV1ToRows(decodeRemoteWriteV1(withStaleMarkers(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, init)))), cache, 'acme/default');
  return { out, rows: flat(out.points), exemplars: flat(out.exemplars) };
};
/** The same through the wire reader (remoteWriteV1BodyToRows), which keys its cache by label bytes. */
const v1Wire = (init: V1, cache?: RemoteWriteMetadata) => {
  const out = remoteWriteV1BodyToRows(withStaleMarkers(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, init))), cache, 'acme/default');
  return { out, rows: flat(out.points), exemplars: flat(out.exemplars) };
};
const v2 = (init: V2) => {
  const out = remoteWriteV2ToRows(decodeRemoteWriteV2(withStaleMarkers(toBinary(RwV2RequestSchema, create(RwV2RequestSchema, init)))));
  return { out, rows: flat(out.points), exemplars: flat(out.exemplars) };
};
const labels = (l: Record<string, string>) => Object.entries(l).map(([name, value]) => ({ name, value }));

/** v2 requests: symbols table built from the label sets used. */
function symbolsOf(...sets: Array<Record<string, string> | string[]>) {
  const symbols = [''];
  const ref = (s: string) => {
    let i = symbols.indexOf(s);
    if (i < 0) i = symbols.push(s) - 1;
    return i;
  };
  const refs = (l: Record<string, string>) => Object.entries(l).flatMap(([k, v]) => [ref(k), ref(v)]);
  for (const s of sets) if (Array.isArray(s)) s.forEach(ref);
  return { symbols, refs, ref };
}

const emptyMaps = { point_attr_int: {}, point_attr_double: {}, point_attr_bool: {}, resource_attr_int: {}, resource_attr_double: {}, resource_attr_bool: {}, scope_attr_int: {}, scope_attr_double: {}, scope_attr_bool: {} };
/** The columns of other kinds of points, NULL in a plain sample's row. */
const noHistogram = Object.fromEntries(
  [
    'count',
    'sum',
    'min',
    'max',
    'explicit_bounds',
    'bucket_counts',
    'exp_scale',
    'exp_zero_count',
    'exp_zero_threshold',
    'exp_positive_offset',
    'exp_positive_bucket_counts',
    'exp_negative_offset',
    'exp_negative_bucket_counts',
    'quantiles',
  ].map((c) => [c, null]),
);

describe('remoteWriteVersion (Content-Type)', () => {
  it.each([
    [undefined, 1],
    ['application/x-protobuf', 1],
    ['application/x-protobuf;proto=prometheus.WriteRequest', 1],
    ['Application/X-Protobuf; proto="prometheus.WriteRequest"', 1],
    ['application/x-protobuf;proto=io.prometheus.write.v2.Request', 2],
    ['application/x-protobuf; charset=utf-8; proto=io.prometheus.write.v2.Request', 2],
  ])('%s → v%i', (ct, version) => {
    expect(remoteWriteVersion(ct)).toBe(version);
  });

  it.each([['application/json'], ['text/plain'], ['application/x-protobuf;proto=io.prometheus.write.v3.Request']])('%s → 415', (ct) => {
    expect(() => remoteWriteVersion(ct)).toThrow(expect.objectContaining({ kind: 'unsupported_media_type' }));
  });
});

describe('remote write 1.0 → metrics rows', () => {
  it('float samples: __name__ → metric_name, every other label a string point attribute, job/instance → resource service', () => {
    const { out, rows } = v1({
      timeseries: [
        {
          labels: [...labels({ __name__: 'node_load1', job: 'node', instance: 'host:9100', 'weird.label': 'x', empty: '' }), { name: '__proto__', value: 'p' }],
          samples: [
            { value: 0.5, timestamp: MS },
            { value: Number.POSITIVE_INFINITY, timestamp: MS + 15_000n },
          ],
        },
      ],
    });
    expect(out).toMatchObject({ samplesWritten: 2, histogramsWritten: 0, errors: 0, dropped: 0 });
    const want = {
      metric_name: 'node_load1',
      metric_type: 'gauge',
      description: '',
      unit: '',
      temporality: null,
      is_monotonic: null,
      service_name: 'node',
      scope_name: REMOTE_WRITE_SCOPE,
      scope_version: '',
      series_id: rows[0]!.series_id,
      start_unix_nano: null,
      value_int: null,
      flags: 0,
      // The empty-valued label is absent, as Prometheus treats it.
      point_attr_str: JSON.parse('{"job":"node","instance":"host:9100","weird.label":"x","__proto__":"p"}') as Record<string, string>,
      resource_attr_str: { 'service.name': 'node', 'service.instance.id': 'host:9100' },
      scope_attr_str: {},
      ...emptyMaps,
      ...noHistogram,
    };
    expect(rows).toEqual([
      { ...want, time_unix_nano: NS(MS), value: 0.5 },
      { ...want, time_unix_nano: NS(MS + 15_000n), value: 'Infinity' },
    ]);
    expect(rows[0]!.series_id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('typing: metadata in the request wins; classic histogram and summary parts are counters; _total without metadata is a counter', () => {
    const s = (name: string, extra: Record<string, string> = {}) => ({ labels: labels({ __name__: name, job: 'j', ...extra }), samples: [{ value: 1, timestamp: MS }] });
    const { rows } = v1({
      metadata: [
        { type: PromMetricMetadata_MetricType.COUNTER, metricFamilyName: 'events', help: 'Events seen.', unit: '' },
        { type: PromMetricMetadata_MetricType.HISTOGRAM, metricFamilyName: 'req_duration_seconds', help: 'Latency.', unit: 'seconds' },
        { type: PromMetricMetadata_MetricType.SUMMARY, metricFamilyName: 'gc_duration_seconds', help: 'GC.', unit: '' },
        { type: PromMetricMetadata_MetricType.GAUGE, metricFamilyName: 'odd_total', help: 'A gauge despite its name.', unit: '' },
      ],
      timeseries: [
        s('events'),
        s('req_duration_seconds_bucket', { le: '0.5' }),
        s('req_duration_seconds_sum'),
        s('req_duration_seconds_count'),
        s('gc_duration_seconds', { quantile: '0.5' }),
        s('gc_duration_seconds_count'),
        s('odd_total'),
        s('http_requests_total'),
        s('untyped_bucket', { le: '+Inf' }),
        s('untyped_count'),
        s('temperature'),
      ],
    });
    const kinds = Object.fromEntries(rows.map((r) => [r.metric_name, [r.metric_type, r.temporality, r.is_monotonic, (r.scope_attr_str as Row)['prometheus.type'] ?? null, r.description, r.unit]]));
    expect(kinds).toEqual({
      events: ['sum', 'cumulative', true, 'counter', 'Events seen.', ''],
      req_duration_seconds_bucket: ['sum', 'cumulative', true, 'histogram', 'Latency.', 'seconds'],
      req_duration_seconds_sum: ['sum', 'cumulative', true, 'histogram', 'Latency.', 'seconds'],
      req_duration_seconds_count: ['sum', 'cumulative', true, 'histogram', 'Latency.', 'seconds'],
      gc_duration_seconds: ['gauge', null, null, 'summary', 'GC.', ''],
      gc_duration_seconds_count: ['sum', 'cumulative', true, 'summary', 'GC.', ''],
      odd_total: ['gauge', null, null, 'gauge', 'A gauge despite its name.', ''],
      http_requests_total: ['sum', 'cumulative', true, null, '', ''],
      untyped_bucket: ['sum', 'cumulative', true, null, '', ''],
      untyped_count: ['gauge', null, null, null, '', ''],
      temperature: ['gauge', null, null, null, '', ''],
    });
  });

  it('metadata sent in a request of its own types the samples of later requests of the same tenant and dataset', () => {
    const cache = new RemoteWriteMetadata();
    expect(v1({ metadata: [{ type: PromMetricMetadata_MetricType.COUNTER, metricFamilyName: 'jobs_done', help: 'Done.' }] }, cache).rows).toEqual([]);
    const { rows } = v1({ timeseries: [{ labels: labels({ __name__: 'jobs_done' }), samples: [{ value: 3, timestamp: MS }] }] }, cache);
    expect(rows[0]).toMatchObject({ metric_type: 'sum', is_monotonic: true, description: 'Done.', service_name: 'unknown_service', resource_attr_str: {} });
    // Another tenant's cache entry does not leak.
    const other = remoteWriteV1ToRows(create(PromWriteRequestSchema, { timeseries: [{ labels: labels({ __name__: 'jobs_done' }), samples: [{ value: 3, timestamp: MS }] }] }), cache, 'globex/default');
    expect(batchRows(other.points.byHour.get(490_000)!)[0]).toMatchObject({ metric_type: 'gauge' });
  });

  it('the metadata remembered across requests is bounded in bytes, not only in entries: help texts of megabytes are not kept for ever', () => {
    const cache = new RemoteWriteMetadata(100, 10_000);
    const meta = (help: string) => ({ type: 'counter' as const, help, unit: '' });
    cache.set('t/d', 'a', meta('x'.repeat(2000)));
    cache.set('t/d', 'b', meta('y'.repeat(2000)));
    cache.set('t/d', 'c', meta('z'.repeat(2000)));
    // The oldest goes once the bytes pass the bound; one entry past the whole bound is not kept.
    expect(['a', 'b', 'c'].map((f) => cache.get('t/d', f)?.help.length)).toEqual([undefined, 2000, 2000]);
    cache.set('t/d', 'huge', meta('h'.repeat(10_000)));
    expect([cache.get('t/d', 'huge'), cache.size]).toEqual([undefined, 2]);
  });

  it.each([
    ['protobuf-es', v1],
    ['the wire reader', v1Wire],
  ])('a series seen before (its row head cached) converts to the same rows; its metadata and labels are part of what is cached (%s)', (_, v1) => {
    const req = (name: string, meta?: PromMetricMetadata_MetricType): V1 => ({
      timeseries: [
        {
          labels: labels({ __name__: name, job: 'cache', instance: 'i:1', path: 'a"b\\c\u0000d' }),
          samples: [
            { value: 7, timestamp: MS },
            { value: STALE_PLACEHOLDER, timestamp: MS + 1n },
          ],
        },
      ],
      ...(meta !== undefined ? { metadata: [{ type: meta, metricFamilyName: name, help: 'h', unit: '' }] } : {}),
    });
    const first = v1(req('cache_probe_total_x'));
    const again = v1(req('cache_probe_total_x'));
    expect(again.rows).toEqual(first.rows);
    expect(again.out).toMatchObject({ samplesWritten: 2, errors: 0 });
    expect(first.rows.map((r) => [r.metric_type, r.value, r.flags, r.time_unix_nano])).toEqual([
      ['gauge', 7, 0, NS(MS)],
      ['gauge', 'NaN', 1, NS(MS + 1n)],
    ]);
    // The same labels with COUNTER metadata are another cache entry: a cumulative monotonic sum.
    const typed = v1(req('cache_probe_total_x', PromMetricMetadata_MetricType.COUNTER));
    expect(typed.rows.map((r) => [r.metric_type, r.temporality, r.is_monotonic, r.description])).toEqual([
      ['sum', 'cumulative', true, 'h'],
      ['sum', 'cumulative', true, 'h'],
    ]);
    expect(typed.rows[0]!.series_id).toBe(first.rows[0]!.series_id);
    // A label value that would collide with another split of the same characters stays its own series.
    const other = v1({ timeseries: [{ labels: labels({ __name__: 'cache_probe_total_x', job: 'cache', instance: 'i:1', path: 'a"b\\c', d: '' }), samples: [{ value: 1, timestamp: MS }] }] });
    expect(other.rows[0]!.series_id).not.toBe(first.rows[0]!.series_id);
  });

  it('the staleness marker is flags=1 with value NaN; a plain NaN is a value', () => {
    const bits = new DataView(new ArrayBuffer(8));
    bits.setBigUint64(0, 0x7ff0_0000_0000_0002n);
    expect(isStaleNaN(bits.getFloat64(0))).toBe(true);
    expect(isStaleNaN(Number.NaN)).toBe(false);
    const { rows } = v1({
      timeseries: [
        {
          labels: labels({ __name__: 'up', job: 'j' }),
          samples: [
            { value: 1, timestamp: MS },
            { value: STALE_PLACEHOLDER, timestamp: MS + 1n },
            { value: Number.NaN, timestamp: MS + 2n },
          ],
        },
      ],
    });
    expect(rows.map((r) => [r.value, r.flags])).toEqual([
      [1, 0],
      ['NaN', 1],
      ['NaN', 0],
    ]);
  });

  it('exemplars: labels verbatim as filtered attributes, trace_id/span_id labels also fill the id columns', () => {
    const { out, rows, exemplars } = v1({
      timeseries: [
        {
          labels: labels({ __name__: 'rpc_latency_seconds_bucket', job: 'api', le: '0.1' }),
          samples: [{ value: 4, timestamp: MS }],
          exemplars: [
            { labels: labels({ trace_id: '4BF92F3577B34DA6A3CE929D0E0E4736', span_id: '00f067aa0ba902b7', user: 'ann' }), value: 0.07, timestamp: MS - 10n },
            { labels: labels({ trace_id: 'not-hex' }), value: 0.08, timestamp: MS - 5n },
          ],
        },
      ],
    });
    expect(out.exemplarsWritten).toBe(2);
    expect(exemplars).toEqual([
      {
        metric_name: 'rpc_latency_seconds_bucket',
        metric_type: 'sum',
        series_id: rows[0]!.series_id,
        service_name: 'api',
        time_unix_nano: NS(MS - 10n),
        value: 0.07,
        value_int: null,
        trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
        span_id: '00f067aa0ba902b7',
        filtered_attr_str: { trace_id: '4BF92F3577B34DA6A3CE929D0E0E4736', span_id: '00f067aa0ba902b7', user: 'ann' },
        filtered_attr_int: {},
        filtered_attr_double: {},
        filtered_attr_bool: {},
        point_attr_str: { job: 'api', le: '0.1' },
        point_attr_int: {},
        point_attr_double: {},
        point_attr_bool: {},
        resource_attr_str: { 'service.name': 'api' },
        resource_attr_int: {},
        resource_attr_double: {},
        resource_attr_bool: {},
      },
      expect.objectContaining({ trace_id: null, span_id: null, filtered_attr_str: { trace_id: 'not-hex' } }),
    ]);
  });

  it('an exemplar without a timestamp is dropped with a warning, never an error (as in Prometheus)', () => {
    const { out, rows, exemplars } = v1({
      timeseries: [{ labels: labels({ __name__: 'm_total' }), samples: [{ value: 1, timestamp: MS }], exemplars: [{ labels: labels({ a: 'b' }), value: 1, timestamp: 0n }] }],
    });
    expect(out).toMatchObject({ errors: 0, dropped: 1, samplesWritten: 1, exemplarsWritten: 0 });
    expect(out.firstDropped).toMatch(/^exemplar without a timestamp/);
    expect([rows.length, exemplars.length]).toEqual([1, 0]);
  });

  it.each([
    ['no __name__', { labels: labels({ job: 'j' }) }, /series has no __name__ label \(\{job="j"\}\)/],
    ['a repeated label', { labels: [...labels({ __name__: 'm', a: '1' }), { name: 'a', value: '2' }] }, /label "a" more than once/],
    ['an empty label name', { labels: labels({ __name__: 'm', '': 'x' }) }, /label with an empty name/],
  ])('a series with %s is a conversion error; the other series of the request are stored', (_name, series, message) => {
    const { out, rows } = v1({
      timeseries: [
        { ...series, samples: [{ value: 1, timestamp: MS }, { value: 2, timestamp: MS + 1n }] },
        { labels: labels({ __name__: 'ok' }), samples: [{ value: 3, timestamp: MS }] },
      ],
    });
    expect(out.errors).toBe(2);
    expect(out.firstError).toMatch(message);
    expect(rows.map((r) => r.metric_name)).toEqual(['ok']);
  });

  it.each([
    ['no timestamp', 0n, /no timestamp after the unix epoch/],
    ['a negative timestamp', -5n, /no timestamp after the unix epoch/],
    ['a timestamp beyond int64 nanoseconds', 9_223_372_036_855n, /beyond the int64 range/],
  ])('a sample with %s is a conversion error; the other samples are stored', (_name, timestamp, message) => {
    const { out, rows } = v1({ timeseries: [{ labels: labels({ __name__: 'm' }), samples: [{ value: 1, timestamp }, { value: 2, timestamp: MS }] }] });
    expect(out).toMatchObject({ errors: 1, samplesWritten: 1 });
    expect(out.firstError).toMatch(message);
    expect(rows.map((r) => r.value)).toEqual([2]);
  });

  it('accepted times: samples and histograms outside are errors (400, the rest stored); exemplars outside are dropped', () => {
    // MS - 1 h to MS + 1 m, over both protocol readers.
    const times = new AcceptedTimes(Number(MS), 3_600_000, 60_000);
    const init: V1 = {
      timeseries: [
        {
          labels: labels({ __name__: 'm_total', job: 'j' }),
          samples: [{ value: 1, timestamp: MS - 2n * HOUR_MS }, { value: 2, timestamp: MS }, { value: 3, timestamp: MS + HOUR_MS }],
          exemplars: [{ labels: labels({ a: 'b' }), value: 1, timestamp: MS - 2n * HOUR_MS }],
        },
      ],
    };
    for (const out of [
      remoteWriteV1ToRows(decodeRemoteWriteV1(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, init))), undefined, '', times),
      remoteWriteV1BodyToRows(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, init)), undefined, '', times),
    ]) {
      expect(out).toMatchObject({ errors: 2, samplesWritten: 1, dropped: 1, exemplarsWritten: 0 });
      expect(out.firstError).toMatch(/^sample timestamp is more than 1h in the past \(limits\.ingest_max_age; oldest accepted: .*\) \(m_total\{job="j"\}\)$/);
      expect(out.firstDropped).toMatch(/^exemplar timestamp is more than 1h in the past/);
      expect(flat(out.points).map((r) => r.value)).toEqual([2]);
      // What the acceptor's items_refused counts.
      expect(out.points.refusedBy).toEqual({ too_old: 1, too_new: 1, unsupported: 1 });
    }
    const histogram = remoteWriteV2ToRows(
      decodeRemoteWriteV2(
        toBinary(RwV2RequestSchema, create(RwV2RequestSchema, { symbols: ['', '__name__', 'h'], timeseries: [{ labelsRefs: [1, 2], histograms: [{ count: { case: 'countInt', value: 1n }, schema: 0, timestamp: MS + HOUR_MS }] }] })),
      ),
      times,
    );
    expect(histogram).toMatchObject({ errors: 1, histogramsWritten: 0 });
    expect(histogram.points.refusedBy).toEqual({ too_new: 1 });
    expect(histogram.firstError).toMatch(/^histogram timestamp is more than 1m in the future \(limits\.ingest_max_future; latest accepted: /);
  });

  it('native histograms sent over 1.0 are exponential histograms too', () => {
    const { out, rows } = v1({
      timeseries: [
        {
          labels: labels({ __name__: 'h' }),
          histograms: [{ count: { case: 'countInt', value: 2n }, sum: 3, schema: 1, positiveSpans: [{ offset: 1, length: 1 }], positiveDeltas: [2n], timestamp: MS }],
        },
      ],
    });
    expect(out.histogramsWritten).toBe(1);
    expect(rows[0]).toMatchObject({ metric_type: 'exponential_histogram', exp_scale: 1, exp_positive_offset: 0, exp_positive_bucket_counts: [2], count: 2 });
  });
});

describe('remote write 2.0 → metrics rows', () => {
  const seriesLabels = { __name__: 'http_requests_total', job: 'api', instance: 'a:80', code: '200' };

  it('float samples through the symbols table, per-series metadata, start timestamps (per sample, and the legacy created_timestamp)', () => {
    const { symbols, refs, ref } = symbolsOf(seriesLabels, ['Requests served.', 'requests']);
    const { out, rows } = v2({
      symbols,
      timeseries: [
        {
          labelsRefs: refs(seriesLabels),
          metadata: { type: RwV2Metadata_MetricType.COUNTER, helpRef: ref('Requests served.'), unitRef: ref('requests') },
          createdTimestamp: MS - 60_000n,
          samples: [
            { value: 10, timestamp: MS, startTimestamp: MS - 30_000n },
            { value: 12, timestamp: MS + 15_000n },
          ],
        },
        { labelsRefs: refs({ __name__: 'temp', job: 'api' }), samples: [{ value: -1.5, timestamp: MS }] },
      ],
    });
    expect(out).toMatchObject({ samplesWritten: 3, histogramsWritten: 0, exemplarsWritten: 0, errors: 0 });
    const want = {
      metric_name: 'http_requests_total',
      metric_type: 'sum',
      description: 'Requests served.',
      unit: 'requests',
      temporality: 'cumulative',
      is_monotonic: true,
      service_name: 'api',
      scope_name: REMOTE_WRITE_SCOPE,
      scope_version: '',
      series_id: rows[0]!.series_id,
      value_int: null,
      flags: 0,
      point_attr_str: { job: 'api', instance: 'a:80', code: '200' },
      resource_attr_str: { 'service.name': 'api', 'service.instance.id': 'a:80' },
      scope_attr_str: { 'prometheus.type': 'counter' },
      ...emptyMaps,
      ...noHistogram,
    };
    expect(rows).toEqual([
      { ...want, start_unix_nano: NS(MS - 30_000n), time_unix_nano: NS(MS), value: 10 },
      { ...want, start_unix_nano: NS(MS - 60_000n), time_unix_nano: NS(MS + 15_000n), value: 12 },
      expect.objectContaining({ metric_name: 'temp', metric_type: 'gauge', value: -1.5, start_unix_nano: null, point_attr_str: { job: 'api' } }),
    ]);
  });

  it('the same series gets the same series_id over 1.0 and 2.0', () => {
    const { symbols, refs } = symbolsOf(seriesLabels);
    const a = v2({ symbols, timeseries: [{ labelsRefs: refs(seriesLabels), samples: [{ value: 1, timestamp: MS }] }] }).rows[0]!.series_id;
    const b = v1({ timeseries: [{ labels: labels(seriesLabels), samples: [{ value: 1, timestamp: MS }] }] }).rows[0]!.series_id;
    expect(a).toBe(b);
  });

  it('series_id is clustered by target: one job shares the first two digits, one instance the first four', () => {
    const idOf = (l: Record<string, string>) => v1({ timeseries: [{ labels: labels(l), samples: [{ value: 1, timestamp: MS }] }] }).rows[0]!.series_id as string;
    const a = idOf({ __name__: 'up', job: 'api', instance: 'a:80' });
    const sameTarget = idOf({ __name__: 'up', job: 'api', instance: 'a:80', code: '500' });
    const otherInstances = ['b:80', 'c:80', 'd:80', 'e:80'].map((instance) => idOf({ __name__: 'up', job: 'api', instance }));
    const otherJobs = ['web', 'db', 'cache', 'queue'].map((job) => idOf({ __name__: 'up', job, instance: 'a:80' }));
    expect(sameTarget).not.toBe(a);
    expect(sameTarget.slice(0, 4)).toBe(a.slice(0, 4));
    for (const id of otherInstances) expect(id.slice(0, 2)).toBe(a.slice(0, 2));
    // Different targets differ in digits 3-4 unless their hashes meet (1 in 256 each): of four, some differ.
    expect(otherInstances.some((id) => id.slice(2, 4) !== a.slice(2, 4))).toBe(true);
    expect(otherJobs.some((id) => id.slice(0, 2) !== a.slice(0, 2))).toBe(true);
  });

  it('integer native histogram: spans with gaps and deltas → offsets and dense counts, negative buckets, zero bucket, reset hint', () => {
    const l = { __name__: 'rpc_duration_seconds', job: 'api' };
    const { symbols, refs } = symbolsOf(l);
    const { out, rows } = v2({
      symbols,
      timeseries: [
        {
          labelsRefs: refs(l),
          metadata: { type: RwV2Metadata_MetricType.HISTOGRAM },
          histograms: [
            {
              count: { case: 'countInt', value: 8n },
              sum: 12.75,
              schema: 0,
              zeroThreshold: 1e-128,
              zeroCount: { case: 'zeroCountInt', value: 1n },
              // Prometheus indexes 0, 1, then (gap of 2) 4: counts 1, 2, 1 as deltas 1, +1, -1.
              positiveSpans: [
                { offset: 0, length: 2 },
                { offset: 2, length: 1 },
              ],
              positiveDeltas: [1n, 1n, -1n],
              negativeSpans: [{ offset: -2, length: 1 }],
              negativeDeltas: [3n],
              resetHint: RwV2Histogram_ResetHint.NO,
              timestamp: MS,
              startTimestamp: MS - 1000n,
            },
            { count: { case: 'countInt', value: 0n }, sum: 0, schema: 0, resetHint: RwV2Histogram_ResetHint.GAUGE, timestamp: MS + 1n },
          ],
        },
      ],
    });
    expect(out).toMatchObject({ histogramsWritten: 2, errors: 0, dropped: 0 });
    expect(rows[0]).toEqual({
      metric_name: 'rpc_duration_seconds',
      metric_type: 'exponential_histogram',
      description: '',
      unit: '',
      temporality: 'cumulative',
      is_monotonic: null,
      service_name: 'api',
      scope_name: REMOTE_WRITE_SCOPE,
      scope_version: '',
      series_id: rows[0]!.series_id,
      start_unix_nano: NS(MS - 1000n),
      time_unix_nano: NS(MS),
      count: 8,
      sum: 12.75,
      min: null,
      max: null,
      exp_scale: 0,
      exp_zero_count: 1,
      exp_zero_threshold: 1e-128,
      // Prometheus index i is OTLP index i - 1.
      exp_positive_offset: -1,
      exp_positive_bucket_counts: [1, 2, 0, 0, 1],
      exp_negative_offset: -3,
      exp_negative_bucket_counts: [3],
      flags: 0,
      point_attr_str: { job: 'api' },
      resource_attr_str: { 'service.name': 'api' },
      scope_attr_str: { 'prometheus.type': 'histogram' },
      ...emptyMaps,
    });
    expect(rows[1]).toMatchObject({ temporality: 'unspecified', count: 0, exp_positive_offset: 0, exp_positive_bucket_counts: [], exp_negative_bucket_counts: [] });
  });

  it('float native histogram with whole counts: absolute counts; the staleness marker in its sum is flags=1', () => {
    const l = { __name__: 'float_hist' };
    const { symbols, refs } = symbolsOf(l);
    const { rows } = v2({
      symbols,
      timeseries: [
        {
          labelsRefs: refs(l),
          histograms: [
            {
              count: { case: 'countFloat', value: 9 },
              sum: 4.5,
              schema: 3,
              zeroThreshold: 0.001,
              zeroCount: { case: 'zeroCountFloat', value: 1 },
              positiveSpans: [{ offset: 1, length: 3 }],
              positiveCounts: [1, 2, 3],
              negativeSpans: [
                { offset: 0, length: 1 },
                { offset: 1, length: 1 },
              ],
              negativeCounts: [2, 0],
              timestamp: MS,
            },
            { count: { case: 'countFloat', value: 0 }, sum: STALE_PLACEHOLDER, schema: 3, timestamp: MS + 1n },
          ],
        },
      ],
    });
    expect(rows[0]).toMatchObject({
      count: 9,
      exp_zero_count: 1,
      exp_scale: 3,
      exp_positive_offset: 0,
      exp_positive_bucket_counts: [1, 2, 3],
      exp_negative_offset: -1,
      exp_negative_bucket_counts: [2, 0, 0],
      flags: 0,
    });
    expect(rows[1]).toMatchObject({ sum: 'NaN', flags: 1 });
  });

  it('custom-bucket (schema -53) and fractional float histograms are dropped (warning, not error); the rest of the request is stored', () => {
    const nhcb = { __name__: 'nhcb_seconds' };
    const frac = { __name__: 'rate_hist' };
    const ok = { __name__: 'ok_total' };
    const { symbols, refs } = symbolsOf(nhcb, frac, ok);
    const { out, rows } = v2({
      symbols,
      timeseries: [
        {
          labelsRefs: refs(nhcb),
          histograms: [{ count: { case: 'countInt', value: 3n }, sum: 1, schema: -53, customValues: [0.1, 0.5], positiveSpans: [{ offset: 0, length: 2 }], positiveDeltas: [1n, 1n], timestamp: MS }],
        },
        { labelsRefs: refs(frac), histograms: [{ count: { case: 'countFloat', value: 1.5 }, sum: 1, schema: 0, timestamp: MS }] },
        { labelsRefs: refs(ok), samples: [{ value: 5, timestamp: MS }] },
      ],
    });
    expect(out).toMatchObject({ dropped: 2, errors: 0, samplesWritten: 1, histogramsWritten: 0 });
    expect(out.firstDropped).toMatch(/custom-bucket native histogram \(schema -53\).*nhcb_seconds/);
    expect(rows.map((r) => r.metric_name)).toEqual(['ok_total']);
  });

  it.each([
    ['an unsupported schema', { schema: 9 }, /unsupported schema 9/],
    ['spans that do not match the deltas', { positiveSpans: [{ offset: 0, length: 3 }], positiveDeltas: [1n] }, /spans cover 3 buckets but 1 counts/],
    ['deltas going negative', { positiveSpans: [{ offset: 0, length: 2 }], positiveDeltas: [1n, -2n] }, /negative or too large/],
    ['a gap beyond the bucket limit', { positiveSpans: [{ offset: 0, length: 1 }, { offset: 2_000_000_000, length: 1 }], positiveDeltas: [1n, 0n] }, /more than 65536 buckets/],
    // Integer histograms with a float zero count: NaN and ±Inf are no count (they threw a RangeError, a 500).
    ['a NaN float zero count', { zeroCount: { case: 'zeroCountFloat' as const, value: Number.NaN } }, /negative, non-finite or too large count/],
    ['an infinite float zero count', { zeroCount: { case: 'zeroCountFloat' as const, value: Number.NEGATIVE_INFINITY } }, /negative, non-finite or too large count/],
    // OTLP's offset is Prometheus's minus one: -2^31 would wrap around in the int column.
    ['a first bucket at -2^31', { negativeSpans: [{ offset: -(2 ** 31), length: 1 }], negativeDeltas: [1n] }, /first bucket index below the int32 range/],
  ])('a histogram with %s is a conversion error', (_name, fields, message) => {
    const l = { __name__: 'h' };
    const { symbols, refs } = symbolsOf(l);
    const { out, rows } = v2({ symbols, timeseries: [{ labelsRefs: refs(l), histograms: [{ count: { case: 'countInt', value: 1n }, schema: 0, timestamp: MS, ...fields }] }] });
    expect(out.errors).toBe(1);
    expect(out.firstError).toMatch(message);
    expect(rows).toEqual([]);
  });

  it('a symbol named by many series counts once per series: past the request cap of resolved label bytes, series are refused', () => {
    const long = 'v'.repeat(1000);
    const { symbols, refs } = symbolsOf();
    // Each series resolves to 1,015 bytes (names and values): two fit in 2,500, the third passes it.
    const series = (n: number) => ({ labelsRefs: refs({ __name__: 'm', note: long, n: String(n) }), samples: [{ value: n, timestamp: MS }] });
    const timeseries = Array.from({ length: 5 }, (_, n) => series(n));
    const out = remoteWriteV2ToRows(decodeRemoteWriteV2(toBinary(RwV2RequestSchema, create(RwV2RequestSchema, { symbols, timeseries }))), AcceptedTimes.ANY, undefined, 2500);
    expect(out).toMatchObject({ samplesWritten: 2, errors: 3, firstError: 'request resolves to more than 2500 bytes of labels; send fewer series per request' });
    expect(flat(out.points).map((r) => r.value)).toEqual([0, 1]);
  });

  it('one series naming a 1 MB symbol 600 times is refused, not a string past what JavaScript can hold (a RangeError, a 500)', () => {
    const { symbols, refs } = symbolsOf({ __name__: 'm', big: 'v'.repeat(1 << 20) });
    const [name, m, big, value] = refs({ __name__: 'm', big: 'v'.repeat(1 << 20) });
    const { out } = v2({ symbols, timeseries: [{ labelsRefs: [name!, m!, ...new Array<number[]>(600).fill([big!, value!]).flat()], samples: [{ value: 1, timestamp: MS }] }] });
    expect(out).toMatchObject({ samplesWritten: 0, errors: 1, firstError: 'request resolves to more than 268435456 bytes of labels; send fewer series per request' });
  });

  it('exemplars resolve their labels through the symbols table', () => {
    const l = { __name__: 'lat_bucket', le: '1' };
    const e = { trace_id: '0102030405060708090a0b0c0d0e0f10' };
    const { symbols, refs } = symbolsOf(l, e);
    const { out, exemplars } = v2({
      symbols,
      timeseries: [{ labelsRefs: refs(l), samples: [{ value: 1, timestamp: MS }], exemplars: [{ labelsRefs: refs(e), value: 0.3, timestamp: MS }] }],
    });
    expect(out.exemplarsWritten).toBe(1);
    expect(exemplars[0]).toMatchObject({ metric_name: 'lat_bucket', metric_type: 'sum', trace_id: '0102030405060708090a0b0c0d0e0f10', filtered_attr_str: e, point_attr_str: { le: '1' }, value: 0.3 });
  });

  it.each([
    ['symbols[0] not empty', { symbols: ['x'], timeseries: [] }, /symbols\[0\] must be the empty string/],
    ['a label reference beyond the symbols', { symbols: ['', 'a'], timeseries: [{ labelsRefs: [1, 5] }] }, /references symbol 5 of 2/],
    ['an odd number of label references', { symbols: ['', 'a'], timeseries: [{ labelsRefs: [1] }] }, /odd number/],
    ['an exemplar reference beyond the symbols', { symbols: ['', 'a'], timeseries: [{ labelsRefs: [1, 1], exemplars: [{ labelsRefs: [1, 9] }] }] }, /exemplar references symbol 9/],
    ['metadata referencing beyond the symbols', { symbols: ['', 'a'], timeseries: [{ labelsRefs: [1, 1], metadata: { helpRef: 4 } }] }, /metadata references/],
  ] as Array<[string, V2, RegExp]>)('decode refuses %s (bad_data)', (_name, init, message) => {
    expect(() => decodeRemoteWriteV2(toBinary(RwV2RequestSchema, create(RwV2RequestSchema, init)))).toThrow(expect.objectContaining({ kind: 'bad_data', message: expect.stringMatching(message) }));
  });

  it('garbage is bad_data for both protocols; a 1.0 body read as 2.0 is an empty request', () => {
    expect(() => decodeRemoteWriteV1(Buffer.from([0xff, 0xff, 0xff]))).toThrow(expect.objectContaining({ kind: 'bad_data', message: expect.stringMatching(/prometheus.WriteRequest/) }));
    expect(() => decodeRemoteWriteV2(Buffer.from([0xff, 0xff, 0xff]))).toThrow(expect.objectContaining({ kind: 'bad_data' }));
    const body = toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries: [{ labels: labels({ __name__: 'x' }), samples: [{ value: 1, timestamp: MS }] }] }));
    expect(decodeRemoteWriteV2(body).timeseries).toEqual([]);
  });
});
