/**
 * bench/ingest-tenants: the same OTLP trace load (bench/ingest-traces' bodies, the same
 * concurrency) sent from ONE tenant and spread round-robin over N tenants, each side against its
 * own fresh `floe all`. Every (tenant, dataset, table) is its own Iceberg table, so with N tenants
 * a commit round writes up to N Parquet files and makes N Iceberg appends where one tenant makes
 * one: does the writer keep up (WAL backlog flat), how long from ack to visible, how many commits
 * and files per second, and what it costs per span. The one-tenant side runs half before and half
 * after the many-tenant side, so that the machine's drift over the run weighs on both.
 *
 *   node bench/ingest-tenants/run.ts [seconds=60] [tenants=200] [concurrency=16] [spansPerRequest=100]
 *
 * Tenants are made through the router's management API with the instance admin key
 * (tenants.ts). FLOE_BENCH_CPU_PROF=<dir> profiles each side's Floe process (one file per side,
 * in the order the sides run: one, many, one); step-times.ts times the steps of the writer's
 * rounds (wall time, for finding where a round goes, not for the figures printed here).
 */
import { randomBytes } from 'node:crypto';
import { combinedDrives, drive, machineSummary, measuredDrive, threadSummary, type DriveOptions, type MeasuredDrive } from '../lib/drive.ts';
import { percentile, startFloeProcess } from '../lib/floe-process.ts';
import { MarkedTemplate, ingestTracesBody } from '../lib/otlp-gen.ts';
import { WalBacklog } from '../lib/wal-backlog.ts';
import { cliBootstrapSeconds, createTenants } from './tenants.ts';
import { parquetFiles, writerFigures, type WriterFigures } from './writer-figures.ts';

const SECONDS = Number(process.argv[2] ?? 60);
const TENANTS = Number(process.argv[3] ?? 200);
const CONCURRENCY = Number(process.argv[4] ?? 16);
const SPANS = Number(process.argv[5] ?? 100);

const TEMPLATE = new MarkedTemplate(ingestTracesBody(SPANS), SPANS);
const PROTOBUF = { 'content-type': 'application/x-protobuf' };
const PROBE_EVERY_MS = 2000;
const PROBE_POLL_MS = 500;
const PROBE_GIVE_UP_MS = 300_000;
/** A writer far behind with many tenants may take long to drain; the wait is reported, not cut short. */
const DRAIN_TIMEOUT_MS = 600_000;
/**
 * Unmeasured load before each side's measured one: a fresh process's JIT warm-up and first commit
 * to each table would otherwise weigh twice on the one-tenant side (two processes of half the time).
 */
const WARMUP_SECONDS = 5;

interface Side extends MeasuredDrive {
  tenants: number;
  setupSeconds: number;
  cliBootstrapSeconds: number | undefined;
  /** WAL segments every 5 s (the acceptor's directory), one list per run of the side. */
  backlogs: number[][];
  /** Each round /status showed (every 5 s, load then drain): "seconds/commits/rows/segments", '‖' at the load's end. */
  rounds: string[][];
  latencies: number[];
  unseen: number;
  drainMs: number[];
  drainLeft: number;
  /** The writer's counters from the load's start to the drained WAL. */
  writer: Pick<WriterFigures, 'rounds' | 'segmentsConsumed' | 'commits' | 'commitSeconds'>;
  /** Load + drain seconds: the window the writer's counters cover. */
  writerSeconds: number;
  files: number;
  compactorPasses: number;
}

/** One side: a fresh Floe, `tenants` tenants, `seconds` of load spread round-robin over them. */
async function runSide(tenants: number, seconds: number, prefix: string, timeCli: boolean): Promise<Side> {
  const adminKey = randomBytes(24).toString('hex');
  const floe = await startFloeProcess({ auth: { admin_api_key: adminKey } });
  const setupStart = performance.now();
  const bench = await createTenants(floe.routerUrl, adminKey, prefix, tenants);
  const setupSeconds = (performance.now() - setupStart) / 1000;
  const cli = timeCli ? cliBootstrapSeconds(floe.configFile, `${prefix}-cli`) : undefined;
  const wal = new WalBacklog(floe.dir);
  // The writer's last round every 5 s, each round once, through the load and then the drain
  // (with no ingest beside it): what one round of N tables costs.
  const rounds: string[] = [];
  const samples: Promise<void>[] = [];
  let lastSeen = -1;
  const sampleWriter = () =>
    samples.push(
      writerFigures(floe.writerAdminUrl).then(
        (f) => {
          if (!f.lastRound || f.rounds === lastSeen) return;
          lastSeen = f.rounds;
          rounds.push(`${(f.lastRound.durationMs / 1000).toFixed(1)}s/${f.lastRound.commits}/${(f.lastRound.rows / 1000).toFixed(0)}k/${f.lastRound.segments}`);
        },
        () => void rounds.push('?'),
      ),
    );

  // Ack → visible: a probe trace every 2 s from the next tenant in turn, polled by id through
  // the router with that tenant's key (every 500 ms, as bench/ingest-traces does: faster polling
  // would add query CPU to the ingest figures).
  const latencies: number[] = [];
  let unseen = 0;
  let probing = true;
  let probeTurn = 0;
  const probeLoop = async () => {
    while (probing) {
      const t = bench[probeTurn++ % bench.length]!;
      const body = TEMPLATE.next();
      const at = TEMPLATE.offsets[0]!;
      const traceId = body.subarray(at, at + 16).toString('hex');
      const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body, headers: { ...PROTOBUF, ...t.auth } });
      await res.arrayBuffer();
      const acked = Date.now();
      if (res.status === 200) {
        for (;;) {
          const r = await fetch(`${floe.routerUrl}/tracequery/api/traces/${traceId}`, { headers: t.auth });
          await r.arrayBuffer();
          if (r.status === 200) {
            latencies.push(Date.now() - acked);
            break;
          }
          if (Date.now() - acked > PROBE_GIVE_UP_MS) {
            unseen++;
            break;
          }
          await new Promise((x) => setTimeout(x, PROBE_POLL_MS));
        }
      }
      await new Promise((x) => setTimeout(x, PROBE_EVERY_MS));
    }
  };

  let turn = 0;
  const load = (s: number): DriveOptions => ({
    url: `${floe.otlpHttpUrl}/v1/traces`,
    headers: PROTOBUF,
    seconds: s,
    concurrency: CONCURRENCY,
    next: () => ({ body: TEMPLATE.next(), items: SPANS, headers: bench[turn++ % bench.length]!.auth }),
  });
  await drive(load(WARMUP_SECONDS));
  const w0 = await writerFigures(floe.writerAdminUrl);
  const files0 = parquetFiles(floe.dir);
  const probes = probeLoop();
  const loadStart = performance.now();
  const r = await measuredDrive(floe.pid, {
    ...load(seconds),
    onTick: () => {
      wal.sample();
      sampleWriter();
    },
  });
  wal.sample();
  sampleWriter();
  await Promise.all(samples);
  rounds.push('‖');
  const drainSampler = setInterval(sampleWriter, 5000);
  // Timed from the load's end, while the last probe may still be polling.
  const drained = wal.drained(DRAIN_TIMEOUT_MS).then(async (d) => {
    clearInterval(drainSampler);
    sampleWriter();
    // The WAL empties when the writer deletes the segments, after its commits: its counters are final.
    const writer = await writerFigures(floe.writerAdminUrl);
    return { ...d, writer, seconds: (performance.now() - loadStart) / 1000 };
  });
  probing = false;
  await probes;
  const drain = await drained;
  const w1 = drain.writer;
  const writerSeconds = drain.seconds;
  await Promise.all(samples);
  const compactor = (await (await fetch(`${floe.compactorAdminUrl}/status`)).json()) as { passes: number };
  const files = parquetFiles(floe.dir) - files0;
  await floe.stop();
  if (!process.env.FLOE_BENCH_KEEP) floe.remove();
  return {
    ...r,
    tenants,
    setupSeconds,
    cliBootstrapSeconds: cli,
    backlogs: [wal.samples],
    rounds: [rounds],
    latencies: latencies.sort((a, b) => a - b),
    unseen,
    drainMs: [drain.ms],
    drainLeft: drain.left,
    writer: {
      rounds: w1.rounds - w0.rounds,
      segmentsConsumed: w1.segmentsConsumed - w0.segmentsConsumed,
      commits: w1.commits - w0.commits,
      commitSeconds: w1.commitSeconds - w0.commitSeconds,
    },
    writerSeconds,
    files,
    compactorPasses: compactor.passes,
  };
}

/** The one-tenant side's two halves as one (drive figures added up, lists kept apart). */
function combinedSides(a: Side, b: Side): Side {
  return {
    ...a,
    ...combinedDrives(a, b),
    setupSeconds: a.setupSeconds + b.setupSeconds,
    backlogs: [...a.backlogs, ...b.backlogs],
    rounds: [...a.rounds, ...b.rounds],
    latencies: [...a.latencies, ...b.latencies].sort((x, y) => x - y),
    unseen: a.unseen + b.unseen,
    drainMs: [...a.drainMs, ...b.drainMs],
    drainLeft: a.drainLeft + b.drainLeft,
    writer: {
      rounds: a.writer.rounds + b.writer.rounds,
      segmentsConsumed: a.writer.segmentsConsumed + b.writer.segmentsConsumed,
      commits: a.writer.commits + b.writer.commits,
      commitSeconds: a.writer.commitSeconds + b.writer.commitSeconds,
    },
    writerSeconds: a.writerSeconds + b.writerSeconds,
    files: a.files + b.files,
    compactorPasses: a.compactorPasses + b.compactorPasses,
  };
}

const rate = (s: Side) => s.items / s.seconds;
const cpuPerSpan = (s: Side) => (s.cpu * 1e6) / s.items;

function print(label: string, s: Side): void {
  const errors = s.errors ? ` ${JSON.stringify(s.errorKinds)}, first: ${s.firstError}` : '';
  console.log(`  ${label}: ${rate(s).toFixed(0)} spans/s acknowledged (${s.errors} errors${errors})`);
  console.log(`    Floe process CPU ${(s.cpu / s.seconds).toFixed(2)} cores, ${cpuPerSpan(s).toFixed(1)} µs per span; load generator ${(s.genCpu / s.seconds).toFixed(2)} cores`);
  console.log(`    Floe's threads (cores): ${threadSummary(s)}`);
  console.log(`    the machine's cores not running processes: ${machineSummary(s)}`);
  console.log(`    WAL backlog (segments, every 5 s): ${s.backlogs.map((b) => b.join(' ')).join(' | ')}; drained ${s.drainMs.map((ms) => (ms / 1000).toFixed(1)).join(' | ')} s after the load stopped${s.drainLeft ? ` (${s.drainLeft} segments LEFT after ${DRAIN_TIMEOUT_MS / 1000} s)` : ''}`);
  console.log(`    writer's rounds seen every 5 s (seconds/commits/rows/WAL segments; ‖ load stopped): ${s.rounds.map((r) => r.join(' ')).join(' | ')}`);
  const w = s.writer;
  console.log(
    `    writer over load + drain (${s.writerSeconds.toFixed(1)} s): ${w.rounds} rounds, ${w.segmentsConsumed} segments, ${w.commits} commits (${(w.commits / s.writerSeconds).toFixed(1)}/s), ${s.files} Parquet files (${(s.files / s.writerSeconds).toFixed(1)}/s), ${w.commits ? ((w.commitSeconds * 1000) / w.commits).toFixed(1) : '-'} ms per Iceberg append (${w.commitSeconds.toFixed(1)} s in all, ${((100 * w.commitSeconds) / s.writerSeconds).toFixed(0)} % of the time)`,
  );
  console.log(`    ack → visible in trace-by-id: p50 ${percentile(s.latencies, 50)} ms, p95 ${percentile(s.latencies, 95)} ms (${s.latencies.length} probes${s.unseen ? `, ${s.unseen} NOT visible within ${PROBE_GIVE_UP_MS / 1000} s` : ''}, polled every ${PROBE_POLL_MS} ms)`);
  console.log(`    compactor passes: ${s.compactorPasses}`);
}

const before = await runSide(1, SECONDS / 2, 'one-a', false);
const many = await runSide(TENANTS, SECONDS, 'many', true);
const after = await runSide(1, SECONDS / 2, 'one-b', false);
const one = combinedSides(before, after);

console.log(`bench/ingest-tenants: ${SECONDS}s, ${TENANTS} tenants, ${CONCURRENCY} concurrent requests, ${SPANS} spans/request (${TEMPLATE.body.length} bytes); one tenant half before and half after; each side a fresh \`floe all\` measured after ${WARMUP_SECONDS} s of the same load`);
console.log(
  `  setup: ${TENANTS} tenants by POST /api/v1/tenants + /api-keys (admin key) in ${many.setupSeconds.toFixed(1)} s (${((many.setupSeconds * 1000) / TENANTS).toFixed(0)} ms each); one \`floe admin bootstrap\` (CLI) ${many.cliBootstrapSeconds?.toFixed(2)} s`,
);
print(`one tenant (${(rate(before)).toFixed(0)} before, ${rate(after).toFixed(0)} after)`, one);
print(`${TENANTS} tenants, round-robin`, many);
console.log(`  ratio many/one: rate ${(rate(many) / rate(one)).toFixed(3)}, CPU per span ${(cpuPerSpan(many) / cpuPerSpan(one)).toFixed(3)}, ack → visible p50 ${(percentile(many.latencies, 50) / percentile(one.latencies, 50)).toFixed(2)}`);
