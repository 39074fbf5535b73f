import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { WaitAborted, freePorts, isReady, requirePrometheus, waitFor } from '@floe/testkit';

/**
 * A real Prometheus (Debian package `prometheus`) as a remote-write receiver for benchmarks:
 * `--web.enable-remote-write-receiver` on loopback, no scrape targets (so nothing but the
 * benchmark's samples lands in its TSDB), its TSDB in a temp directory.
 */
export interface PrometheusProcess {
  url: string;
  /** The TSDB directory. */
  tsdb: string;
  pid: number;
  /** Value of one of its own metrics (summed over label sets), from /metrics. */
  metric(name: string): Promise<number>;
  stop(): Promise<void>;
  /** Deletes the temp directory (after stop()). */
  remove(): void;
}

export async function startPrometheusReceiver(flags: string[] = []): Promise<PrometheusProcess> {
  const bin = requirePrometheus();
  const dir = mkdtempSync(join(tmpdir(), 'floe-bench-prom-'));
  const [port] = await freePorts(1);
  const url = `http://127.0.0.1:${port}`;
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(configFile, stringify({ global: { scrape_interval: '15s' }, scrape_configs: [] }));
  const tsdb = join(dir, 'tsdb');
  const logFile = join(dir, 'prometheus.log');
  const out = createWriteStream(logFile);
  const child: ChildProcess = spawn(
    bin,
    [`--config.file=${configFile}`, `--storage.tsdb.path=${tsdb}`, `--web.listen-address=127.0.0.1:${port}`, '--web.enable-remote-write-receiver', '--log.level=warn', ...flags],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(t);
    }
    out.end();
  };
  await waitFor(
    'Prometheus /-/ready',
    async () => {
      if (child.exitCode !== null) throw new WaitAborted(`prometheus exited: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
      return (await isReady(`${url}/-/ready`)) || undefined;
    },
    60_000,
    200,
  );
  return {
    url,
    tsdb,
    pid: child.pid!,
    async metric(name: string) {
      const text = await (await fetch(`${url}/metrics`)).text();
      let sum = 0;
      for (const line of text.split('\n')) {
        if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
      }
      return sum;
    },
    stop,
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Bytes of every file under `path` (0 when it does not exist). */
export function duBytes(path: string): number {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const e of readdirSync(path)) total += duBytes(join(path, e));
  return total;
}

/** The persistent blocks of a TSDB directory (ULID directories with a meta.json). */
export function tsdbBlocks(tsdb: string): Array<{ dir: string; bytes: number; samples: number; series: number; chunks: number; minTime: number; maxTime: number }> {
  if (!existsSync(tsdb)) return [];
  return readdirSync(tsdb)
    .filter((d) => /^[0-9A-Z]{26}$/.test(d) && existsSync(join(tsdb, d, 'meta.json')))
    .map((d) => {
      const meta = JSON.parse(readFileSync(join(tsdb, d, 'meta.json'), 'utf8')) as { minTime: number; maxTime: number; stats: { numSamples: number; numSeries: number; numChunks: number } };
      return { dir: d, bytes: duBytes(join(tsdb, d)), samples: meta.stats.numSamples, series: meta.stats.numSeries, chunks: meta.stats.numChunks, minTime: meta.minTime, maxTime: meta.maxTime };
    });
}
