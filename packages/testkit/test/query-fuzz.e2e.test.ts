import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import {
  REMOTE_WRITE_HEADERS,
  postProfiles,
  protoLogExporter,
  protoMetricExporter,
  protoTraceExporter,
  sampleProfilesRequest,
  sendSampleLogs,
  sendSampleMetrics,
  sendSampleTrace,
  startFloe,
  waitFor,
  type FloeUnderTest,
} from '../src/index.ts';

/**
 * Hostile queries against every read API, reproducibly: seeds of each language (LogQL, PromQL,
 * TraceQL, Pyroscope selectors) over stored data of every signal, mutated by a seeded generator
 * (inserted tokens and control characters, cut and repeated spans, huge numbers, bad steps, limits
 * and directions). Whatever the query, the answer is a status a client can act on — 2xx, 4xx,
 * or 501 for what the spec leaves unimplemented — in the shared error envelope, never a 5xx
 * or a hang. (A 4,600-query run of the same generator with random seeds found nothing either.)
 */

const SEEDS: Record<string, string[]> = {
  logql: [
    '{service_name="fuzz-logs"} |= "line"',
    'sum by (level) (count_over_time({service_name=~".+"} | logfmt | duration > 10ms [1m]))',
    '{service_name="fuzz-logs"} | json | err="boom" | line_format "{{.err}} {{.code}}"',
    'rate({service_name="fuzz-logs"} |~ "li.*" [5m])',
    'topk(2, sum by (service_name) (bytes_over_time({service_name!=""}[1m])))',
    'quantile_over_time(0.9, {service_name="fuzz-logs"} | logfmt | unwrap duration(duration) [5m]) by (user)',
    '{service_name="fuzz-logs"} | pattern "<a> <b>" | a != "x" | drop level | keep user',
    'sum(rate({service_name="fuzz-logs"}[1m])) / on() group_left sum(rate({service_name="fuzz-logs"}[1m]))',
  ],
  promql: [
    'sum by (service_name) (rate(fuzz_requests_total[5m]))',
    'histogram_quantile(0.9, sum by (le) (rate(fuzz_latency_bucket[5m])))',
    'label_replace(fuzz_gauge, "x", "$1", "service_name", "(.*)") offset 1m',
    'topk(3, avg_over_time(fuzz_gauge[10m:1m]))',
    'absent(nope{a="b"}) or count_values("v", fuzz_gauge)',
    'predict_linear(fuzz_gauge[5m], 60) > bool 3',
    '{__name__=~"fuzz.*"} @ end()',
  ],
  traceql: [
    '{ resource.service.name = "fuzz-traces" && status = error }',
    '{ span.http.status_code >= 500 } | count() > 1',
    '{ name =~ "GET.*" } >> { kind = server }',
    '{ duration > 1ms && .http.route = "/x" } | select(span.http.status_code)',
    '{ } | avg(duration) > 1s',
    '{ status = error } && { kind = client } ~ { .b = 1.5 }',
  ],
  pyroscope: ['process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="fuzz-profiles"}', 'memory:alloc_space:bytes:space:bytes{}', 'cpu{service_name=~"f.*"}'],
};

const TOKENS = ['(', ')', '{', '}', '[', ']', '"', '`', '|', '|=', '!~', '=~', ',', '1e309', '-', '/', '%', '^', ' by ', ' without ', ' offset ', '@', 'NaN', 'Inf', '\\', '\u0000', '\uffff', '9'.repeat(30), '..', '&&', '||', '>>', '~', ':', '5m', '0s', '-1m', '[1s:0s]', 'sum(', 'rate(', ' unwrap ', ' | json ', ' | logfmt ', '{{', '}}', '\n', '"\\x"', ' bool ', 'on(', 'group_left', 'topk(', '1e-400', '0x1p3', "'", 'nil'];

/** A small seeded generator (xorshift32), so a failure names a query that can be run again. */
function generator(seed: number) {
  let x = seed >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  const pick = <T,>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const int = (n: number) => Math.floor(next() * n);
  const mutate = (s: string): string => {
    let out = s;
    for (let k = 1 + int(4); k > 0; k--) {
      const i = int(out.length + 1);
      switch (int(5)) {
        case 0:
          out = out.slice(0, i) + pick(TOKENS) + out.slice(i);
          break;
        case 1:
          out = out.slice(0, i) + out.slice(i + 1 + int(5));
          break;
        case 2:
          out = out.slice(0, i) + String.fromCharCode(int(128)) + out.slice(i + 1);
          break;
        case 3: {
          const j = int(out.length);
          out = out.slice(0, i) + out.slice(Math.min(i, j), Math.max(i, j)) + out.slice(i);
          break;
        }
        default:
          out = out.slice(0, i) + out.slice(0, int(out.length)) + out.slice(i);
      }
    }
    return out;
  };
  return { next, pick, mutate };
}

describe('query APIs under hostile queries (embedded)', () => {
  let floe: FloeUnderTest;
  let headers: Record<string, string>;
  const tenant = 'fuzzed';

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    const key = (await floe.bootstrap(tenant)).api_key;
    headers = { authorization: `Bearer ${key}`, 'x-tenant-id': tenant };
    const creds = { apiKey: key, tenant };
    const trace = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, creds), 'fuzz-traces');
    await sendSampleLogs(protoLogExporter(floe.otlpHttpUrl, creds), 'fuzz-logs');
    await sendSampleMetrics(protoMetricExporter(floe.otlpHttpUrl, creds), 'fuzz-metrics');
    expect((await postProfiles(floe.otlpHttpUrl, creds, sampleProfilesRequest('fuzz-profiles', { traceId: trace.traceId, spanId: trace.spanIds[0]! }, BigInt(Date.now()) * 1_000_000n))).status).toBe(200);
    // Every signal stored before the queries start, so they run over data and not only parse.
    await waitFor('the sample trace', async () => ((await fetch(`${floe.routerUrl}/tracequery/api/traces/${trace.traceId}`, { headers })).status === 200 ? true : undefined), 30_000, 200);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('regexes that backtrack exponentially in JavaScript answer at once over a stored label value', async () => {
    // A label value of 40 a's and a b: `(a|a)+` takes a backtracking engine ~2^40 steps on it,
    // which would stall the router for every tenant; RE2's automata (Prometheus's engine) take 41.
    const hostile = `${'a'.repeat(40)}b`;
    const timeseries = [{ labels: [{ name: '__name__', value: 'fuzz_rx' }, { name: 'v', value: hostile }], samples: [{ value: 1, timestamp: BigInt(Date.now()) }] }];
    const write = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', headers: { ...headers, ...REMOTE_WRITE_HEADERS }, body: compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries }))) });
    expect(write.status).toBe(204);
    const query = async (promql: string) => {
      const res = await fetch(`${floe.routerUrl}/metricquery/api/v1/query?query=${encodeURIComponent(promql)}`, { headers, signal: AbortSignal.timeout(30_000) });
      expect(res.status).toBe(200);
      return ((await res.json()) as { data: { result: Array<{ metric: Record<string, string> }> } }).data.result;
    };
    await waitFor('the series', async () => ((await query('fuzz_rx')).length === 1 ? true : undefined), 30_000, 200);
    const [matcher, replaced, negated] = await Promise.all([
      query('fuzz_rx{v=~"(a|a)+"}'),
      query('label_replace(fuzz_rx, "x", "$1", "v", "(a+)+")'),
      query('fuzz_rx{v!~"(.*a){30}"}'),
    ]);
    expect(matcher).toEqual([]);
    expect(replaced.map((r) => r.metric)).toEqual([{ __name__: 'fuzz_rx', v: hostile }]);
    expect(negated.map((r) => r.metric)).toEqual([{ __name__: 'fuzz_rx', v: hostile }]);
  });

  it.each([1, 2, 3])('seed %i: 150 mutated queries over every read API answer 2xx, 4xx or 501 in the envelope', async (seed) => {
    const g = generator(seed * 7919);
    const now = Math.floor(Date.now() / 1000);
    const q = encodeURIComponent;
    const endpoints: Array<[string, (query: string) => string]> = [
      ['logql', (s) => `/logquery/loki/api/v1/query_range?query=${q(s)}&start=${now - 3600}&end=${now}&step=${g.pick(['60', '1', '0.001', '-5', 'abc', '1h'])}&limit=${g.pick(['10', '0', '-1', '99999999', 'x'])}&direction=${g.pick(['backward', 'forward', 'x'])}`],
      ['logql', (s) => `/logquery/loki/api/v1/query?query=${q(s)}&time=${now}`],
      ['logql', (s) => `/logquery/loki/api/v1/series?match[]=${q(s)}&start=${now - 3600}&end=${now}`],
      ['logql', (s) => `/logquery/loki/api/v1/detected_fields?query=${q(s)}&start=${now - 3600}&end=${now}`],
      ['promql', (s) => `/metricquery/api/v1/query_range?query=${q(s)}&start=${now - 3600}&end=${now}&step=${g.pick(['60', '1', '0.001', '-5', 'abc', '1h', '1e-9'])}`],
      ['promql', (s) => `/metricquery/api/v1/query?query=${q(s)}&time=${g.pick([String(now), 'x', '1e20', '-1'])}`],
      ['promql', (s) => `/metricquery/api/v1/series?match[]=${q(s)}`],
      ['promql', (s) => `/metricquery/api/v1/labels?match[]=${q(s)}`],
      ['traceql', (s) => `/tracequery/api/search?q=${q(s)}&start=${now - 3600}&end=${now}&spss=${g.pick(['3', '0', '-1', 'x'])}&limit=${g.pick(['20', '0', 'x'])}`],
      ['traceql', (s) => `/tracequery/api/v2/search/tag/${q(s.slice(0, 20))}/values?q=${q(s)}`],
      ['pyroscope', (s) => `/profilequery/render?query=${q(s)}&from=now-1h&until=now&format=json&maxNodes=${g.pick(['10', '0', '-1', 'x'])}`],
      ['pyroscope', (s) => `/profilequery/label-values?label=${q(s.slice(0, 10))}&query=${q(s)}`],
    ];
    const statuses = new Map<number, number>();
    for (let n = 0; n < 150; n++) {
      const [lang, url] = g.pick(endpoints);
      const seedQuery = g.pick(SEEDS[lang]!);
      // Lone surrogates cannot be sent as URL text at all; they are replaced, not skipped.
      const query = (g.next() < 0.15 ? seedQuery : g.mutate(seedQuery)).replace(/[\ud800-\udfff]/g, '?');
      const path = url(query);
      const res = await fetch(`${floe.routerUrl}${path}`, { headers, signal: AbortSignal.timeout(30_000) });
      const body = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const acceptable = res.status < 500 || res.status === 501;
      expect(acceptable, `${res.status} for ${path}: ${body.slice(0, 300)}`).toBe(true);
      if (res.status >= 400 && !path.startsWith('/profilequery')) {
        // Loki's, Prometheus's and Tempo's clients read the shared envelope (Pyroscope's has its own).
        expect(JSON.parse(body), `${res.status} for ${path}`).toMatchObject({ status: 'error', errorType: expect.any(String), error: expect.any(String) });
      }
    }
    // The generator's queries reach evaluation too, not only the parsers' refusals.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0);
  }, 180_000);
});
