import { readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logsLedger, runFloeCli, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Checking and repairing tables (POST /api/v1/ops/tables/check|rollback|drop-damaged-files,
 * `floe ops check-tables`, `floe ops rollback-table` and `floe ops drop-damaged-files`, instance
 * admin): a table whose current metadata file is damaged in place cannot be committed, so the
 * writer holds its tenant's new rows; the check names it, the rollback points it back at the
 * version before, and the held rows are then committed. A table that lost a data file gives up
 * only that file's rows to the drop, and is queried again.
 */
describe('checking and rolling back a damaged table (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'repaired';
  const where = `table_namespace = '${tenant}.default' AND table_name = 'logs'`;

  beforeAll(async () => {
    // The periodic compaction pass runs at start only (before the tenant exists); the test asks for the one it needs.
    floe = await startFloe({ mode: 'embedded', config: { writer: { flush_interval: '100ms', poll_interval: '50ms' }, compactor: { interval: '1h', open_hour_interval: '0s' } } });
    key = (await floe.bootstrap(tenant)).api_key;
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const tenantHeaders = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
  const admin = () => ({ FLOE_URL: floe.routerUrl, FLOE_API_KEY: floe.adminApiKey });
  const ops = (path: string, body: unknown, authorization = `Bearer ${floe.adminApiKey}`) =>
    fetch(`${floe.routerUrl}/api/v1/ops/${path}`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const logs = logsLedger(() => floe.flightAddress, tenantHeaders);
  const postLogs = (n: number, tag: string) => logs.post(floe.otlpHttpUrl, tenant, n, tag);
  /** Rows and distinct bodies of the tenant's logs, over SQL: equal when nothing was stored twice. */
  const stored = () => logs.stored(tenant);
  const waitStored = (rows: number) => logs.waitStored(tenant, rows);
  const pointer = async () => (await floe.metaQuery<{ metadata_location: string }>(`SELECT metadata_location FROM iceberg_tables WHERE ${where}`))[0]!.metadata_location;
  const heldTables = async () => ((await (await fetch(`${floe.writerAdminUrl}/status`)).json()) as { held_for_tables: Array<{ tenant: string; table: string }> }).held_for_tables;

  type Check = { tables_checked: number; ok: number; damaged: number; tables: Array<{ table: string; status: string; metadata_location: string; problems: Array<{ kind: string; message: string }> }> };

  it('refuses callers that are not instance admins (403 on every route)', async () => {
    for (const [path, body] of [
      ['tables/check', { tenant }],
      ['tables/check', { tenant, limit: 10 }],
      ['tables/rollback', { tenant, dataset: 'default', table: 'logs', dry_run: true }],
      ['tables/drop-damaged-files', { tenant, dataset: 'default', table: 'logs', dry_run: true }],
    ] as const) {
      const res = await ops(path, body, `Bearer ${key}`);
      expect([res.status, await res.json()]).toEqual([403, expect.objectContaining({ status: 'error', errorType: 'forbidden' })]);
    }
    for (const args of [
      ['ops', 'check-tables', '--tenant', tenant],
      ['ops', 'drop-damaged-files', `${tenant}.default.logs`, '--dry-run'],
    ]) {
      const cli = await runFloeCli(args, { ...admin(), FLOE_API_KEY: key });
      expect([cli.code, cli.stdout]).toEqual([1, '']);
      expect(cli.stderr).toContain('HTTP 403');
    }
    // Bad input is the router's 400 before the compactor is asked; an unknown table is 404.
    expect((await ops('tables/rollback', { tenant, table: 'logs' })).status).toBe(400);
    const unknown = await ops('tables/rollback', { tenant: 'nobody', dataset: 'default', table: 'logs' });
    expect([unknown.status, await unknown.json()]).toEqual([404, { status: 'error', errorType: 'not_found', error: 'no table nobody.default.logs' }]);
    const unknownDrop = await ops('tables/drop-damaged-files', { tenant: 'nobody', dataset: 'default', table: 'logs' });
    expect([unknownDrop.status, await unknownDrop.json()]).toEqual([404, { status: 'error', errorType: 'not_found', error: 'no table nobody.default.logs' }]);
    for (const page of [{ limit: 0 }, { limit: 1001 }, { limit: 1, after: 'not-a-table' }]) expect((await ops('tables/check', page)).status).toBe(400);
    const cliPage = await runFloeCli(['ops', 'check-tables', '--page-size', '0'], admin());
    expect([cliPage.code, cliPage.stderr]).toEqual([2, 'floe ops check-tables: --page-size must be an integer from 1 to 1000, not "0"\n']);
  });

  it('reports the damaged table, rolls it back to the version before, and the held rows are then committed', async () => {
    expect((await postLogs(20, 'before')).status).toBe(200);
    expect(await waitStored(20)).toEqual({ rows: 20, distinct: 20 });

    // An on-demand pass commits the table's target file size: a version the writer has not read
    // (a process keeps its parse of a version it read or wrote, so damage under it goes unseen
    // until it restarts).
    const previous = await pointer();
    const started = await ops('compact', { tenant, table: 'logs' });
    expect(started.status).toBe(202);
    const { id } = (await started.json()) as { id: string };
    await waitFor('the on-demand pass', async () => {
      const status = (await (await fetch(`${floe.routerUrl}/api/v1/ops/compact/status`, { headers: { authorization: `Bearer ${floe.adminApiKey}` } })).json()) as { requests: Array<{ id: string; finishedAt: string | null }> };
      return status.requests.find((r) => r.id === id && r.finishedAt !== null);
    }, 60_000, 200);
    const current = await pointer();
    expect(current).not.toBe(previous);
    const sound = await runFloeCli(['ops', 'check-tables', '--tenant', tenant, '--table', 'logs', '--json'], admin());
    expect([sound.code, sound.stderr]).toEqual([0, '']);
    expect(JSON.parse(sound.stdout)).toEqual({ tables_checked: 1, ok: 1, damaged: 0, tables: [{ table: `${tenant}.default.logs`, status: 'ok', metadata_location: current, problems: [] }] });

    // The current metadata file damaged in place; new rows are acknowledged, and held.
    writeFileSync(fileURLToPath(current), '{"format-version": 2, "table-uuid": ');
    expect((await postLogs(30, 'held')).status).toBe(200);
    await waitFor('the writer holding the table', async () => ((await heldTables()).some((t) => t.tenant === tenant && t.table === 'logs') ? true : undefined), 60_000, 200);

    const damaged = await runFloeCli(['ops', 'check-tables', '--tenant', tenant, '--json'], admin());
    expect([damaged.code, damaged.stderr]).toEqual([1, '']);
    const report = JSON.parse(damaged.stdout) as Check;
    expect(report).toMatchObject({ damaged: 1, ok: report.tables_checked - 1 });
    expect(report.tables.filter((t) => t.status === 'damaged')).toEqual([
      {
        table: `${tenant}.default.logs`,
        status: 'damaged',
        metadata_location: current,
        problems: [{ kind: 'metadata_unparseable', message: expect.stringMatching(/^metadata file .*\/logs\/metadata\/[^/]+\.metadata\.json does not parse: table metadata is not valid JSON/), keys: [expect.any(String)] }],
      },
    ]);
    // Queries of the table say what is wrong and that it is a server-side state to retry after
    // (503 / UNAVAILABLE), not an internal error.
    const logQuery = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/query_range?${new URLSearchParams({ query: '{service_name="svc"}', limit: '10' })}`, { headers: tenantHeaders() });
    expect([logQuery.status, await logQuery.json()]).toEqual([
      503,
      { status: 'error', errorType: 'unavailable', error: expect.stringMatching(/^table logs of dataset default cannot be read: table metadata is not valid JSON.*it needs an operator's repair \(floe ops check-tables\)$/) },
    ]);
    const sqlRefusal = await stored().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(sqlRefusal).toMatchObject({ code: 14, details: expect.stringMatching(/^table logs of dataset default cannot be read/) });

    // The same for people: a table of the tables, and the problem under it.
    const readable = await runFloeCli(['ops', 'check-tables', '--tenant', tenant], admin());
    expect(readable.code).toBe(1);
    expect(readable.stdout).toMatch(new RegExp(`^${report.tables_checked} tables? checked: ${report.tables_checked - 1} ok, 1 damaged\n`));
    expect(readable.stdout).toMatch(new RegExp(`${tenant}\\.default\\.logs +\\| damaged`));
    expect(readable.stdout).toContain('metadata_unparseable: metadata file');

    const dry = await runFloeCli(['ops', 'rollback-table', `${tenant}.default.logs`, '--dry-run', '--json'], admin());
    expect([dry.code, dry.stderr]).toEqual([0, '']);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dry_run: true, rolled_back: false, metadata_location: previous });
    const told = await runFloeCli(['ops', 'rollback-table', `${tenant}.default.logs`, '--dry-run'], admin());
    expect(told.code).toBe(0);
    expect(told.stdout).toContain(`${tenant}.default.logs: would roll back to ${previous}`);
    expect(told.stdout).toContain(`given up (0 rows):\n  ${current.slice(current.lastIndexOf('/') + 1)}: metadata file`);
    expect(told.stdout).toContain('Dry run: nothing changed.');
    expect(await pointer()).toBe(current);

    const rolled = await runFloeCli(['ops', 'rollback-table', `${tenant}.default.logs`, '--json'], admin());
    expect([rolled.code, rolled.stderr]).toEqual([0, '']);
    const answer = JSON.parse(rolled.stdout) as { new_metadata_location: string };
    expect(answer).toEqual({
      table: `${tenant}.default.logs`,
      dry_run: false,
      rolled_back: true,
      previous_metadata_location: current,
      metadata_location: previous,
      // The previous version's content as a new version, numbered above the damaged one.
      new_metadata_location: expect.stringMatching(/\/logs\/metadata\/00003-[^/]+\.metadata\.json$/),
      chosen: { version: expect.any(Number), snapshot_id: expect.any(String), problems: [] },
      given_up: [{ metadata_location: current, version: expect.any(Number), parses: false, problems: [expect.objectContaining({ kind: 'metadata_unparseable' })], snapshots: [] }],
      records_given_up: 0,
      note: expect.stringContaining('orphan sweep'),
    });
    expect(await pointer()).toBe(answer.new_metadata_location);

    // The writer commits what it held, once; the table checks sound again.
    expect(await waitStored(50)).toEqual({ rows: 50, distinct: 50 });
    await waitFor('the writer holding nothing', async () => ((await heldTables()).length === 0 ? true : undefined), 60_000, 200);
    const healed = await runFloeCli(['ops', 'check-tables', '--tenant', tenant, '--table', 'logs'], admin());
    expect([healed.code, healed.stderr]).toEqual([0, '']);
    expect(healed.stdout).toMatch(/^1 table checked: 1 ok, 0 damaged\n/);
  }, 300_000);

  it('drops a lost data file: the check names it, the drop gives up only its rows, and the table is queried again', async () => {
    const lost = 'lostfile';
    const lostKey = (await floe.bootstrap(lost)).api_key;
    const lostLogs = logsLedger(() => floe.flightAddress, () => ({ authorization: `Bearer ${lostKey}`, 'x-tenant-id': lost }));
    const lostPointer = async () => (await floe.metaQuery<{ metadata_location: string }>(`SELECT metadata_location FROM iceberg_tables WHERE table_namespace = '${lost}.default' AND table_name = 'logs'`))[0]!.metadata_location;
    const dataDir = async () => join(dirname(dirname(fileURLToPath(await lostPointer()))), 'data');
    const parquet = async () => (readdirSync(await dataDir(), { recursive: true, encoding: 'utf8' }) as string[]).filter((f) => f.endsWith('.parquet')).sort();
    // Two commits, one file each: the first is lost, the second's rows stay.
    expect((await lostLogs.post(floe.otlpHttpUrl, lost, 10, 'gone')).status).toBe(200);
    expect(await lostLogs.waitStored(lost, 10)).toEqual({ rows: 10, distinct: 10 });
    const first = await parquet();
    expect(first).toHaveLength(1);
    expect((await lostLogs.post(floe.otlpHttpUrl, lost, 15, 'kept')).status).toBe(200);
    expect(await lostLogs.waitStored(lost, 25)).toEqual({ rows: 25, distinct: 25 });
    expect(await parquet()).toHaveLength(2);
    unlinkSync(join(await dataDir(), first[0]!));
    const lostObject = expect.stringMatching(new RegExp(`^warehouse/${lost}/default/logs/data/${first[0]!.replaceAll('.', '\\.')}$`));

    const table = `${lost}.default.logs`;
    const damaged = await runFloeCli(['ops', 'check-tables', '--tenant', lost, '--json'], admin());
    expect([damaged.code, damaged.stderr]).toEqual([1, '']);
    expect((JSON.parse(damaged.stdout) as Check).tables).toEqual([
      { table, status: 'damaged', metadata_location: await lostPointer(), problems: [{ kind: 'data_files_missing', message: expect.stringContaining('1 data files of the current snapshot are missing'), count: 1, keys: [lostObject] }] },
    ]);
    const query = () => fetch(`${floe.routerUrl}/logquery/loki/api/v1/query_range?${new URLSearchParams({ query: '{service_name="svc"}', limit: '100' })}`, { headers: { authorization: `Bearer ${lostKey}`, 'x-tenant-id': lost } });
    expect((await query()).status).toBe(503);

    const before = await lostPointer();
    const told = await runFloeCli(['ops', 'drop-damaged-files', table, '--dry-run'], admin());
    expect([told.code, told.stderr]).toEqual([0, '']);
    expect(told.stdout).toMatch(new RegExp(`^${table.replaceAll('.', '\\.')}: would drop 1 data file \\(10 rows\\)\n  warehouse/\\S+: missing, 10 rows\nDry run: nothing changed\\.`));
    expect(await lostPointer()).toBe(before);

    const dropped = await runFloeCli(['ops', 'drop-damaged-files', table, '--json'], admin());
    expect([dropped.code, dropped.stderr]).toEqual([0, '']);
    const answer = JSON.parse(dropped.stdout) as { new_metadata_location: string };
    expect(answer).toEqual({
      table,
      dry_run: false,
      dropped: true,
      previous_metadata_location: before,
      new_metadata_location: expect.stringMatching(/\/logs\/metadata\/[^/]+\.metadata\.json$/),
      snapshot_id: expect.stringMatching(/^\d+$/),
      files: [{ key: lostObject, reason: 'missing', record_count: 10, file_size_in_bytes: expect.any(Number), size_in_store: null }],
      records_given_up: 10,
      note: expect.stringContaining('no longer reads the 1 files (10 rows)'),
    });
    expect(await lostPointer()).toBe(answer.new_metadata_location);

    // The query answers with the other commit's rows, and the table checks sound.
    const res = await query();
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { result: Array<{ values: Array<[string, string]> }> } };
    const lines = body.data.result.flatMap((r) => r.values.map((v) => v[1]));
    expect([lines.length, lines.every((l) => l.startsWith('kept '))]).toEqual([15, true]);
    expect(await lostLogs.stored(lost)).toEqual({ rows: 15, distinct: 15 });
    const healed = await runFloeCli(['ops', 'check-tables', '--tenant', lost], admin());
    expect([healed.code, healed.stderr]).toEqual([0, '']);
    expect(healed.stdout).toMatch(/^1 table checked: 1 ok, 0 damaged\n/);
    const again = await runFloeCli(['ops', 'drop-damaged-files', table], admin());
    expect([again.code, again.stdout]).toEqual([0, `No live data file of ${table} is missing or of the wrong size: nothing to do\n`]);
  }, 300_000);

  it('checks a page of tables at a time: the CLI walks every page and reports what one call does', async () => {
    // More tables than a page: every table of the tenant above.
    expect((await fetch(`${floe.routerUrl}/api/v1/tenants/${tenant}/tables/create`, { method: 'POST', headers: { authorization: `Bearer ${floe.adminApiKey}` } })).status).toBe(201);
    const whole = (await (await ops('tables/check', {})).json()) as Check;
    expect(whole).toMatchObject({ tables_checked: expect.any(Number), damaged: 0 });
    expect(whole.tables_checked).toBeGreaterThanOrEqual(4);
    expect(Object.keys(whole).sort()).toEqual(['damaged', 'ok', 'tables', 'tables_checked']);

    const first = (await (await ops('tables/check', { limit: 1 })).json()) as Check & { tables_in_scope: number; next: string | null };
    expect(first).toEqual({ ...whole, tables_checked: 1, ok: 1, damaged: 0, tables: [whole.tables[0]], tables_in_scope: whole.tables_checked, next: whole.tables[0]!.table });
    const second = (await (await ops('tables/check', { limit: 100, after: first.next })).json()) as Check & { next: string | null };
    expect([second.tables, second.next]).toEqual([whole.tables.slice(1), null]);

    const paged = await runFloeCli(['ops', 'check-tables', '--page-size', '1', '--json'], admin());
    expect([paged.code, paged.stderr]).toEqual([0, '']);
    expect(JSON.parse(paged.stdout)).toEqual(whole);
    const readable = await runFloeCli(['ops', 'check-tables', '--page-size', '2'], admin());
    expect(readable.code).toBe(0);
    expect(readable.stdout).toMatch(new RegExp(`^${whole.tables_checked} tables checked: ${whole.tables_checked} ok, 0 damaged\n`));
  }, 120_000);
});
