import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { loadConfig, type FloeConfigInput } from '@floe/config';
import { startFloe as startInProcess } from '@floe/cli';
import { migrate, openDb } from '@floe/meta';
import { presentProcessCertificate, serverTlsFromConfig, trustConfiguredAuthorities } from '@floe/runtime';
import { createLogger } from '@floe/telemetry';
import { createTestDatabase, createTestRedisPrefix, startTestS3 } from './backends.ts';
import { FLOE_BIN, NODE_BIN, runFloeCli } from './cli.ts';
import { WaitAborted, freePorts, isReady, listensOn, waitFor } from './ports.ts';

/**
 * Starts real Floe for a test, in either mode:
 * - `embedded`: `floe all` in this process, PGlite and a temp directory;
 * - `cluster`: five `floe <service>` child processes on a fresh PostgreSQL database and an S3
 *   server (or, with `storage: 'fs'`, one local directory they share, as five services on one
 *   host without containers), so a test can kill -9 and restart one of them.
 * Ports are ephemeral; everything is torn down by stop().
 */

export type FloeMode = 'embedded' | 'cluster';
export const SERVICES = ['querier', 'writer', 'acceptor', 'compactor', 'router'] as const;
export type Service = (typeof SERVICES)[number];

export interface FloeUnderTest {
  mode: FloeMode;
  routerUrl: string;
  otlpHttpUrl: string;
  otlpGrpcAddress: string;
  flightAddress: string;
  /** The querier's admin server (`/ready`, `/status`). */
  querierAdminUrl: string;
  /** The writer's admin server (`/ready`, `/status`: the WAL backlog and its rounds). */
  writerAdminUrl: string;
  /** The compactor's admin server (`/ready`, `/status`, `/metrics`). */
  compactorAdminUrl: string;
  adminApiKey: string;
  dataDir: string;
  /** Creates a tenant with its default dataset and returns a fresh API key for it. */
  bootstrap(tenant: string): Promise<{ tenant: string; dataset: string; api_key: string }>;
  /** Runs SQL on Floe's metadata DB (catalog rows, keys) for assertions. */
  metaQuery<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** cluster only: SIGKILL one service process. */
  kill(service: Service): Promise<void>;
  /** cluster only: start a killed service again and wait until it is ready. */
  restart(service: Service): Promise<void>;
  /** cluster only: one more acceptor process on its own ports, sharing the cluster's stores. */
  startExtraAcceptor(): Promise<{ otlpHttpUrl: string; otlpGrpcAddress: string; stop(): Promise<void> }>;
  /** cluster only: one more writer or compactor process on its own admin port, sharing the cluster's stores. */
  startExtraService(service: 'writer' | 'compactor'): Promise<ExtraProcess & { adminUrl: string }>;
  stop(): Promise<void>;
}

/** A service process started beside the cluster's five. */
export interface ExtraProcess {
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>;
  /** SIGKILL, and waits for the exit. */
  kill(): Promise<void>;
}

export interface StartOptions {
  mode: FloeMode;
  /** cluster only: the object store (default s3). */
  storage?: 's3' | 'fs';
  /** Extra configuration merged over the test defaults. */
  config?: FloeConfigInput;
  /** embedded only: also run the product-planning API in the process (`floe all --planning`). */
  planning?: boolean;
}

const NODE = NODE_BIN;

type Tree = Record<string, unknown>;
const merge = (a: Tree, b: Tree): Tree => {
  const out: Tree = { ...a };
  for (const [k, v] of Object.entries(b)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && out[k] && typeof out[k] === 'object' ? merge(out[k] as Tree, v as Tree) : v;
  }
  return out;
};

const ADMIN_KEY = 'test-admin-key-0123456789';

/**
 * With `tls` in the test's config the public ports serve TLS: their URLs say https and
 * grpc+tls, and this (test) process trusts `tls.ca_file` and, with `tls.client_ca_file`,
 * presents `tls.cert_file` as Floe's own processes do.
 */
function publicSchemes(tree: Tree): { http: string; flight: string; admin: string } {
  const tls = tree.tls as { cert_file?: string; ca_file?: string; client_ca_file?: string; admin_ports?: boolean } | undefined;
  if (!tls?.cert_file) return { http: 'http', flight: '', admin: 'http' };
  if (tls.ca_file) trustConfiguredAuthorities(tls.ca_file);
  const own = tls.client_ca_file ? serverTlsFromConfig(loadConfig({ env: {}, overrides: { tls } }).tls) : undefined;
  if (own?.mutual) presentProcessCertificate(own);
  return { http: 'https', flight: 'grpc+tls://', admin: tls.admin_ports ? 'https' : 'http' };
}

export async function startFloe(opts: StartOptions): Promise<FloeUnderTest> {
  if (opts.mode === 'embedded') return startEmbedded(opts);
  // A cluster's ports are drawn free, then bound by five processes: a test running beside may
  // take one in between. Such a start is tried again on new ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startCluster(opts);
    } catch (err) {
      if (!(err instanceof PortTaken) || attempt >= 3) throw err;
    }
  }
}

/** A cluster service could not bind its port (EADDRINUSE in its log). */
class PortTaken extends Error {}

async function startEmbedded(opts: StartOptions): Promise<FloeUnderTest> {
  const dir = mkdtempSync(join(tmpdir(), 'floe-emb-'));
  const base: Tree = {
    log: { level: process.env.FLOE_TEST_LOG ?? 'warn' },
    meta: { kind: 'pglite', data_dir: join(dir, 'meta') },
    storage: { kind: 'fs', root: join(dir, 'data'), cache_dir: join(dir, 'cache') },
    auth: { admin_api_key: ADMIN_KEY },
    acceptor: { host: '127.0.0.1', grpc_port: 0, http_port: 0 },
    router: { host: '127.0.0.1', port: 0 },
    querier: { host: '127.0.0.1', port: 0, admin_port: 0, temp_dir: join(dir, 'tmp-q') },
    writer: { host: '127.0.0.1', admin_port: 0, flush_interval: '500ms', poll_interval: '100ms', work_dir: join(dir, 'tmp-w') },
    compactor: { host: '127.0.0.1', admin_port: 0, work_dir: join(dir, 'tmp-c') },
    planning: { host: '127.0.0.1', port: 0 },
  };
  const tree = merge(base, (opts.config ?? {}) as Tree);
  const config = loadConfig({ env: {}, overrides: tree });
  const scheme = publicSchemes(tree);
  const log = createLogger({ level: config.log.level, name: 'floe-test', fd: 2 });
  const started = await startInProcess(config, opts.planning ? ['all', 'planning'] : ['all'], log);
  const port = (name: string, key: string) => started.get(name)!.ports[key]!;
  return {
    mode: 'embedded',
    routerUrl: `${scheme.http}://127.0.0.1:${port('router', 'http')}`,
    otlpHttpUrl: `${scheme.http}://127.0.0.1:${port('acceptor', 'http')}`,
    otlpGrpcAddress: `127.0.0.1:${port('acceptor', 'grpc')}`,
    flightAddress: `${scheme.flight}127.0.0.1:${port('querier', 'flight')}`,
    querierAdminUrl: `${scheme.admin}://127.0.0.1:${port('querier', 'admin')}`,
    writerAdminUrl: `${scheme.admin}://127.0.0.1:${port('writer', 'admin')}`,
    compactorAdminUrl: `${scheme.admin}://127.0.0.1:${port('compactor', 'admin')}`,
    adminApiKey: ADMIN_KEY,
    dataDir: dir,
    // PGlite is single-process: tenants are created through the running process's metadata DB.
    bootstrap: (tenant) => started.bootstrap(tenant),
    metaQuery: async <R,>(sql: string, params?: unknown[]) => (await started.db!.query<R>(sql, params)).rows,
    kill: async () => {
      throw new Error('kill() needs cluster mode');
    },
    restart: async () => {
      throw new Error('restart() needs cluster mode');
    },
    startExtraAcceptor: async () => {
      throw new Error('startExtraAcceptor() needs cluster mode');
    },
    startExtraService: async () => {
      throw new Error('startExtraService() needs cluster mode');
    },
    async stop() {
      await started.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startCluster(opts: StartOptions): Promise<FloeUnderTest> {
  const dir = mkdtempSync(join(tmpdir(), 'floe-cl-'));
  const [database, s3] = await Promise.all([createTestDatabase(), opts.storage === 'fs' ? undefined : startTestS3()]);
  const redis = createTestRedisPrefix();
  const [routerPort, httpPort, grpcPort, flightPort, qAdmin, wAdmin, cAdmin] = await freePorts(7);
  const base: Tree = {
    log: { level: process.env.FLOE_TEST_LOG ?? 'warn' },
    meta: { kind: 'pg', url: database.url, pool_max: 4 },
    storage: s3
      ? {
          kind: 's3',
          s3: { bucket: s3.bucket, endpoint: s3.endpoint, region: 'us-east-1', access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey, force_path_style: true },
          cache_dir: join(dir, 'cache'),
        }
      : { kind: 'fs', root: join(dir, 'data'), cache_dir: join(dir, 'cache') },
    auth: { admin_api_key: ADMIN_KEY, internal_service_key: 'test-internal-key' },
    // Limits and resend dedup shared by every acceptor and router, as in production.
    limits: { store: 'redis', redis_url: redis.url, key_prefix: redis.prefix },
    acceptor: { host: '127.0.0.1', grpc_port: grpcPort, http_port: httpPort },
    router: { host: '127.0.0.1', port: routerPort, querier_urls: [`127.0.0.1:${flightPort}`], compactor_url: `http://127.0.0.1:${cAdmin}` },
    querier: { host: '127.0.0.1', port: flightPort, admin_port: qAdmin, temp_dir: join(dir, 'tmp-q') },
    writer: { host: '127.0.0.1', admin_port: wAdmin, flush_interval: '500ms', poll_interval: '100ms', work_dir: join(dir, 'tmp-w') },
    compactor: { host: '127.0.0.1', admin_port: cAdmin, work_dir: join(dir, 'tmp-c') },
  };
  const tree = merge(base, (opts.config ?? {}) as Tree);
  const scheme = publicSchemes(tree);
  const router = tree.router as Tree;
  if (scheme.flight && !(opts.config?.router?.querier_urls)) router.querier_urls = [`${scheme.flight}127.0.0.1:${flightPort}`];
  if (!(opts.config?.router?.compactor_url)) router.compactor_url = `${scheme.admin}://127.0.0.1:${cAdmin}`;
  loadConfig({ env: {}, overrides: tree }); // fail fast, in the test's own process, on a bad config
  // A test may pick the router's port itself (its public URL must name it).
  const routerAt = Number((tree.router as Tree).port);
  const configFile = join(dir, 'floe.yaml');
  writeFileSync(configFile, toYaml(tree));

  // Migrate once up front so five processes do not race on a fresh database.
  const db = await openDb({ kind: 'pg', url: database.url });
  await migrate(db);
  await db.close();

  const readyUrl: Record<Service, string> = {
    querier: `${scheme.admin}://127.0.0.1:${qAdmin}/ready`,
    writer: `${scheme.admin}://127.0.0.1:${wAdmin}/ready`,
    compactor: `${scheme.admin}://127.0.0.1:${cAdmin}/ready`,
    acceptor: `${scheme.http}://127.0.0.1:${httpPort}/ready`,
    router: `${scheme.http}://127.0.0.1:${routerAt}/ready`,
  };
  const readyPort: Record<Service, number> = { querier: qAdmin!, writer: wAdmin!, compactor: cAdmin!, acceptor: httpPort!, router: routerAt };
  const procs = new Map<Service, ChildProcess>();
  const extra: ChildProcess[] = [];
  const spawnService = async (service: Service) => {
    const out = createWriteStream(join(dir, `${service}.log`), { flags: 'a' });
    const child = spawn(NODE, [FLOE_BIN, service, '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FLOE_CONFIG: '' } });
    child.stdout!.pipe(out);
    child.stderr!.pipe(out);
    procs.set(service, child);
    await waitFor(`${service} /ready (log: ${join(dir, `${service}.log`)})`, async () => {
      if (child.exitCode !== null || child.signalCode !== null) throw new WaitAborted(`${service} exited (${child.exitCode ?? child.signalCode}); log: ${join(dir, `${service}.log`)}`);
      // Ready only from our child: another test's process may hold the port and answer for it.
      return ((await isReady(readyUrl[service])) && listensOn(child.pid!, readyPort[service])) || undefined;
    }, 60_000);
  };
  const stopService = async (service: Service, signal: NodeJS.Signals) => {
    const child = procs.get(service);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  /** One more `floe <service>` process with `env` over the shared config, ready on `readyPort`. */
  const spawnExtra = async (service: Service, readyPort: number, env: Record<string, string>): Promise<ExtraProcess> => {
    const out = createWriteStream(join(dir, `${service}-${readyPort}.log`), { flags: 'a' });
    const child = spawn(NODE, [FLOE_BIN, service, '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FLOE_CONFIG: '', ...env } });
    child.stdout!.pipe(out);
    child.stderr!.pipe(out);
    extra.push(child);
    await waitFor(`extra ${service} /ready (log: ${join(dir, `${service}-${readyPort}.log`)})`, async () => {
      if (child.exitCode !== null || child.signalCode !== null) throw new WaitAborted(`extra ${service} exited (${child.exitCode ?? child.signalCode})`);
      return ((await isReady(`http://127.0.0.1:${readyPort}/ready`)) && listensOn(child.pid!, readyPort)) || undefined;
    }, 60_000);
    const end = async (signal: NodeJS.Signals) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill(signal);
      await exited;
    };
    return { stop: () => end('SIGTERM'), kill: () => end('SIGKILL') };
  };
  try {
    for (const s of SERVICES) await spawnService(s);
  } catch (err) {
    for (const s of SERVICES) await stopService(s, 'SIGKILL');
    await Promise.all([database.drop(), s3?.stop(), redis.drop()]);
    const logs = SERVICES.map((s) => join(dir, `${s}.log`)).filter((f) => existsSync(f));
    const taken = () => logs.some((f) => readFileSync(f, 'utf8').includes('EADDRINUSE'));
    // The exited service's last lines may still be on their way into its log.
    for (let i = 0; i < 10 && err instanceof WaitAborted && !taken(); i++) await new Promise((r) => setTimeout(r, 100));
    if (taken()) throw new PortTaken(`a port was taken: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    throw err;
  }
  return {
    mode: 'cluster',
    routerUrl: `${scheme.http}://127.0.0.1:${routerAt}`,
    otlpHttpUrl: `${scheme.http}://127.0.0.1:${httpPort}`,
    otlpGrpcAddress: `127.0.0.1:${grpcPort}`,
    flightAddress: `${scheme.flight}127.0.0.1:${flightPort}`,
    querierAdminUrl: `${scheme.admin}://127.0.0.1:${qAdmin}`,
    writerAdminUrl: `${scheme.admin}://127.0.0.1:${wAdmin}`,
    compactorAdminUrl: `${scheme.admin}://127.0.0.1:${cAdmin}`,
    adminApiKey: ADMIN_KEY,
    dataDir: dir,
    async bootstrap(tenant) {
      // Through the real CLI, as an operator would.
      const r = await runFloeCli(['admin', 'bootstrap', '--tenant', tenant, '--json', '--config', configFile]);
      if (r.code !== 0) throw new Error(`bootstrap exited ${r.code}: ${r.stderr}`);
      const out = r.stdout;
      return JSON.parse(out) as { tenant: string; dataset: string; api_key: string };
    },
    async metaQuery<R>(sql: string, params?: unknown[]) {
      const conn = await openDb({ kind: 'pg', url: database.url, poolMax: 1 });
      try {
        return (await conn.query<R>(sql, params)).rows;
      } finally {
        await conn.close();
      }
    },
    kill: (service) => stopService(service, 'SIGKILL'),
    restart: (service) => spawnService(service),
    async startExtraAcceptor() {
      const [http, grpc] = await freePorts(2);
      const process_ = await spawnExtra('acceptor', http!, { FLOE__ACCEPTOR__HTTP_PORT: String(http), FLOE__ACCEPTOR__GRPC_PORT: String(grpc) });
      return { otlpHttpUrl: `http://127.0.0.1:${http}`, otlpGrpcAddress: `127.0.0.1:${grpc}`, stop: process_.stop };
    },
    async startExtraService(service) {
      const [admin] = await freePorts(1);
      const section = service.toUpperCase();
      const process_ = await spawnExtra(service, admin!, { [`FLOE__${section}__ADMIN_PORT`]: String(admin), [`FLOE__${section}__WORK_DIR`]: join(dir, `tmp-${service}-${admin}`) });
      return { ...process_, adminUrl: `http://127.0.0.1:${admin}` };
    },
    async stop() {
      for (const child of extra) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      for (const s of [...SERVICES].reverse()) await stopService(s, 'SIGTERM');
      await Promise.all([database.drop(), s3?.stop(), redis.drop()]);
      reportServiceErrors(dir);
      // FLOE_TEST_KEEP_LOGS=1 keeps the services' logs (and data) for a look after a failure.
      if (process.env.FLOE_TEST_KEEP_LOGS) process.stderr.write(`floe test cluster kept: ${dir}\n`);
      else rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The services' error lines (levels error and fatal), a few per log, on the test's stderr: the logs
 * go with the cluster's directory, and an unexpected INTERNAL in a test is explained only there.
 */
function reportServiceErrors(dir: string): void {
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.log'))) {
    const lines = readFileSync(join(dir, name), 'utf8').split('\n').filter((l) => /"level":"(error|fatal)"/.test(l));
    if (lines.length === 0) continue;
    const shown = lines.slice(0, 5).map((l) => `  ${l.slice(0, 2000)}`);
    process.stderr.write(`floe test cluster: ${lines.length} error line(s) in ${name}:\n${shown.join('\n')}\n`);
  }
}

