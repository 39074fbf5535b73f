import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startPrometheus, type PrometheusUnderTest } from '@floe/testkit';

/**
 * A real Prometheus (Debian package `prometheus`, testkit's startPrometheus) as a remote-write
 * receiver for benchmarks: --web.enable-remote-write-receiver on loopback, no scrape targets (so
 * nothing but the benchmark's samples lands in its TSDB), its TSDB in a temp directory that
 * stop() removes.
 */
export const startPrometheusReceiver = (flags: string[] = []): Promise<PrometheusUnderTest> => startPrometheus({ remoteWriteReceiver: true, scrapeSelf: false, flags });

/** Value of one of Prometheus's own metrics (summed over label sets), from its /metrics. */
export async function promMetric(prom: PrometheusUnderTest, name: string): Promise<number> {
  const text = await (await fetch(`${prom.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
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
