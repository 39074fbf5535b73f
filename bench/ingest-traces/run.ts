/**
 * bench/ingest-traces: spans/s acknowledged over OTLP HTTP protobuf, sustained, against a
 * baseline measured in the same run that receives the same bodies and appends them undecoded to
 * a file with the same fsync policy: half of its time before Floe's run and half after, so that
 * the machine's drift over the run weighs on both sides. Also reports the WAL backlog over the
 * run (is the writer keeping up?) and the time from ack to visible in a trace-by-id query.
 *
 *   node bench/ingest-traces/run.ts [seconds=60] [concurrency=16] [spansPerRequest=100]
 */
import { startAppendBaseline } from '../lib/append-baseline.ts';
import { combinedDrives, machineSummary, measuredDrive, threadSummary, type DriveOptions } from '../lib/drive.ts';
import { percentile, startFloeProcess } from '../lib/floe-process.ts';
import { MarkedTemplate, ingestTracesBody } from '../lib/otlp-gen.ts';
import { WalBacklog } from '../lib/wal-backlog.ts';

const SECONDS = Number(process.argv[2] ?? 60);
const CONCURRENCY = Number(process.argv[3] ?? 16);
const SPANS = Number(process.argv[4] ?? 100);

const TEMPLATE = new MarkedTemplate(ingestTracesBody(SPANS), SPANS);
const PROBE_POLL_MS = 500;
const PROTOBUF = { 'content-type': 'application/x-protobuf' };

/** A fresh body (its own trace id, so resend dedup stays out) and that id, for the visibility probes. */
function nextBody(): { body: Buffer; traceId: string } {
  const body = TEMPLATE.next();
  const at = TEMPLATE.offsets[0]!;
  return { body, traceId: body.subarray(at, at + 16).toString('hex') };
}
const load = (url: string, headers: Record<string, string>, seconds: number, onTick?: () => void): DriveOptions => ({
  url,
  headers: { ...PROTOBUF, ...headers },
  seconds,
  concurrency: CONCURRENCY,
  next: () => ({ body: TEMPLATE.next(), items: SPANS }),
  ...(onTick ? { onTick } : {}),
});

async function baseline(seconds: number) {
  const server = await startAppendBaseline();
  const r = await measuredDrive(server.pid, load(`${server.url}/v1/traces`, {}, seconds));
  await server.stop();
  return r;
}

async function floeRun() {
  const floe = await startFloeProcess();
  const auth = { authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': floe.tenant };
  const wal = new WalBacklog(floe.dir);
  // Ack → visible: a probe trace every 2 s, polled by id until the router returns it. Polls every
  // 500 ms: they run inside the measured window, so faster polling would add query CPU to what
  // the ingest figures count; the latencies are therefore up to 500 ms late (a resolution that
  // visibility in seconds can afford).
  const latencies: number[] = [];
  let probing = true;
  const probes = (async () => {
    while (probing) {
      const { body, traceId } = nextBody();
      const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body, headers: { ...PROTOBUF, ...auth } });
      const acked = Date.now();
      if (res.status === 200) {
        for (;;) {
          const r = await fetch(`${floe.routerUrl}/tracequery/api/traces/${traceId}`, { headers: auth });
          await r.arrayBuffer();
          if (r.status === 200) {
            latencies.push(Date.now() - acked);
            break;
          }
          if (Date.now() - acked > 60_000) break;
          await new Promise((x) => setTimeout(x, PROBE_POLL_MS));
        }
      }
      await new Promise((x) => setTimeout(x, 2000));
    }
  })();
  const r = await measuredDrive(floe.pid, load(`${floe.otlpHttpUrl}/v1/traces`, auth, SECONDS, () => wal.sample()));
  wal.sample();
  probing = false;
  await probes;
  // Drain: how long until the writer has consumed the backlog left at the end.
  const drain = await wal.drained();
  await floe.stop();
  if (!process.env.FLOE_BENCH_KEEP) floe.remove();
  return { ...r, backlog: wal.samples, latencies: latencies.sort((a, b) => a - b), drainMs: drain.ms };
}

const before = await baseline(SECONDS / 2);
const floe = await floeRun();
const after = await baseline(SECONDS / 2);
const base = combinedDrives(before, after);
const baseRate = base.items / base.seconds;
const floeRate = floe.items / floe.seconds;
console.log(`bench/ingest-traces: ${SECONDS}s, ${CONCURRENCY} concurrent requests, ${SPANS} spans/request (${TEMPLATE.body.length} bytes)`);
console.log(`  baseline (receive + append + fdatasync, undecoded): ${baseRate.toFixed(0)} spans/s (${base.errors} errors; ${(before.items / before.seconds).toFixed(0)} before Floe's run, ${(after.items / after.seconds).toFixed(0)} after)`);
console.log(`    receiver CPU ${(base.cpu / base.seconds).toFixed(2)} cores (${((base.cpu * 1e6) / base.items).toFixed(1)} µs per span), load generator ${(base.genCpu / base.seconds).toFixed(2)} cores`);
console.log(`  floe (OTLP HTTP protobuf → WAL ack):               ${floeRate.toFixed(0)} spans/s (${floe.errors} errors)`);
console.log(`    Floe process CPU ${(floe.cpu / floe.seconds).toFixed(2)} cores, ${((floe.cpu * 1e6) / floe.items).toFixed(1)} µs per span; load generator ${(floe.genCpu / floe.seconds).toFixed(2)} cores`);
console.log(`    Floe's threads (cores): ${threadSummary(floe)}`);
console.log(`    the machine's cores not running processes: baseline ${machineSummary(base)}; Floe ${machineSummary(floe)}`);
console.log(`  ratio floe/baseline: ${(floeRate / baseRate).toFixed(3)} (goal ≥ 0.5)`);
console.log(`  WAL backlog (segments, every 5 s): ${floe.backlog.join(' ')}; drained ${(floe.drainMs / 1000).toFixed(1)} s after the load stopped`);
console.log(`  ack → visible in trace-by-id: p50 ${percentile(floe.latencies, 50)} ms, p95 ${percentile(floe.latencies, 95)} ms (${floe.latencies.length} probes, polled every ${PROBE_POLL_MS} ms)`);
