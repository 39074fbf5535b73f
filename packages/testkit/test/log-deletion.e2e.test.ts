import { SeverityNumber } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { emitLogRecords, protoLogExporter, runFloeCli, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Loki's log deletion API end to end, in both modes: a key with the delete scope records a
 * request (a LogQL log query and a window); its lines leave LogQL answers at once; the next
 * compaction pass past the cancel period (0s here) rewrites the files without them, so SQL no
 * longer sees them either; the list shows the request processed. Cancelling, the refusals of bad
 * requests, another tenant's data and a hostile value in the query are each checked.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('log deletion (%s)', (mode) => {
  let floe: FloeUnderTest;
  const keys: Record<string, string> = {};
  let deleteKey = '';
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const minutesAgo = (m: number) => nowNs - BigInt(m) * 60_000_000_000n;
  const startSeconds = String(Math.floor(Date.now() / 1000) - 3600);

  const sqlBodies = async (tenant: string) => {
    const table = await flightDoGet({
      url: floe.flightAddress,
      ticket: Buffer.from(`SELECT body FROM ${tenant}.default.logs ORDER BY body`),
      metadata: { authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant },
      deadlineMs: 20_000,
    });
    return table.toArray().map((r) => String(r.body));
  };
  const logql = async (tenant: string, query: string) => {
    const params = new URLSearchParams({ query, start: String(minutesAgo(60)), end: String(nowNs + 60_000_000_000n), limit: '100' });
    const res = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/query_range?${params}`, { headers: { authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(200);
    return (await res.json()) as { data: { resultType: string; result: Array<{ values: Array<[string, string | number]> }> } };
  };
  const lines = async (tenant: string) => (await logql(tenant, '{service_name=~".+"}')).data.result.flatMap((s) => s.values.map((v) => String(v[1]))).sort();
  const deleteApi = (method: string, params: Record<string, string>, key = deleteKey, tenant = 'acme') =>
    fetch(`${floe.routerUrl}/logquery/loki/api/v1/delete?${new URLSearchParams(params)}`, { method, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
  const list = async () => {
    const res = await deleteApi('GET', {});
    expect(res.status).toBe(200);
    return (await res.json()) as Array<{ request_id: string; start_time: number; end_time: number; query: string; status: string; created_at: number }>;
  };
  const ops = (method: string, path: string, body?: unknown) =>
    fetch(`${floe.routerUrl}/api/v1/ops/compact${path}`, {
      method,
      headers: { authorization: `Bearer ${floe.adminApiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const records = [
    { service: 'checkout', body: 'user 1 paid with card=4111-1111', at: minutesAgo(10) },
    { service: 'checkout', body: 'user 2 paid', at: minutesAgo(9) },
    { service: 'cart', body: 'cart of card=4111-1111', at: minutesAgo(8) },
  ];

  beforeAll(async () => {
    // The periodic pass runs once at start (no data yet), then not again during the test.
    floe = await startFloe({ mode, config: { compactor: { interval: '1h', delete_request_cancel_period: '0s', open_hour_interval: '0s' } } });
    for (const tenant of ['acme', 'other']) {
      keys[tenant] = (await floe.bootstrap(tenant)).api_key;
      // A service's records in one export: one file then holds both checkout lines, so deleting one
      // of them rewrites the file rather than dropping it.
      for (const service of ['checkout', 'cart']) {
        const mine = records.filter((r) => r.service === service).map((r) => ({ timeUnixNano: r.at, severityNumber: SeverityNumber.INFO, body: r.body }));
        await emitLogRecords(protoLogExporter(floe.otlpHttpUrl, { apiKey: keys[tenant]!, tenant }), { 'service.name': service }, { name: 'deletion-test', version: '1' }, mine);
      }
    }
    for (const tenant of ['acme', 'other']) await waitFor(`the records of ${tenant}`, async () => ((await sqlBodies(tenant)).length === 3 ? true : undefined), 30_000, 200);
    // The bootstrap key is a tenant admin's: it may grant the delete scope.
    const created = await fetch(`${floe.routerUrl}/api/v1/tenants/acme/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.acme}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'privacy', scopes: ['query', 'delete'] }),
    });
    expect(created.status).toBe(201);
    deleteKey = ((await created.json()) as { secret: string }).secret;
  }, 180_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('refuses requests without the delete scope or with a bad query or window', async () => {
    const ok = { query: '{service_name="checkout"}', start: startSeconds };
    expect((await deleteApi('POST', ok, 'floe_0000000000000000_nope')).status).toBe(401);
    const noScope = await deleteApi('POST', ok, keys.acme!);
    expect(noScope.status).toBe(403);
    expect(((await noScope.json()) as { error: string }).error).toContain('delete scope');
    // Another tenant's key is refused for this tenant.
    expect((await deleteApi('POST', ok, deleteKey, 'other')).status).toBe(403);

    const refused = async (params: Record<string, string>, text: string) => {
      const res = await deleteApi('POST', params);
      const body = (await res.json()) as { status: string; errorType: string; error: string };
      expect({ status: res.status, errorType: body.errorType }).toEqual({ status: 400, errorType: 'bad_data' });
      expect(body.error).toContain(text);
    };
    await refused({ start: startSeconds }, 'query not set');
    await refused({ query: '{service_name="checkout"}' }, 'start time not set');
    await refused({ query: 'count_over_time({service_name="checkout"}[5m])', start: startSeconds }, 'not a metric query');
    await refused({ query: '{service_name="checkout"', start: startSeconds }, 'parse error');
    await refused({ query: '{service_name="checkout"}', start: startSeconds, end: String(Math.floor(Date.now() / 1000) + 3600) }, 'deletes in the future are not allowed');
    await refused({ query: '{service_name="checkout"}', start: startSeconds, end: String(Number(startSeconds) - 60) }, "start time can't be greater than end time");
    await refused({ query: '{service_name="checkout"}', start: 'yesterday' }, 'invalid start');
    expect(await list()).toEqual([]);
  });

  it('lists a request until it is cancelled; a cancelled request is gone', async () => {
    const res = await deleteApi('POST', { query: '{service_name="cart"}', start: startSeconds });
    expect(res.status).toBe(204);
    const id = res.headers.get('x-floe-delete-request-id')!;
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    const [listed] = await list();
    expect(listed).toMatchObject({ request_id: id, query: '{service_name="cart"}', status: 'received', start_time: Number(startSeconds) });
    expect(listed!.end_time).toBeGreaterThanOrEqual(Number(startSeconds));
    expect((await lines('acme')).includes('cart of card=4111-1111')).toBe(false);

    expect((await deleteApi('DELETE', { request_id: id })).status).toBe(204);
    expect(await list()).toEqual([]);
    expect((await lines('acme')).includes('cart of card=4111-1111')).toBe(true);
    const again = await deleteApi('DELETE', { request_id: id });
    expect(again.status).toBe(404);
    expect(((await again.json()) as { error: string }).error).toBe('could not find delete request with given id');
  });

  it('holds at most 100 pending requests per dataset, and each dataset its own', async () => {
    const made = await fetch(`${floe.routerUrl}/api/v1/tenants/acme/datasets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.acme}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'bulk' }),
    });
    expect(made.status).toBe(201);
    const inBulk = (method: string, params: Record<string, string>) =>
      fetch(`${floe.routerUrl}/logquery/loki/api/v1/delete?${new URLSearchParams(params)}`, { method, headers: { authorization: `Bearer ${deleteKey}`, 'x-tenant-id': 'acme', 'x-dataset-id': 'bulk' } });
    for (let i = 0; i < 100; i++) expect((await inBulk('POST', { query: `{service_name="s${i}"}`, start: startSeconds })).status).toBe(204);
    const over = await inBulk('POST', { query: '{service_name="one-more"}', start: startSeconds });
    expect(over.status).toBe(400);
    expect(((await over.json()) as { error: string }).error).toContain('100 delete requests the compactor has not processed yet');
    const bulk = (await (await inBulk('GET', {})).json()) as Array<{ request_id: string }>;
    expect(bulk).toHaveLength(100);
    // The default dataset sees none of them; cancelling one makes room again.
    expect(await list()).toEqual([]);
    expect((await inBulk('DELETE', { request_id: bulk[0]!.request_id })).status).toBe(204);
    expect((await inBulk('POST', { query: '{service_name="one-more"}', start: startSeconds })).status).toBe(204);
  });

  it('works from the CLI: floe logs delete, delete-requests and cancel-delete', async () => {
    const cli = (args: string[]) => runFloeCli(args, { FLOE_URL: floe.routerUrl, FLOE_API_KEY: deleteKey, FLOE_TENANT: 'acme', FLOE_DATASET: '' });
    const recorded = await cli(['logs', 'delete', '{service_name="cart"} |= "card="', '--start', startSeconds]);
    expect(recorded).toMatchObject({ code: 0, stdout: '', stderr: '' });
    const listed = await cli(['logs', 'delete-requests']);
    expect(listed.code).toBe(0);
    const [request] = JSON.parse(listed.stdout) as Array<{ request_id: string; query: string; status: string }>;
    expect(request).toMatchObject({ query: '{service_name="cart"} |= "card="', status: 'received' });
    expect(await cli(['logs', 'cancel-delete', request!.request_id])).toMatchObject({ code: 0, stdout: '' });
    const gone = await cli(['logs', 'cancel-delete', request!.request_id]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('could not find delete request with given id');
    expect(await list()).toEqual([]);
  });

  it("hides the lines at once and deletes them at the next pass, leaving other lines and tenants alone", async () => {
    const res = await deleteApi('POST', { query: '{service_name="checkout"} |= "card="', start: startSeconds });
    expect(res.status).toBe(204);
    const id = res.headers.get('x-floe-delete-request-id')!;
    // A value that would break SQL if it were pasted into it deletes nothing.
    expect((await deleteApi('POST', { query: `{service_name="x' OR 1=1 --"}`, start: startSeconds })).status).toBe(204);

    // Queries leave the lines out before the compactor has run; SQL still has them.
    expect(await lines('acme')).toEqual(['cart of card=4111-1111', 'user 2 paid']);
    const counted = await logql('acme', 'sum(count_over_time({service_name="checkout"}[2h]))');
    expect(counted.data.result[0]!.values.every(([, v]) => v === '1')).toBe(true);
    expect(await sqlBodies('acme')).toHaveLength(3);
    expect(await lines('other')).toHaveLength(3);
    // The native Query IR leaves them out too.
    const ir = await fetch(`${floe.routerUrl}/api/v1/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.acme}`, 'x-tenant-id': 'acme', 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'logs', range: { start: new Date(Date.now() - 3_600_000).toISOString(), end: new Date(Date.now() + 60_000).toISOString() }, streams: [{ label: 'service_name', op: '=', value: 'checkout' }], limit: 10 }),
    });
    expect(ir.status).toBe(200);
    expect(((await ir.json()) as { rows: Array<{ line: string }> }).rows.map((r) => r.line)).toEqual(['user 2 paid']);

    // The bulk dataset's requests (above) stay out of this pass.
    const started = await ops('POST', '', { tenant: 'acme', dataset: 'default' });
    expect(started.status).toBe(202);
    const { id: passId } = (await started.json()) as { id: string };
    type Status = { requests: Array<{ id: string; finishedAt: string | null; result: { failed: boolean; deleteRequestsProcessed: number; rowsDeleted: number } | null }> };
    const done = await waitFor('the on-demand pass', async () => ((await (await ops('GET', '/status')).json()) as Status).requests.find((r) => r.id === passId && r.finishedAt !== null), 60_000, 200);
    expect(done.result).toMatchObject({ failed: false, deleteRequestsProcessed: 2, rowsDeleted: 1 });

    expect(await sqlBodies('acme')).toEqual(['cart of card=4111-1111', 'user 2 paid']);
    expect(await sqlBodies('other')).toEqual(['cart of card=4111-1111', 'user 1 paid with card=4111-1111', 'user 2 paid']);
    expect(await lines('acme')).toEqual(['cart of card=4111-1111', 'user 2 paid']);
    const processed = await list();
    expect(processed.map((r) => [r.request_id === id, r.status])).toEqual([
      [true, 'processed'],
      [false, 'processed'],
    ]);
    const late = await deleteApi('DELETE', { request_id: id });
    expect(late.status).toBe(400);
    expect(((await late.json()) as { error: string }).error).toBe('deletion of request which is in process or already processed is not allowed');
  });
});
