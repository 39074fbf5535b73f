import { SeverityNumber } from '@opentelemetry/api';
import type { LogRecordExporter } from '@opentelemetry/sdk-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitLogRecords, protoLogExporter, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * The Loki-compatible log query API end to end, in both modes: known log records (three services,
 * every severity case, attributes of every type incl. dotted keys, trace context) go in through
 * the OpenTelemetry logs SDK over OTLP, and come back through /logquery exactly as written below:
 * selectors with each matcher, line filter chains, label filters, direction and limit, both URL
 * prefixes, the categorize-labels encoding with structured metadata, the label browser, errors in
 * the envelope (400 with position, 501), and never another tenant's lines.
 */

type Attrs = Record<string, string | number | boolean>;
interface Rec {
  id: string;
  sev: SeverityNumber;
  sevText?: string;
  body: string;
  attrs?: Attrs;
  span?: { traceId: string; spanId: string };
}
interface Service {
  resource: Attrs;
  records: Rec[];
}

const T1 = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
const T2 = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };

/** Records in emission order: each one 1 ms after the previous (ids c1 … w2 name them below). */
const SERVICES: Service[] = [
  {
    resource: { 'service.name': 'checkout', 'k8s.pod.name': 'checkout-1', 'deployment.environment': 'prod', 'host.cpus': 4 },
    records: [
      { id: 'c1', sev: SeverityNumber.INFO, sevText: 'INFO', body: 'GET /cart 200', attrs: { 'http.route': '/cart', 'http.status_code': 200, user: 'ann' }, span: T1 },
      { id: 'c2', sev: SeverityNumber.ERROR, sevText: 'ERROR', body: 'payment failed: card "declined"', attrs: { 'http.status_code': 502, duration_ms: 1532.5, retry: true, user: 'bob' }, span: T1 },
      { id: 'c3', sev: SeverityNumber.WARN, sevText: 'WARN', body: 'slow response: 100% of budget', attrs: { 'http.status_code': 200, 'k8s.pod.name': 'override-pod' } },
    ],
  },
  {
    resource: { 'service.name': 'billing', 'k8s.pod.name': 'billing-1', 'deployment.environment': 'stage' },
    records: [
      { id: 'b1', sev: SeverityNumber.INFO, sevText: 'INFO', body: 'invoice created id=7', attrs: { 'invoice.id': 7, user: 'ann' } },
      { id: 'b2', sev: SeverityNumber.UNSPECIFIED, body: "'); DROP TABLE logs; -- \\ backslash" },
      { id: 'b3', sev: SeverityNumber.DEBUG, sevText: 'DEBUG', body: 'cache miss key=a.b*c', attrs: { 'cache.hit': false } },
    ],
  },
  {
    resource: { 'service.name': 'web' },
    records: [
      { id: 'w1', sev: SeverityNumber.INFO, sevText: 'INFO', body: 'GET /health 200', attrs: { 'http.status_code': 200 } },
      { id: 'w2', sev: SeverityNumber.ERROR, sevText: 'ERROR', body: 'GET /cart 500', attrs: { 'http.status_code': 500, 'http.route': '/cart' }, span: T2 },
    ],
  },
];

const ALL = SERVICES.flatMap((s) => s.records);
const SERVICE_OF = new Map(SERVICES.flatMap((s) => s.records.map((r) => [r.id, String(s.resource['service.name'])] as const)));

/** Emits every service's records through the real logs SDK; returns each record's time in ns. */
async function emit(exporter: () => LogRecordExporter, services: Service[], startMs: number): Promise<Map<string, bigint>> {
  const times = new Map<string, bigint>();
  let i = 0;
  for (const svc of services) {
    const records = svc.records.map((r) => {
      const timeUnixNano = BigInt(startMs) * 1_000_000n + BigInt(i++) * 1_000_000n + 123n;
      times.set(r.id, timeUnixNano);
      return { timeUnixNano, severityNumber: r.sev, severityText: r.sevText, body: r.body, attributes: r.attrs, span: r.span };
    });
    await emitLogRecords(exporter(), svc.resource, { name: 'floe-e2e-logquery', version: '1.0.0', attributes: { 'scope.kind': 'e2e' } }, records);
  }
  return times;
}

interface StreamsBody {
  status: string;
  data: { resultType: string; result: Array<{ stream: Record<string, string>; values: Array<[string, string, Record<string, unknown>?]> }>; encodingFlags?: string[]; stats: unknown };
}

describe.each<FloeMode>(['embedded', 'cluster'])('log query API end to end (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  let times: Map<string, bigint>;
  const tenant = 'acme';
  const other = 'globex';
  const startMs = Date.now() - 10 * 60_000;

  const request = (path: string, o: { key?: string; tenant?: string; headers?: Record<string, string> } = {}) =>
    fetch(`${floe.routerUrl}/logquery${path}`, { headers: { authorization: `Bearer ${o.key ?? key}`, 'x-tenant-id': o.tenant ?? tenant, ...o.headers } });
  const getJson = async <T = unknown>(path: string, o?: Parameters<typeof request>[1]) => {
    const res = await request(path, o);
    return { status: res.status, body: (await res.json()) as T };
  };
  const qs = (params: Record<string, string>) => new URLSearchParams(params).toString();
  const queryRange = (query: string, params: Record<string, string> = {}, o?: Parameters<typeof request>[1], prefix = '/loki/api/v1') =>
    getJson<StreamsBody>(`${prefix}/query_range?${qs({ query, ...params })}`, o);

  const idOf = (ts: string) => [...times].find(([, ns]) => ns.toString() === ts)?.[0] ?? `unknown:${ts}`;
  /** Record ids of a streams result, newest first (ties cannot happen: every record has its own ms). */
  const ids = (body: StreamsBody) =>
    body.data.result
      .flatMap((s) => s.values.map((v) => v[0]))
      .sort((a, b) => (BigInt(b) > BigInt(a) ? 1 : -1))
      .map(idOf);

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
    otherKey = (await floe.bootstrap(other)).api_key;
    times = await emit(() => protoLogExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), SERVICES, startMs);
    // The same service name, a line that matches most filters below, in another tenant.
    await emit(() => protoLogExporter(floe.otlpHttpUrl, { apiKey: otherKey, tenant: other }), [
      { resource: { 'service.name': 'checkout', 'k8s.pod.name': 'intruder-pod' }, records: [{ id: 'x1', sev: SeverityNumber.ERROR, sevText: 'ERROR', body: 'GET /cart 200 intruder', attrs: { user: 'ann', 'http.status_code': 500 } }] },
    ], startMs);
    await waitFor('all log lines to be queryable', async () => {
      const r = await queryRange('{service_name=~".+"}');
      return r.status === 200 && ids(r.body).length === ALL.length ? true : undefined;
    }, 60_000, 250);
    await waitFor('the other tenant\'s line to be queryable', async () => {
      const r = await queryRange('{service_name=~".+"}', {}, { key: otherKey, tenant: other });
      return r.status === 200 && r.body.data.result.length === 1 ? true : undefined;
    }, 60_000, 250);
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it('query_range answers a streams result, newest first; without categorize-labels each entry\'s metadata joins its stream labels, as Loki does', async () => {
    const r = await queryRange('{service_name="checkout"}');
    expect(r.status).toBe(200);
    const line = (id: string) => [times.get(id)!.toString(), ALL.find((x) => x.id === id)!.body];
    const checkout = { service_name: 'checkout', 'k8s.pod.name': 'checkout-1', 'deployment.environment': 'prod', 'host.cpus': '4', 'scope.kind': 'e2e' };
    const t1 = { trace_id: T1.traceId, span_id: T1.spanId };
    expect(r.body).toEqual({
      status: 'success',
      data: {
        resultType: 'streams',
        result: [
          { stream: { ...checkout, level: 'ERROR', 'http.status_code': '502', duration_ms: '1532.5', retry: 'true', user: 'bob', ...t1 }, values: [line('c2')] },
          { stream: { ...checkout, level: 'INFO', 'http.route': '/cart', 'http.status_code': '200', user: 'ann', ...t1 }, values: [line('c1')] },
          // The record's own k8s.pod.name wins over its resource's.
          { stream: { ...checkout, level: 'WARN', 'http.status_code': '200', 'k8s.pod.name': 'override-pod' }, values: [line('c3')] },
        ],
        stats: {},
      },
    });
    // A record without a severity has no level label; resource and scope attributes still join.
    const billing = await queryRange('{service_name="billing", level=""}');
    expect(billing.body.data.result).toEqual([
      { stream: { service_name: 'billing', 'k8s.pod.name': 'billing-1', 'deployment.environment': 'stage', 'scope.kind': 'e2e' }, values: [line('b2')] },
    ]);
    // Records with the same labels share a stream; its entries stay newest first.
    const web = await queryRange('{service_name="web"} |= "GET /" != "500"');
    expect(web.body.data.result).toEqual([{ stream: { service_name: 'web', level: 'INFO', 'http.status_code': '200', 'scope.kind': 'e2e' }, values: [line('w1')] }]);
  });

  it.each<[string, string[]]>([
    // Selectors: each matcher, the label aliases, attributes (record over resource), dotted keys.
    ['{service="billing"}', ['b3', 'b2', 'b1']],
    ['{job="web"}', ['w2', 'w1']],
    ['{service.name="web"}', ['w2', 'w1']],
    ['{level="ERROR"}', ['w2', 'c2']],
    ['{detected_level="INFO"}', ['w1', 'b1', 'c1']],
    ['{service_name=~"bill.*|web"}', ['w2', 'w1', 'b3', 'b2', 'b1']],
    ['{service_name=~"bill"}', []],
    ['{service_name=~".+", level!="INFO"}', ['w2', 'b3', 'b2', 'c3', 'c2']],
    ['{service_name=~".+", level!~"INFO|ERROR"}', ['b3', 'b2', 'c3']],
    ['{k8s.pod.name="checkout-1"}', ['c2', 'c1']],
    ['{k8s.pod.name="override-pod"}', ['c3']],
    ['{service_name=~".+", k8s.pod.name=""}', ['w2', 'w1']],
    ['{service_name=~".+", k8s.pod.name!~"checkout-.*"}', ['w2', 'w1', 'b3', 'b2', 'b1', 'c3']],
    ['{deployment.environment="prod"}', ['c3', 'c2', 'c1']],
    [`{trace_id="${T1.traceId}"}`, ['c2', 'c1']],
    [`{service_name=~".+", span_id="${T2.spanId}"}`, ['w2']],
    // Line filters, chained and with `or`; text special to SQL, LIKE or regexes matches literally.
    ['{service_name=~".+"} |= "GET"', ['w2', 'w1', 'c1']],
    ['{service_name=~".+"} |= "GET" != "health"', ['w2', 'c1']],
    ['{service_name=~".+"} |~ "GET /cart [0-9]+"', ['w2', 'c1']],
    ['{service_name=~".+"} !~ "GET|invoice"', ['b3', 'b2', 'c3', 'c2']],
    ['{service_name=~".+"} |= "health" or "invoice"', ['w1', 'b1']],
    [`{service_name=~".+"} |= "'); DROP TABLE logs; --"`, ['b2']],
    ['{service_name=~".+"} |= "100%"', ['c3']],
    ['{service_name=~".+"} |= "a.b*c"', ['b3']],
    ['{service_name=~".+"} |= "a_b"', []],
    ['{service_name=~".+"} |= "\\\\"', ['b2']],
    ['{service_name=~".+"} |= "\\""', ['c2']],
    ['{service_name=~".+"} |= `"declined"`', ['c2']],
    // Label filters after a stage: typed attributes, numbers, and / or / comma.
    ['{service_name=~".+"} | json | http.status_code >= 500', ['w2', 'c2']],
    ['{service_name=~".+"} | json | http.status_code < 300 and user="ann"', ['c1']],
    ['{service_name=~".+"} | http.status_code = 200', ['w1', 'c3', 'c1']],
    ['{service_name=~".+"} | http.status_code = 200 or invoice.id > 5', ['w1', 'b1', 'c3', 'c1']],
    ['{service_name=~".+"} | logfmt | user="ann", level="INFO"', ['b1', 'c1']],
    ['{service_name=~".+"} | duration_ms > 1000', ['c2']],
    ['{service_name=~".+"} | retry="true"', ['c2']],
    ['{service_name=~".+"} | cache.hit="false"', ['b3']],
    ['{service_name=~".+"} | host.cpus >= 4', ['c3', 'c2', 'c1']],
    ['{service_name=~".+"} | user!="ann"', ['w2', 'w1', 'b3', 'b2', 'c3', 'c2']],
    ['{service_name=~".+"} | http.route=~"/ca.*"', ['w2', 'c1']],
    ['{service_name=~".+"} | line_format "{{.user}}" | drop __error__ | __error__=""', ['w2', 'w1', 'b3', 'b2', 'b1', 'c3', 'c2', 'c1']],
    // distinct is accepted and passes rows through (spec 1, Log query rule 4).
    ['{service_name=~".+"} | json | distinct user, http.route | user="ann"', ['b1', 'c1']],
  ])('%s', async (query, want) => {
    const r = await queryRange(query);
    expect(r.status).toBe(200);
    expect(ids(r.body)).toEqual(want);
    // Every entry sits in the stream of its own service.
    for (const s of r.body.data.result) for (const v of s.values) expect(s.stream.service_name).toBe(SERVICE_OF.get(idOf(v[0])));
  });

  it('direction and limit: the newest or the oldest lines over all streams', async () => {
    const back = await queryRange('{service_name=~".+"}', { limit: '3' });
    expect(ids(back.body)).toEqual(['w2', 'w1', 'b3']);
    const fwd = await queryRange('{service_name=~".+"}', { limit: '3', direction: 'forward' });
    expect(ids(fwd.body).reverse()).toEqual(['c1', 'c2', 'c3']);
    const web = await queryRange('{service_name="web", level=~".+"}', { direction: 'FORWARD' });
    expect(web.body.data.result.map((s) => s.values.map((v) => v[1]))).toEqual([['GET /cart 500'], ['GET /health 200']]);
    // Entries inside one stream follow the direction.
    const ann = await queryRange('{service_name=~".+"} | user="ann"', { direction: 'forward' });
    expect(ids(ann.body)).toEqual(['b1', 'c1']);
    const start = times.get('b1')!.toString();
    const end = times.get('b3')!.toString();
    const window = await queryRange('{service_name=~".+"}', { start, end });
    expect(ids(window.body)).toEqual(['b2', 'b1']);
    // Start and end in RFC3339 and unix seconds.
    const iso = await queryRange('{service_name="web"}', { start: new Date(startMs - 60_000).toISOString(), end: String(Math.ceil(startMs / 1000) + 60) });
    expect(ids(iso.body)).toEqual(['w2', 'w1']);
  });

  it('interval: only lines at least that far apart, measured from the last line returned, in the direction asked', async () => {
    const all = await queryRange('{service_name=~".+"}', { direction: 'forward' });
    const inOrder = [...times].filter(([id]) => ids(all.body).includes(id)).sort((a, b) => (a[1] < b[1] ? -1 : 1));
    const spaced = (list: Array<[string, bigint]>, intervalNs: bigint, forward: boolean) => {
      const out: string[] = [];
      let last: bigint | undefined;
      for (const [id, t] of forward ? list : [...list].reverse()) {
        if (last === undefined || (forward ? t >= last + intervalNs : t <= last - intervalNs)) {
          out.push(id);
          last = t;
        }
      }
      return out;
    };
    // Lines are 1 ms apart: every other one is returned at 2 ms, one in three at 3ms.
    const fwd = await queryRange('{service_name=~".+"}', { direction: 'forward', interval: '2ms' });
    expect(ids(fwd.body).sort()).toEqual(spaced(inOrder, 2_000_000n, true).sort());
    const back = await queryRange('{service_name=~".+"}', { interval: '0.003' });
    expect(ids(back.body).sort()).toEqual(spaced(inOrder, 3_000_000n, false).sort());
    expect(ids(back.body).length).toBeLessThan(inOrder.length);
    const limited = await queryRange('{service_name=~".+"}', { direction: 'forward', interval: '2ms', limit: '2' });
    expect(ids(limited.body).sort()).toEqual(spaced(inOrder, 2_000_000n, true).slice(0, 2).sort());
    expect((await queryRange('{service_name=~".+"}', { interval: 'soon' })).status).toBe(400);
  });

  it('both URL prefixes answer the same', async () => {
    const q = '{service_name=~".+"} |= "GET"';
    const a = await queryRange(q, {}, undefined, '/api/v1');
    const b = await queryRange(q, {}, undefined, '/loki/api/v1');
    expect(a.status).toBe(200);
    expect(a.body).toEqual(b.body);
    expect(ids(a.body)).toEqual(['w2', 'w1', 'c1']);
  });

  it('categorize-labels: three-element values with structured metadata, the record winning over resource and scope', async () => {
    const r = await queryRange('{service_name="checkout"}', { direction: 'forward' }, { headers: { 'X-Loki-Response-Encoding-Flags': 'categorize-labels' } });
    expect(r.status).toBe(200);
    expect(r.body.data.encodingFlags).toEqual(['categorize-labels']);
    const entries = Object.fromEntries(r.body.data.result.flatMap((s) => s.values.map((v) => [v[1], v[2]])));
    const common = { 'deployment.environment': 'prod', 'host.cpus': '4', 'k8s.pod.name': 'checkout-1', 'scope.kind': 'e2e', 'service.name': 'checkout' };
    expect(entries['GET /cart 200']).toEqual({
      structuredMetadata: { ...common, 'http.route': '/cart', 'http.status_code': '200', user: 'ann', trace_id: T1.traceId, span_id: T1.spanId },
    });
    expect(entries['payment failed: card "declined"']).toEqual({
      structuredMetadata: { ...common, duration_ms: '1532.5', 'http.status_code': '502', retry: 'true', user: 'bob', trace_id: T1.traceId, span_id: T1.spanId },
    });
    expect(entries['slow response: 100% of budget']).toEqual({ structuredMetadata: { ...common, 'http.status_code': '200', 'k8s.pod.name': 'override-pod' } });
    expect(r.body.data.result.map((s) => s.stream)).toEqual([
      { service_name: 'checkout', level: 'ERROR' },
      { service_name: 'checkout', level: 'INFO' },
      { service_name: 'checkout', level: 'WARN' },
    ]);
    // A value shown in the metadata can be filtered on as shown.
    const back = await queryRange('{service_name="checkout"} | duration_ms="1532.5" | host.cpus="4"');
    expect(ids(back.body)).toEqual(['c2']);
  });

  it('instant query: the most recent lines over the hour ending at `time`', async () => {
    const at = (ns: bigint) => getJson<StreamsBody>(`/api/v1/query?${qs({ query: '{service_name="web"}', time: ns.toString() })}`);
    const now = await at(times.get('w2')! + 1_000_000_000n);
    expect(now.status).toBe(200);
    expect(now.body.data.resultType).toBe('streams');
    expect(ids(now.body)).toEqual(['w2', 'w1']);
    expect(ids((await at(times.get('w1')!)).body)).toEqual(['w1']);
    expect((await at(times.get('w1')! - 1n)).body.data.result).toEqual([]);
    expect((await at(times.get('w2')! + 2n * 3_600_000_000_000n)).body.data.result).toEqual([]);
  });

  it('labels, label values and series', async () => {
    const labels = await getJson('/loki/api/v1/labels');
    expect(labels).toEqual({ status: 200, body: { status: 'success', data: ['deployment.environment', 'host.cpus', 'k8s.pod.name', 'level', 'service_name'] } });
    expect((await getJson(`/loki/api/v1/labels?${qs({ query: '{service_name="web"}' })}`)).body).toEqual({ status: 'success', data: ['level', 'service_name'] });
    expect((await getJson('/api/v1/label/level/values')).body).toEqual({ status: 'success', data: ['DEBUG', 'ERROR', 'INFO', 'WARN'] });
    expect((await getJson('/loki/api/v1/label/service_name/values')).body).toEqual({ status: 'success', data: ['billing', 'checkout', 'web'] });
    expect((await getJson('/loki/api/v1/label/k8s.pod.name/values')).body).toEqual({ status: 'success', data: ['billing-1', 'checkout-1', 'override-pod'] });
    expect((await getJson(`/loki/api/v1/label/user/values?${qs({ query: '{service_name="checkout"}' })}`)).body).toEqual({ status: 'success', data: ['ann', 'bob'] });
    expect((await getJson('/loki/api/v1/label/nope/values')).body).toEqual({ status: 'success', data: [] });
    // An old window has nothing.
    const end = String(Math.floor(startMs / 1000) - 7200);
    expect((await getJson(`/loki/api/v1/labels?end=${end}`)).body).toEqual({ status: 'success', data: [] });

    const series = await getJson(`/loki/api/v1/series?match[]=${encodeURIComponent('{service_name="billing"}')}&match[]=${encodeURIComponent('{level="ERROR"}')}`);
    expect(series).toEqual({
      status: 200,
      body: {
        status: 'success',
        data: [
          { service_name: 'billing' },
          { service_name: 'billing', level: 'DEBUG' },
          { service_name: 'billing', level: 'INFO' },
          { service_name: 'checkout', level: 'ERROR' },
          { service_name: 'web', level: 'ERROR' },
        ],
      },
    });
    const noMatch = await getJson('/loki/api/v1/series');
    expect(noMatch.status).toBe(400);
  });

  it('POST with a form body works like GET', async () => {
    const res = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/query_range`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/x-www-form-urlencoded' },
      body: qs({ query: '{service_name="web"}', limit: '1' }),
    });
    expect(res.status).toBe(200);
    expect(ids((await res.json()) as StreamsBody)).toEqual(['w2']);
  });

  it.each<[string, string, number, string, RegExp]>([
    ['unclosed selector', '{service_name="web"', 400, 'bad_data', /^parse error at line 1, col 20: unexpected end of query/],
    ['unquoted value', '{service_name=web}', 400, 'bad_data', /^parse error at line 1, col 15: unexpected "web", expecting a quoted string/],
    ['error on the second line', '{service_name="web"}\n  |= "x" | status >', 400, 'bad_data', /^parse error at line 2, col 20: unexpected end of query/],
    ['bad escape', '{service_name="web"} |= "\\d"', 400, 'bad_data', /^parse error at line 1, col 26: invalid escape sequence "\\\\d"/],
    ['bad regex', '{service_name=~"(web"}', 400, 'bad_data', /^parse error at line 1, col 16: invalid regular expression/],
    ['empty-compatible selector', '{service_name=~".*"}', 400, 'bad_data', /at least one regexp or equality matcher/],
    ['unsupported metric construct', 'sum without (level) (count_over_time({service_name="web"}[1m]))', 501, 'not_implemented', /sum without \(…\) with a non-empty label list is not supported yet \(line 1, col 5\)/],
    ['ip filter', '{service_name="web"} |= ip("10.0.0.1")', 501, 'not_implemented', /ip\(\) line filter is not supported yet \(line 1, col 22\)/],
    ['duration filter', '{service_name="web"} | latency > 10ms', 501, 'not_implemented', /duration comparison/],
  ])('%s → %i %s', async (_name, query, status, errorType, message) => {
    const r = await queryRange(query);
    expect(r.status).toBe(status);
    const body = r.body as unknown as { status: string; errorType: string; error: string };
    expect(body.status).toBe('error');
    expect(body.errorType).toBe(errorType);
    expect(body.error).toMatch(message);
  });

  it('bad parameters are 400, unimplemented endpoints 501, no credentials 401, in the envelope', async () => {
    const cases: Array<[string, number, string, RegExp]> = [
      [`/loki/api/v1/query_range?${qs({ query: '{service_name="web"}', limit: '-1' })}`, 400, 'bad_data', /invalid limit/],
      [`/loki/api/v1/query_range?${qs({ query: '{service_name="web"}', start: 'yesterday' })}`, 400, 'bad_data', /invalid start/],
      [`/loki/api/v1/query_range?${qs({ query: '{service_name="web"}', direction: 'up' })}`, 400, 'bad_data', /invalid direction/],
      [`/loki/api/v1/query_range?${qs({ query: '{service_name="web"}', start: '20', end: '10' })}`, 400, 'bad_data', /end timestamp must not be before start time/],
      ['/loki/api/v1/query_range', 400, 'bad_data', /missing query parameter/],
      [`/loki/api/v1/series?${qs({ 'match[]': 'rate({a="b"}[1m])' })}`, 400, 'bad_data', /expecting a log stream selector/],
      [`/loki/api/v1/tail?${qs({ query: '{service_name="web"}' })}`, 501, 'not_implemented', /\/tail is not implemented yet/],
      [`/api/v1/patterns?${qs({ query: 'count_over_time({service_name="web"}[1m])' })}`, 400, 'bad_data', /patterns takes a log query/],
      ['/api/v1/index/stats', 400, 'bad_data', /missing query parameter/],
    ];
    for (const [path, status, errorType, message] of cases) {
      const r = await getJson<{ status: string; errorType: string; error: string }>(path);
      expect({ path, status: r.status }).toEqual({ path, status });
      expect(r.body.status).toBe('error');
      expect(r.body.errorType).toBe(errorType);
      expect(r.body.error).toMatch(message);
    }
    const noAuth = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/labels`);
    expect(noAuth.status).toBe(401);
    expect(noAuth.headers.get('www-authenticate')).toBe('Bearer realm="floe"');
    expect(((await noAuth.json()) as { status: string }).status).toBe('error');
  });

  it('patterns: templates of the lines per detected level, with lines per step, of the caller\'s tenant only', async () => {
    const start = (BigInt(startMs) - 60_000n) * 1_000_000n;
    const end = BigInt(Date.now()) * 1_000_000n;
    type Patterns = { status: string; data: Array<{ pattern: string; level: string; samples: Array<[number, number]> }> };
    const r = await getJson<Patterns>(`/loki/api/v1/patterns?${qs({ query: '{service_name=~"checkout|web"}', start: String(start), end: String(end), step: '60s' })}`);
    expect(r.status).toBe(200);
    // Lines per minute of the given records, as the samples count them.
    const samples = (...recordIds: string[]) => {
      const byMinute = new Map<number, number>();
      for (const id of recordIds) {
        const minute = Math.floor(Number(times.get(id)! / 1_000_000_000n) / 60) * 60;
        byMinute.set(minute, (byMinute.get(minute) ?? 0) + 1);
      }
      return [...byMinute].sort((a, b) => a[0] - b[0]);
    };
    expect(r.body).toEqual({
      status: 'success',
      data: [
        { pattern: 'GET <_> 200', level: 'info', samples: samples('c1', 'w1') },
        { pattern: 'GET /cart 500', level: 'error', samples: samples('w2') },
        { pattern: 'payment failed: card "declined"', level: 'error', samples: samples('c2') },
        { pattern: 'slow response: 100% of budget', level: 'warn', samples: samples('c3') },
      ],
    });
  });

  it('status/buildinfo names Loki 3.5; drilldown-limits gives the tenant\'s own logs retention and the pattern API', async () => {
    const info = await getJson<Record<string, string>>('/loki/api/v1/status/buildinfo');
    expect(info).toEqual({ status: 200, body: { version: '3.5.0', revision: 'floe', branch: 'floe', buildUser: 'floe', buildDate: expect.any(String), goVersion: 'n/a' } });
    const created = await fetch(`${floe.routerUrl}/api/v1/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'kept', settings: { limits: { retention: '30d', retention_by_table: { logs: '14d' } } } }),
    });
    expect(created.status).toBe(201);
    const keptKey = (await floe.bootstrap('kept')).api_key;
    type Drilldown = { limits: Record<string, unknown>; pattern_ingester_enabled: boolean; version: string };
    for (const [prefix, k, t, retention] of [['/loki/api/v1', keptKey, 'kept', '14d'], ['/api/v1', key, tenant, '0s']] as const) {
      const r = await getJson<Drilldown>(`${prefix}/drilldown-limits`, { key: k, tenant: t });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ pattern_ingester_enabled: true, version: '3.5.0' });
      expect(r.body.limits).toMatchObject({ retention_period: retention, query_timeout: '30s', max_entries_limit_per_query: 5000, max_query_series: 5000, volume_enabled: true, discover_service_name: ['service.name'] });
    }
    expect((await fetch(`${floe.routerUrl}/logquery/loki/api/v1/drilldown-limits`)).status).toBe(401);
    // Grafana's alert list asks a Loki data source for its rules: none, not an error.
    expect(await getJson('/prometheus/api/v1/rules')).toEqual({ status: 200, body: { status: 'success', data: { groups: [] } } });
    expect(await getJson('/prometheus/api/v1/alerts')).toEqual({ status: 200, body: { status: 'success', data: { alerts: [] } } });
    expect((await fetch(`${floe.routerUrl}/logquery/prometheus/api/v1/rules`)).status).toBe(401);
  });

  it('format_query answers the canonical form of a LogQL expression, and 400 for one that does not parse', async () => {
    const ok = await getJson(`/loki/api/v1/format_query?${qs({ query: 'sum(count_over_time({service_name="web"}|="x"[120s])) by (level)' })}`);
    expect(ok).toEqual({ status: 200, body: { status: 'success', data: 'sum by (level) (count_over_time({service_name="web"} |= "x" [2m]))' } });
    const bad = await getJson<{ status: string; errorType: string; error: string }>(`/api/v1/format_query?${qs({ query: 'sum(' })}`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ status: 'error', errorType: 'bad_data', error: expect.stringMatching(/^parse error/) });
  });

  it("never shows another tenant's lines, and a key of one tenant cannot read another", async () => {
    for (const q of ['{service_name="checkout"}', '{service_name=~".+"} |= "intruder"', '{k8s.pod.name="intruder-pod"}']) {
      const r = await queryRange(q);
      // An answer, not an error that would hold no intruder either.
      expect(r.status).toBe(200);
      expect(r.body.data.resultType).toBe('streams');
      expect(JSON.stringify(r.body)).not.toContain('intruder');
    }
    expect((await getJson('/loki/api/v1/label/k8s.pod.name/values')).body).toEqual({ status: 'success', data: ['billing-1', 'checkout-1', 'override-pod'] });
    const theirs = await queryRange('{service_name=~".+"}', {}, { key: otherKey, tenant: other });
    expect(theirs.body.data.result).toEqual([
      {
        stream: { service_name: 'checkout', level: 'ERROR', 'k8s.pod.name': 'intruder-pod', 'scope.kind': 'e2e', user: 'ann', 'http.status_code': '500' },
        values: [[expect.any(String), 'GET /cart 200 intruder']],
      },
    ]);
    const crossed = await queryRange('{service_name=~".+"}', {}, { key, tenant: other });
    expect(crossed.status).toBe(403);
  });
});
