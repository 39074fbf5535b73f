import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logsLedger, runFloeCli, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Checking and repairing tables (POST /api/v1/ops/tables/check|rollback, `floe ops check-tables`
 * and `floe ops rollback-table`, instance admin): a table whose current metadata file is damaged
 * in place cannot be committed, so the writer holds its tenant's new rows; the check names it,
 * the rollback points it back at the version before, and the held rows are then committed.
 */
describe('checking and rolling back a damaged table (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'repaired';
  const where = `table_namespace = '${tenant}.default' AND table_name = 'logs'`;

  beforeAll(async () => {
    // The periodic compaction pass runs at start only (before the tenant exists); the test asks for the one it needs.
    floe = await startFloe({ mode: 'embedded', config: { writer: { flush_interval: '100ms', poll_interval: '50ms' }, compactor: { interval: '1h' } } });
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

  it('refuses callers that are not instance admins (403 on both routes)', async () => {
    for (const [path, body] of [
      ['tables/check', { tenant }],
      ['tables/rollback', { tenant, dataset: 'default', table: 'logs', dry_run: true }],
    ] as const) {
      const res = await ops(path, body, `Bearer ${key}`);
      expect([res.status, await res.json()]).toEqual([403, expect.objectContaining({ status: 'error', errorType: 'forbidden' })]);
    }
    const cli = await runFloeCli(['ops', 'check-tables', '--tenant', tenant], { ...admin(), FLOE_API_KEY: key });
    expect([cli.code, cli.stdout]).toEqual([1, '']);
    expect(cli.stderr).toContain('HTTP 403');
    // Bad input is the router's 400 before the compactor is asked; an unknown table is 404.
    expect((await ops('tables/rollback', { tenant, table: 'logs' })).status).toBe(400);
    const unknown = await ops('tables/rollback', { tenant: 'nobody', dataset: 'default', table: 'logs' });
    expect([unknown.status, await unknown.json()]).toEqual([404, { status: 'error', errorType: 'not_found', error: 'no table nobody.default.logs' }]);
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
});
