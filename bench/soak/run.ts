// bench/soak: `floe all` under a steady mixed load for many minutes, watching for what short
// benchmarks cannot see: memory or file descriptors that grow without bound, tables whose file
// count the compactor does not hold down, queries that slow down as data accumulates, and rows
// lost or stored twice when compaction runs beside ingest and queries.
//
//   node bench/soak/run.ts [minutes=10] [spansPerSecond=20000] [logsPerSecond=10000] [series=8000] [compactorInterval=5m]
//
// Load (open loop, paced by the clock): OTLP/HTTP protobuf traces (100 spans a request, 8
// services) and logs (100 records a request), Prometheus remote write (`series` series scraped
// every second, 16 shards as a Prometheus queue sends them), and one query every 500 ms in turn:
// a trace by id (sent at least 15 s before), a TraceQL search, a LogQL metric query and a PromQL
// range query over the last 15 minutes. The compactor runs at Floe's default interval (5m) unless
// told otherwise. The baseline is the run's
// own first minutes: the summary prints the last minutes' figures against them.
//
// Memory is attributed every 10 s: DuckDB's instances and V8's heap from Floe's GET /metrics, and
// RSS by kind of mapping from /proc/<pid>/smaps (bench/lib/proc-memory.ts); what neither accounts
// for is printed as "unattributed". The environment the run was started with (MALLOC_ARENA_MAX,
// LD_PRELOAD, FLOE__* overrides) reaches Floe and is printed at the start.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { Agent } from 'node:http';
import { fmt, loadAverage, post } from '../lib/drive.ts';
import { floeSqlScalar, percentile, startFloeProcess, type FloeProcess } from '../lib/floe-process.ts';
import { logsBody, MarkedTemplate, spansBody } from '../lib/otlp-gen.ts';
import { metadataRequest, REMOTE_WRITE_HEADERS, RemoteWriteStream } from '../lib/remote-write-stream.ts';
import { WalBacklog } from '../lib/wal-backlog.ts';
import { floeMemoryGauges, residentByMapping, type FloeMemoryGauges, type ResidentByMapping } from '../lib/proc-memory.ts';

const MINUTES = Number(process.argv[2] ?? 10);
const SPANS_PER_S = Number(process.argv[3] ?? 20_000);
const LOGS_PER_S = Number(process.argv[4] ?? 10_000);
const SERIES = Number(process.argv[5] ?? 8000);
const COMPACTOR_INTERVAL = process.argv[6] ?? '5m';
const PER_REQUEST = 100;
const SERVICES = 8;
/** Requests of one signal in flight at once before a due request is counted as skipped. */
const MAX_IN_FLIGHT = 32;
const SAMPLE_MS = 10_000;
const TABLES = ['traces', 'logs', 'metrics'] as const;

interface Sample {
  at: number;
  rssMb: number;
  fds: number;
  threads: number;
  wal: number;
  /** Parquet files on disk under each table's data/ (live ones and replaced ones not yet deleted). */
  dataFiles: Record<string, number>;
  /** Data files of each table's current snapshot (the compactor's dry run). */
  liveFiles: Record<string, number>;
  metadataFiles: Record<string, number>;
  /** Resident memory by kind of mapping. */
  mapped: ResidentByMapping;
  /** Floe's memory gauges; absent when the scrape failed. */
  gauges?: FloeMemoryGauges;
}

interface Sent {
  requests: number;
  items: number;
  errors: number;
  skipped: number;
  kinds: Record<string, number>;
  first?: string;
}

interface QueryResult {
  kind: string;
  at: number;
  ms: number;
  status: number | 'network';
}

const newSent = (): Sent => ({ requests: 0, items: 0, errors: 0, skipped: 0, kinds: {} });

function procStatus(pid: number): { rssMb: number; threads: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(/^(\S+):\s+(\d+)/m.exec(text.split('\n').find((l) => l.startsWith(`${name}:`)) ?? '')?.[2] ?? NaN);
  return { rssMb: field('VmRSS') / 1024, threads: field('Threads') };
}

/** Open descriptors of `pid` that are not the standard streams or anonymous pipes it started with. */
function openFds(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      readlinkSync(`/proc/${pid}/fd/${fd}`);
      n++;
    } catch {
      // closed between the listing and the read
    }
  }
  return n;
}

function filesUnder(dir: string, suffix: string): number {
  let n = 0;
  const walk = (d: string) => {
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith(suffix)) n++;
    }
  };
  walk(dir);
  return n;
}

const ADMIN_KEY = 'soak-admin-key-0123456789abcdef';

/** Data files of each table's current snapshot, as the compactor's dry run lists them. */
async function liveFiles(floe: FloeProcess): Promise<Record<string, number>> {
  const res = await fetch(`${floe.routerUrl}/api/v1/ops/compact/dry-run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ tenant: floe.tenant }),
  });
  if (res.status !== 200) throw new Error(`compact dry run answered ${res.status}: ${await res.text()}`);
  const plan = (await res.json()) as { tables: Array<{ table: string; files: number }> };
  return Object.fromEntries(TABLES.map((t) => [t, plan.tables.find((x) => x.table === `${floe.tenant}.default.${t}`)?.files ?? 0]));
}

/**
 * RSS less what Floe's gauges account for: every DuckDB instance's duckdb_memory() and the space V8's
 * heap holds (used or free, so this leans low). The rest is allocator slack and retained free memory
 * (glibc arenas, DuckDB's jemalloc), native buffers outside both (Arrow, zstd, the encoders),
 * thread stacks and mapped files.
 */
const unattributedMb = (s: Sample): number => (s.gauges ? s.rssMb - duckdbMb(s.gauges) - s.gauges.v8HeldMb : NaN);
const duckdbMb = (g: FloeMemoryGauges): number => Object.values(g.duckdbMb).reduce((a, b) => a + b, 0);

async function sample(floe: FloeProcess, wal: WalBacklog): Promise<Sample> {
  const table = (t: string) => join(floe.dir, 'data', 'warehouse', floe.tenant, 'default', t);
  // The gauges first, then RSS and smaps, so the three are read within a second of each other.
  const gauges = await floeMemoryGauges(`${floe.writerAdminUrl}/metrics`).catch((err: unknown) => {
    console.error(`  metrics scrape failed: ${String(err)}`);
    return undefined;
  });
  return {
    gauges,
    mapped: residentByMapping(floe.pid),
    liveFiles: await liveFiles(floe),
    at: Date.now(),
    ...procStatus(floe.pid),
    fds: openFds(floe.pid),
    wal: wal.count(),
    dataFiles: Object.fromEntries(TABLES.map((t) => [t, filesUnder(join(table(t), 'data'), '.parquet')])),
    metadataFiles: Object.fromEntries(TABLES.map((t) => [t, filesUnder(join(table(t), 'metadata'), '.metadata.json')])),
  };
}

async function send(sent: Sent, agent: Agent, url: string, body: Uint8Array, items: number, headers: Record<string, string>): Promise<boolean> {
  try {
    const res = await post(agent, url, body, headers);
    sent.requests++;
    if (res.status >= 200 && res.status < 300) {
      sent.items += items;
      return true;
    }
    sent.errors++;
    sent.kinds[res.status] = (sent.kinds[res.status] ?? 0) + 1;
    sent.first ??= `${res.status} ${res.body.toString('utf8').slice(0, 200)}`;
  } catch (err) {
    sent.errors++;
    sent.kinds.network = (sent.kinds.network ?? 0) + 1;
    sent.first ??= String(err).slice(0, 200);
  }
  return false;
}

/**
 * Sends `perSecond / PER_REQUEST` requests a second from `next` until `until`, without waiting
 * for answers (open loop); a request due while MAX_IN_FLIGHT are unanswered is skipped and counted.
 */
async function paced(until: number, perSecond: number, sent: Sent, fire: () => Promise<unknown>): Promise<void> {
  const started = Date.now();
  const rate = perSecond / PER_REQUEST;
  let due = 0;
  let inFlight = 0;
  const pending = new Set<Promise<unknown>>();
  while (Date.now() < until) {
    const want = Math.floor(((Date.now() - started) / 1000) * rate);
    for (; due < want; due++) {
      if (inFlight >= MAX_IN_FLIGHT) {
        sent.skipped++;
        continue;
      }
      inFlight++;
      const p: Promise<unknown> = fire().finally(() => {
        inFlight--;
        pending.delete(p);
      });
      pending.add(p);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  await Promise.all(pending);
}

/** Templates of every service's body, made again every 10 s so timestamps follow the clock. */
class Bodies {
  #at = 0;
  #seq = 0;
  #spans: MarkedTemplate[] = [];
  #logs: MarkedTemplate[] = [];
  #turn = 0;

  #renew(): void {
    if (Date.now() - this.#at < 10_000) return;
    this.#at = Date.now();
    const now = BigInt(this.#at) * 1_000_000n;
    this.#seq++;
    this.#spans = Array.from({ length: SERVICES }, (_, s) => new MarkedTemplate(spansBody(PER_REQUEST, s, this.#seq, now), PER_REQUEST, 10));
    this.#logs = Array.from({ length: SERVICES }, (_, s) => new MarkedTemplate(logsBody(PER_REQUEST, s, this.#seq, now), PER_REQUEST));
  }

  /** The next traces body and the id of its first trace (hex). */
  spans(): { body: Buffer; traceId: string } {
    this.#renew();
    const t = this.#spans[this.#turn++ % SERVICES]!;
    const body = t.next();
    return { body, traceId: body.subarray(t.offsets[0]!, t.offsets[0]! + 16).toString('hex') };
  }

  logs(): Buffer {
    this.#renew();
    return this.#logs[this.#turn++ % SERVICES]!.next();
  }
}

async function queries(floe: FloeProcess, until: number, sentTraces: Array<{ id: string; at: number }>, out: QueryResult[]): Promise<void> {
  const headers = { authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': floe.tenant };
  const kinds = ['trace_by_id', 'traceql_search', 'logql_metric', 'promql_range'] as const;
  for (let i = 0; Date.now() < until; i++) {
    const kind = kinds[i % kinds.length]!;
    const end = Math.floor(Date.now() / 1000);
    const start = end - 900;
    let path: string;
    if (kind === 'trace_by_id') {
      const old = sentTraces.filter((t) => t.at < Date.now() - 15_000);
      if (old.length === 0) {
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      path = `/tracequery/api/traces/${old[Math.floor(Math.random() * old.length)]!.id}`;
    } else if (kind === 'traceql_search') {
      path = `/tracequery/api/search?${new URLSearchParams({ q: '{ resource.service.name = "checkout" && span.http.route = "/api/v1/cart" }', start: String(start), end: String(end), limit: '20' })}`;
    } else if (kind === 'logql_metric') {
      path = `/logquery/loki/api/v1/query_range?${new URLSearchParams({ query: 'sum by (service_name) (count_over_time({service_name=~".+"} |= "failed" [1m]))', start: String(start), end: String(end), step: '15' })}`;
    } else {
      path = `/metricquery/api/v1/query_range?${new URLSearchParams({ query: 'sum by (job, status) (rate(http_requests_total[1m]))', start: String(start), end: String(end), step: '15' })}`;
    }
    const t0 = performance.now();
    let status: number | 'network';
    try {
      const res = await fetch(`${floe.routerUrl}${path}`, { headers });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      status = 'network';
    }
    out.push({ kind, at: Date.now(), ms: performance.now() - t0, status });
    await new Promise((r) => setTimeout(r, 500));
  }
}

const mb = (x: number) => `${fmt(x, 0)} MB`;

function memoryNote(s: Sample): string {
  const g = s.gauges;
  const m = s.mapped;
  const duck = g ? `DuckDB ${Object.entries(g.duckdbMb).map(([k, v]) => `${k} ${fmt(v, 0)}`).join('/')} MB, spilled ${mb(g.duckdbTempMb)}, V8 heap ${mb(g.v8HeldMb)} held (${mb(g.v8UsedMb)} used), unattributed ${mb(unattributedMb(s))} (array buffers ${mb(g.arrayBuffersMb)}, PromQL point lists ${mb(g.seriesListsMb)} of them; other native ${mb(g.otherExternalMb)})` : 'no gauges';
  return `${duck}; smaps: file ${mb(m.fileMb)}, brk ${mb(m.brkMb)}, anonymous ${mb(m.anonMb)} of which arena-like ${mb(m.arenaMb)} in ${m.arenas}`;
}

async function main(): Promise<void> {
  const floe = await startFloeProcess({ compactor: { interval: COMPACTOR_INTERVAL }, auth: { admin_api_key: ADMIN_KEY } });
  const wal = new WalBacklog(floe.dir);
  const ingestHeaders = { authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': floe.tenant, 'content-type': 'application/x-protobuf' };
  const rwHeaders = { ...REMOTE_WRITE_HEADERS, authorization: `Basic ${Buffer.from(`${floe.tenant}:${floe.apiKey}`).toString('base64')}` };
  const agent = new Agent({ keepAlive: true, maxSockets: 3 * MAX_IN_FLIGHT });
  console.log(`bench/soak: ${MINUTES} min; traces ${fmt(SPANS_PER_S)} spans/s, logs ${fmt(LOGS_PER_S)} records/s, remote write ${fmt(SERIES)} series every 1 s; a query every 500 ms; compactor every ${COMPACTOR_INTERVAL}`);
  console.log(`  load average before: ${loadAverage()}`);
  const env = Object.entries(process.env).filter(([k]) => k === 'MALLOC_ARENA_MAX' || k === 'LD_PRELOAD' || k.startsWith('MALLOC_') || k.startsWith('FLOE__'));
  console.log(`  environment passed to Floe: ${env.length ? env.map(([k, v]) => `${k}=${v}`).join(' ') : '(no allocator or FLOE__ overrides)'}`);
  try {
    const started = Date.now();
    const until = started + MINUTES * 60_000;
    const traces = newSent();
    const logs = newSent();
    const samples = newSent();
    const bodies = new Bodies();
    const sentTraces: Array<{ id: string; at: number }> = [];
    const results: QueryResult[] = [];
    const snapshots: Sample[] = [await sample(floe, wal)];
    const sampler = setInterval(() => void sample(floe, wal).then((s) => snapshots.push(s), (err: unknown) => console.error(`  sample failed: ${String(err)}`)), SAMPLE_MS);
    let lastMinute = 0;
    const progress = setInterval(() => {
      const minute = Math.floor((Date.now() - started) / 60_000);
      if (minute === lastMinute) return;
      lastMinute = minute;
      const s = snapshots.at(-1)!;
      console.log(`  ${minute} min: RSS ${mb(s.rssMb)} (${memoryNote(s)}), fds ${s.fds}, WAL ${s.wal} segments, live data files ${TABLES.map((t) => `${t} ${s.liveFiles[t]}`).join(', ')} (on disk ${TABLES.map((t) => s.dataFiles[t]).join('/')}); acknowledged spans ${fmt(traces.items)}, records ${fmt(logs.items)}, samples ${fmt(samples.items)}`);
    }, 1000);

    const meta = await post(agent, `${floe.otlpHttpUrl}/api/v1/write`, metadataRequest(), rwHeaders);
    if (meta.status !== 204) throw new Error(`remote-write metadata answered ${meta.status}: ${meta.body.toString('utf8')}`);
    const t0Ms = Math.floor(Date.now() / 1000) * 1000;
    const stream = new RemoteWriteStream({ series: SERIES, shards: 16, perRequest: 500, t0Ms, intervalMs: 1000 });
    const shard = async (w: number) => {
      for (let round = 0; ; round++) {
        const at = t0Ms + round * 1000 + 1000;
        if (at >= until) return;
        if (at > Date.now()) await new Promise((r) => setTimeout(r, at - Date.now()));
        const next = stream.next(w);
        if (!next) return;
        await send(samples, agent, `${floe.otlpHttpUrl}/api/v1/write`, next.body, next.items, rwHeaders);
      }
    };
    await Promise.all([
      paced(until, SPANS_PER_S, traces, async () => {
        const { body, traceId } = bodies.spans();
        // One acknowledged trace a second is remembered for the lookups (the run's whole span).
        if ((await send(traces, agent, `${floe.otlpHttpUrl}/v1/traces`, body, PER_REQUEST, ingestHeaders)) && Date.now() - (sentTraces.at(-1)?.at ?? 0) >= 1000) {
          sentTraces.push({ id: traceId, at: Date.now() });
        }
      }),
      paced(until, LOGS_PER_S, logs, () => send(logs, agent, `${floe.otlpHttpUrl}/v1/logs`, bodies.logs(), PER_REQUEST, ingestHeaders)),
      ...Array.from({ length: 16 }, (_, w) => shard(w)),
      queries(floe, until, sentTraces, results),
    ]);
    clearInterval(progress);
    const drained = await wal.drained();
    clearInterval(sampler);
    snapshots.push(await sample(floe, wal));
    agent.destroy();

    // Every acknowledged item is stored exactly once, compaction beside ingest notwithstanding.
    await new Promise((r) => setTimeout(r, 3000));
    const stored = {
      traces: Number(await floeSqlScalar(floe, 'SELECT count(*) FROM traces')),
      logs: Number(await floeSqlScalar(floe, 'SELECT count(*) FROM logs')),
      metrics: Number(await floeSqlScalar(floe, 'SELECT count(*) FROM metrics')),
    };
    const acked = { traces: traces.items, logs: logs.items, metrics: samples.items };

    console.log(`\n  ingest (acknowledged / stored after the drain, ${(drained.ms / 1000).toFixed(1)} s, ${drained.left} segments left):`);
    for (const [name, s, table] of [['spans', traces, 'traces'], ['log records', logs, 'logs'], ['samples', samples, 'metrics']] as const) {
      const note = stored[table] === acked[table] ? 'all stored once' : `MISMATCH: ${fmt(stored[table] - acked[table])}`;
      console.log(`    ${name}: ${fmt(acked[table])} acknowledged, ${fmt(stored[table])} stored (${note}); ${s.errors} errors${s.errors ? ` ${JSON.stringify(s.kinds)}, first: ${s.first}` : ''}, ${s.skipped} requests skipped (${MAX_IN_FLIGHT} in flight)`);
    }

    // Figures per minute, then the first minutes (after a minute's warm-up) against the last.
    const minutes = Math.ceil(MINUTES);
    const inMinute = (m: number) => (at: number) => at >= started + m * 60_000 && at < started + (m + 1) * 60_000;
    console.log('\n  minute | RSS MB | DuckDB MB compactor/querier/writer | spilled MB | V8 heap held MB | unattributed MB (PromQL point lists) | smaps MB file/brk/anon (arena-like, count) | fds | threads | WAL | live data files (traces/logs/metrics) | on disk | metadata files | queries p50/p95 ms (trace id, search, LogQL, PromQL) | query errors');
    for (let m = 0; m < minutes; m++) {
      const s = snapshots.filter((x) => inMinute(m)(x.at));
      const last = s.at(-1);
      if (!last) continue;
      const q = results.filter((r) => inMinute(m)(r.at));
      const lat = ['trace_by_id', 'traceql_search', 'logql_metric', 'promql_range'].map((k) => {
        const ms = q.filter((r) => r.kind === k && r.status === 200).map((r) => r.ms).sort((a, b) => a - b);
        return ms.length ? `${fmt(percentile(ms, 50))}/${fmt(percentile(ms, 95))}` : '-';
      });
      const errs = q.filter((r) => r.status !== 200).map((r) => `${r.kind}:${r.status}`);
      const g = last.gauges;
      const duck = g ? ['compactor', 'querier', 'writer'].map((c) => fmt(g.duckdbMb[c] ?? 0, 0)).join('/') : '-';
      const mm = last.mapped;
      const memory = `${duck} | ${g ? fmt(g.duckdbTempMb, 0) : '-'} | ${g ? fmt(g.v8HeldMb, 0) : '-'} | ${g ? `${fmt(unattributedMb(last), 0)} (${fmt(g.seriesListsMb, 0)})` : '-'} of ${fmt(last.rssMb, 0)} | ${fmt(mm.fileMb, 0)}/${fmt(mm.brkMb, 0)}/${fmt(mm.anonMb, 0)} (${fmt(mm.arenaMb, 0)}, ${mm.arenas})`;
      console.log(`  ${String(m + 1).padStart(6)} | ${fmt(Math.max(...s.map((x) => x.rssMb))).padStart(6)} | ${memory} | ${String(last.fds).padStart(3)} | ${String(last.threads).padStart(7)} | ${String(Math.max(...s.map((x) => x.wal))).padStart(3)} | ${TABLES.map((t) => last.liveFiles[t]).join('/')} | ${TABLES.map((t) => last.dataFiles[t]).join('/')} | ${TABLES.map((t) => last.metadataFiles[t]).join('/')} | ${lat.join(', ')} | ${errs.length ? errs.join(' ') : 0}`);
    }

    const early = (at: number) => at >= started + 60_000 && at < started + 180_000;
    const late = (at: number) => at >= until - 120_000 && at < until;
    const rss = (f: (at: number) => boolean) => {
      const xs = snapshots.filter((s) => f(s.at)).map((s) => s.rssMb);
      return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    };
    // Least-squares slope of RSS over the run after the first minute (MB per minute).
    const pts = snapshots.filter((s) => s.at >= started + 60_000 && s.at <= until).map((s) => [(s.at - started) / 60_000, s.rssMb] as const);
    const mx = pts.reduce((a, p) => a + p[0], 0) / pts.length;
    const my = pts.reduce((a, p) => a + p[1], 0) / pts.length;
    const slope = pts.reduce((a, p) => a + (p[0] - mx) * (p[1] - my), 0) / Math.max(1e-9, pts.reduce((a, p) => a + (p[0] - mx) ** 2, 0));
    const mean = (f: (at: number) => boolean, of: (s: Sample) => number) => {
      const xs = snapshots.filter((s) => f(s.at) && s.gauges).map(of);
      return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    };
    const fdsAt = (f: (at: number) => boolean) => Math.max(...snapshots.filter((s) => f(s.at)).map((s) => s.fds));
    console.log(`\n  summary (early: minutes 2-3; late: the last two minutes):`);
    console.log(`    RSS early ${mb(rss(early))}, late ${mb(rss(late))}: ratio late/early ${(rss(late) / rss(early)).toFixed(2)}; slope after the first minute ${slope.toFixed(1)} MB/min`);
    console.log(`    RSS max ${mb(Math.max(...snapshots.map((s) => s.rssMb)))}`);
    for (const [name, f] of [['early', early], ['late', late]] as const) {
      const duck = ['compactor', 'querier', 'writer'].map((c) => `${c} ${fmt(mean(f, (s) => s.gauges!.duckdbMb[c] ?? 0), 0)}`).join(', ');
      console.log(`    memory ${name} (means): RSS ${mb(mean(f, (s) => s.rssMb))} = DuckDB ${duck} MB + V8 heap held ${mb(mean(f, (s) => s.gauges!.v8HeldMb))} + unattributed ${mb(mean(f, unattributedMb))} (array buffers ${mb(mean(f, (s) => s.gauges!.arrayBuffersMb))}, PromQL point lists ${mb(mean(f, (s) => s.gauges!.seriesListsMb))} of them; other native ${mb(mean(f, (s) => s.gauges!.otherExternalMb))}); spilled ${mb(mean(f, (s) => s.gauges!.duckdbTempMb))}; smaps file ${mb(mean(f, (s) => s.mapped.fileMb))}, brk ${mb(mean(f, (s) => s.mapped.brkMb))}, anonymous ${mb(mean(f, (s) => s.mapped.anonMb))} (arena-like ${mb(mean(f, (s) => s.mapped.arenaMb))})`);
    }
    console.log(`    open fds early ${fdsAt(early)}, late ${fdsAt(late)}`);
    for (const t of TABLES) {
      const after = snapshots.filter((s) => s.at >= started + 60_000);
      const last = snapshots.at(-1)!;
      console.log(`    ${t}: live data files max ${Math.max(...after.map((s) => s.liveFiles[t]!))} (after the first minute), last ${last.liveFiles[t]}; on disk max ${Math.max(...after.map((s) => s.dataFiles[t]!))}, last ${last.dataFiles[t]}; metadata files last ${last.metadataFiles[t]}`);
    }
    for (const k of ['trace_by_id', 'traceql_search', 'logql_metric', 'promql_range']) {
      const p95 = (f: (at: number) => boolean) => percentile(results.filter((r) => r.kind === k && r.status === 200 && f(r.at)).map((r) => r.ms).sort((a, b) => a - b), 95);
      const all = results.filter((r) => r.kind === k);
      const failed = all.filter((r) => r.status !== 200);
      console.log(`    ${k}: p95 early ${fmt(p95(early))} ms, late ${fmt(p95(late))} ms, ratio late/early ${(p95(late) / p95(early)).toFixed(2)}; ${all.length} queries, ${failed.length} not 200${failed.length ? ` (${[...new Set(failed.map((r) => r.status))].join(', ')})` : ''}`);
    }
    console.log(`  load average after: ${loadAverage()}`);
  } finally {
    await floe.stop();
    floe.remove();
  }
}

await main();
