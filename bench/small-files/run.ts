/**
 * bench/small-files: what hundreds of small live files (the writer's commits of one hour before
 * the compactor merges them) cost a query, against the same rows compacted, in the same run.
 *
 *   node bench/small-files/run.ts [files=300] [rowsPerFile=2000] [rounds=7]
 *
 * A `floe all` (bench/lib/floe-process.ts) with a short writer.flush_interval is fed `files`
 * rounds of ingest, one commit apart: each round one OTLP/HTTP span batch and one log batch of
 * `rowsPerFile` items (bench/lib/otlp-gen.ts) and one remote-write request of `rowsPerFile`
 * samples (bench/lib/remote-write-stream.ts), so each of the traces, logs and metrics tables ends
 * up with about `files` small files, as the writer makes them. The compactor is left idle (no
 * periodic pass during the run) until the bench asks for an on-demand pass
 * (POST /api/v1/ops/compact through the router, admin key), which merges each table's hour. The
 * hour is still being written, so the pass concatenates (row groups copied, size-tiered: one file
 * or a few; printed with the method the dry run names), as compactor.open_hour_interval's passes
 * do in production. The same four queries, as Grafana sends them through the router over the window of
 * the ingest, run `rounds` times (after one warm-up) on the many files and then on the merged ones:
 * a trace by id, a TraceQL search, a LogQL metric query and a PromQL range query (bench/soak's).
 * Answers are compared between the two phases. Printed per query: medians, p95s and the ratio
 * many files / merged.
 *
 * FLOE_BENCH_CPU_PROF=<dir> profiles the Floe process (summarise with bench/lib/cpu-profile-summary.ts);
 * FLOE_BENCH_LOG=debug makes the querier log each query's resolve time (catalog, planning,
 * leases) apart from its whole time, summarised here per phase from the process's log;
 * FLOE_BENCH_KEEP=1 keeps the data directory (the small files stay on disk beside the merged one
 * until their snapshot expires), to time DuckDB over the same files by hand.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent } from 'node:http';
import { createHash } from 'node:crypto';
import { fmt, loadAverage, post } from '../lib/drive.ts';
import { median, percentile, startFloeProcess, type FloeProcess } from '../lib/floe-process.ts';
import { logsBody, MarkedTemplate, spansBody } from '../lib/otlp-gen.ts';
import { metadataRequest, REMOTE_WRITE_HEADERS, RemoteWriteStream } from '../lib/remote-write-stream.ts';
import { WalBacklog } from '../lib/wal-backlog.ts';

const FILES = Number(process.argv[2] ?? 300);
const ROWS = Number(process.argv[3] ?? 2000);
const ROUNDS = Number(process.argv[4] ?? 7);
const FLUSH_MS = 200;
/** Time between two ingest rounds: more than a flush, so each round is its own commit. */
const ROUND_MS = 450;
const ADMIN_KEY = 'small-files-admin-key-0123456789abcdef';
const TABLES = ['traces', 'logs', 'metrics'] as const;

const adminHeaders = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };

/** Per table: its live files now, and how a pass would merge them (the dry run's group methods). */
async function liveFiles(floe: FloeProcess): Promise<Record<string, string>> {
  const res = await fetch(`${floe.routerUrl}/api/v1/ops/compact/dry-run`, { method: 'POST', headers: adminHeaders, body: JSON.stringify({ tenant: floe.tenant }) });
  if (res.status !== 200) throw new Error(`compact dry run answered ${res.status}: ${await res.text()}`);
  const plan = (await res.json()) as { tables: Array<{ table: string; files: number; groups: Array<{ method: string }> }> };
  return Object.fromEntries(
    TABLES.map((t) => {
      const table = plan.tables.find((x) => x.table === `${floe.tenant}.default.${t}`);
      const methods = [...new Set(table?.groups.map((g) => g.method) ?? [])];
      return [t, `${table?.files ?? 0}${methods.length > 0 ? ` (a pass would ${methods.join('/')})` : ''}`];
    }),
  );
}

/** An on-demand compaction of the tenant, waited for. */
async function compact(floe: FloeProcess): Promise<void> {
  const res = await fetch(`${floe.routerUrl}/api/v1/ops/compact`, { method: 'POST', headers: adminHeaders, body: JSON.stringify({ tenant: floe.tenant }) });
  if (res.status !== 202) throw new Error(`compact answered ${res.status}: ${await res.text()}`);
  const { id } = (await res.json()) as { id: string };
  for (const t0 = Date.now(); Date.now() - t0 < 300_000; ) {
    await new Promise((r) => setTimeout(r, 500));
    const s = (await (await fetch(`${floe.routerUrl}/api/v1/ops/compact/status`, { headers: adminHeaders })).json()) as { requests?: Array<{ id: string; finishedAt: string | null }> };
    if (s.requests?.find((r) => r.id === id)?.finishedAt) return;
  }
  throw new Error('the on-demand compaction did not finish in 5 minutes');
}

interface Query {
  name: string;
  path: string;
  /** What must not change between the phases (the answer without timings or stats). */
  answer: (body: string) => string;
}

const digest = (x: unknown) => createHash('sha256').update(JSON.stringify(x)).digest('hex').slice(0, 12);

function queriesOf(traceId: string, start: number, end: number): Query[] {
  return [
    {
      name: 'trace by id',
      path: `/tracequery/api/traces/${traceId}`,
      answer: (b) => {
        // Spans by id, whatever order the batches come in.
        const spans: string[] = [];
        JSON.stringify(JSON.parse(b), (k, v: unknown) => {
          if (k === 'spanId' && typeof v === 'string') spans.push(v);
          return v;
        });
        return `${spans.length} spans ${digest(spans.sort())}`;
      },
    },
    {
      name: 'TraceQL search',
      path: `/tracequery/api/search?${new URLSearchParams({ q: '{ resource.service.name = "checkout" && span.http.route = "/api/v1/cart" }', start: String(start), end: String(end), limit: '20' })}`,
      answer: (b) => {
        const ids = ((JSON.parse(b) as { traces?: Array<{ traceID: string }> }).traces ?? []).map((t) => t.traceID);
        return `${ids.length} traces ${digest(ids)}`;
      },
    },
    {
      name: 'LogQL metric',
      path: `/logquery/loki/api/v1/query_range?${new URLSearchParams({ query: 'sum by (service_name) (count_over_time({service_name=~".+"} |= "failed" [1m]))', start: String(start), end: String(end), step: '15' })}`,
      answer: (b) => {
        const r = (JSON.parse(b) as { data: { result: unknown[] } }).data.result;
        return `${r.length} series ${digest(r)}`;
      },
    },
    {
      name: 'PromQL range',
      path: `/metricquery/api/v1/query_range?${new URLSearchParams({ query: 'sum by (job, status) (rate(http_requests_total[1m]))', start: String(start), end: String(end), step: '15' })}`,
      answer: (b) => {
        const r = (JSON.parse(b) as { data: { result: unknown[] } }).data.result;
        return `${r.length} series ${digest(r)}`;
      },
    },
  ];
}

interface Timed {
  ms: number[];
  answer: string;
}

async function timeQueries(floe: FloeProcess, queries: Query[]): Promise<Timed[]> {
  const headers = { authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': floe.tenant };
  const out: Timed[] = queries.map(() => ({ ms: [], answer: '' }));
  // Round -1 warms caches (files, schemas, filters) as a dashboard's earlier refresh would.
  for (let round = -1; round < ROUNDS; round++) {
    for (const [i, q] of queries.entries()) {
      const t0 = performance.now();
      const res = await fetch(`${floe.routerUrl}${q.path}`, { headers });
      const body = await res.text();
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`${q.name}: HTTP ${res.status} ${body.slice(0, 500)}`);
      if (round >= 0) out[i]!.ms.push(ms);
      out[i]!.answer = q.answer(body);
    }
  }
  return out;
}

/** The querier's `query` debug lines since `from` bytes of the log: resolve ms and whole ms. */
function querierLog(floe: FloeProcess, from: number): { lines: number; resolveMs: number; ms: number; end: number } {
  const text = readFileSync(join(floe.dir, 'floe.log'), 'utf8');
  let lines = 0;
  let resolveMs = 0;
  let ms = 0;
  for (const line of text.slice(from).split('\n')) {
    if (!line.includes('"msg":"query"')) continue;
    try {
      const o = JSON.parse(line) as { resolveMs?: number; ms?: number };
      if (typeof o.ms !== 'number') continue;
      lines++;
      resolveMs += o.resolveMs ?? 0;
      ms += o.ms;
    } catch {
      // not a JSON line
    }
  }
  return { lines, resolveMs, ms, end: text.length };
}

async function main(): Promise<void> {
  const floe = await startFloeProcess({
    acceptor: { wal_segment_max_age: '100ms' },
    writer: { flush_interval: `${FLUSH_MS}ms`, poll_interval: '50ms' },
    // One periodic pass at start (nothing to do), none again during the run; on-demand passes merge every file.
    compactor: { interval: '24h', min_file_age: '1s', open_hour_interval: '0s' },
    auth: { admin_api_key: ADMIN_KEY },
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  try {
    const ingest = { authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': floe.tenant, 'content-type': 'application/x-protobuf' };
    const rw = { ...REMOTE_WRITE_HEADERS, authorization: `Basic ${Buffer.from(`${floe.tenant}:${floe.apiKey}`).toString('base64')}` };
    console.log(`bench/small-files: ${FILES} rounds of ${fmt(ROWS)} spans, ${fmt(ROWS)} log records and ${fmt(ROWS)} samples, one commit apart (writer.flush_interval ${FLUSH_MS}ms); ${ROUNDS} rounds of queries`);
    console.log(`  load average before: ${loadAverage()}`);
    const meta = await post(agent, `${floe.otlpHttpUrl}/api/v1/write`, metadataRequest(), rw);
    if (meta.status !== 204) throw new Error(`remote-write metadata answered ${meta.status}: ${meta.body.toString('utf8')}`);
    const startS = Math.floor(Date.now() / 1000) - 60;
    // Samples one second apart ending about now: the stream's rounds are the ingest's.
    const t0Ms = Math.floor(Date.now() / 1000) * 1000 - FILES * 1000;
    const stream = new RemoteWriteStream({ series: ROWS, shards: 1, perRequest: ROWS, t0Ms, intervalMs: 1000 });
    const spanTemplates = Array.from({ length: 8 }, (_, s) => new MarkedTemplate(spansBody(ROWS, s), ROWS, 10));
    const traceIds: string[] = [];
    const began = Date.now();
    for (let i = 0; i < FILES; i++) {
      const at = began + i * ROUND_MS;
      if (at > Date.now()) await new Promise((r) => setTimeout(r, at - Date.now()));
      const t = spanTemplates[i % spanTemplates.length]!;
      const spans = t.next();
      const sent = await Promise.all([
        post(agent, `${floe.otlpHttpUrl}/v1/traces`, spans, ingest),
        post(agent, `${floe.otlpHttpUrl}/v1/logs`, logsBody(ROWS, i % 8, i), ingest),
        post(agent, `${floe.otlpHttpUrl}/api/v1/write`, stream.next(0)!.body, rw),
      ]);
      const bad = sent.find((s) => s.status !== 200 && s.status !== 204);
      if (bad) throw new Error(`ingest answered ${bad.status}: ${bad.body.toString("utf8")}`);
      if (i === Math.floor(FILES / 2)) traceIds.push(spans.subarray(t.offsets[0]!, t.offsets[0]! + 16).toString('hex'));
    }
    const drained = await new WalBacklog(floe.dir).drained();
    // The last commits land after the WAL is gone; let them.
    await new Promise((r) => setTimeout(r, 3 * FLUSH_MS + 1000));
    const endS = Math.floor(Date.now() / 1000) + 60;
    const many = await liveFiles(floe);
    console.log(`  ingested in ${((Date.now() - began) / 1000).toFixed(1)} s (WAL drained ${drained.ms} ms after the last request, ${drained.left} left); live files ${TABLES.map((t) => `${t} ${many[t]}`).join(', ')}`);

    const queries = queriesOf(traceIds[0]!, startS, endS);
    let logAt = querierLog(floe, 0).end;
    const manyT = await timeQueries(floe, queries);
    const manyLog = querierLog(floe, logAt);
    logAt = manyLog.end;

    const c0 = Date.now();
    await compact(floe);
    const one = await liveFiles(floe);
    console.log(`  on-demand compaction in ${((Date.now() - c0) / 1000).toFixed(1)} s; live files ${TABLES.map((t) => `${t} ${one[t]}`).join(', ')}`);
    const oneT = await timeQueries(floe, queries);
    const oneLog = querierLog(floe, logAt);

    console.log(`  ${'query'.padEnd(16)} ${'many p50'.padStart(10)} ${'many p95'.padStart(10)} ${'merged p50'.padStart(10)} ${'merged p95'.padStart(10)} ${'ratio p50'.padStart(10)}  answer`);
    for (const [i, q] of queries.entries()) {
      const m = manyT[i]!;
      const o = oneT[i]!;
      const ms = (x: number) => `${x.toFixed(1)} ms`.padStart(10);
      const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
      console.log(
        `  ${q.name.padEnd(16)} ${ms(median(m.ms))} ${ms(percentile(sorted(m.ms), 95))} ${ms(median(o.ms))} ${ms(percentile(sorted(o.ms), 95))} ${`${(median(m.ms) / median(o.ms)).toFixed(2)}x`.padStart(10)}  ${m.answer === o.answer ? `same (${m.answer})` : `DIFFERENT: many ${m.answer}, one ${o.answer}`}`,
      );
    }
    for (const [name, l] of [['many', manyLog], ['merged', oneLog]] as const) {
      if (l.lines > 0) console.log(`  querier (${name} files): ${l.lines} Flight queries, resolve ${(l.resolveMs / l.lines).toFixed(1)} ms, whole ${(l.ms / l.lines).toFixed(1)} ms on average`);
    }
    console.log(`  load average after: ${loadAverage()}`);
  } finally {
    agent.destroy();
    await floe.stop();
    if (!process.env.FLOE_BENCH_KEEP) floe.remove();
    else console.log(`  kept ${floe.dir}`);
  }
}

await main();
