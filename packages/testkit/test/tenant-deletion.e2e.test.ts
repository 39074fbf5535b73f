import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { protoTraceExporter, sendSampleTrace, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Deleting a tenant deletes its data (both modes, file store): its tables leave the catalog and
 * their objects the store, so a tenant created later under the same id starts empty. A tenant id
 * whose tables outlived its tenant (here: its row removed behind the API's back) cannot be created
 * again (409) until a DELETE removes them.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('tenant deletion (%s)', (mode) => {
  let floe: FloeUnderTest;

  beforeAll(async () => {
    floe = await startFloe({ mode, storage: 'fs' });
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${floe.routerUrl}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${floe.adminApiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const spans = async (tenant: string, key: string) => {
    const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT count(*) AS n FROM traces'), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 20_000 });
    return Number(t.toArray()[0]!.n);
  };
  const catalogTables = (tenant: string) => floe.metaQuery<{ table_name: string }>("SELECT table_name FROM iceberg_tables WHERE table_namespace LIKE $1 || '.%' ORDER BY 1", [tenant]);
  const warehouse = (tenant: string) => join(floe.dataDir, 'data', 'warehouse', tenant);
  const objectsUnder = (dir: string): number => (existsSync(dir) ? readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length : 0);
  const withTrace = async (tenant: string) => {
    const key = (await floe.bootstrap(tenant)).api_key;
    await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'doomed');
    await waitFor(`spans of ${tenant}`, async () => ((await spans(tenant, key)) > 0 ? true : undefined), 30_000, 200);
    expect((await catalogTables(tenant)).map((r) => r.table_name)).toContain('traces');
    expect(objectsUnder(warehouse(tenant))).toBeGreaterThan(0);
    return key;
  };

  it('DELETE removes the tenant\'s tables and files; the id starts empty when created again', async () => {
    const oldKey = await withTrace('doomed');
    expect((await admin('DELETE', '/tenants/doomed')).status).toBe(204);
    await waitFor('the tables purged', async () => ((await catalogTables('doomed')).length === 0 && objectsUnder(warehouse('doomed')) === 0 ? true : undefined), 30_000, 200);
    // The old key went with the tenant.
    const refused = await fetch(`${floe.routerUrl}/tracequery/api/echo`, { headers: { authorization: `Bearer ${oldKey}`, 'x-tenant-id': 'doomed' } });
    expect(refused.status).toBe(401);

    expect((await admin('POST', '/tenants', { id: 'doomed' })).status).toBe(201);
    const key = (await floe.bootstrap('doomed')).api_key;
    expect(await spans('doomed', key)).toBe(0);
  });

  it('an id whose tables outlived its tenant is refused (409) until a DELETE removes them', async () => {
    await withTrace('ghost');
    // As if a purge had failed: the tenant row is gone, its tables are not.
    await floe.metaQuery('DELETE FROM tenants WHERE id = $1', ['ghost']);
    const refused = await admin('POST', '/tenants', { id: 'ghost' });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ status: 'error', errorType: 'conflict', error: expect.stringMatching(/^tenant id ghost still holds \d+ table\(s\) of a deleted tenant \(ghost\.default\..*DELETE \/api\/v1\/tenants\/ghost removes them$/) });

    expect((await admin('DELETE', '/tenants/ghost')).status).toBe(204);
    await waitFor('the leftovers purged', async () => ((await catalogTables('ghost')).length === 0 && objectsUnder(warehouse('ghost')) === 0 ? true : undefined), 30_000, 200);
    expect((await admin('POST', '/tenants', { id: 'ghost' })).status).toBe(201);
    // A tenant that never was: still 404.
    expect((await admin('DELETE', '/tenants/never-was')).status).toBe(404);
  });
});
