import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { freePorts, waitFor, isReady } from '@floe/testkit';

/** Runs `floe all` (embedded defaults) as a child process for benchmarks, with its own data dir. */
export interface FloeProcess {
  dir: string;
  routerUrl: string;
  otlpHttpUrl: string;
  flightAddress: string;
  apiKey: string;
  tenant: string;
  stop(): Promise<void>;
}

const ROOT = resolve(import.meta.dirname, '../..');
const FLOE = join(ROOT, 'packages/cli/bin/floe.js');

export async function startFloeProcess(extra: Record<string, unknown> = {}, tenantId = 'bench'): Promise<FloeProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'floe-bench-'));
  const [router, http, grpc, flight, qa, wa, ca] = await freePorts(7);
  const config = {
    log: { level: process.env.FLOE_BENCH_LOG ?? 'warn' },
    meta: { kind: 'pglite', data_dir: join(dir, 'meta') },
    storage: { kind: 'fs', root: join(dir, 'data'), cache_dir: join(dir, 'cache') },
    acceptor: { host: '127.0.0.1', http_port: http, grpc_port: grpc },
    router: { host: '127.0.0.1', port: router },
    querier: { host: '127.0.0.1', port: flight, admin_port: qa, temp_dir: join(dir, 'tq') },
    writer: { host: '127.0.0.1', admin_port: wa, work_dir: join(dir, 'tw') },
    compactor: { host: '127.0.0.1', admin_port: ca, work_dir: join(dir, 'tc') },
    ...extra,
  };
  const file = join(dir, 'floe.yaml');
  writeFileSync(file, stringify(config));
  const tenant = tenantId;
  const boot = spawnSync(process.execPath, [FLOE, 'admin', 'bootstrap', '--tenant', tenant, '--json', '--config', file], { encoding: 'utf8' });
  if (boot.status !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const apiKey = (JSON.parse(boot.stdout) as { api_key: string }).api_key;
  const log = createWriteStream(join(dir, 'floe.log'));
  const child: ChildProcess = spawn(process.execPath, [FLOE, 'all', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  await waitFor('floe ready', async () => (await isReady(`http://127.0.0.1:${router}/ready`)) || undefined, 60_000);
  return {
    dir,
    routerUrl: `http://127.0.0.1:${router}`,
    otlpHttpUrl: `http://127.0.0.1:${http}`,
    flightAddress: `127.0.0.1:${flight}`,
    apiKey,
    tenant,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
