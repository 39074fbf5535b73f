import type { Command } from 'commander';
import { callApi } from '@floe/client';
import { UsageError, action, connectionOf, withConnection, type ConnectionFlags } from '../command-helpers.ts';

/**
 * `floe ops compact|compact-plan|compact-status`: compaction control from a terminal, through the
 * router's /api/v1/ops/compact routes (spec 2, admin-authenticated: the break-glass admin key).
 * Each prints the router's JSON answer.
 */

interface ScopeFlags extends ConnectionFlags {
  tenant?: string;
  dataset?: string;
  table?: string;
}

const withScope = (cmd: Command) =>
  withConnection(cmd, 'the admin key (env FLOE_API_KEY)')
    .option('--tenant <id>', 'only this tenant’s tables')
    .option('--dataset <id>', 'only this dataset (needs --tenant)')
    .option('--table <name>', 'only this table (traces, logs, metrics, metric_exemplars, profiles)');

/** The request body of a scoped call; the router validates the names. */
function scopeOf(o: ScopeFlags): Record<string, string> {
  if (o.dataset !== undefined && o.tenant === undefined) throw new UsageError('--dataset needs --tenant');
  const scope: Record<string, string> = {};
  if (o.tenant !== undefined) scope.tenant = o.tenant;
  if (o.dataset !== undefined) scope.dataset = o.dataset;
  if (o.table !== undefined) scope.table = o.table;
  return scope;
}

const print = (body: unknown): void => {
  process.stdout.write(`${JSON.stringify(body)}\n`);
};

export function registerOpsCommands(program: Command): void {
  const ops = program.command('ops').description('operations: compaction control (instance admin)');

  withScope(ops.command('compact').description('start an on-demand compaction pass (runs after the pass in progress)')).action(
    action('ops compact', async (o: ScopeFlags) => print(await callApi(connectionOf(o), 'POST', 'api/v1/ops/compact', { body: scopeOf(o) }))),
  );
  withScope(ops.command('compact-plan').description('what a pass would merge now, per table and hour (a dry run)')).action(
    action('ops compact-plan', async (o: ScopeFlags) => print(await callApi(connectionOf(o), 'POST', 'api/v1/ops/compact/dry-run', { body: scopeOf(o) }))),
  );
  withConnection(ops.command('compact-status').description('the compactor: the pass in progress, the last one, the latest on-demand passes'), 'the admin key (env FLOE_API_KEY)').action(
    action('ops compact-status', async (o: ConnectionFlags) => print(await callApi(connectionOf(o), 'GET', 'api/v1/ops/compact/status'))),
  );
}
