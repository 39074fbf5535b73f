/**
 * How fast writers drain a WAL backlog, as after a writer outage: an acceptor alone (cluster
 * processes: PostgreSQL on this machine, a local directory store) takes `spans` spans of
 * bench/ingest-traces' bodies and stops; then 1, then 2 writer processes (each trial on a fresh
 * backlog of the same size) commit it. Prints spans/s drained per trial, the writers' CPU, and
 * the ratio of two writers to one, checked against the rows the traces table holds.
 *
 *   node bench/writer-catchup/run.ts [spans=2000000] [trials=1,2]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { openDb } from '@floe/meta';
import { createTestDatabase, freePorts, isReady, waitFor } from '@floe/testkit';
import { drive } from '../lib/drive.ts';
import { MarkedTemplate, ingestTracesBody } from '../lib/otlp-gen.ts';

const SPANS = Number(process.argv[2] ?? 2_000_000);
const TRIALS = (process.argv[3] ?? '1,2').split(',').map(Number);
const PER_REQUEST = 100;
const FLOE = join(resolve(import.meta.dirname, '../..'), 'packages/cli/bin/floe.js');
const TENANT = 'catchup';

/** CPU seconds a process has used so far (user + system, from /proc). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function trial(writers: number) {
  const db = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'floe-catchup-'));
  const children: ChildProcess[] = [];
  try {
    const [http, grpc, ...admins] = await freePorts(2 + writers);
    const config = {
      log: { level: 'warn' },
      meta: { kind: 'pg', url: db.url, pool_max: 4 },
      storage: { kind: 'fs', root: join(dir, 'data'), cache_dir: join(dir, 'cache') },
      // The whole backlog must fit: no refusal for the writer being away.
      acceptor: { host: '127.0.0.1', http_port: http, grpc_port: grpc, max_wal_backlog: 0 },
      writer: { host: '127.0.0.1', work_dir: join(dir, 'tw') },
    };
    const file = join(dir, 'floe.yaml');
    writeFileSync(file, stringify(config));
    const boot = spawnSync(process.execPath, [FLOE, 'admin', 'bootstrap', '--tenant', TENANT, '--json', '--config', file], { encoding: 'utf8' });
    if (boot.status !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
    const apiKey = (JSON.parse(boot.stdout) as { api_key: string }).api_key;
    const start = async (service: string, port: number, env: Record<string, string> = {}) => {
      const log = createWriteStream(join(dir, `${service}-${port}.log`));
      const child = spawn(process.execPath, [FLOE, service, '--config', file], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FLOE_CONFIG: '', ...env } });
      child.stdout!.pipe(log);
      child.stderr!.pipe(log);
      children.push(child);
      await waitFor(`${service} ready`, async () => (await isReady(`http://127.0.0.1:${port}/ready`)) || undefined, 60_000);
      return child;
    };
    const stop = async (child: ChildProcess) => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    };

    // The backlog: the acceptor alone, then stopped (its last segment sealed).
    const acceptor = await start('acceptor', http!);
    const template = new MarkedTemplate(ingestTracesBody(PER_REQUEST), PER_REQUEST);
    let left = SPANS / PER_REQUEST;
    const fill = await drive({
      url: `http://127.0.0.1:${http}/v1/traces`,
      headers: { authorization: `Bearer ${apiKey}`, 'x-tenant-id': TENANT, 'content-type': 'application/x-protobuf' },
      seconds: 3600,
      concurrency: 16,
      next: () => (left-- > 0 ? { body: template.next(), items: PER_REQUEST } : undefined),
    });
    if (fill.errors > 0) throw new Error(`filling the WAL: ${fill.errors} errors (${fill.firstError})`);
    await stop(acceptor);
    const walDir = join(dir, 'data', 'wal');
    const segments = readdirSync(walDir).length;
    const walBytes = readdirSync(walDir).reduce((n, f) => n + Number(readFileSync(join(walDir, f)).byteLength), 0);

    // The writers, started together; the clock runs from the first start to an empty WAL.
    const began = performance.now();
    const procs = await Promise.all(admins.map((port, i) => start('writer', port!, { FLOE__WRITER__ADMIN_PORT: String(port), FLOE__WRITER__WORK_DIR: join(dir, `tw-${i}`) })));
    await waitFor('the WAL drained', async () => readdirSync(walDir).length === 0 || undefined, 3_600_000, 100);
    const seconds = (performance.now() - began) / 1000;
    const cpu = procs.reduce((n, p) => n + cpuSeconds(p.pid!), 0);
    const shares = await Promise.all(admins.map(async (port) => ((await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as { segments_consumed: number }).segments_consumed));

    // What the table holds: the current snapshot's total-records.
    const meta = await openDb({ kind: 'pg', url: db.url, poolMax: 1 });
    const location = (await meta.query<{ metadata_location: string }>(`SELECT metadata_location FROM iceberg_tables WHERE table_namespace = $1 AND table_name = 'traces'`, [`${TENANT}.default`])).rows[0]!.metadata_location;
    await meta.close();
    const metadata = JSON.parse(readFileSync(new URL(location), 'utf8')) as { 'current-snapshot-id': number; snapshots: Array<{ 'snapshot-id': number; summary: Record<string, string> }> };
    const rows = Number(metadata.snapshots.find((s) => s['snapshot-id'] === metadata['current-snapshot-id'])!.summary['total-records']);
    for (const p of procs) await stop(p);
    return { writers, spans: fill.items, rows, segments, walBytes, seconds, cpu, shares };
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`bench/writer-catchup: a WAL backlog of ${SPANS.toLocaleString('en-US')} spans (${PER_REQUEST} a request), drained by ${TRIALS.join(', then ')} writer process(es)`);
const results = [];
for (const writers of TRIALS) {
  const r = await trial(writers);
  results.push(r);
  console.log(
    `  ${writers} writer(s): ${Math.round(r.spans / r.seconds).toLocaleString('en-US')} spans/s drained (${r.seconds.toFixed(1)} s for ${r.segments} segments, ${(r.walBytes / 1e6).toFixed(0)} MB); ` +
      `writers' CPU ${(r.cpu / r.seconds).toFixed(2)} cores, ${((r.cpu * 1e6) / r.spans).toFixed(1)} µs per span; segments per writer ${r.shares.join(' / ')}; table rows ${r.rows.toLocaleString('en-US')}${r.rows === r.spans ? '' : ` (expected ${r.spans})`}`,
  );
}
if (results.length >= 2) console.log(`  ratio ${results.at(-1)!.writers} writers / ${results[0]!.writers}: ${(results[0]!.seconds / results.at(-1)!.seconds).toFixed(2)}`);
