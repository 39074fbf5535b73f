import { SeverityNumber } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { emitLogRecords, protoLogExporter, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Retention end to end, in both modes (limits.retention, spec 1's "retention shortens"): an
 * instance keeping data two days, a tenant whose settings keep it forever. Each tenant sends a
 * log record of three days ago and one of now; after a compaction pass the old record of the
 * tenant on the instance's retention is gone from SQL and from LogQL, the forever tenant still
 * has both, and the pass reports what it deleted.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('retention (%s)', (mode) => {
  let floe: FloeUnderTest;
  const keys: Record<string, string> = {};
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const oldNs = nowNs - 72n * 3_600_000_000_000n;

  const count = async (tenant: string) => {
    const table = await flightDoGet({
      url: floe.flightAddress,
      ticket: Buffer.from(`SELECT count(*) AS n FROM ${tenant}.default.logs`),
      metadata: { authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant },
      deadlineMs: 20_000,
    });
    return Number(table.toArray()[0]!.n);
  };
  const ops = (method: string, path: string, body?: unknown) =>
    fetch(`${floe.routerUrl}/api/v1/ops/compact${path}`, {
      method,
      headers: { authorization: `Bearer ${floe.adminApiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeAll(async () => {
    // The periodic pass runs once at start (no data yet), then not again during the test.
    // Lines of the chatty service keep an hour (limits.retention_stream), whatever the tenant's retention.
    floe = await startFloe({ mode, config: { limits: { retention: '2d', retention_stream: [{ selector: '{service_name="chatty"}', period: '1h' }] }, compactor: { interval: '1h', open_hour_interval: '0s' } } });
    const created = await fetch(`${floe.routerUrl}/api/v1/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'forever', settings: { limits: { retention: '0s' } } }),
    });
    expect(created.status).toBe(201);
    for (const tenant of ['aged', 'forever']) {
      keys[tenant] = (await floe.bootstrap(tenant)).api_key;
      await emitLogRecords(protoLogExporter(floe.otlpHttpUrl, { apiKey: keys[tenant]!, tenant }), { 'service.name': 'kept-or-not' }, { name: 'retention-test', version: '1' }, [
        { timeUnixNano: oldNs, severityNumber: SeverityNumber.INFO, body: 'three days ago' },
        { timeUnixNano: nowNs, severityNumber: SeverityNumber.INFO, body: 'just now' },
      ]);
      await emitLogRecords(protoLogExporter(floe.otlpHttpUrl, { apiKey: keys[tenant]!, tenant }), { 'service.name': 'chatty' }, { name: 'retention-test', version: '1' }, [
        { timeUnixNano: nowNs - 3n * 3_600_000_000_000n, severityNumber: SeverityNumber.INFO, body: 'chatty three hours ago' },
        { timeUnixNano: nowNs, severityNumber: SeverityNumber.INFO, body: 'chatty now' },
      ]);
    }
    for (const tenant of ['aged', 'forever']) await waitFor(`the records of ${tenant}`, async () => ((await count(tenant)) === 4 ? true : undefined), 30_000, 200);
  }, 180_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('refuses a tenant stream rule whose selector is not LogQL, naming it', async () => {
    const res = await fetch(`${floe.routerUrl}/api/v1/tenants/forever`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ settings: { limits: { retention: '0s', retention_stream: [{ selector: 'service_name="x"', period: '1d' }] } } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain('settings.limits.retention_stream[0].selector');
  });

  it('a compaction pass deletes the hours past the tenant\'s retention and the stream lines past their rule, and keeps the rest', async () => {
    const started = await ops('POST', '', {});
    expect(started.status).toBe(202);
    const { id } = (await started.json()) as { id: string };
    type Status = { requests: Array<{ id: string; finishedAt: string | null; result: { failed: boolean; partitionsExpired: number; filesExpired: number; rowsExpired: number; streamFilesRewritten: number } | null }> };
    const done = await waitFor('the on-demand pass', async () => ((await (await ops('GET', '/status')).json()) as Status).requests.find((r) => r.id === id && r.finishedAt !== null), 60_000, 200);
    // One hour partition of the aged tenant, and each tenant's chatty line of three hours ago.
    expect(done.result).toMatchObject({ failed: false, partitionsExpired: 1, filesExpired: 1, rowsExpired: 3 });
    expect(done.result!.streamFilesRewritten).toBeGreaterThanOrEqual(2);

    expect(await count('aged')).toBe(2);
    expect(await count('forever')).toBe(3);

    const logql = async (tenant: string) => {
      const params = new URLSearchParams({ query: '{service_name="kept-or-not"}', start: String(oldNs - 60_000_000_000n), end: String(nowNs + 60_000_000_000n), limit: '10' });
      const res = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/query_range?${params}`, { headers: { authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: { result: Array<{ values: Array<[string, string]> }> } };
      return body.data.result.flatMap((s) => s.values.map((v) => v[1])).sort();
    };
    expect(await logql('aged')).toEqual(['just now']);
    expect(await logql('forever')).toEqual(['just now', 'three days ago']);
    const chatty = async (tenant: string) => {
      const params = new URLSearchParams({ query: '{service_name="chatty"}', start: String(oldNs), end: String(nowNs + 60_000_000_000n), limit: '10' });
      const res = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/query_range?${params}`, { headers: { authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant } });
      return ((await res.json()) as { data: { result: Array<{ values: Array<[string, string]> }> } }).data.result.flatMap((s) => s.values.map((v) => v[1]));
    };
    expect(await chatty('aged')).toEqual(['chatty now']);
    expect(await chatty('forever')).toEqual(['chatty now']);
  });

  it('usage shows what each table holds against the quota, with its retention in effect', async () => {
    type Usage = { tenant: string; stored_bytes: number; max_storage_bytes: number | null; tables: Array<{ dataset: string; table: string; bytes: number; rows: number; files: number; retention_ms: number | null }> };
    const usage = async (tenant: string) => {
      const res = await fetch(`${floe.routerUrl}/api/v1/tenants/${tenant}/usage`, { headers: { authorization: `Bearer ${keys[tenant]}` } });
      expect(res.status).toBe(200);
      return (await res.json()) as Usage;
    };
    const aged = await usage('aged');
    const logs = aged.tables.find((t) => t.table === 'logs')!;
    expect(logs).toMatchObject({ dataset: 'default', rows: 2, retention_ms: 2 * 86_400_000 });
    expect(logs.files).toBeGreaterThanOrEqual(1);
    expect(logs.bytes).toBeGreaterThan(0);
    expect(aged).toMatchObject({ tenant: 'aged', max_storage_bytes: null, stored_bytes: aged.tables.reduce((a, t) => a + t.bytes, 0) });
    expect((await usage('forever')).tables.find((t) => t.table === 'logs')).toMatchObject({ rows: 3, retention_ms: null });
    // Another tenant's key learns nothing.
    const other = await fetch(`${floe.routerUrl}/api/v1/tenants/forever/usage`, { headers: { authorization: `Bearer ${keys.aged}` } });
    expect(other.status).toBe(403);
  });
});
