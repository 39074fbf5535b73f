import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logsLedger, runFloeCli, startFloe, type FloeUnderTest } from '../src/index.ts';

/**
 * Page checks (check_pages) through the router and the CLI: they read every data file of a table
 * whole, so the compactor runs them as jobs. A call the job does not finish within its wait_ms
 * answers 202 with a Location, GET /api/v1/ops/jobs/{id} answers the job until it is done and
 * then the call's answer; the CLI polls that for the operator and prints what it always printed.
 * The table has a data file with a bit flipped inside a page (its size kept), which only a page
 * check finds.
 */
describe('page checks as jobs, through the router and the CLI (embedded)', () => {
  let floe: FloeUnderTest;
  const tenant = 'pagejobs';
  const table = `${tenant}.default.logs`;
  let damagedKey: string;

  type Job = { id: string; kind: string; state: string; started_at: string; finished_at: string | null; progress: { files_checked: number; files: number }; result?: { status: number; body: any } };

  const admin = () => ({ FLOE_URL: floe.routerUrl, FLOE_API_KEY: floe.adminApiKey });
  const api = async (method: 'GET' | 'POST', path: string, body?: unknown, authorization = `Bearer ${floe.adminApiKey}`) => {
    const res = await fetch(`${floe.routerUrl}${path}`, { method, headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, location: res.headers.get('location'), body: (await res.json()) as any };
  };
  const poll = async (location: string): Promise<Job> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { status, body } = await api('GET', location);
      expect(status).toBe(200);
      if (body.state !== 'running' || Date.now() > deadline) return body as Job;
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { writer: { flush_interval: '100ms', poll_interval: '50ms' }, compactor: { interval: '1h', open_hour_interval: '0s' } } });
    const key = (await floe.bootstrap(tenant)).api_key;
    const logs = logsLedger(() => floe.flightAddress, () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant }));
    const dataDir = async () => {
      const pointer = (await floe.metaQuery<{ metadata_location: string }>(`SELECT metadata_location FROM iceberg_tables WHERE table_namespace = '${tenant}.default' AND table_name = 'logs'`))[0]!.metadata_location;
      return join(dirname(dirname(fileURLToPath(pointer))), 'data');
    };
    const parquet = async () => (readdirSync(await dataDir(), { recursive: true, encoding: 'utf8' }) as string[]).filter((f) => f.endsWith('.parquet'));
    // Two commits, a file each: the first gets a bit flipped inside a page.
    expect((await logs.post(floe.otlpHttpUrl, tenant, 10, 'rotten')).status).toBe(200);
    expect(await logs.waitStored(tenant, 10)).toEqual({ rows: 10, distinct: 10 });
    const [rotten] = await parquet();
    expect((await logs.post(floe.otlpHttpUrl, tenant, 15, 'kept')).status).toBe(200);
    expect(await logs.waitStored(tenant, 25)).toEqual({ rows: 25, distinct: 25 });
    expect(await parquet()).toHaveLength(2);
    // The byte before the footer is the last byte of the last column chunk's last page.
    const path = join(await dataDir(), rotten!);
    const bytes = readFileSync(path);
    const footer = bytes.readUInt32LE(bytes.length - 8);
    bytes[bytes.length - 8 - footer - 1]! ^= 0x10;
    writeFileSync(path, bytes);
    damagedKey = `warehouse/${tenant}/default/logs/data/${rotten!}`;
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('the router answers a page check not done within wait_ms with 202 and a Location, whose GET reaches done with the answer the call gives', async () => {
    const started = await api('POST', '/api/v1/ops/tables/check', { tenant, check_pages: true, wait_ms: 0 });
    expect(started).toEqual({
      status: 202,
      location: `/api/v1/ops/jobs/${started.body.job.id}`,
      body: { status: 'running', job: { id: expect.stringMatching(/^[0-9a-f-]{36}$/), kind: 'check_tables', state: 'running', started_at: expect.any(String), progress: expect.any(Object) } },
    });
    const job = await poll(started.location!);
    expect(job).toMatchObject({ id: started.body.job.id, kind: 'check_tables', state: 'done', finished_at: expect.any(String), progress: { files_checked: 2, files: 2 } });
    const sync = await api('POST', '/api/v1/ops/tables/check', { tenant, check_pages: true });
    expect(sync.status).toBe(200);
    expect(sync.body.tables).toEqual([
      {
        table,
        status: 'damaged',
        metadata_location: expect.any(String),
        problems: [{ kind: 'data_files_damaged_pages', message: expect.stringContaining('1 data files of the current snapshot have damaged pages'), count: 1, keys: [damagedKey] }],
        pages_checked: { files: 2, bytes: expect.any(Number) },
      },
    ]);
    expect(job.result).toEqual({ status: 200, body: sync.body });
  });

  it('answers a job id that is not a uuid 400, an unknown job 404, and a caller who is not an instance admin 403', async () => {
    expect((await api('GET', '/api/v1/ops/jobs/not-a-job')).status).toBe(400);
    const unknown = 'c0ffee00-0000-4000-8000-000000000000';
    expect(await api('GET', `/api/v1/ops/jobs/${unknown}`)).toEqual({
      status: 404,
      location: null,
      body: { status: 'error', errorType: 'not_found', error: `unknown job ${unknown}: it finished long ago, or the compactor restarted since it was started (jobs are kept in its memory only); run it again` },
    });
    const key = (await floe.bootstrap('pagejobs-other')).api_key;
    const refused = await api('GET', `/api/v1/ops/jobs/${unknown}`, undefined, `Bearer ${key}`);
    expect([refused.status, refused.body.errorType]).toEqual([403, 'forbidden']);
    expect((await api('POST', '/api/v1/ops/tables/check', { tenant, check_pages: true, wait_ms: 60_001 })).status).toBe(400);
  });

  it('floe ops check-tables --check-pages reports the damaged pages and exits 1, whether the call answers at once or as a job it polls', async () => {
    const told = await runFloeCli(['ops', 'check-tables', '--tenant', tenant, '--check-pages'], admin());
    expect([told.code, told.stderr]).toEqual([1, '']);
    expect(told.stdout).toMatch(/^1 table checked: 0 ok, 1 damaged\npages of 2 files read \(/);
    expect(told.stdout).toContain(`data_files_damaged_pages: 1 data files of the current snapshot have damaged pages`);
    const json = await runFloeCli(['ops', 'check-tables', '--tenant', tenant, '--check-pages', '--json'], admin());
    const polled = await runFloeCli(['ops', 'check-tables', '--tenant', tenant, '--check-pages', '--wait-ms', '0', '--json'], admin());
    expect([polled.code, polled.stderr]).toEqual([1, '']);
    expect(JSON.parse(polled.stdout)).toEqual(JSON.parse(json.stdout));
    expect(JSON.parse(polled.stdout).tables[0].problems[0]).toMatchObject({ kind: 'data_files_damaged_pages', keys: [damagedKey] });
    const usage = await runFloeCli(['ops', 'check-tables', '--wait-ms', '0'], admin());
    expect([usage.code, usage.stderr]).toEqual([2, 'floe ops check-tables: --wait-ms needs --check-pages\n']);
  });

  it('floe ops drop-damaged-files --check-pages drops the file: a failed job is the error the call gives, a polled dry run the same answer', async () => {
    // A job that fails prints and exits as the call that fails at once.
    const unknown = await runFloeCli(['ops', 'drop-damaged-files', 'nobody.default.logs', '--check-pages'], admin());
    const unknownPolled = await runFloeCli(['ops', 'drop-damaged-files', 'nobody.default.logs', '--check-pages', '--wait-ms', '0'], admin());
    expect([unknown.code, unknown.stdout, unknown.stderr]).toEqual([1, '', 'floe ops drop-damaged-files: no table nobody.default.logs (HTTP 404 not_found)\n']);
    expect([unknownPolled.code, unknownPolled.stdout, unknownPolled.stderr]).toEqual([unknown.code, unknown.stdout, unknown.stderr]);

    const dry = await runFloeCli(['ops', 'drop-damaged-files', table, '--check-pages', '--dry-run', '--wait-ms', '0'], admin());
    expect([dry.code, dry.stderr]).toEqual([0, '']);
    expect(dry.stdout).toMatch(new RegExp(`^${table.replaceAll('.', '\\.')}: would drop 1 data file \\(10 rows\\)\n  ${damagedKey.replaceAll('.', '\\.')}: .*damaged page in row group \\d+, column .*, 10 rows\npages of 2 files read`));

    const dropped = await runFloeCli(['ops', 'drop-damaged-files', table, '--check-pages', '--json'], admin());
    expect([dropped.code, dropped.stderr]).toEqual([0, '']);
    expect(JSON.parse(dropped.stdout)).toMatchObject({ table, dropped: true, files: [{ key: damagedKey, reason: 'damaged_pages', record_count: 10 }], records_given_up: 10, pages_checked: { files: 2 } });

    const healed = await runFloeCli(['ops', 'check-tables', '--tenant', tenant, '--check-pages'], admin());
    expect([healed.code, healed.stderr]).toEqual([0, '']);
    expect(healed.stdout).toMatch(/^1 table checked: 1 ok, 0 damaged\npages of 1 file read/);
  });
});
