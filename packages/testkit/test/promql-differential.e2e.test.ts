import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromMetricMetadata_MetricType, PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import {
  REMOTE_WRITE_HEADERS,
  STALE_PLACEHOLDER,
  comparePromAnswers,
  promMetadata,
  startFloe,
  startPrometheus,
  waitFor,
  withStaleMarkers,
  type FloeUnderTest,
  type PromApiBody,
  type PrometheusUnderTest,
} from '../src/index.ts';

/**
 * PromQL differential test (issue 6): one seeded dataset (counters with resets, gauges, a classic
 * histogram, series that go stale and come back; scrape times jittered so that no sample sits on a
 * whole or half second) is remote-written to a real Prometheus (--web.enable-remote-write-receiver)
 * and to Floe; every query of the corpus runs on both as an instant query (two times) and as a
 * range query. Agreement: the same result type, identical label sets and timestamps, values
 * within 1e-9 relative (1e-12 absolute near zero, where the two engines' summation orders leave
 * different rounding residue), or both refusing the query. At least 97% must agree, no query may
 * be a 500, and every disagreement must be listed with its reason in promql-disagreements.md.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const DISAGREEMENTS_FILE = join(HERE, 'promql-disagreements.md');
const tenant = 'promdiff';

// ── dataset ──

/** mulberry32: a small seeded PRNG, so the dataset is the same on every run. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Series {
  labels: Record<string, string>;
  samples: Array<{ t: number; v: number }>;
}

/** The dataset: ~60 minutes of 15s scrapes ending at `endMs`. */
function dataset(endMs: number): Series[] {
  const rand = rng(42);
  const out: Series[] = [];
  const startMs = endMs - 60 * 60_000;
  const scrapes = 240;
  /** Scrape times of a target: every 15s plus a per-scrape jitter, never on a whole or half second. */
  const times = () => {
    const ts: number[] = [];
    for (let i = 0; i < scrapes; i++) {
      let t = startMs + i * 15_000 + Math.floor(rand() * 9_000) + 1;
      if (t % 500 === 0) t += 7;
      ts.push(t);
    }
    return ts;
  };
  // Counters with resets.
  for (const instance of ['i1', 'i2', 'i3']) {
    const ts = times();
    for (const code of ['200', '500']) {
      for (const method of ['get', 'post']) {
        let v = Math.floor(rand() * 100);
        const s: Series = { labels: { __name__: 'http_requests_total', job: 'api', instance, code, method }, samples: [] };
        for (const t of ts) {
          if (rand() < 0.02) v = Math.floor(rand() * 5);
          else v += Math.floor(rand() * (code === '200' ? 50 : 5));
          s.samples.push({ t, v });
        }
        out.push(s);
      }
    }
  }
  // Gauges, and an `up` per node target.
  for (const instance of ['n1', 'n2']) {
    const ts = times();
    for (const sensor of ['a', 'b', 'c']) {
      let v = 15 + rand() * 10;
      const s: Series = { labels: { __name__: 'node_temperature', job: 'node', instance, sensor }, samples: [] };
      for (const t of ts) {
        v += (rand() - 0.5) * 3;
        s.samples.push({ t, v: Math.round(v * 1000) / 1000 });
      }
      out.push(s);
    }
    out.push({ labels: { __name__: 'up', job: 'node', instance }, samples: ts.map((t, i) => ({ t, v: instance === 'n2' && i > 100 && i < 110 ? 0 : 1 })) });
  }
  // A classic histogram per API instance, counters that reset together.
  const bounds = ['0.05', '0.1', '0.5', '1', '5', '+Inf'];
  for (const instance of ['i1', 'i2']) {
    const ts = times();
    const counts = bounds.map(() => 0);
    let sum = 0;
    const buckets: Series[] = bounds.map((le) => ({ labels: { __name__: 'request_duration_seconds_bucket', job: 'api', instance, le }, samples: [] }));
    const sumS: Series = { labels: { __name__: 'request_duration_seconds_sum', job: 'api', instance }, samples: [] };
    const countS: Series = { labels: { __name__: 'request_duration_seconds_count', job: 'api', instance }, samples: [] };
    for (const t of ts) {
      if (rand() < 0.01) {
        counts.fill(0);
        sum = 0;
      }
      const n = Math.floor(rand() * 20);
      for (let k = 0; k < n; k++) {
        const obs = Math.exp(rand() * 6 - 4);
        sum += obs;
        bounds.forEach((b, i) => {
          if (b === '+Inf' || obs <= Number(b)) counts[i]! += 1;
        });
      }
      buckets.forEach((b, i) => b.samples.push({ t, v: counts[i]! }));
      sumS.samples.push({ t, v: sum });
      countS.samples.push({ t, v: counts[counts.length - 1]! });
    }
    out.push(...buckets, sumS, countS);
  }
  // Series that go stale: b1 stops at scrape 120 (staleness marker) and comes back at 180; b2 stops at 200.
  for (const instance of ['b1', 'b2']) {
    const ts = times();
    const s: Series = { labels: { __name__: 'batch_jobs_running', job: 'batch', instance }, samples: [] };
    ts.forEach((t, i) => {
      if (instance === 'b1' && i >= 120 && i < 180) {
        if (i === 120) s.samples.push({ t, v: STALE_PLACEHOLDER });
        return;
      }
      if (instance === 'b2' && i >= 200) {
        if (i === 200) s.samples.push({ t, v: STALE_PLACEHOLDER });
        return;
      }
      s.samples.push({ t, v: Math.floor(rand() * 10) });
    });
    out.push(s);
  }
  return out;
}

/** The remote-write 1.0 body of the dataset, with Prometheus's staleness NaN patched in. */
function writeBody(series: Series[]): Buffer {
  const bytes = toBinary(
    PromWriteRequestSchema,
    create(PromWriteRequestSchema, {
      metadata: promMetadata([
        ['http_requests_total', PromMetricMetadata_MetricType.COUNTER, 'Requests.'],
        ['node_temperature', PromMetricMetadata_MetricType.GAUGE, 'Temperature.'],
        ['batch_jobs_running', PromMetricMetadata_MetricType.GAUGE, 'Jobs.'],
        ['up', PromMetricMetadata_MetricType.GAUGE, 'Up.'],
        ['request_duration_seconds', PromMetricMetadata_MetricType.HISTOGRAM, 'Latency.'],
      ]),
      timeseries: series.map((s) => ({
        labels: Object.entries(s.labels)
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([name, value]) => ({ name, value })),
        samples: s.samples.map((x) => ({ value: x.v, timestamp: BigInt(x.t) })),
      })),
    }),
  );
  return withStaleMarkers(bytes);
}

// ── corpus ──

/**
 * The PromQL differential corpus (issue 6): queries run as instant and range queries on a real
 * Prometheus and on Floe over the same remote-written dataset (promql-differential.e2e.test.ts).
 * Ranges, offsets and steps are whole seconds; the dataset's samples never sit on a whole or a
 * half second, and the queries are evaluated at times ending in .500 s, so no sample lies on a
 * window edge (Prometheus 2 windows are closed on the left, Prometheus 3's open).
 */

const counters = ['http_requests_total', 'http_requests_total{code="500"}', 'http_requests_total{method!="get"}'];
const gauges = ['node_temperature', 'node_temperature{sensor=~"a|b"}', 'batch_jobs_running', 'up'];
const ranges = ['1m', '5m', '150s'];

function promqlCorpus(atMs: number): string[] {
  const q: string[] = [];
  // Selectors.
  q.push(...counters, ...gauges, '{__name__=~"node_.*"}', '{__name__="up", job="node"}', 'request_duration_seconds_bucket{le="0.5"}', 'request_duration_seconds_count', 'batch_jobs_running offset 10m');
  // Counter functions.
  for (const c of counters) for (const r of ranges) for (const f of ['rate', 'increase', 'irate', 'resets']) q.push(`${f}(${c}[${r}])`);
  // Gauge functions.
  for (const g of ['node_temperature', 'batch_jobs_running']) {
    for (const r of ['1m', '5m']) {
      for (const f of ['delta', 'idelta', 'deriv', 'changes', 'avg_over_time', 'min_over_time', 'max_over_time', 'sum_over_time', 'count_over_time', 'last_over_time', 'stddev_over_time', 'stdvar_over_time', 'present_over_time']) {
        q.push(`${f}(${g}[${r}])`);
      }
      q.push(`quantile_over_time(0.3, ${g}[${r}])`, `predict_linear(${g}[${r}], 600)`);
    }
  }
  // Aggregations.
  for (const a of ['sum', 'avg', 'min', 'max', 'count', 'stddev', 'stdvar', 'group']) {
    q.push(`${a}(rate(http_requests_total[5m]))`, `${a} by (code) (rate(http_requests_total[5m]))`, `${a} without (instance) (node_temperature)`);
  }
  q.push(
    'topk(3, rate(http_requests_total[5m]))',
    'bottomk(2, node_temperature)',
    'topk by (code) (1, rate(http_requests_total[5m]))',
    'quantile(0.9, node_temperature)',
    'quantile by (job) (0.25, rate(http_requests_total[1m]))',
    'count_values("value", up)',
    'count by (job) (up)',
    'sum by (job, code) (increase(http_requests_total[5m]))',
    'sum(http_requests_total) by (method)',
    'avg by (sensor) (avg_over_time(node_temperature[5m]))',
  );
  // Binary operators.
  q.push(
    'rate(http_requests_total[5m]) * 60',
    '2 * node_temperature - 1',
    'node_temperature / 3',
    'node_temperature % 7',
    'node_temperature ^ 2',
    '-node_temperature',
    'node_temperature > 20',
    'node_temperature > bool 20',
    '20 < node_temperature',
    'node_temperature == bool node_temperature',
    'up == 1',
    'sum by (instance) (rate(http_requests_total{code="500"}[5m])) / sum by (instance) (rate(http_requests_total[5m]))',
    'rate(http_requests_total{code="500"}[5m]) / ignoring(code) rate(http_requests_total{code="200"}[5m])',
    'rate(http_requests_total[5m]) / on(instance) group_left sum by (instance) (rate(http_requests_total[5m]))',
    'sum by (instance) (rate(http_requests_total[5m])) / on(instance) group_right rate(http_requests_total[5m])',
    'node_temperature * on(instance) group_left(job) up',
    'http_requests_total and http_requests_total{code="500"}',
    'http_requests_total unless on(method) http_requests_total{method="post"}',
    'batch_jobs_running or node_temperature',
    'up or on(job) node_temperature',
    'node_temperature > on(instance) group_left avg by (instance) (node_temperature)',
    '1 + 2 * 3',
    '2 ^ 3 ^ 2',
    '10 % 3 - 1 / 4',
    'vector(1) + vector(2)',
    'scalar(sum(up)) * up',
    'sum(rate(http_requests_total[5m])) > bool 1',
    '(node_temperature) > bool (20)',
  );
  // Histograms.
  for (const phi of ['0.5', '0.9', '0.99', '0.1']) {
    q.push(`histogram_quantile(${phi}, rate(request_duration_seconds_bucket[5m]))`);
    q.push(`histogram_quantile(${phi}, sum by (le) (rate(request_duration_seconds_bucket[5m])))`);
  }
  q.push(
    'histogram_quantile(0.75, sum by (le, instance) (increase(request_duration_seconds_bucket[150s])))',
    'histogram_quantile(0.5, request_duration_seconds_bucket)',
    'rate(request_duration_seconds_sum[5m]) / rate(request_duration_seconds_count[5m])',
  );
  // Math, clamps, time.
  for (const f of ['abs', 'ceil', 'floor', 'exp', 'ln', 'log2', 'log10', 'sqrt', 'sgn', 'round']) q.push(`${f}(node_temperature / 10)`);
  q.push(
    'round(node_temperature, 5)',
    'clamp(node_temperature, 10, 25)',
    'clamp_min(node_temperature, 15)',
    'clamp_max(node_temperature, 15)',
    'timestamp(node_temperature)',
    'time()',
    'minute(timestamp(up))',
    'hour()',
    'day_of_week()',
    'year(vector(time()))',
    'month()',
    'days_in_month()',
    'day_of_month()',
    'day_of_year()',
    'vector(time())',
    'scalar(up{instance="n1"})',
    'pi()',
  );
  // Labels.
  q.push(
    'label_replace(up, "host", "$1", "instance", "(.*)")',
    'label_replace(up, "short", "x-$1", "instance", "n(.)")',
    'label_replace(node_temperature, "sensor", "", "sensor", ".*")',
    'label_join(up, "jobinst", "/", "job", "instance")',
    'sort(node_temperature)',
    'sort_desc(rate(http_requests_total[5m]))',
  );
  // Absent.
  q.push('absent(nonexistent_metric{job="x"})', 'absent(up)', 'absent_over_time(nonexistent_metric[5m])', 'absent_over_time(batch_jobs_running{instance="b1"}[1m])', 'absent(batch_jobs_running{instance="b1"})');
  // Offset, @, subqueries.
  q.push(
    'rate(http_requests_total[5m] offset 5m)',
    'node_temperature offset 90s',
    'http_requests_total - http_requests_total offset 1m',
    '-node_temperature offset 90s',
    'node_temperature * 2 + node_temperature @ end()',
    'delta(node_temperature[5m] offset 2m)',
    `node_temperature @ ${(atMs / 1000).toFixed(3)}`,
    `rate(http_requests_total[5m] @ ${(atMs / 1000).toFixed(3)})`,
    'up @ start()',
    'sum(rate(http_requests_total[1m] @ end()))',
    'max_over_time(rate(http_requests_total[1m])[5m:30s])',
    'avg_over_time(node_temperature[10m:1m])',
    'min_over_time(sum(node_temperature)[5m:20s])',
    'max_over_time(deriv(node_temperature[2m])[10m:1m])',
    'rate(http_requests_total[5m:15s])',
    'count_over_time(batch_jobs_running[10m:1m])',
    'avg_over_time(node_temperature[5m:1m] offset 3m)',
    'sum_over_time(up[3m:45s])',
    'max_over_time(node_temperature[5m:30s] @ start())',
  );
  return q;
}

// ── comparison ──

interface Answer {
  http: number;
  body: PromApiBody;
}

describe('PromQL agrees with Prometheus', () => {
  let floe: FloeUnderTest;
  let prom: PrometheusUnderTest;
  let apiKey: string;
  // Whole minutes, so query times below end in .500 s and the dataset's samples never do.
  const endMs = Math.floor(Date.now() / 60_000) * 60_000 - 120_000;
  const data = dataset(endMs);

  beforeAll(async () => {
    [floe, prom] = await Promise.all([startFloe({ mode: 'embedded' }), startPrometheus({ remoteWriteReceiver: true, scrapeSelf: false })]);
    apiKey = (await floe.bootstrap(tenant)).api_key;
    const body = compress(writeBody(data));
    const toProm = await fetch(`${prom.url}/api/v1/write`, { method: 'POST', body, headers: REMOTE_WRITE_HEADERS });
    expect(toProm.status, await toProm.text()).toBe(204);
    const toFloe = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body, headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${apiKey}`, 'x-tenant-id': tenant } });
    expect(toFloe.status, await toFloe.text()).toBe(204);
    // Every sample visible in Floe (through the API under test) before comparing.
    const total = data.reduce((n, s) => n + s.samples.filter((x) => x.v !== STALE_PLACEHOLDER).length, 0);
    await waitFor(
      'every sample in Floe',
      async () => {
        const a = await floeApi('query', { query: ['http_requests_total', 'node_temperature', 'up', 'batch_jobs_running', 'request_duration_seconds_bucket', 'request_duration_seconds_sum', 'request_duration_seconds_count'].map((n) => `sum(count_over_time(${n}[2h]))`).join(' + '), time: (endMs / 1000 + 1).toFixed(3) });
        const r = a.body.data?.result as Array<{ value: [number, string] }> | undefined;
        return r?.[0] && Number(r[0].value[1]) === total ? true : undefined;
      },
      120_000,
      1000,
    );
  }, 240_000);
  afterAll(async () => {
    await prom?.stop();
    await floe?.stop();
  });

  async function floeApi(path: string, params: Record<string, string>): Promise<Answer> {
    const res = await fetch(`${floe.routerUrl}/metricquery/api/v1/${path}`, {
      method: 'POST',
      body: new URLSearchParams(params).toString(),
      headers: { authorization: `Bearer ${apiKey}`, 'x-tenant-id': tenant, 'content-type': 'application/x-www-form-urlencoded' },
    });
    return { http: res.status, body: (await res.json()) as PromApiBody };
  }
  async function promApi(path: string, params: Record<string, string>): Promise<Answer> {
    const res = await fetch(`${prom.url}/api/v1/${path}?${new URLSearchParams(params).toString()}`);
    return { http: res.status, body: (await res.json()) as PromApiBody };
  }

  it('answers at least 97% of the corpus as Prometheus does, none with a 500, every disagreement listed', async () => {
    const at1 = endMs - 5 * 60_000 + 500;
    const at2 = endMs - 31 * 60_000 + 500;
    const corpus = promqlCorpus(endMs - 20 * 60_000 + 500);
    expect(corpus.length).toBeGreaterThanOrEqual(200);
    const runs: Array<{ query: string; kind: string; params: Record<string, string>; path: string }> = [];
    for (const query of corpus) {
      runs.push({ query, kind: 'instant@-5m', path: 'query', params: { query, time: (at1 / 1000).toFixed(3) } });
      runs.push({ query, kind: 'instant@-31m', path: 'query', params: { query, time: (at2 / 1000).toFixed(3) } });
      runs.push({
        query,
        kind: 'range',
        path: 'query_range',
        params: { query, start: ((endMs - 45 * 60_000 + 500) / 1000).toFixed(3), end: ((endMs + 500) / 1000).toFixed(3), step: '60' },
      });
      // Over four hours Floe reads plain series series first (labels, then points of the matching ones).
      runs.push({
        query,
        kind: 'range-4h',
        path: 'query_range',
        params: { query, start: ((endMs - 4 * 3_600_000 + 500) / 1000).toFixed(3), end: ((endMs + 500) / 1000).toFixed(3), step: '300' },
      });
    }
    const disagreements: Array<{ query: string; kind: string; reason: string }> = [];
    const crashes: string[] = [];
    let nonEmpty = 0;
    for (const r of runs) {
      const [p, f] = await Promise.all([promApi(r.path, r.params), floeApi(r.path, r.params)]);
      const result = p.body.data?.result;
      if (p.body.status === 'success' && (!Array.isArray(result) || result.length > 0)) nonEmpty++;
      if (f.http >= 500) crashes.push(`${r.kind} ${r.query}: ${f.http} ${JSON.stringify(f.body)}`);
      const why = comparePromAnswers(r.query, p.body, f.body);
      if (why) disagreements.push({ query: r.query, kind: r.kind, reason: why });
    }
    const ratio = 1 - disagreements.length / runs.length;
    console.log(`PromQL differential: ${runs.length - disagreements.length}/${runs.length} agree (${(ratio * 100).toFixed(2)}%)`);
    for (const d of disagreements) console.log(`  DISAGREE [${d.kind}] ${d.query}: ${d.reason}`);
    expect(crashes).toEqual([]);
    // Agreement on empty answers proves little: most of the corpus must select data.
    expect(nonEmpty / runs.length).toBeGreaterThan(0.8);
    expect(ratio).toBeGreaterThanOrEqual(0.97);
    const listed = readFileSync(DISAGREEMENTS_FILE, 'utf8');
    const unlisted = [...new Set(disagreements.map((d) => d.query))].filter((q) => !listed.includes('`' + q + '`'));
    expect(unlisted, 'disagreements missing from promql-disagreements.md').toEqual([]);
  }, 600_000);

  it('/status/tsdb: the cardinality Prometheus reports for the same series (its lists largest first, each entry exact)', async () => {
    type Stat = { name: string; value: number };
    type Status = { headStats: { numSeries: number; numLabelPairs: number }; [list: string]: unknown };
    const get = async (url: string, headers: Record<string, string> = {}) => {
      const res = await fetch(url, { headers });
      expect(res.status).toBe(200);
      return ((await res.json()) as { data: Status }).data;
    };
    const window = new URLSearchParams({ start: ((endMs - 62 * 60_000) / 1000).toFixed(3), end: ((endMs + 60_000) / 1000).toFixed(3) });
    const floeStatus = (limit?: number) =>
      get(`${floe.routerUrl}/metricquery/api/v1/status/tsdb?${window.toString()}${limit === undefined ? '' : `&limit=${limit}`}`, { authorization: `Bearer ${apiKey}`, 'x-tenant-id': tenant });
    // Prometheus 2.42 lists its top 10 whatever the limit; later versions take one.
    const [p, top, all] = await Promise.all([get(`${prom.url}/api/v1/status/tsdb?limit=1000`), floeStatus(), floeStatus(1000)]);
    expect(all.headStats).toMatchObject({ numSeries: p.headStats.numSeries, numLabelPairs: p.headStats.numLabelPairs });
    for (const list of ['seriesCountByMetricName', 'labelValueCountByLabelName', 'memoryInBytesByLabelName', 'seriesCountByLabelValuePair']) {
      const want = p[list] as Stat[];
      expect(want.length, list).toBeGreaterThan(0);
      // Ties may come in any order: the values in order, and every entry as Prometheus has it.
      expect((all[list] as Stat[]).slice(0, want.length).map((s) => s.value), list).toEqual(want.map((s) => s.value));
      for (const entry of want) expect(all[list] as Stat[], list).toContainEqual(entry);
      expect((top[list] as Stat[]).length, list).toBe(Math.min(10, (all[list] as Stat[]).length));
    }
  });

  // Prometheus 3's `limit` (the Debian package here predates it, so Floe is checked on its own).
  it('limit cuts a result or a list to that many with the warning "results truncated due to limit"; limit_per_metric caps metadata', async () => {
    type Limited = { status: string; data: unknown; warnings?: string[] };
    const ask = async (path: string, params: Record<string, string>) => (await floeApi(path, params)).body as unknown as Limited;
    const time = (endMs / 1000).toFixed(3);
    const all = (await ask('query', { query: 'http_requests_total', time })).data as { result: unknown[] };
    expect(all.result.length).toBeGreaterThan(1);
    const cut = await ask('query', { query: 'http_requests_total', time, limit: '1' });
    expect((cut.data as { result: unknown[] }).result).toEqual(all.result.slice(0, 1));
    expect(cut.warnings).toEqual(['results truncated due to limit']);
    expect((await ask('query', { query: 'http_requests_total', time, limit: String(all.result.length) })).warnings).toBeUndefined();
    const range = { query: 'http_requests_total', start: ((endMs - 600_000) / 1000).toFixed(3), end: time, step: '60' };
    const allRange = (await ask('query_range', range)).data as { result: unknown[] };
    const cutRange = await ask('query_range', { ...range, limit: '2' });
    expect((cutRange.data as { result: unknown[] }).result).toEqual(allRange.result.slice(0, 2));
    expect(cutRange.warnings).toEqual(['results truncated due to limit']);
    const labels = await ask('labels', { limit: '2' });
    expect(labels.data).toHaveLength(2);
    expect(labels.warnings).toEqual(['results truncated due to limit']);
    // The answer cut to each family's first entry (the dataset has one entry per family, so this
    // checks the shape of the cut, not that a second entry is dropped).
    const full = (await ask('metadata', {})).data as Record<string, unknown[]>;
    const perMetric = (await ask('metadata', { limit_per_metric: '1' })).data as Record<string, unknown[]>;
    expect(Object.keys(full).length).toBeGreaterThan(0);
    expect(perMetric).toEqual(Object.fromEntries(Object.entries(full).map(([k, entries]) => [k, entries.slice(0, 1)])));
    for (const [path, params] of [['query', { query: 'up', time, limit: '-1' }], ['metadata', { limit_per_metric: 'x' }]] as const) {
      const bad = await floeApi(path, params);
      expect({ http: bad.http, errorType: bad.body.errorType }).toEqual({ http: 400, errorType: 'bad_data' });
    }
  });

  it('refuses bad range parameters as Prometheus does, the step checked before the query', async () => {
    const start = ((endMs - 3_600_000) / 1000).toFixed(3);
    const end = (endMs / 1000).toFixed(3);
    const cases: Array<Record<string, string>> = [
      { query: 'up', start, end, step: '0' },
      // Both the step and the query are bad: Prometheus names the step.
      { query: 'sum(', start, end, step: '-5' },
      { query: 'sum(', start, end, step: '0.0001' },
      { query: 'up', start: end, end: start, step: '60' },
      { query: 'http_requests_total[5m]', start, end, step: '60' },
      { query: 'sum(', start, end, step: '60' },
    ];
    for (const params of cases) {
      const [p, f] = await Promise.all([promApi('query_range', params), floeApi('query_range', params)]);
      const what = JSON.stringify(params);
      expect(p.http, what).toBe(400);
      expect({ http: f.http, errorType: f.body.errorType }, what).toEqual({ http: 400, errorType: p.body.errorType });
      // Which check refused it: the step, the points limit, the time order, the type, or the parse.
      const topic = (e = '') => (/step|resolution/.test(e) ? 'step' : /end timestamp/.test(e) ? 'end' : /expression type/.test(e) ? 'type' : 'parse');
      expect(topic(f.body.error), `${what}: ${f.body.error} vs ${p.body.error}`).toBe(topic(p.body.error));
    }
  });
});
