import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { protoTraceExporter, sendSampleTrace, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * The hour being written does not stay one file per flush until the next full compaction pass:
 * every compactor.open_hour_interval its flush files are concatenated (row groups copied), and
 * every trace, search and SQL count reads the same over the merged file. In both modes.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('open-hour merge (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'openhour';
  const traces: string[] = [];
  const auth = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
  const admin = () => ({ authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' });

  const liveFiles = async (): Promise<number> => {
    const res = await fetch(`${floe.routerUrl}/api/v1/ops/compact/dry-run`, { method: 'POST', headers: admin(), body: JSON.stringify({ tenant, table: 'traces' }) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { tables: Array<{ files: number }> };
    return body.tables[0]?.files ?? 0;
  };

  beforeAll(async () => {
    // Full passes out of the way (1h); the open-hour pass every second, for files a second old.
    floe = await startFloe({ mode, config: { compactor: { interval: '1h', open_hour_interval: '1s' }, writer: { flush_interval: '100ms', poll_interval: '50ms' } } });
    key = (await floe.bootstrap(tenant)).api_key;
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('merges the flush files of the current hour while it is written, and every trace still reads whole', async () => {
    const send = async (service: string) => {
      const sent = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), service);
      traces.push(sent.traceId);
      // Each trace committed before the next is sent: a flush file each.
      await waitFor(`trace of ${service}`, async () => ((await fetch(`${floe.routerUrl}/tracequery/api/traces/${sent.traceId}`, { headers: auth() })).status === 200 ? true : undefined), 30_000, 100);
    };
    await send('alpha');
    // The frequent pass merges only tables a full pass has found sound: one on demand, now the table exists.
    const started = await fetch(`${floe.routerUrl}/api/v1/ops/compact`, { method: 'POST', headers: admin(), body: JSON.stringify({ tenant }) });
    expect(started.status).toBe(202);
    const { id } = (await started.json()) as { id: string };
    await waitFor('the on-demand pass', async () => {
      const status = (await (await fetch(`${floe.routerUrl}/api/v1/ops/compact/status`, { headers: admin() })).json()) as { requests: Array<{ id: string; finishedAt: string | null }> };
      return status.requests.find((r) => r.id === id && r.finishedAt !== null);
    }, 30_000, 100);
    for (const service of ['beta', 'gamma', 'delta']) await send(service);
    // From here only the open-hour pass merges (full passes are an hour apart). Size-tiered, four
    // flush files of about one size become one or two files, never stay four.
    try {
      await waitFor('the flush files merged', async () => ((await liveFiles()) <= 2 ? true : undefined), 60_000, 250);
    } catch (err) {
      // Seen twice in full-suite runs (cluster) and never alone: say what the compactor saw.
      const status = await (await fetch(`${floe.routerUrl}/api/v1/ops/compact/status`, { headers: admin() })).json();
      const plan = await (await fetch(`${floe.routerUrl}/api/v1/ops/compact/dry-run`, { method: 'POST', headers: admin(), body: JSON.stringify({ tenant, table: 'traces' }) })).json();
      throw new Error(`${(err as Error).message}; compactor status ${JSON.stringify(status)}; plan ${JSON.stringify(plan)}`);
    }

    const count = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT count(*) AS n, count(DISTINCT trace_id) AS t FROM traces'), metadata: auth() });
    expect(count.toArray()[0]!.t).toBe(4n);
    const spans = Number(count.toArray()[0]!.n);
    expect(spans).toBe(12);
    for (const id of traces) {
      const res = await fetch(`${floe.routerUrl}/tracequery/api/traces/${id}`, { headers: auth() });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { batches: Array<{ scopeSpans: Array<{ spans: unknown[] }> }> };
      expect(body.batches.flatMap((b) => b.scopeSpans.flatMap((s) => s.spans))).toHaveLength(3);
    }
    const search = await fetch(`${floe.routerUrl}/tracequery/api/search?${new URLSearchParams({ q: '{ resource.service.name = "gamma" }', start: String(Math.floor(Date.now() / 1000) - 600), end: String(Math.floor(Date.now() / 1000) + 60) })}`, { headers: auth() });
    expect(search.status).toBe(200);
    expect(((await search.json()) as { traces: Array<{ traceID: string }> }).traces.map((t) => t.traceID)).toEqual([traces[2]]);

    // The operator's view: the status route counts the open-hour passes and what they merged.
    const status = (await (await fetch(`${floe.routerUrl}/api/v1/ops/compact/status`, { headers: admin() })).json()) as {
      openHours: { intervalMs: number; passes: number; failedPasses: number; filesMerged: number; last: { tablesLoaded: number; tablesIdle: number; durationMs: number } | null };
    };
    expect(status.openHours).toMatchObject({ intervalMs: 1000, failedPasses: 0 });
    expect(status.openHours.passes).toBeGreaterThanOrEqual(1);
    expect(status.openHours.filesMerged).toBeGreaterThanOrEqual(2);
    // The last pass saw the tenant's traces table: read it, or left it alone as idle.
    expect(status.openHours.last).toMatchObject({ durationMs: expect.any(Number) });
    expect(status.openHours.last!.tablesLoaded + status.openHours.last!.tablesIdle).toBeGreaterThanOrEqual(1);
    const metrics = await (await fetch(`${floe.compactorAdminUrl}/metrics`)).text();
    const merged = /^compaction_open_hour_files_merged_total(?:\{[^}]*\})? (\d+)/m.exec(metrics);
    expect(Number(merged?.[1])).toBeGreaterThanOrEqual(2);
  }, 180_000); // four commits, a full pass and the open-hour merges: past the 60 s default on two busy cores
});
