import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { requireBinary, startChildServer } from './child-server.ts';
import { freePorts } from './ports.ts';

/**
 * A real Alertmanager (the Debian package `prometheus-alertmanager`) for end-to-end tests of
 * Floe's ruler: started on loopback with a generated config whose one route goes to a webhook
 * (or nowhere), its state in a temp directory, stopped and removed by stop(). A missing binary is
 * an error that names the package: these tests must fail, not skip, on a machine without it.
 *
 * Clustering is off: its default gossip port (9094) is fixed and would collide between tests
 * running in parallel.
 */

export const ALERTMANAGER_DEFAULT_BIN = '/usr/bin/prometheus-alertmanager';

/** FLOE_TEST_ALERTMANAGER_BIN, else Debian's; read per call so a test can point it elsewhere. */
export function alertmanagerBin(): string {
  return process.env.FLOE_TEST_ALERTMANAGER_BIN ?? ALERTMANAGER_DEFAULT_BIN;
}

export interface AlertmanagerStartOptions {
  /** Notify this webhook (send_resolved on); without it notifications go nowhere. */
  webhookUrl?: string;
  /** Route timings; short by default so tests see notifications within seconds. */
  groupWait?: string;
  groupInterval?: string;
  repeatInterval?: string;
  groupBy?: string[];
  /** Serve under this path (e.g. '/am'), as behind a reverse proxy; `url` then ends with it. */
  pathPrefix?: string;
  /** More command-line flags. */
  flags?: string[];
}

export interface AlertmanagerUnderTest {
  /** Base URL, including pathPrefix. */
  url: string;
  /** Its storage directory (removed by stop()). */
  storage: string;
  pid: number;
  /** GET {url}/api/v2/<path>?<params> as JSON (throws on a non-2xx answer). */
  api<T = unknown>(path: string, params?: Record<string, string>): Promise<T>;
  /** Alertmanager's own log so far (for failure messages). */
  log(): string;
  stop(): Promise<void>;
}

export function requireAlertmanager(): string {
  return requireBinary('Alertmanager', alertmanagerBin(), 'prometheus-alertmanager', 'FLOE_TEST_ALERTMANAGER_BIN');
}

export async function startAlertmanager(opts: AlertmanagerStartOptions = {}): Promise<AlertmanagerUnderTest> {
  const bin = requireAlertmanager();
  const dir = mkdtempSync(join(tmpdir(), 'floe-am-'));
  const [port] = await freePorts(1);
  const prefix = (opts.pathPrefix ?? '').replace(/\/+$/, '');
  const url = `http://127.0.0.1:${port}${prefix}`;
  const receiver = opts.webhookUrl ? { name: 'webhook', webhook_configs: [{ url: opts.webhookUrl, send_resolved: true }] } : { name: 'none' };
  const config = {
    route: {
      receiver: receiver.name,
      group_by: opts.groupBy ?? ['alertname'],
      group_wait: opts.groupWait ?? '0s',
      group_interval: opts.groupInterval ?? '1s',
      repeat_interval: opts.repeatInterval ?? '1h',
    },
    receivers: [receiver],
  };
  const configFile = join(dir, 'alertmanager.yml');
  writeFileSync(configFile, toYaml(config));
  const storage = join(dir, 'data');
  const server = await startChildServer({
    name: 'Alertmanager',
    bin,
    args: [
      `--config.file=${configFile}`,
      `--storage.path=${storage}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // Its path becomes the route prefix; it also makes the webhook's externalURL predictable.
      `--web.external-url=${url}`,
      '--cluster.listen-address=',
      '--log.level=info',
      ...(opts.flags ?? []),
    ],
    dir,
    port: port!,
    readyUrl: `${url}/-/ready`,
  });
  return {
    url,
    storage,
    pid: server.pid,
    log: server.log,
    stop: server.stop,
    async api<T>(path: string, params: Record<string, string> = {}): Promise<T> {
      const res = await fetch(`${url}/api/v2/${path}?${new URLSearchParams(params).toString()}`);
      const text = await res.text();
      if (!res.ok) throw new Error(`Alertmanager /api/v2/${path}: ${res.status} ${text}`);
      return JSON.parse(text) as T;
    },
  };
}
