import { describe, expect, it } from 'vitest';
import { otelLabelName, otelPromName } from '@floe/proto';
import { buildPlainSeries, buildPromSeries, buildTargetInfo, promFamily, selectorDemand, seriesLabelSets, storedNamesFor, type SeriesRow } from './series.ts';

describe('OpenTelemetry metrics as Prometheus series', () => {
  it('translates names as Prometheus’s OTLP receiver does', () => {
    expect(otelPromName('http.server.duration', 's', 'histogram', false)).toBe('http_server_duration_seconds');
    expect(otelPromName('e2e.requests', '{request}', 'sum', true)).toBe('e2e_requests_total');
    expect(otelPromName('net.io', 'By/s', 'sum', true)).toBe('net_io_bytes_per_second_total');
    expect(otelPromName('cpu.utilization', '1', 'gauge', false)).toBe('cpu_utilization_ratio');
    expect(otelPromName('latency_seconds', 's', 'gauge', false)).toBe('latency_seconds');
    expect(otelPromName('queue.total.depth', '', 'sum', true)).toBe('queue_depth_total');
    expect(otelLabelName('k8s.pod.name')).toBe('k8s_pod_name');
    expect(otelLabelName('1st')).toBe('key_1st');
    expect(promFamily({ metricName: 'x', metricType: 'summary', unit: 'ms', description: '', isMonotonic: false, temporality: '', rw: false }).names).toEqual([
      'x_milliseconds',
      'x_milliseconds_count',
      'x_milliseconds_sum',
    ]);
  });

  const hist: SeriesRow = {
    series_id: 's1', metric_name: 'lat', metric_type: 'histogram', unit: 's', is_monotonic: false, rw: false,
    point_attr_str: { 'http.route': '/a' }, point_attr_int: { code: 200n }, resource_attr_str: { 'service.name': 'api', 'service.namespace': 'shop', 'service.instance.id': 'pod-1' },
    explicit_bounds: [0.1, 1],
  };

  it('expands a histogram into cumulative _bucket series, _count and _sum, with job and instance', () => {
    const series = buildPromSeries([hist], [{ series_id: 's1', t: 1000, value: null, flags: 0n, count: 6n, sum: 4.5, explicit_bounds: [0.1, 1], bucket_counts: [1n, 2n, 3n] }]);
    const byName = Object.fromEntries(series.map((s) => [`${s.labels.__name__}${s.labels.le ? `{${s.labels.le}}` : ''}`, s.v[0]]));
    expect(byName).toEqual({ 'lat_seconds_bucket{0.1}': 1, 'lat_seconds_bucket{1}': 3, 'lat_seconds_bucket{+Inf}': 6, lat_seconds_count: 6, lat_seconds_sum: 4.5 });
    expect({ ...series[0]!.labels }).toEqual({ __name__: 'lat_seconds_bucket', le: '0.1', http_route: '/a', code: '200', job: 'shop/api', instance: 'pod-1' });
    expect(seriesLabelSets(hist).map((l) => l.le ?? l.__name__)).toEqual(['0.1', '1', '+Inf', 'lat_seconds_count', 'lat_seconds_sum']);
  });

  it('downsamples exponential histograms to le bounds from the scale', () => {
    const row: SeriesRow = { ...hist, metric_type: 'exponential_histogram', explicit_bounds: null };
    // scale 0: base 2; positive offset 0 covers (1,2], (2,4]; one negative bucket (offset 1) covers [-4,-2).
    const series = buildPromSeries([row], [
      { series_id: 's1', t: 1000, value: null, flags: 0n, count: 7n, sum: 5, exp_scale: 0, exp_zero_count: 1n, exp_zero_threshold: 0, exp_positive_offset: 0, exp_positive_bucket_counts: [2n, 3n], exp_negative_offset: 1, exp_negative_bucket_counts: [1n] },
    ]);
    const buckets = series.filter((s) => s.labels.__name__ === 'lat_seconds_bucket').map((s) => [s.labels.le, s.v[0]]);
    expect(buckets).toEqual([['-2', 1], ['0', 2], ['2', 4], ['4', 7], ['+Inf', 7]]);
  });

  it('keeps remote-written series verbatim and marks staleness', () => {
    const rw: SeriesRow = { series_id: 'r', metric_name: 'up', metric_type: 'gauge', unit: '', is_monotonic: false, rw: true, point_attr_str: { job: 'j', 'weird.label': 'x' } };
    const [s] = buildPromSeries([rw], [
      { series_id: 'r', t: 1, value: 1, flags: 0 },
      { series_id: 'r', t: 2, value: NaN, flags: 1 },
    ]);
    expect({ ...s!.labels }).toEqual({ __name__: 'up', job: 'j', 'weird.label': 'x' });
    expect(s!.stale).toEqual([false, true]);
    const catalog = [{ metricName: 'lat', metricType: 'histogram', unit: 's', description: '', isMonotonic: false, temporality: '', rw: false }];
    expect(storedNamesFor(catalog, [[{ name: '__name__', op: '=', value: 'lat_seconds_bucket' }]])).toEqual(['lat']);
    expect(storedNamesFor(catalog, [[{ name: '__name__', op: '=~', value: 'lat' }]])).toEqual([]);
  });
});

describe('plain series, target_info, delta temporality and query demand', () => {
  it('reads plain series from point lists: sorted by time, special values, later duplicate kept, staleness markers', () => {
    const [s] = buildPlainSeries([
      {
        series_id: 'r', metric_name: 'up', metric_type: 'gauge', unit: '', is_monotonic: false, rw: true, point_attr_str: { job: 'j' },
        t: Float64Array.of(3000, 1000, 2000, 2000, 4000), v: Float64Array.of(2.5, NaN, Infinity, -Infinity, 1e300), stale_t: [1000],
      },
    ]);
    expect({ ...s!.labels }).toEqual({ __name__: 'up', job: 'j' });
    expect(Array.from(s!.t)).toEqual([1000, 2000, 3000, 4000]);
    expect(Array.from(s!.v)).toEqual([NaN, -Infinity, 2.5, 1e300]);
    expect(Array.from(s!.stale!)).toEqual([1, 0, 0, 0]);
    expect(buildPlainSeries([{ series_id: 'e', metric_name: 'up', metric_type: 'gauge', unit: '', is_monotonic: false, rw: true, t: null, v: null, stale_t: null }])).toEqual([]);
  });

  it('orders points given as many ascending runs (as an unordered aggregate over sorted files gives them) like a stable sort', () => {
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let round = 0; round < 50; round++) {
      // 1 to 30 runs, each ascending, with times shared between runs (duplicates across runs).
      const points: Array<[number, number]> = [];
      const runs = 1 + rand(30);
      // Even rounds: runs over disjoint hours in shuffled order (one series read from several files).
      const hours = Array.from({ length: runs }, (_, r) => r).sort(() => rand(3) - 1);
      for (let r = 0; r < runs; r++) {
        let t = round % 2 === 0 ? hours[r]! * 3_600_000 : rand(50) * 1000;
        for (let k = rand(40); k > 0; k--) points.push([(t += 1000 * rand(3)), points.length]);
      }
      if (points.length === 0) continue;
      const [s] = buildPlainSeries([
        { series_id: 'x', metric_name: 'up', metric_type: 'gauge', unit: '', is_monotonic: false, rw: true, t: Float64Array.from(points, (p) => p[0]), v: Float64Array.from(points, (p) => p[1]), stale_t: null },
      ]);
      // Reference: a stable sort by time, then of equal times the later (in input order) kept.
      const want = [...points].sort((a, b) => a[0] - b[0]).filter((p, i, all) => i + 1 === all.length || all[i + 1]![0] !== p[0]);
      expect(Array.from(s!.t), `round ${round}`).toEqual(want.map((p) => p[0]));
      expect(Array.from(s!.v), `round ${round}`).toEqual(want.map((p) => p[1]));
    }
  });

  it('of two runs that meet at one time, keeps the value of the run that came later', () => {
    // The run given first starts where the other ends: a stable sort puts its 2000 first, so the other's is kept.
    const [s] = buildPlainSeries([
      { series_id: 'x', metric_name: 'up', metric_type: 'gauge', unit: '', is_monotonic: false, rw: true, t: Float64Array.of(2000, 3000, 1000, 2000), v: Float64Array.of(1, 2, 3, 4), stale_t: null },
    ]);
    expect(Array.from(s!.t)).toEqual([1000, 2000, 3000]);
    expect(Array.from(s!.v)).toEqual([3, 4, 2]);
  });

  it('puts series in order of their ids, whatever order the rows came in', () => {
    const row = (id: string) => ({ series_id: id, metric_name: 'up', metric_type: 'gauge', unit: '', is_monotonic: false, rw: true, point_attr_str: { id }, t: Float64Array.of(1000), v: Float64Array.of(1), stale_t: null });
    const ids = ['ffffffff00000001', '00000000ffffffff', 'e34f44d110a6a364', 'e34f44d110a6a363'];
    expect(buildPlainSeries(ids.map(row)).map((s) => s.labels.id)).toEqual([...ids].sort());
    // Many hex ids, a third of them sharing their first 8 digits with another; then one id that is not hex.
    let seed = 11;
    const hex8 = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), (seed * 2 + (seed & 1)).toString(16).padStart(8, '0').slice(-8));
    const many: string[] = [];
    for (let i = 0; i < 3000; i++) many.push((i % 3 === 2 ? many[i - 1]!.slice(0, 8) : hex8()) + hex8());
    expect(buildPlainSeries(many.map(row)).map((s) => s.labels.id)).toEqual([...many].sort());
    const mixed = [...many.slice(0, 50), 'r-1', 'A000000000000000'];
    expect(buildPlainSeries(mixed.map(row)).map((s) => s.labels.id)).toEqual([...mixed].sort());
  });

  it('makes target_info from resource attributes, job and instance from the service attributes', () => {
    const series = buildTargetInfo([
      {
        resource_attr_str: { 'service.name': 'api', 'service.namespace': 'shop', 'service.instance.id': 'pod-1', 'host.name': 'h1', 'host-name': 'h2' },
        resource_attr_int: { 'process.pid': 42n },
        times: [2000, 1000],
      },
      // Only identifying attributes: no target_info.
      { resource_attr_str: { 'service.name': 'web' }, times: [1000] },
      // Neither job nor instance: none either.
      { resource_attr_str: { 'host.name': 'h3' }, times: [1000] },
    ]);
    expect(series).toHaveLength(1);
    // host.name and host-name both translate to host_name: joined with ';' in key order.
    expect({ ...series[0]!.labels }).toEqual({ __name__: 'target_info', job: 'shop/api', instance: 'pod-1', host_name: 'h2;h1', process_pid: '42' });
    expect(Array.from(series[0]!.t)).toEqual([1000, 2000]);
    expect(Array.from(series[0]!.v)).toEqual([1, 1]);
  });

  it('types delta sums and histograms as unknown (served as stored increments)', () => {
    const e = { metricName: 'req', metricType: 'sum', unit: '', description: '', isMonotonic: true, temporality: 'delta', rw: false };
    expect(promFamily(e)).toEqual({ family: 'req_total', type: 'unknown', names: ['req_total'] });
    expect(promFamily({ ...e, temporality: 'cumulative' }).type).toBe('counter');
    expect(promFamily({ ...e, metricType: 'histogram', unit: 's' }).type).toBe('unknown');
  });

  it('counts as query demand the matcher names without a column', () => {
    expect(
      selectorDemand([
        [
          { name: '__name__', op: '=', value: 'x' },
          { name: 'job', op: '=', value: 'a' },
          { name: 'method', op: '=~', value: 'GET|POST' },
          { name: 'le', op: '=', value: '0.5' },
        ],
        [{ name: 'instance', op: '!=', value: '' }, { name: 'method', op: '!=', value: 'PUT' }],
      ]),
    ).toEqual(['instance', 'method']);
  });
});
