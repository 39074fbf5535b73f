/**
 * bench/trace-search: Tempo search (`GET /tracequery/api/search`, what Grafana's TraceQL tab
 * calls) through Floe's router, against a warm DuckDB in this process running the same search by
 * hand over only the files of the window (the baseline's best case: no HTTP, no catalog, no
 * sandbox, partitions chosen for it). Both answer the same 20 traces, which the run checks.
 *
 *   node bench/trace-search/run.ts [totalSpans=2000000] [hours=24] [rounds=10]
 *
 * Data: bench/lib/trace-gen.ts's spans in the writer's layout (one file per hour). The sides
 * alternate query by query, so load from other processes hits them alike.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { percentile, startFloeProcess } from '../lib/floe-process.ts';
import { embeddedStores, generateHourlyTable } from '../lib/hourly-table.ts';
import { spansOfHour } from '../lib/trace-gen.ts';

const TOTAL = Number(process.argv[2] ?? 2_000_000);
const HOURS = Number(process.argv[3] ?? 24);
const ROUNDS = Number(process.argv[4] ?? 10);
const LIMIT = 20;
const perHour = Math.ceil(TOTAL / HOURS);
const baseHour = Math.floor(Date.now() / 3_600_000) - HOURS;
const HOUR_NS = 3_600_000_000_000n;

interface Search {
  name: string;
  q: string;
  /** The baseline's WHERE over one span (DuckDB SQL on the stored columns). */
  where: string;
  hours: number;
}
const SEARCHES: Search[] = [
  { name: 'service and status, last hour', q: '{ resource.service.name = "svc-3" && status = error }', where: `service_name = 'svc-3' AND status_code = 'error'`, hours: 1 },
  { name: 'everything, last hour', q: '{}', where: 'true', hours: 1 },
  { name: 'integer attribute, 24 h', q: '{ span.http.status_code = 500 }', where: `(span_attr_int['http.status_code'] = 500 OR span_attr_double['http.status_code'] = 500)`, hours: 24 },
  { name: 'one user (rare string), 24 h', q: '{ .user.id = "user-1234" }', where: `(span_attr_str['user.id'] = 'user-1234' OR resource_attr_str['user.id'] = 'user-1234')`, hours: 24 },
];

const dir = mkdtempSync(join(tmpdir(), 'floe-bench-ts-'));
const t0 = Date.now();
const hours = Array.from({ length: HOURS }, (_, h) => baseHour + h);
await generateHourlyTable({ dir, table: 'traces', hours, hourSelect: (h) => spansOfHour(h, perHour), bench: 'trace-search' });
const genSeconds = (Date.now() - t0) / 1000;

const floe = await startFloeProcess({ ...embeddedStores(dir), compactor: { enabled: false } }, 'bench');
const auth = { authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': 'bench', accept: 'application/json' };
const duck = await (await DuckDBInstance.create(':memory:', { threads: '2' })).connect();

// Each hour's file, by the hour its spans start in.
const files = (await duck.runAndReadAll(`SELECT file FROM glob('${join(dir, 'data', 'warehouse')}/**/*.parquet')`)).getRows().map((r) => String(r[0]));
const fileHour = new Map<number, string>();
for (const f of files) {
  const min = (await duck.runAndReadAll(`SELECT min(start_time_unix_nano) FROM read_parquet('${f}')`)).getRows()[0]![0] as bigint;
  fileHour.set(Number(min / HOUR_NS), f);
}

/** The baseline: the same steps as Floe's plan (matching spans → newest traces → their bounds), written for these files. */
function baselineSql(s: Search, startNs: bigint, endNs: bigint): string {
  const window = hours.slice(-s.hours).map((h) => `'${fileHour.get(h)}'`);
  const from = `read_parquet([${window.join(', ')}])`;
  const range = `start_time_unix_nano >= ${startNs} AND start_time_unix_nano < ${endNs}`;
  return `WITH m AS (SELECT trace_id, start_time_unix_nano FROM ${from} WHERE ${range} AND ${s.where}),
    c AS (SELECT trace_id FROM m GROUP BY trace_id ORDER BY min(start_time_unix_nano) DESC, trace_id LIMIT ${LIMIT})
    SELECT trace_id, min(start_time_unix_nano) AS s FROM ${from} WHERE ${range} AND trace_id IN (SELECT trace_id FROM c)
    GROUP BY trace_id ORDER BY s DESC, trace_id`;
}

const results: Array<{ s: Search; floe: number[]; duck: number[]; traces: number; same: boolean }> = [];
for (const s of SEARCHES) {
  const startS = (baseHour + HOURS - s.hours) * 3600;
  const endS = (baseHour + HOURS) * 3600 - 1;
  const url = `${floe.routerUrl}/tracequery/api/search?${new URLSearchParams({ q: s.q, start: String(startS), end: String(endS), limit: String(LIMIT), spss: '3' })}`;
  const sql = baselineSql(s, BigInt(startS) * 1_000_000_000n, BigInt(endS + 1) * 1_000_000_000n);
  const floeMs: number[] = [];
  const duckMs: number[] = [];
  let floeIds: string[] = [];
  let duckIds: string[] = [];
  for (let round = -1; round < ROUNDS; round++) {
    let t = performance.now();
    const res = await fetch(url, { headers: auth });
    const body = (await res.json()) as { traces?: Array<{ traceID: string }> };
    if (res.status !== 200) throw new Error(`${s.name}: HTTP ${res.status} ${JSON.stringify(body)}`);
    const fMs = performance.now() - t;
    t = performance.now();
    const rows = (await duck.runAndReadAll(sql)).getRows();
    const dMs = performance.now() - t;
    // Round -1 warms both sides.
    if (round >= 0) {
      floeMs.push(fMs);
      duckMs.push(dMs);
    }
    floeIds = body.traces!.map((x) => x.traceID);
    duckIds = rows.map((r) => String(r[0]));
  }
  results.push({ s, floe: floeMs.sort((a, b) => a - b), duck: duckMs.sort((a, b) => a - b), traces: floeIds.length, same: floeIds.join() === duckIds.join() });
}
await floe.stop();
duck.closeSync();

const p50 = (xs: number[]) => percentile(xs, 50);
console.log(`bench/trace-search: ${(perHour * HOURS).toLocaleString('en')} spans over ${HOURS} hourly partitions (generated in ${genSeconds.toFixed(1)} s), ${ROUNDS} rounds, limit ${LIMIT}, spss 3`);
for (const r of results) {
  console.log(`  ${r.s.name.padEnd(32)} ${r.s.q}`);
  console.log(
    `    floe p50 ${p50(r.floe).toFixed(1)} ms, p95 ${percentile(r.floe, 95).toFixed(1)} ms; DuckDB by hand p50 ${p50(r.duck).toFixed(1)} ms; floe/DuckDB ${(p50(r.floe) / p50(r.duck)).toFixed(2)}; ${r.traces} traces, ${r.same ? 'the same as the baseline' : 'DIFFERENT from the baseline'}`,
  );
}
floe.remove();
rmSync(dir, { recursive: true, force: true });
