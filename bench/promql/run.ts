/**
 * bench/promql: dashboard-like PromQL latency, Floe against a real Prometheus (Debian package
 * `prometheus`, started here on loopback with --web.enable-remote-write-receiver, its TSDB in a
 * temp dir) holding the same data, loaded in the same run by the same remote-write bodies.
 *
 *   node bench/promql/run.ts [instances=500] [scrapeSeconds=120] [hours=24] [repeats=5]
 *
 * The dataset (deterministic): `instances` scrape targets over four jobs, each with
 * http_requests_total{method,status} (20 counters per instance: 10,000 at the default),
 * request_duration_seconds_bucket{le} (9 classic buckets, every 5th instance) with _sum/_count,
 * and a process_resident_memory_bytes gauge, scraped every `scrapeSeconds` (jittered) for
 * `hours` + 15 min ending a minute ago; counters reset now and then. It is sent as remote write
 * 1.0 in time slices of 30 minutes (several samples per TimeSeries), oldest first, so
 * Prometheus's head accepts every sample; Floe gets the same bodies, then the bench waits until
 * every sample is queryable in Floe.
 *
 * Before the queries, both systems settle, as they would be between dashboard refreshes in
 * production: Floe's compactor (every 15 s here, 5 min by default) merges each loaded hour's flush
 * files into one (a pass that began a minute after the load, once the files are old enough to
 * merge, finds nothing left: its /status), and Prometheus's head compaction is left a minute with
 * no new compaction. The day arrives in 40 s here, so without this every hour of it would be read
 * as the 2-3 files of its flushes, which in production only the current hour is.
 * FLOE_BENCH_NO_SETTLE=1 queries right after the load instead. FLOE_BENCH_MATERIALIZED_LABELS=
 * status,instance (a comma-separated list) starts Floe with those keys as schema.materialized_labels,
 * so its metrics table has a text column for each and label matchers read the columns.
 * FLOE_BENCH_SERIES_CACHE_MB=<n> sets querier.series_cache_mb (0: no kept point lists, so every
 * repeat reads every file of its window, as the first read of a window does).
 *
 * Each query of the set runs `repeats` times on each system, alternating (Prometheus, Floe) so
 * both see the same machine load; the per-query figure is the median latency, the ratio is
 * Floe / Prometheus (goal ≤ 1.0), and the summary is the median of the per-query ratios. Every
 * answer is compared (label sets, timestamps, values within 1e-9 relative), so a fast wrong
 * answer cannot count. Set FLOE_BENCH_CPU_PROF=<dir> to profile the Floe process.
 */
import { compress } from 'snappyjs';
import { PromMetricMetadata_MetricType, PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, comparePromAnswers, remoteWriteMetadataBody, type PromApiBody } from '@floe/testkit';
import { fmt, loadAverage } from '../lib/drive.ts';
import { floeSqlScalar, median, startFloeProcess } from '../lib/floe-process.ts';
import { MIN_FILE_AGE_MS, type CompactorStatus } from '@floe/compactor';
import { promMetric, startPrometheusReceiver } from '../lib/prometheus-process.ts';
import { JOBS, rnd } from '../lib/remote-write-stream.ts';

const INSTANCES = Number(process.argv[2] ?? 500);
const SCRAPE_MS = Number(process.argv[3] ?? 120) * 1000;
const HOURS = Number(process.argv[4] ?? 24);
const REPEATS = Number(process.argv[5] ?? 5);
const END_MS = Math.floor(Date.now() / 60_000) * 60_000 - 60_000;
const START_MS = END_MS - HOURS * 3_600_000 - 15 * 60_000;
const SLICE_MS = 30 * 60_000;
const METHODS = ['GET', 'POST', 'PUT', 'DELETE'];
const STATUSES = ['200', '201', '404', '500', '503'];
const BOUNDS = ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '+Inf'];

interface SeriesDef {
  labels: Array<{ name: string; value: string }>;
  /** Value at scrape round r (counters keep state: called with increasing r). */
  value: (r: number) => number;
}

function catalog(): SeriesDef[] {
  const out: SeriesDef[] = [];
  const add = (labels: Record<string, string>, value: (r: number) => number) =>
    out.push({ labels: Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, value]) => ({ name, value })), value });
  for (let inst = 0; inst < INSTANCES; inst++) {
    const job = JOBS[inst % JOBS.length]!;
    const instance = `10.${1 + (inst % JOBS.length)}.${(inst >> 8) & 255}.${inst & 255}:8080`;
    const load = 5 + 45 * rnd(inst);
    METHODS.forEach((method, mi) => {
      STATUSES.forEach((status, si) => {
        const id = out.length;
        const rate = load * [0.7, 0.2, 0.07, 0.03][mi]! * [0.8, 0.1, 0.07, 0.02, 0.01][si]!;
        let v = Math.floor(rnd(id) * 1000);
        add({ __name__: 'http_requests_total', job, instance, method, status }, (r) => {
          if (rnd(r * 7919 + id) < 0.002) v = 0;
          else v += Math.floor((SCRAPE_MS / 1000) * rate * (0.5 + rnd(r * 131 + id)));
          return v;
        });
      });
    });
    if (inst % 5 === 0) {
      const counts = BOUNDS.map(() => 0);
      let sum = 0;
      let lastRound = -1;
      const step = (r: number) => {
        if (r === lastRound) return;
        lastRound = r;
        const n = Math.floor(rnd(r * 31 + inst) * load * 4);
        for (let k = 0; k < n; k++) {
          const obs = Math.exp(rnd(r * 1009 + k * 17 + inst) * 6 - 6);
          sum += obs;
          BOUNDS.forEach((b, i) => {
            if (b === '+Inf' || obs <= Number(b)) counts[i]! += 1;
          });
        }
      };
      BOUNDS.forEach((le, i) =>
        add({ __name__: 'request_duration_seconds_bucket', job, instance, le }, (r) => {
          step(r);
          return counts[i]!;
        }),
      );
      add({ __name__: 'request_duration_seconds_sum', job, instance }, (r) => (step(r), sum));
      add({ __name__: 'request_duration_seconds_count', job, instance }, (r) => (step(r), counts[counts.length - 1]!));
    }
    add({ __name__: 'process_resident_memory_bytes', job, instance }, (r) => Math.floor(2e8 + 1e8 * Math.sin(r / 50 + inst) + 1e7 * rnd(r + inst * 7)));
  }
  return out;
}

/** The remote-write bodies, oldest time slice first; samples of a target share its jittered scrape times. */
function bodies(series: SeriesDef[]): { bodies: Buffer[][]; samples: number } {
  const rounds = Math.floor((END_MS - START_MS) / SCRAPE_MS);
  const timeOf = (s: SeriesDef, r: number) => {
    const inst = s.labels.find((l) => l.name === 'instance')!.value;
    let h = 0;
    for (const c of inst) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    // Jitter inside the scrape interval; never at .500 s, where the query steps are, so no sample
    // sits on a window edge (Prometheus 2 windows are closed on the left, Floe's as Prometheus 3's open).
    const t = START_MS + r * SCRAPE_MS + Math.floor(rnd(h + r) * (SCRAPE_MS - 2000)) + 1 + (h % 997);
    return t % 1000 === 500 ? t + 7 : t;
  };
  const out: Buffer[][] = [];
  let samples = 0;
  const perRound = Math.max(1, Math.floor(SLICE_MS / SCRAPE_MS));
  const seriesPerBody = Math.max(1, Math.floor(20_000 / perRound));
  for (let r0 = 0; r0 < rounds; r0 += perRound) {
    const r1 = Math.min(rounds, r0 + perRound);
    const slice: Buffer[] = [];
    out.push(slice);
    for (let s0 = 0; s0 < series.length; s0 += seriesPerBody) {
      const timeseries = series.slice(s0, s0 + seriesPerBody).map((s) => {
        const list = [];
        for (let r = r0; r < r1; r++) list.push({ value: s.value(r), timestamp: BigInt(timeOf(s, r)) });
        samples += list.length;
        return { labels: s.labels, samples: list };
      });
      slice.push(Buffer.from(compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries })))));
    }
  }
  return { bodies: out, samples };
}

const metadataBody = () =>
  remoteWriteMetadataBody([
    ['http_requests_total', PromMetricMetadata_MetricType.COUNTER, 'Requests.'],
    ['request_duration_seconds', PromMetricMetadata_MetricType.HISTOGRAM, 'Latency.'],
    ['process_resident_memory_bytes', PromMetricMetadata_MetricType.GAUGE, 'Memory.'],
  ]);
/** Requests in flight while loading either system, the same for both so the load rates compare. */
const LOAD_CONCURRENCY = 4;

/** Slice after slice (a series' samples must arrive in time order), the bodies of a slice concurrently. */
async function send(url: string, slices: Buffer[][], headers: Record<string, string>): Promise<number> {
  const t0 = performance.now();
  for (const all of slices) await sendSlice(url, all, headers, LOAD_CONCURRENCY);
  return (performance.now() - t0) / 1000;
}

async function sendSlice(url: string, all: Buffer[], headers: Record<string, string>, concurrency: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < all.length) {
        const body = all[next++]!;
        const res = await fetch(url, { method: 'POST', body, headers });
        if (res.status !== 204 && res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
      }
    }),
  );
}

// ── the query set ──

interface BenchQuery {
  name: string;
  query: string;
  /** Instant at end, or a range of this many ms ending at end. */
  rangeMs?: number;
  stepS?: number;
}

const s = (ms: number) => (ms / 1000).toFixed(3);
const QUERIES: BenchQuery[] = [
  { name: 'rate by job, 1h @60s', query: 'sum by (job) (rate(http_requests_total[5m]))', rangeMs: 3_600_000, stepS: 60 },
  { name: 'error ratio by job, 6h @60s', query: 'sum by (job) (rate(http_requests_total{status=~"5.."}[5m])) / sum by (job) (rate(http_requests_total[5m]))', rangeMs: 6 * 3_600_000, stepS: 60 },
  { name: 'p99 by job (histogram_quantile), 6h @60s', query: 'histogram_quantile(0.99, sum by (le, job) (rate(request_duration_seconds_bucket[5m])))', rangeMs: 6 * 3_600_000, stepS: 60 },
  { name: 'p50 one job, 1h @15s', query: 'histogram_quantile(0.5, sum by (le) (rate(request_duration_seconds_bucket{job="checkout"}[5m])))', rangeMs: 3_600_000, stepS: 15 },
  { name: 'topk instances by 5xx (instant)', query: 'topk(10, sum by (instance) (rate(http_requests_total{status=~"5.."}[5m])))' },
  { name: 'topk memory (instant)', query: 'topk(5, process_resident_memory_bytes)' },
  { name: 'one instance, 1d @60s', query: 'sum by (status) (rate(http_requests_total{instance="10.2.0.1:8080", method!="DELETE"}[5m]))', rangeMs: 24 * 3_600_000, stepS: 60 },
  { name: 'avg memory by job, 1d @60s', query: 'avg by (job) (process_resident_memory_bytes)', rangeMs: 24 * 3_600_000, stepS: 60 },
  { name: 'rate by job, 1d @60s (all counters)', query: 'sum by (job) (rate(http_requests_total[5m]))', rangeMs: 24 * 3_600_000, stepS: 60 },
];

function params(q: BenchQuery): { path: string; params: Record<string, string> } {
  const end = END_MS + 500;
  if (q.rangeMs === undefined) return { path: 'query', params: { query: q.query, time: s(end) } };
  return { path: 'query_range', params: { query: q.query, start: s(end - q.rangeMs), end: s(end), step: String(q.stepS) } };
}

async function timed(url: string, init: RequestInit): Promise<{ ms: number; body: PromApiBody; points: number }> {
  const t0 = performance.now();
  const res = await fetch(url, init);
  const body = (await res.json()) as PromApiBody;
  const ms = performance.now() - t0;
  const r = body.data?.result as Array<{ values?: unknown[] }> | undefined;
  const points = Array.isArray(r) ? r.reduce((n, x) => n + (x.values?.length ?? 1), 0) : 0;
  return { ms, body, points };
}

/**
 * Waits until both systems are at rest after the load (at most 10 min): Floe's last compaction
 * pass began after every loaded file was old enough to merge (MIN_FILE_AGE_MS) and found nothing
 * left to merge, with no failure or conflict; Prometheus's compaction count has not moved for 65 s (its
 * head compaction runs once a minute). Returns what it saw.
 */
async function settle(loadedAt: number): Promise<string> {
  const t0 = Date.now();
  let promCount = await promMetric(prom, 'prometheus_tsdb_compactions_total');
  let promChanged = Date.now();
  let floeDone = false;
  while (Date.now() - t0 < 600_000) {
    const status = (await (await fetch(`${floe.compactorAdminUrl}/status`)).json()) as CompactorStatus;
    const last = status.lastPass;
    const clean = last && !last.failed && last.failedTables === 0 && last.failedGroups === 0 && last.conflicts === 0;
    if (clean && Date.parse(last.startedAt) > loadedAt + MIN_FILE_AGE_MS && last.partitionsCompacted === 0) floeDone = true;
    const n = await promMetric(prom, 'prometheus_tsdb_compactions_total');
    if (n !== promCount) {
      promCount = n;
      promChanged = Date.now();
    }
    if (floeDone && Date.now() - promChanged >= 65_000) {
      return `settled ${((Date.now() - t0) / 1000).toFixed(0)} s after the load: Floe's compactor found nothing left to merge, Prometheus ran ${promCount} compactions`;
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
  return `NOT settled after 10 min (Floe done: ${floeDone}; Prometheus compactions: ${promCount}); querying anyway`;
}

// ── run ──

const loadBefore = loadAverage();
const defs = catalog();
const t0 = performance.now();
const data = bodies(defs);
const genS = (performance.now() - t0) / 1000;
const bytes = data.bodies.flat().reduce((n, b) => n + b.length, 0);
console.log(
  `bench/promql: ${fmt(defs.length)} series (${fmt(INSTANCES)} targets; ${fmt(INSTANCES * 20)} http_requests_total counters), scraped every ${SCRAPE_MS / 1000}s for ${HOURS}h15m: ` +
    `${fmt(data.samples)} samples in ${fmt(data.bodies.flat().length)} remote-write bodies (${fmt(bytes / 1e6, 1)} MB snappy; built in ${genS.toFixed(1)} s)`,
);
console.log(`  load average before: ${loadBefore}`);

const prom = await startPrometheusReceiver(['--query.max-samples=500000000', '--query.timeout=10m']);
const SETTLE = !process.env.FLOE_BENCH_NO_SETTLE;
const MATERIALIZED = (process.env.FLOE_BENCH_MATERIALIZED_LABELS ?? '').split(',').filter(Boolean);
if (MATERIALIZED.length > 0) console.log(`  Floe's metrics table has materialized label columns for: ${MATERIALIZED.join(', ')}`);
const SERIES_CACHE_MB = process.env.FLOE_BENCH_SERIES_CACHE_MB;
if (SERIES_CACHE_MB !== undefined) console.log(`  Floe's querier keeps ${SERIES_CACHE_MB} MB of point lists (querier.series_cache_mb)`);
const floe = await startFloeProcess({
  router: { query_timeout: '10m' },
  querier: { query_timeout: '10m', ...(SERIES_CACHE_MB !== undefined ? { series_cache_mb: Number(SERIES_CACHE_MB) } : {}) },
  ...(SETTLE ? { compactor: { interval: '15s' } } : {}),
  ...(MATERIALIZED.length > 0 ? { schema: { materialized_labels: MATERIALIZED } } : {}),
}).catch(async (err: unknown) => {
  await prom.stop();
  throw err;
});
try {
  const promVersion = ((await (await fetch(`${prom.url}/api/v1/status/buildinfo`)).json()) as { data: { version: string } }).data.version;
  const floeHeaders = { ...REMOTE_WRITE_HEADERS, authorization: `Basic ${Buffer.from(`${floe.tenant}:${floe.apiKey}`).toString('base64')}` };
  // Floe types the histogram's _sum and _count as counters only through this metadata: a refused
  // request would change what is stored without failing the load.
  for (const [url, headers] of [[`${prom.url}/api/v1/write`, REMOTE_WRITE_HEADERS], [`${floe.otlpHttpUrl}/api/v1/write`, floeHeaders]] as const) {
    const res = await fetch(url, { method: 'POST', body: metadataBody(), headers });
    if (res.status !== 204 && res.status !== 200) throw new Error(`metadata to ${url}: ${res.status} ${await res.text()}`);
  }
  const promLoad = await send(`${prom.url}/api/v1/write`, data.bodies, REMOTE_WRITE_HEADERS);
  console.log(`  loaded Prometheus ${promVersion} in ${promLoad.toFixed(1)} s (${fmt(data.samples / promLoad)} samples/s, ${LOAD_CONCURRENCY} requests in flight)`);
  const floeLoad = await send(`${floe.otlpHttpUrl}/api/v1/write`, data.bodies, floeHeaders);
  const visibleT0 = performance.now();
  for (;;) {
    const n = Number(await floeSqlScalar(floe, 'SELECT count(*) FROM metrics'));
    if (n >= data.samples) break;
    if (performance.now() - visibleT0 > 900_000) throw new Error(`only ${n} of ${data.samples} samples visible in Floe after 15 min`);
    await new Promise((r) => setTimeout(r, 2000));
  }
  console.log(`  loaded Floe in ${floeLoad.toFixed(1)} s acknowledged (${fmt(data.samples / floeLoad)} samples/s, ${LOAD_CONCURRENCY} requests in flight), every sample queryable ${((performance.now() - visibleT0) / 1000).toFixed(1)} s later`);
  if (SETTLE) console.log(`  ${await settle(Date.now())}`);
  else console.log('  not settled (FLOE_BENCH_NO_SETTLE): queries read the flush files of the load');
  const floeInit = (body: string): RequestInit => ({
    method: 'POST',
    body,
    headers: { authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': floe.tenant, 'content-type': 'application/x-www-form-urlencoded' },
  });
  const promInit = (body: string): RequestInit => ({ method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  // Warm-up: one run of each (Prometheus's head and page cache, Floe's querier and file cache,
  // and the point lists the querier keeps). Its times are printed too: a first read of a window.
  const firstReads = new Map<BenchQuery, { prom: number; floe: number }>();
  for (const q of QUERIES) {
    const { path, params: p } = params(q);
    const body = new URLSearchParams(p).toString();
    const a = await timed(`${prom.url}/api/v1/${path}`, promInit(body));
    const b = await timed(`${floe.routerUrl}/metricquery/api/v1/${path}`, floeInit(body));
    firstReads.set(q, { prom: a.ms, floe: b.ms });
  }
  const rows: Array<{ q: BenchQuery; prom: number; floe: number; points: number; why?: string }> = [];
  for (const q of QUERIES) {
    const { path, params: p } = params(q);
    const body = new URLSearchParams(p).toString();
    const pt: number[] = [];
    const ft: number[] = [];
    let why: string | undefined;
    let points = 0;
    for (let i = 0; i < REPEATS; i++) {
      const a = await timed(`${prom.url}/api/v1/${path}`, promInit(body));
      const b = await timed(`${floe.routerUrl}/metricquery/api/v1/${path}`, floeInit(body));
      pt.push(a.ms);
      ft.push(b.ms);
      points = a.points;
      // Two refusals would agree; here the query set must be answered.
      why ??= a.body.status === 'success' ? comparePromAnswers(q.query, a.body, b.body) : `Prometheus refused: ${a.body.error}`;
    }
    rows.push({ q, prom: median(pt), floe: median(ft), points, why });
    console.log(
      `  ${q.name.padEnd(44)} prometheus ${fmt(median(pt), 1).padStart(8)} ms  floe ${fmt(median(ft), 1).padStart(8)} ms  ratio ${(median(ft) / median(pt)).toFixed(2).padStart(6)}  ` +
        `(${fmt(points)} points${why ? `; ANSWERS DIFFER: ${why}` : ', same answer'}; first read ${fmt(firstReads.get(q)!.prom, 1)} / ${fmt(firstReads.get(q)!.floe, 1)} ms)`,
    );
  }
  const ratios = rows.map((r) => r.floe / r.prom);
  console.log(`  queries: ${QUERIES.map((q) => `${q.name}: ${q.query}`).join(' | ')}`);
  console.log(`  median of per-query ratios floe/prometheus: ${median(ratios).toFixed(2)} (goal ≤ 1.0); geometric mean ${Math.exp(ratios.reduce((a, r) => a + Math.log(r), 0) / ratios.length).toFixed(2)}; ${rows.filter((r) => r.why).length} of ${rows.length} answers differ`);
  console.log(`  load average after: ${loadAverage()}`);
} finally {
  await prom.stop();
  await floe.stop();
  if (!process.env.FLOE_BENCH_KEEP) floe.remove();
}
process.exit(0);
