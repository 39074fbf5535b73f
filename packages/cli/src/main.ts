import { Command } from 'commander';
import type { FloeConfig } from '@floe/config';
import { CLIENT_CERT_FILE_ENV, CLIENT_KEY_FILE_ENV, callApi } from '@floe/client';
import { action, connectionOf, tenantOption, withConnection, type ConnectionFlags } from './command-helpers.ts';
import { TARGETS } from './targets.ts';
import { readLiveLock } from './embedded-lock.ts';
import { registerManagementCommands } from './management/commands.ts';
import { registerQueryCommands } from './query/commands.ts';
import { registerOpsCommands } from './ops/commands.ts';
import { registerScmCommands } from './scm/commands.ts';

// Every command loads what it needs when it runs: the services, the metadata DB, the config schema
// and the query parsers take about a second to import, which every management and query command
// (a shell loop of them, a script, the test suite) would otherwise pay on each call.

/** The `floe` command: run services, administer, and query. */
const program = new Command('floe').description('Floe: multi-tenant telemetry store on Apache Iceberg').showHelpAfterError();

/** Runs `check`; a ConfigError it throws ends the process with its message and status 2. */
async function exitOnConfigError<T>(check: () => T | Promise<T>): Promise<T> {
  const { ConfigError } = await import('@floe/config');
  try {
    return await check();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

// Every command's calls to a server that demands a client certificate (mutual TLS) present the
// one these name; the services themselves present tls.cert_file (compose). The runtime is loaded
// only when a certificate is named (clientCertificateFromEnv reads these two variables).
program.hook('preAction', async () => {
  if (!process.env[CLIENT_CERT_FILE_ENV] && !process.env[CLIENT_KEY_FILE_ENV]) return;
  const { clientCertificateFromEnv, presentProcessCertificate } = await import('@floe/runtime');
  const own = await exitOnConfigError(() => clientCertificateFromEnv());
  if (own) presentProcessCertificate(own);
});

const loadOrExit = (file: string | undefined): Promise<FloeConfig> =>
  exitOnConfigError(async () => {
    const [{ ConfigError, loadConfig }, { retentionStreamProblems }, { trustConfiguredAuthorities }] = await Promise.all([
      import('@floe/config'),
      import('@floe/query'),
      import('@floe/runtime'),
    ]);
    const config = loadConfig({ file });
    // The schema checks a rule's shape; whether its selector is LogQL is the query package's to say.
    const problems = retentionStreamProblems(config.limits.retention_stream, 'limits.retention_stream');
    if (problems.length > 0) throw new ConfigError(problems);
    trustConfiguredAuthorities(config.tls.ca_file);
    return config;
  });

for (const target of TARGETS) {
  const command = program
    .command(target)
    .description(target === 'all' ? 'run every service in one process (embedded defaults)' : target === 'planning' ? 'run the product-planning API (a separate service, not part of all)' : `run the ${target} service`)
    .option('-c, --config <file>', 'YAML configuration file (env FLOE__SECTION__KEY overrides it)', process.env.FLOE_CONFIG);
  if (target === 'all') command.option('--planning', "also run the product-planning API in this process (on its own port, and under the router's /api/v1)");
  command.action(async (opts: { config?: string; planning?: boolean }) => {
    const config = await loadOrExit(opts.config);
    const [{ createLogger }, { startFloe }, { onShutdownSignal }] = await Promise.all([import('@floe/telemetry'), import('./compose.ts'), import('@floe/runtime')]);
    const log = createLogger({ level: config.log.level, name: target });
    try {
      // A configured file that cannot be used (tls.cert_file, …) is a configuration error too.
      const started = await exitOnConfigError(() => startFloe(config, opts.planning ? [target, 'planning'] : [target], log));
      log.info({ target, ports: Object.fromEntries(started.handles.map((h) => [h.name, h.ports])) }, 'floe started');
      onShutdownSignal(log, () => started.stop(config.runtime.shutdown_delay), config.runtime.shutdown_timeout + config.runtime.shutdown_delay);
    } catch (err) {
      log.fatal({ err }, 'start failed');
      log.flush();
      setTimeout(() => process.exit(1), 50);
    }
  });
}

const admin = program.command('admin').description('administrative commands that talk to the metadata DB directly');
admin
  .command('bootstrap')
  .description('create a tenant (if missing) with its default dataset and print a new API key')
  .requiredOption('--tenant <id>', 'tenant id')
  .option('--json', 'print {"tenant","dataset","api_key"} as JSON')
  .option('-c, --config <file>', 'YAML configuration file', process.env.FLOE_CONFIG)
  .action(async (opts: { tenant: string; json?: boolean; config?: string }) => {
    const config = await loadOrExit(opts.config);
    const print = (out: { tenant: string; dataset: string; api_key: string }) => {
      if (opts.json) process.stdout.write(`${JSON.stringify(out)}\n`);
      else process.stdout.write(`tenant:  ${out.tenant}\ndataset: ${out.dataset}\napi key: ${out.api_key}\n(the key is shown once; store it now)\n`);
    };
    try {
      // A running embedded instance owns PGlite: ask its router instead of opening the files.
      const holder = config.meta.kind === 'pglite' ? readLiveLock(config.meta.data_dir) : undefined;
      if (holder) {
        if (!holder.routerUrl || !holder.token) throw new Error(`the embedded metadata DB is in use by process ${holder.pid}, which serves no router`);
        print(
          await callApi<{ tenant: string; dataset: string; api_key: string }>({ url: holder.routerUrl, authorization: `Bearer ${holder.token}` }, 'POST', 'api/v1/admin/bootstrap', {
            body: { tenant: opts.tenant },
            expect: { tenant: 'string', dataset: 'string', api_key: 'string' },
          }),
        );
        return;
      }
      const [{ EmbeddedLock }, { bootstrapSummary, bootstrapTenant, migrate, openDbFromConfig }] = await Promise.all([import('./embedded-lock.ts'), import('@floe/meta')]);
      const lock = config.meta.kind === 'pglite' ? EmbeddedLock.acquire(config.meta.data_dir) : undefined;
      const db = await openDbFromConfig(config);
      try {
        await migrate(db);
        print(bootstrapSummary(await bootstrapTenant(db, opts.tenant)));
      } finally {
        await db.close();
        lock?.release();
      }
    } catch (err) {
      process.stderr.write(`bootstrap failed: ${(err as Error).message}\n`);
      process.exitCode = 1;
    }
  });

program
  .command('sql')
  .description('run one SQL SELECT over Arrow Flight and print the result')
  .argument('<query>', 'SQL; tables: traces, logs, metrics, metric_exemplars, profiles (your tenant and dataset) or <tenant>.<dataset>.<table>')
  .option('--url <host:port>', 'querier Flight address', process.env.FLOE_QUERIER_URL ?? '127.0.0.1:50054')
  .option('--api-key <key>', 'API key (env FLOE_API_KEY)', process.env.FLOE_API_KEY)
  .option('--tenant <id>', 'tenant (env FLOE_TENANT)', process.env.FLOE_TENANT)
  .option('--dataset <id>', 'dataset (env FLOE_DATASET)', process.env.FLOE_DATASET)
  .option('--timeout <ms>', 'deadline in milliseconds', '30000')
  .option('--json', 'print rows as a JSON array')
  .option('--param <value>', 'a value for $1, $2, … in order (repeat; JSON numbers, true, false and null as such, anything else as text)', (v: string, all: string[] = []) => [...all, v])
  .action(async (query: string, opts: { url: string; apiKey?: string; tenant?: string; dataset?: string; timeout: string; json?: boolean; param?: string[] }) => {
    const { runSql } = await import('./sql-command.ts');
    process.exitCode = await runSql(query, opts);
  });

registerManagementCommands(program);

// Agent tools over stdio for local MCP clients; stdout carries the protocol, so nothing else may print there.
tenantOption(withConnection(program.command('mcp').description('serve the agent tools (MCP) over stdio, querying the router at --url')))
  .option('--dataset <id>', 'dataset (env FLOE_DATASET)', process.env.FLOE_DATASET)
  .action(
    action('mcp', async (o: ConnectionFlags & { tenant?: string; dataset?: string }) => {
      const { timeoutMs } = connectionOf(o);
      const { runStdio } = await import('@floe/agent-tools');
      await runStdio({ url: o.url, apiKey: o.apiKey, tenant: o.tenant, dataset: o.dataset, timeoutMs });
    }),
  );
registerQueryCommands(program);
registerScmCommands(program);
registerOpsCommands(program);

await program.parseAsync(process.argv);
