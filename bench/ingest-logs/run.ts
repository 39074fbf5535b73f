/**
 * bench/ingest-logs: log records/s acknowledged over OTLP HTTP protobuf, sustained, against the
 * bare receive-and-append baseline of bench/ingest-traces (bench/lib/append-baseline-server.ts:
 * the same bodies appended undecoded to one file with the WAL's group-commit fdatasync) in the
 * same run, half of its time before Floe's run and half after. Also reports the WAL backlog over the run (is the writer keeping up?), the rows in
 * `logs` after the drain, and the CPU seconds the receiver and the load generator used.
 *
 *   node bench/ingest-logs/run.ts [seconds=60] [concurrency=16] [recordsPerRequest=100]
 *
 * Bodies (bench/lib/otlp-gen.ts): an application's log batch — one resource (service.name,
 * version, instance, host, environment), request lines, cache and database debug lines, 404
 * warnings and ERRORs with a stack trace, 2–7 typed attributes each, trace context on most —
 * for eight services in turn; each request gets a fresh trace id written into its template.
 * Set FLOE_BENCH_CPU_PROF=<dir> to write a CPU profile of the Floe process.
 */
import { startAppendBaseline } from '../lib/append-baseline.ts';
import { combinedDrives, errorSummary as errs, fmt, loadAverage, machineSummary, measuredDrive, threadSummary, type MeasuredDrive as Side } from '../lib/drive.ts';
import { floeSqlScalar, startFloeProcess } from '../lib/floe-process.ts';
import { MarkedTemplate, logsBody } from '../lib/otlp-gen.ts';
import { WalBacklog } from '../lib/wal-backlog.ts';

const SECONDS = Number(process.argv[2] ?? 60);
const CONCURRENCY = Number(process.argv[3] ?? 16);
const RECORDS = Number(process.argv[4] ?? 100);

const TEMPLATES = Array.from({ length: 8 }, (_, s) => new MarkedTemplate(logsBody(RECORDS, s), RECORDS));
const AVG_BYTES = TEMPLATES.reduce((a, t) => a + t.body.length, 0) / TEMPLATES.length;
let turn = 0;
const next = () => {
  const t = TEMPLATES[turn++ % TEMPLATES.length]!;
  return { body: t.next(), items: t.items };
};
const PROTOBUF = { 'content-type': 'application/x-protobuf' };

async function baseline(seconds: number): Promise<Side> {
  const server = await startAppendBaseline();
  const r = await measuredDrive(server.pid, { url: `${server.url}/v1/logs`, headers: PROTOBUF, seconds, concurrency: CONCURRENCY, next });
  await server.stop();
  return r;
}

async function floeRun(): Promise<Side & { backlog: number[]; drainMs: number; left: number; rows: bigint }> {
  const floe = await startFloeProcess();
  try {
    const headers = { ...PROTOBUF, authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': floe.tenant };
    const wal = new WalBacklog(floe.dir);
    const r = await measuredDrive(floe.pid, { url: `${floe.otlpHttpUrl}/v1/logs`, headers, seconds: SECONDS, concurrency: CONCURRENCY, next, onTick: () => wal.sample() });
    wal.sample();
    const drain = await wal.drained();
    const rows = BigInt((await floeSqlScalar(floe, 'SELECT count(*) FROM logs')) as bigint | number);
    return { ...r, backlog: wal.samples, drainMs: drain.ms, left: drain.left, rows };
  } finally {
    await floe.stop();
    if (!process.env.FLOE_BENCH_KEEP) floe.remove();
  }
}

const loadBefore = loadAverage();
// Half the baseline before Floe's run and half after: the machine's drift weighs on both sides.
const before = await baseline(SECONDS / 2);
const floe = await floeRun();
const after = await baseline(SECONDS / 2);
const base = combinedDrives(before, after);
const baseRate = base.items / base.seconds;
const floeRate = floe.items / floe.seconds;
console.log(`bench/ingest-logs: ${SECONDS}s, ${CONCURRENCY} concurrent requests, ${RECORDS} log records/request (${fmt(AVG_BYTES)} bytes on average)`);
console.log(`  load average before: ${loadBefore}`);
console.log(`  baseline (receive + append + fdatasync, undecoded): ${fmt(baseRate)} records/s (${errs(base)}; ${fmt(before.items / before.seconds)} before Floe's run, ${fmt(after.items / after.seconds)} after)`);
console.log(`    receiver CPU ${fmt(base.cpu / base.seconds, 2)} cores (${fmt((base.cpu * 1e6) / base.items, 1)} µs per record), load generator ${fmt(base.genCpu / base.seconds, 2)} cores, load avg after ${base.load}`);
console.log(`  floe (OTLP HTTP protobuf → WAL ack):               ${fmt(floeRate)} records/s (${errs(floe)})`);
console.log(
  `    rows in logs after the drain: ${fmt(Number(floe.rows))} (acknowledged ${fmt(floe.items)}); receiver CPU ${fmt(floe.cpu / floe.seconds, 2)} cores (${fmt((floe.cpu * 1e6) / floe.items, 1)} µs per record), load generator ${fmt(floe.genCpu / floe.seconds, 2)} cores, load avg after ${floe.load}`,
);
console.log(`    Floe's threads (cores): ${threadSummary(floe)}`);
console.log(`    the machine's cores not running processes: baseline ${machineSummary(base)}; Floe ${machineSummary(floe)}`);
console.log(`  ratio floe/baseline: ${(floeRate / baseRate).toFixed(3)} (goal ≥ 0.5)`);
console.log(
  `  WAL backlog (segments, every 5 s): ${floe.backlog.join(' ')}; ${floe.left === 0 ? `drained ${(floe.drainMs / 1000).toFixed(1)} s after the load stopped` : `${floe.left} segments left after ${(floe.drainMs / 1000).toFixed(0)} s`}`,
);
process.exit(0);
