import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { protoTraceExporter, runFloeCli, sendSampleTrace, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Compaction control (spec 2: POST /api/v1/ops/compact, GET …/status, POST …/dry-run,
 * admin-authenticated) in both modes: the router authenticates the operator and drives the
 * compactor (in-process in `floe all`, over its admin port in a cluster). The flushes of one hour
 * become one file; every span is still there.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('ops compaction (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'compacted';
  const traces: string[] = [];

  const ops = (method: string, path: string, body?: unknown, authorization = `Bearer ${floe.adminApiKey}`) =>
    fetch(`${floe.routerUrl}/api/v1/ops/compact${path}`, {
      method,
      headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const trace = (id: string) => fetch(`${floe.routerUrl}/tracequery/api/traces/${id}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
  const spanCount = async () => {
    const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT count(*) AS n FROM ${tenant}.default.traces`), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    return Number(table.toArray()[0]!.n);
  };
  const plan = async (): Promise<Array<{ table: string; files: number; groups: Array<{ files: number; rows: number }> }>> => {
    const res = await ops('POST', '/dry-run', { tenant, table: 'traces' });
    expect(res.status).toBe(200);
    return ((await res.json()) as { tables: [] }).tables;
  };

  beforeAll(async () => {
    // Files are mergeable as soon as committed; the periodic pass (at start) stays out of the way.
    floe = await startFloe({ mode, config: { compactor: { min_file_age: '0s', interval: '1h', open_hour_interval: '0s' } } });
    key = (await floe.bootstrap(tenant)).api_key;
    // Three traces, each sent once the one before is committed: three flush files in one hour of
    // about one size (in an open hour a file is merged only with others at least as large as it).
    for (const service of ['one', 'two', 'six']) {
      const sent = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), service);
      await waitFor(`trace of ${service}`, async () => ((await trace(sent.traceId)).status === 200 ? true : undefined), 30_000, 200);
      traces.push(sent.traceId);
    }
    // A trace answers by id once part of it is committed; the plan must see every flush file,
    // or a file committed between the plan and the pass makes the pass rewrite more than planned.
    await waitFor('every span committed', async () => ((await spanCount()) === 9 ? true : undefined), 30_000, 200);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('refuses callers that are not instance admins', async () => {
    expect((await ops('GET', '/status', undefined, '')).status).toBe(401);
    const tenantKey = await ops('POST', '', {}, `Bearer ${key}`);
    expect(tenantKey.status).toBe(403);
    expect(await tenantKey.json()).toMatchObject({ status: 'error', errorType: 'forbidden' });
    expect((await ops('POST', '/dry-run', { dataset: 'default' })).status).toBe(400);
    expect((await ops('POST', '/dry-run', { tenant, bogus: 1 })).status).toBe(400);
    expect((await ops('POST', '', { table: 'nonsense' })).status).toBe(400);
    // Around the router: the compactor's own port runs actions only for the services' shared key.
    const direct = await fetch(`${floe.compactorAdminUrl}/compact`, { method: 'POST', body: JSON.stringify({ tenant }) });
    expect([direct.status, ((await direct.json()) as { errorType: string }).errorType]).toEqual([401, 'unauthorized']);
  });

  it('plans, compacts on demand, reports it, and keeps every span', async () => {
    const before = await plan();
    expect(before.map((t) => t.table)).toEqual([`${tenant}.default.traces`]);
    expect(before[0]!.files).toBeGreaterThanOrEqual(3);
    const planned = { files: before[0]!.groups.reduce((a, g) => a + g.files, 0), rows: before[0]!.groups.reduce((a, g) => a + g.rows, 0) };
    expect(planned.files).toBeGreaterThanOrEqual(2);
    expect(planned.rows).toBeGreaterThan(0);

    const started = await ops('POST', '', { tenant, table: 'traces' });
    expect(started.status).toBe(202);
    const request = (await started.json()) as { id: string; scope: unknown; startedAt: string | null };
    expect(request.scope).toEqual({ tenant, table: 'traces' });

    type Status = { passes: number; requests: Array<{ id: string; finishedAt: string | null; result: { failed: boolean; filesBefore: number; filesAfter: number; rowsRewritten: number } | null }> };
    const done = await waitFor('the on-demand pass', async () => {
      const res = await ops('GET', '/status');
      expect(res.status).toBe(200);
      const status = (await res.json()) as Status;
      return status.requests.find((r) => r.id === request.id && r.finishedAt !== null);
    }, 60_000, 200);
    expect(done.result).toMatchObject({ failed: false, filesBefore: planned.files, filesAfter: before[0]!.groups.length, rowsRewritten: planned.rows });

    expect((await plan())[0]!.groups).toEqual([]);
    expect(await spanCount()).toBe(9);
    for (const id of traces) expect((await trace(id)).status).toBe(200);
  });

  it('floe ops compact-plan|compact|compact-status drive the same routes', async () => {
    const env = { FLOE_URL: floe.routerUrl, FLOE_API_KEY: floe.adminApiKey };
    const plan = await runFloeCli(['ops', 'compact-plan', '--tenant', tenant, '--table', 'traces'], env);
    expect([plan.code, plan.stderr]).toEqual([0, '']);
    expect((JSON.parse(plan.stdout) as { tables: Array<{ table: string }> }).tables.map((t) => t.table)).toEqual([`${tenant}.default.traces`]);
    const started = await runFloeCli(['ops', 'compact', '--tenant', tenant], env);
    expect(started.code).toBe(0);
    expect(JSON.parse(started.stdout)).toMatchObject({ scope: { tenant }, finishedAt: null });
    const status = await runFloeCli(['ops', 'compact-status'], env);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ enabled: true });
    const refused = await runFloeCli(['ops', 'compact-status'], { ...env, FLOE_API_KEY: key });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('HTTP 403');
    expect((await runFloeCli(['ops', 'compact', '--dataset', 'default'], env)).code).toBe(2);
  });
});
