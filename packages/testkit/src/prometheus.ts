import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { requireBinary, startChildServer } from './child-server.ts';
import { freePorts } from './ports.ts';

/**
 * A real Prometheus (the Debian package `prometheus`) for end-to-end tests: started on loopback
 * with a generated config (it scrapes itself, optionally remote-writes to Floe), its TSDB in a
 * temp directory, stopped and removed by stop(). A missing binary is an error that names the
 * package: these tests must fail, not skip, on a machine without it.
 *
 * Remote write authenticates with basic_auth: the tenant as the user, the API key as the password
 * (Floe's `Basic base64(<tenant>:<key>)`). Debian's Prometheus 2.42 never sends the remote_write
 * `headers` of its config (its patch 91-Disable_opentelemetry drops the round tripper that adds
 * them: configured, listed by /api/v1/status/config, not sent), so X-Tenant-ID cannot be relied on.
 */

export const PROMETHEUS_BIN = process.env.FLOE_TEST_PROMETHEUS_BIN ?? '/usr/bin/prometheus';

export interface PrometheusOptions {
  scrapeInterval?: string;
  /** Remote write to this URL as this tenant with this key. */
  remoteWrite?: { url: string; apiKey: string; tenant: string; metadataInterval?: string };
  /** Remote read from this URL as this tenant with this key, for every range (read_recent). */
  remoteRead?: { url: string; apiKey: string; tenant: string };
  /** Accept remote write on /api/v1/write (--web.enable-remote-write-receiver). */
  remoteWriteReceiver?: boolean;
  /** Scrape itself (default true); off keeps its TSDB to what the test writes. */
  scrapeSelf?: boolean;
  /** More command-line flags (e.g. --query.max-samples=…, --web.enable-admin-api). */
  flags?: string[];
  /** More scrape jobs: `targets` as host:port, `/metrics` unless `metricsPath` says otherwise. */
  scrapeJobs?: { job: string; targets: string[]; metricsPath?: string; bearerToken?: string }[];
  /** Rule files (absolute paths) evaluated every second. */
  ruleFiles?: string[];
}

export interface PrometheusUnderTest {
  url: string;
  /** Its TSDB directory (removed by stop()). */
  tsdb: string;
  pid: number;
  /** GET {url}/api/v1/<path>?<params>: the `data` of a success envelope (throws otherwise). */
  api<T = unknown>(path: string, params?: Record<string, string>): Promise<T>;
  /** Prometheus's own log so far (for failure messages). */
  log(): string;
  stop(): Promise<void>;
}

export function requirePrometheus(): string {
  return requireBinary('Prometheus', PROMETHEUS_BIN, 'prometheus', 'FLOE_TEST_PROMETHEUS_BIN');
}

export async function startPrometheus(opts: PrometheusOptions = {}): Promise<PrometheusUnderTest> {
  const bin = requirePrometheus();
  const dir = mkdtempSync(join(tmpdir(), 'floe-prom-'));
  const [port] = await freePorts(1);
  const url = `http://127.0.0.1:${port}`;
  const config: Record<string, unknown> = {
    global: { scrape_interval: opts.scrapeInterval ?? '1s', evaluation_interval: '1s' },
    scrape_configs: opts.scrapeSelf === false ? [] : [{ job_name: 'prometheus', static_configs: [{ targets: [`127.0.0.1:${port}`] }] }],
  };
  for (const j of opts.scrapeJobs ?? []) {
    (config.scrape_configs as unknown[]).push({
      job_name: j.job,
      metrics_path: j.metricsPath ?? '/metrics',
      static_configs: [{ targets: j.targets }],
      ...(j.bearerToken ? { authorization: { credentials: j.bearerToken } } : {}),
    });
  }
  if (opts.ruleFiles) config.rule_files = opts.ruleFiles;
  if (opts.remoteWrite) {
    const rw = opts.remoteWrite;
    config.remote_write = [
      {
        url: rw.url,
        basic_auth: { username: rw.tenant, password: rw.apiKey },
        queue_config: { batch_send_deadline: '500ms', min_backoff: '100ms', max_backoff: '1s' },
        metadata_config: { send: true, send_interval: rw.metadataInterval ?? '2s' },
      },
    ];
  }
  if (opts.remoteRead) {
    const rr = opts.remoteRead;
    config.remote_read = [{ url: rr.url, basic_auth: { username: rr.tenant, password: rr.apiKey }, read_recent: true }];
  }
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(configFile, toYaml(config));
  const tsdb = join(dir, 'tsdb');
  const server = await startChildServer({
    name: 'Prometheus',
    bin,
    args: [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${tsdb}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=info',
      ...(opts.remoteWriteReceiver ? ['--web.enable-remote-write-receiver'] : []),
      ...(opts.flags ?? []),
    ],
    dir,
    port: port!,
    readyUrl: `${url}/-/ready`,
  });
  return {
    url,
    tsdb,
    pid: server.pid,
    log: server.log,
    stop: server.stop,
    async api<T>(path: string, params: Record<string, string> = {}): Promise<T> {
      const res = await fetch(`${url}/api/v1/${path}?${new URLSearchParams(params).toString()}`);
      const body = (await res.json()) as { status: string; data: T; error?: string };
      if (body.status !== 'success') throw new Error(`Prometheus /api/v1/${path}: ${res.status} ${body.error ?? ''}`);
      return body.data;
    },
  };
}
