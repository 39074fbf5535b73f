import type { Command } from 'commander';
import { callApi, optional, type Shape } from '@floe/client';
import { UsageError, action, connectionOf, withConnection, type ConnectionFlags } from '../command-helpers.ts';
import { formatTable } from '../sql-command.ts';

/**
 * `floe ops compact|compact-plan|compact-status`: compaction control from a terminal, through the
 * router's /api/v1/ops/compact routes (spec 2, admin-authenticated: the break-glass admin key).
 * Each prints the router's JSON answer. `floe ops check-tables|rollback-table`: which tables'
 * current metadata cannot be read whole, and moving one back to a sound version
 * (/api/v1/ops/tables/…); a readable report, or the answer as it came with --json.
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

interface Problem {
  kind: string;
  message: string;
}
interface CheckAnswer {
  tables_checked: number;
  ok: number;
  damaged: number;
  tables: Array<{ table: string; status: string; metadata_location: string; problems: Problem[] }>;
}
interface RollbackAnswer {
  table: string;
  dry_run: boolean;
  rolled_back: boolean;
  previous_metadata_location: string;
  metadata_location: string;
  new_metadata_location: string | null;
  chosen: { version: number; snapshot_id: string | null; problems: Problem[] };
  given_up: Array<{ metadata_location: string; parses: boolean; problems: Problem[]; snapshots: Array<{ snapshot_id: string; operation: string; added_records: number | null; deleted_records: number | null }> }>;
  records_given_up: number;
  note: string;
}

// What the commands read of the router's answers (checked by the client before they read it).
const PROBLEMS: Shape = [{ kind: 'string', message: 'string' }];
const CHECK: Shape = { tables_checked: 'number', ok: 'number', damaged: 'number', tables: [{ table: 'string', status: 'string', metadata_location: 'string', problems: PROBLEMS }] };
const ROLLBACK: Shape = {
  table: 'string',
  dry_run: 'boolean',
  rolled_back: 'boolean',
  previous_metadata_location: 'string',
  metadata_location: 'string',
  new_metadata_location: optional('string'),
  chosen: { version: 'number', snapshot_id: optional('string'), problems: PROBLEMS },
  given_up: [{ metadata_location: 'string', parses: 'boolean', problems: PROBLEMS, snapshots: [{ snapshot_id: 'string', operation: 'string', added_records: optional('number'), deleted_records: optional('number') }] }],
  records_given_up: 'number',
  note: 'string',
};

/** The file name of a metadata location: the part that differs between versions. */
const fileOf = (location: string) => location.slice(location.lastIndexOf('/') + 1);
const out = (text: string) => process.stdout.write(`${text}\n`);

function printCheck(answer: CheckAnswer): void {
  out(`${answer.tables_checked} table${answer.tables_checked === 1 ? '' : 's'} checked: ${answer.ok} ok, ${answer.damaged} damaged`);
  if (answer.tables.length === 0) return;
  out(formatTable(['table', 'status', 'metadata'], answer.tables.map((t) => ({ table: t.table, status: t.status, metadata: fileOf(t.metadata_location) }))));
  for (const t of answer.tables.filter((x) => x.problems.length > 0)) {
    out(`\n${t.table} (${t.metadata_location}):`);
    for (const p of t.problems) out(`  ${p.kind}: ${p.message}`);
  }
}

function printRollback(a: RollbackAnswer): void {
  const snapshot = a.chosen.snapshot_id === null ? 'no snapshot' : `snapshot ${a.chosen.snapshot_id}`;
  if (!a.rolled_back && !a.dry_run) out(`${a.table}: already at ${a.metadata_location} (${snapshot}); nothing changed`);
  else out(`${a.table}: ${a.dry_run ? 'would roll back' : 'rolled back'} to ${a.metadata_location} (version ${a.chosen.version}, ${snapshot}), from ${a.previous_metadata_location}${a.new_metadata_location ? `; now at ${a.new_metadata_location}` : ''}`);
  for (const p of a.chosen.problems) out(`  the chosen version has a problem: ${p.kind}: ${p.message}`);
  if (a.given_up.length > 0) {
    out(`given up (${a.records_given_up} rows):`);
    for (const v of a.given_up) {
      const state = v.problems.length === 0 ? 'sound' : v.parses ? v.problems.map((p) => p.kind).join(', ') : v.problems[0]!.message;
      out(`  ${fileOf(v.metadata_location)}: ${state}`);
      for (const s of v.snapshots) out(`    snapshot ${s.snapshot_id} ${s.operation}: +${s.added_records ?? '?'} -${s.deleted_records ?? '?'} rows`);
    }
  }
  out(a.note);
}

/** `<tenant>.<dataset>.<table>` of rollback-table (tenant and dataset ids hold no dot). */
function tableOf(name: string): { tenant: string; dataset: string; table: string } {
  const parts = name.split('.');
  if (parts.length !== 3 || parts.some((p) => p === '')) throw new UsageError(`expected <tenant>.<dataset>.<table>, got ${JSON.stringify(name)}`);
  return { tenant: parts[0]!, dataset: parts[1]!, table: parts[2]! };
}

export function registerOpsCommands(program: Command): void {
  const ops = program.command('ops').description('operations: compaction control, checking and repairing tables (instance admin)');

  withScope(ops.command('compact').description('start an on-demand compaction pass (runs after the pass in progress)')).action(
    action('ops compact', async (o: ScopeFlags) => print(await callApi(connectionOf(o), 'POST', 'api/v1/ops/compact', { body: scopeOf(o) }))),
  );
  withScope(ops.command('compact-plan').description('what a pass would merge now, per table and hour (a dry run)')).action(
    action('ops compact-plan', async (o: ScopeFlags) => print(await callApi(connectionOf(o), 'POST', 'api/v1/ops/compact/dry-run', { body: scopeOf(o) }))),
  );
  withConnection(ops.command('compact-status').description('the compactor: the pass in progress, the last one, the latest on-demand passes'), 'the admin key (env FLOE_API_KEY)').action(
    action('ops compact-status', async (o: ConnectionFlags) => print(await callApi(connectionOf(o), 'GET', 'api/v1/ops/compact/status'))),
  );
  withScope(ops.command('check-tables').description("whether each table's current metadata, manifests and data files are all in the store and readable (read-only; exit 1 when one is damaged)"))
    .option('--json', 'print the JSON answer')
    .action(
      action('ops check-tables', async (o: ScopeFlags & { json?: boolean }) => {
        const answer = await callApi<CheckAnswer>(connectionOf(o), 'POST', 'api/v1/ops/tables/check', { body: scopeOf(o), expect: CHECK });
        if (o.json) print(answer);
        else printCheck(answer);
        if (answer.damaged > 0) process.exitCode = 1;
      }),
    );
  withConnection(
    ops
      .command('rollback-table')
      .description("give a table the content of another of its metadata versions as a new version: the newest sound earlier one, or --to (a newer one rolls forward a table whose catalog is behind its files); the rows of the versions given up leave the table")
      .argument('<table>', '<tenant>.<dataset>.<table>, e.g. acme.default.logs'),
    'the admin key (env FLOE_API_KEY)',
  )
    .option('--to <metadata file>', "the version to take: a *.metadata.json under the table's metadata/ (URI or object key)")
    .option('--dry-run', 'say what would be chosen and given up, and change nothing')
    .option('--json', 'print the JSON answer')
    .action(
      action('ops rollback-table', async (name: string, o: ConnectionFlags & { to?: string; dryRun?: boolean; json?: boolean }) => {
        const body = { ...tableOf(name), ...(o.to !== undefined ? { metadata_location: o.to } : {}), ...(o.dryRun ? { dry_run: true } : {}) };
        const answer = await callApi<RollbackAnswer>(connectionOf(o), 'POST', 'api/v1/ops/tables/rollback', { body, expect: ROLLBACK });
        if (o.json) print(answer);
        else printRollback(answer);
      }),
    );
}
