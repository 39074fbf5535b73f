import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logsLedger, runFloeCli, startFloe, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Tables the catalog lost (POST /api/v1/ops/tables/unregistered|register, `floe ops
 * find-unregistered` and `floe ops register-table`, instance admin): the metadata DB restored
 * from a backup taken before a tenant existed has neither the tenant nor its tables' catalog rows,
 * while the bucket holds their files. The operator finds the tables, creates the tenant again
 * (which provisions its tables empty), registers them, and the old rows are queried again; new
 * rows land once beside them. In a cluster the writer is down during the restore, as the
 * procedure asks (docs/operations.md), and started after the registration.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('finding and registering the tables a restored metadata DB lost (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'restored';
  const table = `${tenant}.default.logs`;

  beforeAll(async () => {
    floe = await startFloe({ mode, storage: 'fs', config: { writer: { flush_interval: '100ms', poll_interval: '50ms' }, compactor: { interval: '1h', open_hour_interval: '0s' } } });
    key = (await floe.bootstrap(tenant)).api_key;
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const admin = () => ({ FLOE_URL: floe.routerUrl, FLOE_API_KEY: floe.adminApiKey });
  const ops = (path: string, body: unknown, authorization = `Bearer ${floe.adminApiKey}`) =>
    fetch(`${floe.routerUrl}/api/v1/ops/${path}`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const logs = logsLedger(() => floe.flightAddress, () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant }));
  const pointer = async () => (await floe.metaQuery<{ metadata_location: string }>(`SELECT metadata_location FROM iceberg_tables WHERE table_namespace = $1 AND table_name = 'logs'`, [`${tenant}.default`]))[0]?.metadata_location;
  const lines = async () => {
    const res = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/query_range?${new URLSearchParams({ query: '{service_name="svc"}', limit: '1000' })}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { result: Array<{ values: Array<[string, string]> }> } };
    return body.data.result.flatMap((r) => r.values.map((v) => v[1].split(' ')[0]!));
  };

  type Found = { table_directories: number; unregistered: number; tables: Array<{ table: string; catalog_row: string; metadata_location: string | null; total_records: number | null; tenant_exists: boolean; dataset_exists: boolean }> };

  it('refuses callers that are not instance admins (403 on both routes)', async () => {
    for (const [path, body] of [
      ['tables/unregistered', {}],
      ['tables/unregistered', { tenant, limit: 10 }],
      ['tables/register', { tenant, dataset: 'default', table: 'logs', dry_run: true }],
    ] as const) {
      const res = await ops(path, body, `Bearer ${key}`);
      expect([res.status, await res.json()]).toEqual([403, expect.objectContaining({ status: 'error', errorType: 'forbidden' })]);
    }
    for (const args of [
      ['ops', 'find-unregistered'],
      ['ops', 'register-table', table, '--dry-run'],
    ]) {
      const cli = await runFloeCli(args, { ...admin(), FLOE_API_KEY: key });
      expect([cli.code, cli.stdout]).toEqual([1, '']);
      expect(cli.stderr).toContain('HTTP 403');
    }
    // Bad input is the router's 400 before the compactor is asked.
    for (const body of [{ dataset: 'default' }, { limit: 0 }, { limit: 1, after: 'not-a-table' }]) expect((await ops('tables/unregistered', body)).status).toBe(400);
    expect((await ops('tables/register', { tenant, table: 'logs' })).status).toBe(400);
  });

  it('finds the tables after the restore, registers them once the tenant is created again, and the old rows are queried beside new ones', async () => {
    expect((await logs.post(floe.otlpHttpUrl, tenant, 20, 'before')).status).toBe(200);
    expect(await logs.waitStored(tenant, 20)).toEqual({ rows: 20, distinct: 20 });
    const committed = (await pointer())!;
    const before = (await (await ops('tables/check', { tenant, table: 'logs' })).json()) as { tables: Array<{ status: string }> };
    expect(before.tables).toEqual([expect.objectContaining({ status: 'ok' })]);

    if (mode === 'cluster') await floe.kill('writer');
    // The restore: a backup from before the tenant existed. Its rows, keys and catalog rows are
    // gone; the bucket keeps its tables' files.
    await floe.metaQuery(`DELETE FROM iceberg_tables WHERE table_namespace LIKE $1`, [`${tenant}.%`]);
    await floe.metaQuery(`DELETE FROM iceberg_namespace_properties WHERE namespace LIKE $1`, [`${tenant}.%`]);
    await floe.metaQuery(`DELETE FROM tenants WHERE id = $1`, [tenant]);
    expect(await pointer()).toBeUndefined();

    const found = await runFloeCli(['ops', 'find-unregistered', '--json', '--page-size', '2'], admin());
    expect([found.code, found.stderr]).toEqual([0, '']);
    const lost = JSON.parse(found.stdout) as Found;
    expect(lost.unregistered).toBeGreaterThanOrEqual(1);
    // Every table of the tenant (those never written too, empty); the logs table with its rows.
    expect(lost.tables.every((t) => t.table.startsWith(`${tenant}.default.`) && t.catalog_row === 'none' && !t.tenant_exists && !t.dataset_exists)).toBe(true);
    expect(lost.tables.find((t) => t.table === table)).toMatchObject({ metadata_location: committed, total_records: 20 });
    const readable = await runFloeCli(['ops', 'find-unregistered', '--tenant', tenant], admin());
    expect(readable.code).toBe(0);
    expect(readable.stdout).toMatch(new RegExp(`^${lost.table_directories} table director(y|ies) searched: ${lost.unregistered} without a catalog row\n`));
    expect(readable.stdout).toMatch(new RegExp(`${table.replaceAll('.', '\\.')} +\\| none +\\| [^|]+\\| 20 +\\|.*\\| tenant missing`));
    expect(readable.stdout).toContain('Create the missing tenants and datasets first');

    const refused = await runFloeCli(['ops', 'register-table', table], admin());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`tenant ${tenant} does not exist in the registry: create it first (floe tenant create ${tenant}), then register ${table}`);
    expect(await pointer()).toBeUndefined();

    // Created again, the tenant's tables are provisioned empty; registering replaces those rows.
    const created = await runFloeCli(['tenant', 'create', tenant], admin());
    expect([created.code, created.stderr]).toEqual([0, '']);
    const provisioned = (await pointer())!;
    expect(provisioned).toMatch(/\/logs\/metadata\/00000-/);
    const again = JSON.parse((await runFloeCli(['ops', 'find-unregistered', '--tenant', tenant, '--json'], admin())).stdout) as Found;
    expect(again.tables.find((t) => t.table === table)).toMatchObject({ catalog_row: 'empty', metadata_location: committed, tenant_exists: true, dataset_exists: true });

    const dry = await runFloeCli(['ops', 'register-table', table, '--dry-run'], admin());
    expect([dry.code, dry.stderr]).toEqual([0, '']);
    expect(dry.stdout).toContain(`${table}: would register ${committed} (version `);
    expect(dry.stdout).toContain(`replacing the empty row provisioned since: ${provisioned}`);
    expect(await pointer()).toBe(provisioned);

    const registered = await runFloeCli(['ops', 'register-table', table, '--json'], admin());
    expect([registered.code, registered.stderr]).toEqual([0, '']);
    const answer = JSON.parse(registered.stdout) as { new_metadata_location: string };
    expect(answer).toMatchObject({ table, registered: true, metadata_location: committed, replaced_empty_row: provisioned, chosen: { total_records: 20 }, passed_over: [] });
    expect(await pointer()).toBe(answer.new_metadata_location);
    // The other tables, as the procedure does: each registered.
    for (const t of again.tables.filter((x) => x.table !== table)) {
      const r = await runFloeCli(['ops', 'register-table', t.table], admin());
      expect([t.table, r.code, r.stderr]).toEqual([t.table, 0, '']);
    }
    expect((JSON.parse((await runFloeCli(['ops', 'find-unregistered', '--tenant', tenant, '--json'], admin())).stdout) as Found).unregistered).toBe(0);
    const checked = await runFloeCli(['ops', 'check-tables', '--tenant', tenant], admin());
    expect([checked.code, checked.stderr]).toEqual([0, '']);
    expect(checked.stdout).toMatch(/ checked: (\d+) ok, 0 damaged\n/);
    // A second registration is the rollback's job.
    const twice = await ops('tables/register', { tenant, dataset: 'default', table: 'logs' });
    expect([twice.status, await twice.json()]).toEqual([409, expect.objectContaining({ errorType: 'conflict', error: expect.stringContaining(`use floe ops rollback-table ${table} --to <metadata file>`) })]);

    if (mode === 'cluster') await floe.restart('writer');
    // The keys did not come back: a new one is issued. The old rows are queried again.
    key = (await floe.bootstrap(tenant)).api_key;
    expect((await lines()).filter((l) => l === 'before')).toHaveLength(20);
    // New rows land in the registered table, once (the writer's ledger came with its snapshots).
    expect((await logs.post(floe.otlpHttpUrl, tenant, 15, 'after')).status).toBe(200);
    expect(await logs.waitStored(tenant, 35)).toEqual({ rows: 35, distinct: 35 });
    const all = await lines();
    expect([all.filter((l) => l === 'before').length, all.filter((l) => l === 'after').length, all.length]).toEqual([20, 15, 35]);
  }, 300_000);
});
