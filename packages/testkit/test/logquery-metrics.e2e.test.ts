import { SeverityNumber } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitLogRecords, protoLogExporter, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * LogQL metric queries and the log-volume / discovery endpoints end to end, in both modes: log
 * records at known offsets from a minute-aligned base time go in over OTLP, and the matrix,
 * vector and discovery answers below are worked out by hand from them.
 *
 * With start = base + 60s, end = base + 120s and step = 60s, a [1m] range evaluates at t0 = base
 * + 60s over (base, base + 60s] and at t1 = base + 120s over (base + 60s, base + 120s].
 */

type Attrs = Record<string, string | number | boolean>;
interface Rec {
  at: number; // seconds after base
  sev: SeverityNumber;
  sevText?: string;
  body: string;
  attrs?: Attrs;
}
interface Service {
  resource: Attrs;
  records: Rec[];
}

const SERVICES: Service[] = [
  {
    resource: { 'service.name': 'checkout', 'deployment.environment': 'prod' },
    records: [
      { at: 10, sev: SeverityNumber.INFO, sevText: 'INFO', body: 'GET /cart 200', attrs: { latency_ms: 120, user: 'ann', code: '200', ratio: 0.5 } },
      { at: 20, sev: SeverityNumber.ERROR, sevText: 'ERROR', body: 'payment failed', attrs: { latency_ms: 900, user: 'bob', retry: true } },
      { at: 70, sev: SeverityNumber.INFO, sevText: 'INFO', body: 'GET /cart 200', attrs: { latency_ms: 80, user: 'ann', code: '404' } },
    ],
  },
  {
    resource: { 'service.name': 'billing', 'deployment.environment': 'stage' },
    records: [
      { at: 30, sev: SeverityNumber.WARN, sevText: 'WARN', body: 'invoice slow', attrs: { latency_ms: 400 } },
      { at: 90, sev: SeverityNumber.UNSPECIFIED, body: 'no level' },
    ],
  },
  {
    resource: { 'service.name': 'web' },
    records: [
      { at: 40, sev: SeverityNumber.DEBUG, sevText: 'DEBUG', body: 'GET /health 200' },
      { at: 100, sev: SeverityNumber.ERROR, sevText: 'ERROR', body: 'GET /cart 500' },
    ],
  },
];

/** A minute-aligned base about ten minutes ago whose first four minutes lie in one hour (one "chunk" per stream). */
function baseMs(): number {
  let base = Math.floor((Date.now() - 10 * 60_000) / 60_000) * 60_000;
  if (base % 3_600_000 > 3_600_000 - 5 * 60_000) base -= 10 * 60_000;
  return base;
}

async function emit(url: string, auth: { apiKey: string; tenant: string }, services: Service[], base: number): Promise<void> {
  for (const svc of services) {
    const records = svc.records.map((r) => ({ timeUnixNano: BigInt(base + r.at * 1000) * 1_000_000n + 123n, severityNumber: r.sev, severityText: r.sevText, body: r.body, attributes: r.attrs }));
    await emitLogRecords(protoLogExporter(url, auth), svc.resource, { name: 'floe-e2e-logquery-metrics', version: '1.0.0' }, records);
  }
}

interface Envelope<T = unknown> {
  status: string;
  data: T;
  errorType?: string;
  error?: string;
}

describe.each<FloeMode>(['embedded', 'cluster'])('LogQL metric queries end to end (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'acme';
  const base = baseMs();
  const sec = (offset: number) => base / 1000 + offset;
  const ns = (offset: number) => (BigInt(base + offset * 1000) * 1_000_000n).toString();
  const t0 = sec(60);
  const t1 = sec(120);

  const getJson = async <T = Envelope>(path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${floe.routerUrl}/logquery${path}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, ...headers } });
    return { status: res.status, body: (await res.json()) as T };
  };
  const qs = (params: Record<string, string>) => new URLSearchParams(params).toString();
  /** A range query over the default grid (start base+60s, end base+120s, step 60s as Grafana spells it). */
  const range = (query: string, extra: Record<string, string> = {}) =>
    getJson(`/loki/api/v1/query_range?${qs({ query, start: ns(60), end: ns(120), step: '60000ms', ...extra })}`, { 'X-Loki-Response-Encoding-Flags': 'categorize-labels' });
  const matrix = (result: Array<[Record<string, string>, Array<[number, string]>]>) => ({
    status: 200,
    body: { status: 'success', data: { resultType: 'matrix', result: result.map(([metric, values]) => ({ metric, values })), stats: {} } },
  });

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
    const otherKey = (await floe.bootstrap('globex')).api_key;
    await emit(floe.otlpHttpUrl, { apiKey: key, tenant }, SERVICES, base);
    // Another tenant's line in the same windows: never counted below.
    await emit(floe.otlpHttpUrl, { apiKey: otherKey, tenant: 'globex' }, [{ resource: { 'service.name': 'checkout' }, records: [{ at: 15, sev: SeverityNumber.ERROR, sevText: 'ERROR', body: 'intruder' }] }], base);
    const countAll = (headers?: Record<string, string>) =>
      getJson<Envelope<{ result: Array<{ value: [number, string] }> }>>(`/loki/api/v1/query?${qs({ query: 'sum(count_over_time({service_name=~".+"}[5m]))', time: ns(180) })}`, headers);
    await waitFor('all log lines to be countable', async () => {
      const r = await countAll();
      return r.status === 200 && r.body.data.result[0]?.value[1] === '7' ? true : undefined;
    }, 60_000, 250);
    // Until the intruder is stored, the answers below would be right without isolation doing anything.
    await waitFor("the other tenant's line to be countable", async () => {
      const r = await countAll({ authorization: `Bearer ${otherKey}`, 'x-tenant-id': 'globex' });
      return r.status === 200 && r.body.data.result[0]?.value[1] === '1' ? true : undefined;
    }, 60_000, 250);
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it("the log volume histogram query (Grafana's, with detected_level filled)", async () => {
    expect(await range('sum by (level, detected_level) (count_over_time({service_name=~".+"} | drop __error__ [1m]))')).toEqual(
      matrix([
        [{ detected_level: 'debug', level: 'DEBUG' }, [[t0, '1']]],
        [{ detected_level: 'error', level: 'ERROR' }, [[t0, '1'], [t1, '1']]],
        [{ detected_level: 'info', level: 'INFO' }, [[t0, '1'], [t1, '1']]],
        [{ detected_level: 'unknown' }, [[t1, '1']]],
        [{ detected_level: 'warn', level: 'WARN' }, [[t0, '1']]],
      ]),
    );
  });

  it('range functions: bare series per (service_name, level), rates, unwrap', async () => {
    expect(await range('count_over_time({service_name="checkout"}[1m])')).toEqual(
      matrix([
        [{ service_name: 'checkout', level: 'ERROR' }, [[t0, '1']]],
        [{ service_name: 'checkout', level: 'INFO' }, [[t0, '1'], [t1, '1']]],
      ]),
    );
    expect(await range('sum(rate({service_name=~".+"}[1m]))')).toEqual(matrix([[{}, [[t0, '0.06666666666666667'], [t1, '0.05']]]]));
    expect(await range('sum by (service_name) (bytes_over_time({service_name=~".+"}[1m]))')).toEqual(
      matrix([
        [{ service_name: 'billing' }, [[t0, '12'], [t1, '8']]],
        [{ service_name: 'checkout' }, [[t0, '27'], [t1, '13']]],
        [{ service_name: 'web' }, [[t0, '15'], [t1, '13']]],
      ]),
    );
    expect(await range('sum by (service_name) (sum_over_time({service_name=~".+"} | unwrap latency_ms | __error__="" [1m]))')).toEqual(
      matrix([
        [{ service_name: 'billing' }, [[t0, '400']]],
        [{ service_name: 'checkout' }, [[t0, '1020'], [t1, '80']]],
      ]),
    );
    expect(await range('avg_over_time({service_name="checkout"} | unwrap latency_ms [1m]) by (service_name)')).toEqual(matrix([[{ service_name: 'checkout' }, [[t0, '510'], [t1, '80']]]]));
    expect(await range('quantile_over_time(0.5, {service_name=~".+"} | unwrap latency_ms [2m]) by (deployment.environment)', { start: ns(120), end: ns(120) })).toEqual(
      matrix([
        [{ 'deployment.environment': 'prod' }, [[t1, '120']]],
        [{ 'deployment.environment': 'stage' }, [[t1, '400']]],
      ]),
    );
  });

  it('aggregation, topk, sort, arithmetic, comparison, set operators, label_replace', async () => {
    const bySvc = 'sum by (service_name) (count_over_time({service_name=~".+"}[1m]))'; // checkout 2,1; billing 1,1; web 1,1
    expect(await range(`topk(1, ${bySvc})`)).toEqual(
      matrix([
        [{ service_name: 'billing' }, [[t1, '1']]],
        [{ service_name: 'checkout' }, [[t0, '2']]],
      ]),
    );
    const sorted = await range(`sort_desc(sum by (service_name) (count_over_time({service_name=~".+"}[2m])))`, { start: ns(120), end: ns(120) });
    expect((sorted.body as Envelope<{ result: Array<{ metric: Record<string, string> }> }>).data.result.map((s) => s.metric.service_name)).toEqual(['checkout', 'billing', 'web']);
    expect(await range(`${bySvc} * 10 - 5`)).toEqual(
      matrix([
        [{ service_name: 'billing' }, [[t0, '5'], [t1, '5']]],
        [{ service_name: 'checkout' }, [[t0, '15'], [t1, '5']]],
        [{ service_name: 'web' }, [[t0, '5'], [t1, '5']]],
      ]),
    );
    expect(await range(`${bySvc} > 1`)).toEqual(matrix([[{ service_name: 'checkout' }, [[t0, '2']]]]));
    expect(await range(`${bySvc} / on (service_name) sum by (service_name, level) (count_over_time({level="ERROR"}[1m]))`)).toEqual(
      matrix([
        [{ service_name: 'checkout' }, [[t0, '2']]],
        [{ service_name: 'web' }, [[t1, '1']]],
      ]),
    );
    expect(await range(`${bySvc} unless sum by (service_name) (count_over_time({level="ERROR"}[1m]))`)).toEqual(
      matrix([
        [{ service_name: 'billing' }, [[t0, '1'], [t1, '1']]],
        [{ service_name: 'checkout' }, [[t1, '1']]],
        [{ service_name: 'web' }, [[t0, '1']]],
      ]),
    );
    expect(await range(`label_replace(${bySvc}, "team", "team-$1", "service_name", "(b.*)")`)).toEqual(
      matrix([
        [{ service_name: 'billing', team: 'team-billing' }, [[t0, '1'], [t1, '1']]],
        [{ service_name: 'checkout' }, [[t0, '2'], [t1, '1']]],
        [{ service_name: 'web' }, [[t0, '1'], [t1, '1']]],
      ]),
    );
  });

  it("instant queries: Grafana's health check returns 2; vectors at `time`; scalars", async () => {
    expect(await getJson(`/loki/api/v1/query?${qs({ query: 'vector(1)+vector(1)', time: '4' })}`)).toEqual({
      status: 200,
      body: { status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [4, '2'] }], stats: {} } },
    });
    expect(await getJson(`/api/v1/query?${qs({ query: 'sum by (service_name) (count_over_time({service_name=~".+"}[2m]))', time: ns(120) })}`)).toEqual({
      status: 200,
      body: {
        status: 'success',
        data: {
          resultType: 'vector',
          result: [
            { metric: { service_name: 'billing' }, value: [t1, '2'] },
            { metric: { service_name: 'checkout' }, value: [t1, '3'] },
            { metric: { service_name: 'web' }, value: [t1, '2'] },
          ],
          stats: {},
        },
      },
    });
    expect(await getJson(`/loki/api/v1/query?${qs({ query: '1 + 1', time: '10' })}`)).toEqual({ status: 200, body: { status: 'success', data: { resultType: 'scalar', result: [10, '2'], stats: {} } } });
    // Nothing in the window: an empty vector.
    expect((await getJson(`/loki/api/v1/query?${qs({ query: 'count_over_time({service_name="web"}[1m])', time: ns(-600) })}`)).body).toEqual({ status: 'success', data: { resultType: 'vector', result: [], stats: {} } });
  });

  it('index/stats, index/volume and index/volume_range', async () => {
    const win = { start: ns(0), end: ns(180) };
    expect(await getJson(`/loki/api/v1/index/stats?${qs({ query: '{service_name="checkout"}', ...win })}`)).toEqual({ status: 200, body: { streams: 2, chunks: 2, entries: 3, bytes: 40 } });
    expect((await getJson(`/loki/api/v1/index/stats?${qs({ query: '{service_name="nope"}', ...win })}`)).body).toEqual({ streams: 0, chunks: 0, entries: 0, bytes: 0 });

    const vector = (result: Array<[Record<string, string>, string]>) => ({
      status: 200,
      body: { status: 'success', data: { resultType: 'vector', result: result.map(([metric, v]) => ({ metric, value: [sec(180), v] })), stats: {} } },
    });
    expect(await getJson(`/loki/api/v1/index/volume?${qs({ query: '{service_name=~".+"}', ...win })}`)).toEqual(
      vector([
        [{ service_name: 'checkout' }, '40'],
        [{ service_name: 'web' }, '28'],
        [{ service_name: 'billing' }, '20'],
      ]),
    );
    expect(await getJson(`/loki/api/v1/index/volume?${qs({ query: '{service_name=~".+"}', targetLabels: 'deployment.environment', limit: '2', ...win })}`)).toEqual(
      vector([
        [{ 'deployment.environment': 'prod' }, '40'],
        [{}, '28'],
      ]),
    );
    expect(await getJson(`/loki/api/v1/index/volume?${qs({ query: '{service_name=~".+"}', targetLabels: 'deployment.environment', aggregateBy: 'labels', ...win })}`)).toEqual(
      vector([[{ 'deployment.environment': '' }, '60']]),
    );
    expect(await getJson(`/loki/api/v1/index/volume_range?${qs({ query: '{service_name=~".+"}', start: ns(60), end: ns(120), step: '60' })}`)).toEqual(
      matrix([
        [{ service_name: 'checkout' }, [[t0, '27'], [t1, '13']]],
        [{ service_name: 'web' }, [[t0, '15'], [t1, '13']]],
        [{ service_name: 'billing' }, [[t0, '12'], [t1, '8']]],
      ]),
    );
  });

  it('detected_fields, detected_field values and detected_labels', async () => {
    const win = { start: ns(0), end: ns(180) };
    expect(await getJson(`/loki/api/v1/detected_fields?${qs({ query: '{service_name="checkout"}', ...win })}`)).toEqual({
      status: 200,
      body: {
        fields: [
          { label: 'code', type: 'int', cardinality: 2, parsers: null },
          { label: 'latency_ms', type: 'int', cardinality: 3, parsers: null },
          { label: 'ratio', type: 'float', cardinality: 1, parsers: null },
          { label: 'retry', type: 'boolean', cardinality: 1, parsers: null },
          { label: 'user', type: 'string', cardinality: 2, parsers: null },
        ],
        limit: 100,
      },
    });
    // A line filter narrows the sample; `limit` caps the fields.
    expect((await getJson(`/loki/api/v1/detected_fields?${qs({ query: '{service_name="checkout"} |= "payment"', limit: '2', ...win })}`)).body).toEqual({
      fields: [
        { label: 'latency_ms', type: 'int', cardinality: 1, parsers: null },
        { label: 'retry', type: 'boolean', cardinality: 1, parsers: null },
      ],
      limit: 2,
    });
    expect((await getJson(`/loki/api/v1/detected_fields?${qs({ query: '{service_name="nope"}', ...win })}`)).body).toEqual({ fields: [], limit: 100 });
    expect((await getJson(`/loki/api/v1/detected_field/user/values?${qs({ query: '{service_name=~".+"}', ...win })}`)).body).toEqual({ values: ['ann', 'bob'], limit: 1000 });
    expect((await getJson(`/loki/api/v1/detected_labels?${qs({ query: '{service_name=~".+"}', ...win })}`)).body).toEqual({
      detectedLabels: [
        { label: 'deployment.environment', cardinality: 2 },
        { label: 'level', cardinality: 4 },
        { label: 'service_name', cardinality: 3 },
      ],
    });
  });

  it.each<[string, Record<string, string>, number, string, RegExp]>([
    ['without (…) non-empty', { query: 'sum without (level) (count_over_time({service_name="web"}[1m]))' }, 501, 'not_implemented', /without \(…\) with a non-empty label list is not supported yet \(line 1, col 5\)/],
    ['or vector(0)', { query: 'sum(count_over_time({service_name="web"}[1m])) or vector(0)' }, 501, 'not_implemented', /or vector\(…\)/],
    ['many-to-one with group_left', { query: 'sum by (service_name, level) (count_over_time({service_name="checkout"}[1m])) / ignoring (level) group_left sum by (service_name) (count_over_time({service_name="checkout"}[1m]))' }, 501, 'not_implemented', /many-to-one/],
    ['unwrap function without unwrap', { query: 'sum_over_time({service_name="web"}[1m])' }, 400, 'bad_data', /invalid aggregation sum_over_time without unwrap/],
    ['zero step', { query: 'count_over_time({service_name="web"}[1m])', step: '0' }, 400, 'bad_data', /step/],
    ['too many points', { query: 'count_over_time({service_name="web"}[1m])', step: '1ms' }, 400, 'bad_data', /exceeded maximum resolution of 11,000 points/],
    ['metric parse error', { query: 'sum by (level) (count_over_time({service_name="web"}))' }, 400, 'bad_data', /^parse error at line 1, col/],
  ])('%s → %i', async (_name, params, status, errorType, message) => {
    const r = await getJson(`/loki/api/v1/query_range?${qs({ start: ns(60), end: ns(120), step: '60', ...params })}`);
    expect(r.status).toBe(status);
    expect(r.body.status).toBe('error');
    expect(r.body.errorType).toBe(errorType);
    expect(r.body.error).toMatch(message);
  });

  it('discovery endpoints refuse bad parameters in the envelope; tail stays 501', async () => {
    for (const [path, status, message] of [
      ['/loki/api/v1/index/stats', 400, /missing query parameter/],
      [`/loki/api/v1/index/volume?${qs({ query: '{service_name="web"}', aggregateBy: 'pods' })}`, 400, /invalid aggregateBy/],
      [`/loki/api/v1/detected_fields?${qs({ query: '{service_name="web"}', limit: 'x' })}`, 400, /invalid limit/],
      [`/loki/api/v1/tail?${qs({ query: '{service_name="web"}' })}`, 501, /\/tail is not implemented yet/],
    ] as Array<[string, number, RegExp]>) {
      const r = await getJson(path);
      expect({ path, status: r.status }).toEqual({ path, status });
      expect(r.body.status).toBe('error');
      expect(r.body.error).toMatch(message);
    }
  });
});
