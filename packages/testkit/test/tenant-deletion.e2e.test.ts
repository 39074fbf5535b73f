import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { ExportTraceServiceRequestSchema, create, toBinary } from '@floe/proto';
import { protoTraceExporter, runFloeCli, sendSampleTrace, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Deleting a tenant deletes its data (both modes, file store): its tables leave the catalog and
 * their objects the store, so a tenant created later under the same id starts empty. A tenant id
 * whose tables outlived its tenant (here: its row removed behind the API's back) cannot be created
 * again (409) until a DELETE removes them. The new tenant's requests are its own: bytes the first
 * one sent are not taken for resends. Deleting a dataset deletes its tables the same way.
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
  const spans = async (tenant: string, key: string, traceId?: string) => {
    const sql = `SELECT count(*) AS n FROM traces${traceId === undefined ? '' : ` WHERE trace_id = '${traceId}'`}`;
    const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(sql), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 20_000 });
    return Number(t.toArray()[0]!.n);
  };
  const spanBody = () => {
    const traceId = randomBytes(16);
    const start = BigInt(Date.now()) * 1_000_000n;
    const req = create(ExportTraceServiceRequestSchema, { resourceSpans: [{ scopeSpans: [{ spans: [{ traceId, spanId: randomBytes(8), name: 'fixed', startTimeUnixNano: start, endTimeUnixNano: start + 1000n }] }] }] });
    return { bytes: toBinary(ExportTraceServiceRequestSchema, req), traceId: traceId.toString('hex') };
  };
  const postSpans = (key: string, bytes: Uint8Array) =>
    fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: bytes, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'doomed', 'content-type': 'application/x-protobuf' } });
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
    // A body the first tenant stored: the next tenant of the id sending the same bytes is not resending it.
    const body = spanBody();
    expect((await postSpans(oldKey, body.bytes)).status).toBe(200);
    await waitFor('the fixed body stored', async () => ((await spans('doomed', oldKey, body.traceId)) === 1 ? true : undefined), 30_000, 200);
    expect((await admin('DELETE', '/tenants/doomed')).status).toBe(204);
    await waitFor('the tables purged', async () => ((await catalogTables('doomed')).length === 0 && objectsUnder(warehouse('doomed')) === 0 ? true : undefined), 30_000, 200);
    // The old key went with the tenant.
    const refused = await fetch(`${floe.routerUrl}/tracequery/api/echo`, { headers: { authorization: `Bearer ${oldKey}`, 'x-tenant-id': 'doomed' } });
    expect(refused.status).toBe(401);

    expect((await admin('POST', '/tenants', { id: 'doomed' })).status).toBe(201);
    const key = (await floe.bootstrap('doomed')).api_key;
    expect(await spans('doomed', key)).toBe(0);
    expect((await postSpans(key, body.bytes)).status).toBe(200);
    await waitFor('the same bytes stored for the new tenant', async () => ((await spans('doomed', key, body.traceId)) === 1 ? true : undefined), 30_000, 200);
    // A resend to the new tenant is one again.
    expect((await postSpans(key, body.bytes)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1500)); // more than one writer flush
    expect(await spans('doomed', key, body.traceId)).toBe(1);
  });

  it('DELETE of a dataset removes its tables, files and bound keys, and nothing of the tenant\'s other datasets; the default one goes only with its tenant', async () => {
    const tenantKey = await withTrace('ds-owner');
    expect((await admin('POST', '/tenants/ds-owner/datasets', { id: 'scratch' })).status).toBe(201);
    const created = await admin('POST', '/tenants/ds-owner/api-keys', { scopes: ['ingest', 'query'], dataset_id: 'scratch' });
    expect(created.status).toBe(201);
    const boundKey = ((await created.json()) as { secret: string }).secret;
    const scratchSpans = async (key: string) => {
      const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT count(*) AS n FROM traces'), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': 'ds-owner', 'x-dataset-id': 'scratch' }, deadlineMs: 20_000 });
      return Number(t.toArray()[0]!.n);
    };
    await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: boundKey, tenant: 'ds-owner', dataset: 'scratch' }), 'scratch');
    await waitFor('spans of the scratch dataset', async () => ((await scratchSpans(boundKey)) > 0 ? true : undefined), 30_000, 200);
    const namespaceTables = async (namespace: string) => (await floe.metaQuery<{ table_name: string }>('SELECT table_name FROM iceberg_tables WHERE table_namespace = $1', [namespace])).map((r) => r.table_name);
    expect(await namespaceTables('ds-owner.scratch')).toContain('traces');
    const defaultTables = await namespaceTables('ds-owner.default');
    expect(defaultTables).toContain('traces');
    const scratchDir = join(warehouse('ds-owner'), 'scratch');
    expect(objectsUnder(scratchDir)).toBeGreaterThan(0);
    const defaultSpans = await spans('ds-owner', tenantKey);

    // The default dataset is refused; an unknown one is 404.
    const refused = await admin('DELETE', '/tenants/ds-owner/datasets/default');
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ status: 'error', errorType: 'conflict', error: 'dataset default is the default dataset of tenant ds-owner; it goes only with its tenant' });
    expect((await admin('DELETE', '/tenants/ds-owner/datasets/never-was')).status).toBe(404);
    // A tenant-wide key without tenant:manage may not delete it.
    const reader = (await (await admin('POST', '/tenants/ds-owner/api-keys', { scopes: ['ingest', 'query'] })).json()) as { secret: string };
    const notAdmin = await fetch(`${floe.routerUrl}/api/v1/tenants/ds-owner/datasets/scratch`, { method: 'DELETE', headers: { authorization: `Bearer ${reader.secret}` } });
    expect(notAdmin.status).toBe(403);

    const cli = await runFloeCli(['dataset', 'delete', 'scratch', '--tenant', 'ds-owner', '--json'], { FLOE_URL: floe.routerUrl, FLOE_API_KEY: floe.adminApiKey, FLOE_TENANT: '' });
    expect([cli.code, cli.stderr]).toEqual([0, '']);
    expect(JSON.parse(cli.stdout)).toEqual({ tenant: 'ds-owner', deleted: 'scratch' });
    expect(await namespaceTables('ds-owner.scratch')).toEqual([]);
    expect(await namespaceTables('ds-owner.default')).toEqual(defaultTables);
    expect(objectsUnder(scratchDir)).toBe(0);
    // Its key went with it; the dataset is gone for every other key too.
    const gone = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: new Uint8Array(0), headers: { authorization: `Bearer ${boundKey}`, 'x-tenant-id': 'ds-owner', 'x-dataset-id': 'scratch', 'content-type': 'application/x-protobuf' } });
    expect(gone.status).toBe(401);
    const noDataset = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: new Uint8Array(0), headers: { authorization: `Bearer ${floe.adminApiKey}`, 'x-tenant-id': 'ds-owner', 'x-dataset-id': 'scratch', 'content-type': 'application/x-protobuf' } });
    expect(noDataset.status).toBe(403);
    // The default dataset's data is untouched; created again, the id starts empty.
    expect(await spans('ds-owner', tenantKey)).toBe(defaultSpans);
    expect((await admin('POST', '/tenants/ds-owner/datasets', { id: 'scratch' })).status).toBe(201);
    const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT count(*) AS n FROM traces'), metadata: { authorization: `Bearer ${floe.adminApiKey}`, 'x-tenant-id': 'ds-owner', 'x-dataset-id': 'scratch' }, deadlineMs: 20_000 });
    expect(Number(t.toArray()[0]!.n)).toBe(0);
  });

  if (mode === 'cluster') {
    it('a tenant and a dataset created again while the WAL still holds records acknowledged for the deleted ones start empty', async () => {
      const key = (await floe.bootstrap('reborn')).api_key;
      expect((await admin('POST', '/tenants/reborn/datasets', { id: 'again' })).status).toBe(201);
      // The writer is down: what is acknowledged now waits in the WAL past the deletions.
      await floe.kill('writer');
      const before = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant: 'reborn' }), 'before');
      const beforeInDataset = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: floe.adminApiKey, tenant: 'reborn', dataset: 'again' }), 'before');
      expect((await admin('DELETE', '/tenants/reborn/datasets/again')).status).toBe(204);
      expect((await admin('DELETE', '/tenants/reborn')).status).toBe(204);
      const newKey = (await floe.bootstrap('reborn')).api_key;
      expect((await admin('POST', '/tenants/reborn/datasets', { id: 'again' })).status).toBe(201);
      const after = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: newKey, tenant: 'reborn' }), 'after');
      const afterInDataset = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: floe.adminApiKey, tenant: 'reborn', dataset: 'again' }), 'after');
      await floe.restart('writer');
      const count = async (dataset: string, traceId: string) => {
        const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT count(*) AS n FROM traces WHERE trace_id = '${traceId}'`), metadata: { authorization: `Bearer ${floe.adminApiKey}`, 'x-tenant-id': 'reborn', 'x-dataset-id': dataset }, deadlineMs: 20_000 });
        return Number(t.toArray()[0]!.n);
      };
      await waitFor('the spans sent after the deletions', async () => ((await count('default', after.traceId)) === 3 && (await count('again', afterInDataset.traceId)) === 3 ? true : undefined), 60_000, 200);
      await waitFor('the WAL drained', async () => {
        const status = (await (await fetch(`${floe.writerAdminUrl}/status`)).json()) as { backlog?: { segments?: number } };
        return status.backlog?.segments === 0 || undefined;
      }, 30_000, 200);
      const all = async (dataset: string) => Number((await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT count(*) AS n FROM traces'), metadata: { authorization: `Bearer ${floe.adminApiKey}`, 'x-tenant-id': 'reborn', 'x-dataset-id': dataset }, deadlineMs: 20_000 })).toArray()[0]!.n);
      expect({ before: await count('default', before.traceId), beforeInDataset: await count('again', beforeInDataset.traceId), default: await all('default'), again: await all('again') }).toEqual({ before: 0, beforeInDataset: 0, default: 3, again: 3 });
    });
  }

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
