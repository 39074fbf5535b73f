/**
 * bench/ingest-remote-write: samples/s that Floe acknowledges durably over Prometheus remote
 * write 1.0, against a real Prometheus (Debian package `prometheus`, started here on loopback
 * with --web.enable-remote-write-receiver, its TSDB in a temp dir) receiving the same stream in
 * the same run: the same bodies in the same order from the same number of concurrent shards.
 * Only 2xx answers count; everything else is an error (counted, not retried). Also reports
 * Floe's WAL backlog over the run (is the writer keeping up?), the rows in `metrics` after the
 * drain, and the CPU seconds each receiver and the load generator used.
 *
 *   node bench/ingest-remote-write/run.ts [seconds=60] [concurrency=16] [seriesPerRequest=500] [series=8000]
 *
 * The stream (bench/lib/remote-write-stream.ts): `series` series of a fleet of services, 35 per
 * instance (http_requests_total{method,status}, request duration sum and count, in-flight,
 * resident memory, CPU seconds, goroutines), scraped every second of simulated time from 30
 * minutes ago on; shard w owns the series s ≡ w (mod concurrency) and sends each scrape round of
 * them in requests of about `seriesPerRequest` samples, one sample per TimeSeries, as a
 * Prometheus remote-write queue does. One metadata request (TYPE/HELP) goes first, uncounted.
 * Set FLOE_BENCH_CPU_PROF=<dir> to write a CPU profile of the Floe process.
 */
import { errorSummary as errs, fmt, loadAverage, measuredDrive, threadSummary, type MeasuredDrive as Side } from '../lib/drive.ts';
import { floeSqlScalar, startFloeProcess } from '../lib/floe-process.ts';
import { promMetric, startPrometheusReceiver } from '../lib/prometheus-process.ts';
import { REMOTE_WRITE_HEADERS, RemoteWriteStream, metadataRequest } from '../lib/remote-write-stream.ts';
import { WalBacklog } from '../lib/wal-backlog.ts';

const SECONDS = Number(process.argv[2] ?? 60);
const CONCURRENCY = Number(process.argv[3] ?? 16);
const PER_REQUEST = Number(process.argv[4] ?? 500);
const SERIES = Number(process.argv[5] ?? 8000);
const INTERVAL_MS = 1000;
const T0 = Math.floor(Date.now() / 1000) * 1000 - 30 * 60_000;

const newStream = () => new RemoteWriteStream({ series: SERIES, shards: CONCURRENCY, perRequest: PER_REQUEST, t0Ms: T0, intervalMs: INTERVAL_MS });

async function prometheusRun(): Promise<Side & { appended: number; version: string }> {
  const stream = newStream();
  const prom = await startPrometheusReceiver();
  try {
    const meta = await fetch(`${prom.url}/api/v1/write`, { method: 'POST', body: metadataRequest(), headers: REMOTE_WRITE_HEADERS });
    if (meta.status !== 204) throw new Error(`Prometheus answered the metadata request with ${meta.status}: ${await meta.text()}`);
    const r = await measuredDrive(prom.pid, { url: `${prom.url}/api/v1/write`, headers: REMOTE_WRITE_HEADERS, seconds: SECONDS, concurrency: CONCURRENCY, next: (w) => stream.next(w) });
    const appended = await promMetric(prom, 'prometheus_tsdb_head_samples_appended_total');
    const info = (await (await fetch(`${prom.url}/api/v1/status/buildinfo`)).json()) as { data: { version: string } };
    return { ...r, appended, version: info.data.version };
  } finally {
    await prom.stop();
  }
}

async function floeRun(): Promise<Side & { backlog: number[]; drainMs: number; left: number; rows: bigint }> {
  const stream = newStream();
  // The simulated scrapes run faster than the clock (30 simulated minutes back, then ~80 rounds a
  // second): past ten minutes they lie in the future, which Prometheus's receiver takes and
  // Floe's default limits.ingest_max_future refuses. Both sides take the same stream.
  const floe = await startFloeProcess({ limits: { ingest_max_future: '0s' } });
  try {
    const headers = { ...REMOTE_WRITE_HEADERS, authorization: `Basic ${Buffer.from(`${floe.tenant}:${floe.apiKey}`).toString('base64')}` };
    const url = `${floe.otlpHttpUrl}/api/v1/write`;
    const meta = await fetch(url, { method: 'POST', body: metadataRequest(), headers });
    if (meta.status !== 204) throw new Error(`Floe answered the metadata request with ${meta.status}: ${await meta.text()}`);
    const wal = new WalBacklog(floe.dir);
    const r = await measuredDrive(floe.pid, { url, headers, seconds: SECONDS, concurrency: CONCURRENCY, next: (w) => stream.next(w), onTick: () => wal.sample() });
    wal.sample();
    const drain = await wal.drained();
    const rows = BigInt((await floeSqlScalar(floe, 'SELECT count(*) FROM metrics')) as bigint | number);
    return { ...r, backlog: wal.samples, drainMs: drain.ms, left: drain.left, rows };
  } finally {
    await floe.stop();
    if (!process.env.FLOE_BENCH_KEEP) floe.remove();
  }
}

const shape = newStream().shape();
const loadBefore = loadAverage();
const prom = await prometheusRun();
const floe = await floeRun();
const promRate = prom.items / prom.seconds;
const floeRate = floe.items / floe.seconds;
const cpu = (r: Side) =>
  `receiver CPU ${fmt(r.cpu / r.seconds, 2)} cores (${fmt((r.cpu * 1e6) / r.items, 1)} µs per sample), load generator ${fmt(r.genCpu / r.seconds, 2)} cores, load avg after ${r.load}`;
console.log(
  `bench/ingest-remote-write: ${SECONDS}s, ${CONCURRENCY} concurrent shards, ${fmt(SERIES)} series scraped every ${INTERVAL_MS / 1000}s (simulated), ` +
    `${fmt(shape.samplesPerRequest)} samples/request (${fmt(shape.rawBytes)} bytes protobuf, ${fmt(shape.bodyBytes)} bytes snappy as sent; snappyjs: ${fmt(shape.snappyjsBytes)})`,
);
console.log(`  load average before: ${loadBefore}`);
console.log(`  prometheus ${prom.version} (remote-write receiver → TSDB head + WAL): ${fmt(promRate)} samples/s acknowledged (${fmt(prom.requests)} requests, ${errs(prom)})`);
console.log(`    head samples appended: ${fmt(prom.appended)} (acknowledged ${fmt(prom.items)}); ${cpu(prom)}`);
console.log(`  floe (remote write → WAL ack):                              ${fmt(floeRate)} samples/s acknowledged (${fmt(floe.requests)} requests, ${errs(floe)})`);
console.log(`    rows in metrics after the drain: ${fmt(Number(floe.rows))} (acknowledged ${fmt(floe.items)}); ${cpu(floe)}`);
console.log(`    Floe's threads (cores): ${threadSummary(floe)}`);
console.log(`  ratio floe/prometheus: ${(floeRate / promRate).toFixed(3)} (goal ≥ 1.0)`);
console.log(
  `  WAL backlog (segments, every 5 s): ${floe.backlog.join(' ')}; ${floe.left === 0 ? `drained ${(floe.drainMs / 1000).toFixed(1)} s after the load stopped` : `${floe.left} segments left after ${(floe.drainMs / 1000).toFixed(0)} s`}`,
);
process.exit(0);
