import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import {
  ApiError,
  callApi,
  expectShape,
  OPS_CHECK_PAGE,
  OPS_DROP_DAMAGED,
  OPS_JOB,
  OPS_JOB_STARTED,
  OPS_REGISTER,
  OPS_ROLLBACK,
  OPS_UNREGISTERED_PAGE,
  seg,
  shapeProblem,
  type CheckAnswer,
  type CheckPageAnswer,
  type DropDamagedAnswer,
  type JobAnswer,
  type JobStartedAnswer,
  type RegisterAnswer,
  type RollbackAnswer,
  type UnregisteredAnswer,
  type UnregisteredPageAnswer,
  type Shape,
  type UnregisteredTable,
} from '@floe/client';
import { UsageError, action, connectionOf, withConnection, type ConnectionFlags } from '../command-helpers.ts';
import { formatTable } from '../sql-command.ts';

/**
 * `floe ops compact|compact-plan|compact-status`: compaction control from a terminal, through the
 * router's /api/v1/ops/compact routes (spec 2, admin-authenticated: the break-glass admin key).
 * Each prints the router's JSON answer. `floe ops check-tables|rollback-table|drop-damaged-files`:
 * which tables' current version cannot be read whole, moving one back to a sound version, and
 * removing a table's missing, truncated or (--check-pages) damaged data files (/api/v1/ops/tables/…); a readable report, or
 * the answer as it came with --json. check-tables asks a page of tables at a time, so each call
 * stays well under the router's timeout on a large catalog, and puts the pages together.
 * `floe ops find-unregistered|register-table`: after the metadata DB was restored from an older
 * backup, which tables have files in the warehouse and no catalog row, and giving one a row again
 * (/api/v1/ops/tables/unregistered|register); find-unregistered pages the same way.
 * With --check-pages, a call the compactor has not finished within its wait answers 202 with a
 * job, which the command polls (GET /api/v1/ops/jobs/{id}) until it is done, and then reads as the
 * call's answer.
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

/** The file name of a metadata location: the part that differs between versions. */
const fileOf = (location: string) => location.slice(location.lastIndexOf('/') + 1);
const out = (text: string) => process.stdout.write(`${text}\n`);

/** "pages of 12 files read (3.4 MB)": what a check_pages call read (data files, and delete files another engine wrote). */
const pagesRead = (p: { files: number; bytes: number }) => `pages of ${p.files} file${p.files === 1 ? '' : 's'} read (${(p.bytes / 1e6).toFixed(1)} MB)`;

function printCheck(answer: CheckAnswer): void {
  out(`${answer.tables_checked} table${answer.tables_checked === 1 ? '' : 's'} checked: ${answer.ok} ok, ${answer.damaged} damaged`);
  const read = answer.tables.flatMap((t) => (t.pages_checked ? [t.pages_checked] : []));
  if (read.length > 0) out(pagesRead({ files: read.reduce((a, p) => a + p.files, 0), bytes: read.reduce((a, p) => a + p.bytes, 0) }));
  if (answer.tables.length === 0) return;
  out(formatTable(['table', 'status', 'metadata'], answer.tables.map((t) => ({ table: t.table, status: t.status, metadata: fileOf(t.metadata_location) }))));
  for (const t of answer.tables.filter((x) => x.problems.length > 0)) {
    out(`\n${t.table} (${t.metadata_location}):`);
    for (const p of t.problems) out(`  ${p.kind}: ${p.message}`);
  }
}

/** The most tables a page may ask for (the router's limit). */
const MAX_PAGE_SIZE = 1000;

function pageSizeOf(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE) throw new UsageError(`--page-size must be an integer from 1 to ${MAX_PAGE_SIZE}, not ${JSON.stringify(value)}`);
  return n;
}

/** "checked 150 of 2,000 tables" on one line of a terminal's stderr, rewritten per page; nothing when stderr is not a terminal (a script reads stdout alone). */
function progressLine(verb = 'checked', noun = 'tables'): { show(done: number, total: number): void; end(): void } {
  const tty = process.stderr.isTTY === true;
  let shown = false;
  return {
    show(done, total) {
      if (!tty) return;
      shown = true;
      // Cleared first: the line before may be longer (a page's tables, then a job's files).
      process.stderr.write(`\r\x1b[2K${verb} ${done.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} ${noun}`);
    },
    end() {
      if (shown) process.stderr.write('\r\x1b[2K');
    },
  };
}

/** How often a page check's job is asked for while it runs. */
const JOB_POLL_MS = 2_000;
/** --wait-ms as a number; its upper bound is the router's to say (a 400 naming it). */
function waitMsOf(value: string): number {
  if (!/^\d{1,9}$/.test(value)) throw new UsageError(`--wait-ms must be a whole number of milliseconds, not ${JSON.stringify(value)}`);
  return Number(value);
}

/**
 * POST `path`, its answer read as `expect`. A check_pages call the compactor has not finished
 * within its wait answers 202 with its job: polled every JOB_POLL_MS, files read of files on
 * stderr, until it is no longer running; its result is then the answer, or the error it carries
 * thrown as the call itself would have (same message, status and exit code).
 */
async function postOrJob<T>(conn: ReturnType<typeof connectionOf>, path: string, body: Record<string, unknown>, expect: Shape): Promise<T> {
  const answer = await callApi(conn, 'POST', path, { body });
  const isJob = shapeProblem(answer, OPS_JOB_STARTED) === undefined && (answer as JobStartedAnswer).status === 'running';
  if (!isJob) return expectShape<T>(answer, expect, path);
  const jobPath = `api/v1/ops/jobs/${seg((answer as JobStartedAnswer).job.id)}`;
  const progress = progressLine('checked pages of', 'files');
  let job: JobAnswer;
  try {
    do {
      await sleep(JOB_POLL_MS);
      job = await callApi<JobAnswer>(conn, 'GET', jobPath, { expect: OPS_JOB });
      if (job.progress) progress.show(job.progress.files_checked, job.progress.files);
    } while (job.state === 'running');
  } finally {
    progress.end();
  }
  const result = expectShape<{ status: number; body: unknown }>(job.result, { status: 'number', body: 'any' }, jobPath);
  if (result.status >= 400) {
    const envelope = (result.body ?? {}) as { errorType?: unknown; error?: unknown };
    const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
    throw new ApiError(result.status, text(envelope.errorType) ?? 'internal', text(envelope.error) ?? `the job answered ${result.status}`);
  }
  return expectShape<T>(result.body, expect, jobPath);
}

/** Every table of the scope, a page per call, put together as one answer of the unpaged shape. */
async function checkPages(conn: ReturnType<typeof connectionOf>, scope: Record<string, string | boolean | number>, pageSize: number): Promise<CheckAnswer> {
  const tables: CheckAnswer['tables'] = [];
  const progress = progressLine();
  let after: string | undefined;
  try {
    for (;;) {
      const page = await postOrJob<CheckPageAnswer>(conn, 'api/v1/ops/tables/check', { ...scope, limit: pageSize, ...(after === undefined ? {} : { after }) }, OPS_CHECK_PAGE);
      tables.push(...page.tables);
      // A router without pages answers every table at once, and no next.
      if (page.next === undefined || page.next === null) break;
      if (page.next === after) throw new Error(`the router answered the page after ${after} again`);
      progress.show(tables.length, page.tables_in_scope ?? tables.length);
      after = page.next;
    }
  } finally {
    progress.end();
  }
  const damaged = tables.filter((t) => t.status === 'damaged').length;
  return { tables_checked: tables.length, ok: tables.length - damaged, damaged, tables };
}

/** Every table directory of the scope, a page per call, put together as one answer of the unpaged shape. */
async function unregisteredPages(conn: ReturnType<typeof connectionOf>, scope: Record<string, string>, pageSize: number): Promise<UnregisteredAnswer> {
  const tables: UnregisteredTable[] = [];
  let visited = 0;
  const progress = progressLine('searched', 'table directories');
  let after: string | undefined;
  try {
    for (;;) {
      const page = await callApi<UnregisteredPageAnswer>(conn, 'POST', 'api/v1/ops/tables/unregistered', { body: { ...scope, limit: pageSize, ...(after === undefined ? {} : { after }) }, expect: OPS_UNREGISTERED_PAGE });
      tables.push(...page.tables);
      visited += page.table_directories;
      if (page.next === undefined || page.next === null) break;
      if (page.next === after) throw new Error(`the router answered the page after ${after} again`);
      progress.show(visited, page.tables_in_scope ?? visited);
      after = page.next;
    }
  } finally {
    progress.end();
  }
  return { table_directories: visited, unregistered: tables.length, tables };
}

function printUnregistered(a: UnregisteredAnswer): void {
  out(`${a.table_directories} table director${a.table_directories === 1 ? 'y' : 'ies'} searched: ${a.unregistered} without a catalog row`);
  if (a.tables.length === 0) return;
  const registry = (t: UnregisteredTable) => (!t.tenant_exists ? 'tenant missing' : !t.dataset_exists ? 'dataset missing' : 'ok');
  out(
    formatTable(
      ['table', 'row', 'metadata', 'rows', 'committed', 'registry'],
      a.tables.map((t) => ({ table: t.table, row: t.catalog_row, metadata: typeof t.metadata_location === 'string' ? fileOf(t.metadata_location) : 'none parses', rows: typeof t.total_records === 'number' ? String(t.total_records) : '', committed: t.committed_at ?? '', registry: registry(t) })),
    ),
  );
  for (const t of a.tables.filter((x) => typeof x.problem === 'string')) out(`\n${t.table}: ${t.problem}`);
  const missing = a.tables.filter((t) => !t.tenant_exists || !t.dataset_exists);
  if (missing.length > 0) out(`\nCreate the missing tenants and datasets first (floe tenant create <id>, floe dataset create <id> --tenant <id>), then floe ops register-table each table.`);
}

function printRegister(a: RegisterAnswer): void {
  const rows = typeof a.chosen.total_records === 'number' ? `, ${a.chosen.total_records} rows` : '';
  const snapshot = typeof a.chosen.snapshot_id === 'string' ? `snapshot ${a.chosen.snapshot_id}${rows}` : 'no snapshot';
  out(`${a.table}: ${a.registered ? 'registered' : 'would register'} ${a.metadata_location} (version ${a.chosen.version}, ${snapshot})${a.new_metadata_location ? `; now at ${a.new_metadata_location}` : ''}`);
  if (typeof a.replaced_empty_row === 'string') out(`  replacing the empty row provisioned since: ${a.replaced_empty_row}`);
  for (const p of a.chosen.problems) out(`  the chosen version has a problem: ${p.kind}: ${p.message}`);
  for (const v of a.passed_over) out(`  passed over ${fileOf(v.metadata_location)}: ${v.problems.map((p) => p.message).join('; ')}`);
  out(a.note);
}

function printDropDamaged(a: DropDamagedAnswer): void {
  if (a.files.length > 0) {
    const n = `${a.files.length} data file${a.files.length === 1 ? '' : 's'} (${a.records_given_up} rows)`;
    out(`${a.table}: ${a.dropped ? `dropped ${n}; now at ${a.new_metadata_location}` : `would drop ${n}`}`);
    for (const f of a.files) {
      const why = f.reason === 'missing' ? 'missing' : f.reason === 'damaged_pages' ? (f.damage?.message ?? 'damaged pages') : `${f.size_in_store} bytes in the store, ${f.file_size_in_bytes} in its manifest`;
      out(`  ${f.key}: ${why}, ${f.record_count} rows`);
    }
  }
  if (a.pages_checked) out(pagesRead(a.pages_checked));
  out(a.note);
}

function printRollback(a: RollbackAnswer): void {
  const snapshot = typeof a.chosen.snapshot_id === 'string' ? `snapshot ${a.chosen.snapshot_id}` : 'no snapshot';
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

const WAIT_MS_HELP = "with --check-pages: how long each call waits for the compactor's page check before it answers with a job, which is then polled every 2 s (the router's default: 20000)";

/** check_pages and wait_ms of a call, from --check-pages and --wait-ms. */
function pagesOf(o: { checkPages?: boolean; waitMs?: string }): { check_pages?: true; wait_ms?: number } {
  if (o.waitMs !== undefined && !o.checkPages) throw new UsageError('--wait-ms needs --check-pages');
  return o.checkPages ? { check_pages: true, ...(o.waitMs === undefined ? {} : { wait_ms: waitMsOf(o.waitMs) }) } : {};
}

/** `<tenant>.<dataset>.<table>` of rollback-table, drop-damaged-files and register-table (tenant and dataset ids hold no dot). */
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
  withScope(
    ops
      .command('check-tables')
      .description("whether each table's current metadata, manifests and data files are all in the store, readable and of the sizes recorded (read-only; exit 1 when one is damaged); progress on stderr when it is a terminal"),
  )
    .option('--page-size <n>', 'tables per call to the router (a call also ends after 15 s)', '100')
    .option('--check-pages', "also read every data (and delete) file whole and walk its pages (crcs, headers): finds a bit flipped inside a page, which keeps the file's size (data_files_damaged_pages, delete_files_damaged_pages); reads the whole table")
    .option('--wait-ms <ms>', WAIT_MS_HELP)
    .option('--json', 'print the JSON answer (all pages as one)')
    .action(
      action('ops check-tables', async (o: ScopeFlags & { json?: boolean; pageSize: string; checkPages?: boolean; waitMs?: string }) => {
        const answer = await checkPages(connectionOf(o), { ...scopeOf(o), ...pagesOf(o) }, pageSizeOf(o.pageSize));
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
        const answer = await callApi<RollbackAnswer>(connectionOf(o), 'POST', 'api/v1/ops/tables/rollback', { body, expect: OPS_ROLLBACK });
        if (o.json) print(answer);
        else printRollback(answer);
      }),
    );
  withConnection(
    ops
      .command('find-unregistered')
      .description('after the metadata DB was restored from an older backup: the tables whose files are in the warehouse but that have no catalog row (or an empty one provisioned since), each with its newest metadata file that parses, its rows and commit time, and whether its tenant and dataset exist (read-only)'),
    'the admin key (env FLOE_API_KEY)',
  )
    .option('--tenant <id>', 'only this tenant’s directories')
    .option('--page-size <n>', 'table directories per call to the router (a call also ends after 15 s)', '100')
    .option('--json', 'print the JSON answer (all pages as one)')
    .action(
      action('ops find-unregistered', async (o: ConnectionFlags & { tenant?: string; json?: boolean; pageSize: string }) => {
        const answer = await unregisteredPages(connectionOf(o), o.tenant === undefined ? {} : { tenant: o.tenant }, pageSizeOf(o.pageSize));
        if (o.json) print(answer);
        else printUnregistered(answer);
      }),
    );
  withConnection(
    ops
      .command('register-table')
      .description("give a table that find-unregistered lists a catalog row again: the content of its newest sound metadata file, or --to, as a new version; its tenant and dataset must exist (create them first)")
      .argument('<table>', '<tenant>.<dataset>.<table>, e.g. acme.default.logs'),
    'the admin key (env FLOE_API_KEY)',
  )
    .option('--to <metadata file>', "the version to take: a *.metadata.json under the table's metadata/ (URI or object key)")
    .option('--dry-run', 'say what would be registered, and change nothing')
    .option('--json', 'print the JSON answer')
    .action(
      action('ops register-table', async (name: string, o: ConnectionFlags & { to?: string; dryRun?: boolean; json?: boolean }) => {
        const body = { ...tableOf(name), ...(o.to !== undefined ? { metadata_location: o.to } : {}), ...(o.dryRun ? { dry_run: true } : {}) };
        const answer = await callApi<RegisterAnswer>(connectionOf(o), 'POST', 'api/v1/ops/tables/register', { body, expect: OPS_REGISTER });
        if (o.json) print(answer);
        else printRegister(answer);
      }),
    );
  withConnection(
    ops
      .command('drop-damaged-files')
      .description("remove the table's data files that are missing from the store or truncated (check-tables: data_files_missing, data_files_wrong_size), and with --check-pages those whose pages are damaged (data_files_damaged_pages), in one snapshot, giving up only their rows; a table whose metadata or manifests are damaged, or with a damaged delete file (delete_files_*), needs rollback-table")
      .argument('<table>', '<tenant>.<dataset>.<table>, e.g. acme.default.logs'),
    'the admin key (env FLOE_API_KEY)',
  )
    .option('--dry-run', 'say which files and rows would be given up, and change nothing')
    .option('--check-pages', "also read every data file whole and walk its pages: a file with a damaged page (a flipped bit keeps its size; the compactor's log names it) is dropped too")
    .option('--wait-ms <ms>', WAIT_MS_HELP)
    .option('--json', 'print the JSON answer')
    .action(
      action('ops drop-damaged-files', async (name: string, o: ConnectionFlags & { dryRun?: boolean; checkPages?: boolean; waitMs?: string; json?: boolean }) => {
        const body = { ...tableOf(name), ...(o.dryRun ? { dry_run: true } : {}), ...pagesOf(o) };
        const answer = await postOrJob<DropDamagedAnswer>(connectionOf(o), 'api/v1/ops/tables/drop-damaged-files', body, OPS_DROP_DAMAGED);
        if (o.json) print(answer);
        else printDropDamaged(answer);
      }),
    );
}
