import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { flightDoGet } from '@floe/flight';
import { trustConfiguredAuthorities } from '@floe/runtime';
import { freePorts, waitFor, isReady } from '@floe/testkit';

/**
 * Runs `floe all` (embedded defaults) as a child process for benchmarks, with its own data dir.
 * With FLOE_BENCH_CPU_PROF=<dir> in the environment the process runs under `--cpu-prof` and
 * writes its profile into <dir> when it stops.
 */
export interface FloeProcess {
  dir: string;
  /** The generated config file (for opening the same catalog after stop()). */
  configFile: string;
  /** Process id of `floe all`. */
  pid: number;
  routerUrl: string;
  otlpHttpUrl: string;
  flightAddress: string;
  /** The compactor's admin server (`/ready`, `/status`). */
  compactorAdminUrl: string;
  /** The writer's admin server (`/ready`, `/status`, `/metrics`). */
  writerAdminUrl: string;
  apiKey: string;
  tenant: string;
  stop(): Promise<void>;
  /** Deletes the data directory (after stop()). */
  remove(): void;
}

const ROOT = resolve(import.meta.dirname, '../..');
const FLOE = join(ROOT, 'packages/cli/bin/floe.js');

/** `extra`: config overrides, deep-merged over the generated config (e.g. `{ compactor: { interval: '5s' } }`). */
export async function startFloeProcess(extra: Record<string, unknown> = {}, tenantId = 'bench'): Promise<FloeProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'floe-bench-'));
  const [router, http, grpc, flight, qa, wa, ca] = await freePorts(7);
  const config: Record<string, unknown> = {
    log: { level: process.env.FLOE_BENCH_LOG ?? 'warn' },
    meta: { kind: 'pglite', data_dir: join(dir, 'meta') },
    storage: { kind: 'fs', root: join(dir, 'data'), cache_dir: join(dir, 'cache') },
    acceptor: { host: '127.0.0.1', http_port: http, grpc_port: grpc },
    router: { host: '127.0.0.1', port: router },
    querier: { host: '127.0.0.1', port: flight, admin_port: qa, temp_dir: join(dir, 'tq') },
    writer: { host: '127.0.0.1', admin_port: wa, work_dir: join(dir, 'tw') },
    compactor: { host: '127.0.0.1', admin_port: ca, work_dir: join(dir, 'tc') },
  };
  merge(config, extra);
  const file = join(dir, 'floe.yaml');
  writeFileSync(file, stringify(config));
  const tenant = tenantId;
  const boot = spawnSync(process.execPath, [FLOE, 'admin', 'bootstrap', '--tenant', tenant, '--json', '--config', file], { encoding: 'utf8' });
  if (boot.status !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const apiKey = (JSON.parse(boot.stdout) as { api_key: string }).api_key;
  const log = createWriteStream(join(dir, 'floe.log'));
  const prof = process.env.FLOE_BENCH_CPU_PROF;
  const nodeArgs = prof ? ['--cpu-prof', `--cpu-prof-dir=${resolve(prof)}`] : [];
  // FLOE_BENCH_NODE_ARGS: extra V8/Node flags for the Floe process (e.g. heap settings to compare).
  if (process.env.FLOE_BENCH_NODE_ARGS) nodeArgs.push(...process.env.FLOE_BENCH_NODE_ARGS.split(' ').filter(Boolean));
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, FLOE, 'all', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  // With `tls` in `extra` the public ports serve TLS: this process trusts its authority (ca_file).
  const tls = config.tls as { cert_file?: string; ca_file?: string } | undefined;
  if (tls?.ca_file) trustConfiguredAuthorities(tls.ca_file);
  const scheme = tls?.cert_file ? 'https' : 'http';
  await waitFor('floe ready', async () => (await isReady(`${scheme}://127.0.0.1:${router}/ready`)) || undefined, 60_000);
  return {
    dir,
    configFile: file,
    pid: child.pid!,
    routerUrl: `${scheme}://127.0.0.1:${router}`,
    otlpHttpUrl: `${scheme}://127.0.0.1:${http}`,
    flightAddress: `${tls?.cert_file ? 'grpc+tls://' : ''}127.0.0.1:${flight}`,
    compactorAdminUrl: `http://127.0.0.1:${ca}`,
    writerAdminUrl: `http://127.0.0.1:${wa}`,
    apiKey,
    tenant,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The first column of the first row of a SQL query over Arrow Flight, as the bench tenant. */
export async function floeSqlScalar(floe: FloeProcess, sql: string): Promise<unknown> {
  const table = await flightDoGet({
    url: floe.flightAddress,
    ticket: Buffer.from(sql),
    metadata: { authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': floe.tenant },
    deadlineMs: 120_000,
  });
  return table.getChildAt(0)?.get(0);
}

/** Deep-merges `extra` into `into` (sections of the config are merged key by key, not replaced). */
function merge(into: Record<string, unknown>, extra: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(extra)) {
    const cur = into[k];
    if (isPlain(cur) && isPlain(v)) merge(cur, v);
    else into[k] = v;
  }
}
const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The median of `xs` (any order; the mean of the middle two of an even count). */
export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
