import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * The querier keeps the point lists it read from each data file wholly inside a PromQL window
 * (services/querier/src/series-lists.ts) and answers the next window from them. What a user must
 * see: the same answer on the first and every later read, points that arrive late for an hour
 * already read (a new data file in that hour) in the next answer, and each tenant's own points
 * only, though two tenants' series have the same labels and so the same ids. In cluster mode the
 * router's signed tickets reach a querier of its own over gRPC, and the files come from S3.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('PromQL reads answered from the point lists of whole files (%s)', (mode) => {
  let floe: FloeUnderTest;
  let acme: { key: string; tenant: string };
  const now = Math.floor(Date.now() / 60_000) * 60_000;
  const min = 60_000;

  /** Remote-writes disk_used{instance="a", job="node"} points ([ms, value]) as a tenant. */
  const write = async (as: { key: string; tenant: string }, points: Array<[number, number]>) => {
    const timeseries = [
      {
        labels: [{ name: '__name__', value: 'disk_used' }, { name: 'instance', value: 'a' }, { name: 'job', value: 'node' }],
        samples: points.map(([t, value]) => ({ value, timestamp: BigInt(t) })),
      },
    ];
    const body = compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries })));
    const res = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body, headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${as.key}`, 'x-tenant-id': as.tenant } });
    expect(res.status).toBe(204);
  };

  /** The raw points of the last six hours (`disk_used[6h]` at now), as [seconds, value text]. */
  const rawPoints = async (as: { key: string; tenant: string }) => {
    const res = await fetch(`${floe.routerUrl}/metricquery/api/v1/query`, {
      method: 'POST',
      body: new URLSearchParams({ query: 'disk_used[6h]', time: String(now / 1000) }),
      headers: { authorization: `Bearer ${as.key}`, 'x-tenant-id': as.tenant, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { resultType: string; result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> } };
    expect(body.data.resultType).toBe('matrix');
    return body.data.result;
  };

  /** The querier's point-lists counters (its admin port's /status). */
  const lists = async () => ((await (await fetch(`${floe.querierAdminUrl}/status`)).json()) as { series_lists: Record<string, number> }).series_lists;

  /** Every 10 minutes over five hours, half a second past the minute; value = minutes ago. */
  const points: Array<[number, number]> = [];
  for (let ago = 300; ago >= 10; ago -= 10) points.push([now - ago * min + 500, ago]);
  const asAnswer = (ps: Array<[number, number]>) => [...ps].sort((a, b) => a[0] - b[0]).map(([t, v]) => [t / 1000, String(v)]);

  beforeAll(async () => {
    floe = await startFloe({ mode });
    acme = { key: (await floe.bootstrap('acme')).api_key, tenant: 'acme' };
    await write(acme, points);
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it('answers every later read as the first, and takes in points that arrive late for an hour already read', async () => {
    const first = await waitFor('the points to be queryable', async () => {
      const r = await rawPoints(acme);
      return r.length === 1 && r[0]!.values.length === points.length ? r : undefined;
    }, 30_000, 200);
    expect(first[0]!.metric).toEqual({ __name__: 'disk_used', instance: 'a', job: 'node' });
    expect(first[0]!.values).toEqual(asAnswer(points));
    // The first read of the window read its files' lists and kept them.
    const filled = await lists();
    expect(filled.kept_files).toBeGreaterThanOrEqual(5);
    expect(filled.files_read).toBe(filled.kept_files);
    // The next reads are answered from the kept lists, reading no file.
    expect(await rawPoints(acme)).toEqual(first);
    expect(await rawPoints(acme)).toEqual(first);
    const used = await lists();
    expect(used.queries_from_lists! - filled.queries_from_lists!).toBe(2);
    expect(used.files_read).toBe(filled.files_read);
    expect(used.files_from_lists! - filled.files_from_lists!).toBe(2 * filled.kept_files!);

    // A point for the middle of an hour that lies wholly in the window, whose lists are kept: it
    // lands in a new data file of that hour.
    const hourStart = Math.floor((now - 3 * 60 * min) / (60 * min)) * 60 * min;
    const late: [number, number] = [hourStart + 25 * min + 250, 12345];
    await write(acme, [late]);
    const withLate = await waitFor('the late point to be queryable', async () => {
      const r = await rawPoints(acme);
      return r[0]!.values.length === points.length + 1 ? r : undefined;
    }, 30_000, 200);
    expect(withLate[0]!.values).toEqual(asAnswer([...points, late]));
    expect(await rawPoints(acme)).toEqual(withLate);
    // Only the new file was read.
    const after = await lists();
    expect(after.files_read! - used.files_read!).toBe(1);
    expect(after.kept_files! - used.kept_files!).toBe(1);
  });

  it("answers each tenant its own points though the series' labels (and ids) are the same", async () => {
    const globex = { key: (await floe.bootstrap('globex')).api_key, tenant: 'globex' };
    const theirs: Array<[number, number]> = points.map(([t, v]) => [t, v * 1000]);
    await write(globex, theirs);
    const answer = await waitFor("globex's points to be queryable", async () => {
      const r = await rawPoints(globex);
      return r.length === 1 && r[0]!.values.length === theirs.length ? r : undefined;
    }, 30_000, 200);
    expect(answer[0]!.values).toEqual(asAnswer(theirs));
    expect(await rawPoints(globex)).toEqual(answer);
    const ours = await rawPoints(acme);
    expect(ours[0]!.values.map(([, v]) => v)).not.toContain(String(300 * 1000));
    expect(ours[0]!.values).toHaveLength(points.length + 1);
  });
});

/**
 * A per-file read holds a row per series and file; one cut at querier.max_result_rows is read
 * again in halves, so a querier whose row limit is below series × files still answers in full.
 */
describe('PromQL point reads under a small querier.max_result_rows', () => {
  let floe: FloeUnderTest;
  const now = Math.floor(Date.now() / 60_000) * 60_000;
  const min = 60_000;

  afterAll(async () => {
    await floe?.stop();
  });

  it('answers every series of every hour', async () => {
    floe = await startFloe({ mode: 'embedded', config: { querier: { max_result_rows: 4 } } });
    const as = { key: (await floe.bootstrap('acme')).api_key, tenant: 'acme' };
    const instances = ['a', 'b', 'c'];
    const points: Array<[number, number]> = [];
    for (let ago = 300; ago >= 10; ago -= 20) points.push([now - ago * min + 500, ago]);
    const timeseries = instances.map((instance, k) => ({
      labels: [{ name: '__name__', value: 'disk_used' }, { name: 'instance', value: instance }, { name: 'job', value: 'node' }],
      samples: points.map(([t, v]) => ({ value: v + k, timestamp: BigInt(t) })),
    }));
    const body = compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries })));
    const res = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body, headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${as.key}`, 'x-tenant-id': as.tenant } });
    expect(res.status).toBe(204);
    const read = async () => {
      const r = await fetch(`${floe.routerUrl}/metricquery/api/v1/query`, {
        method: 'POST',
        body: new URLSearchParams({ query: 'disk_used[6h]', time: String(now / 1000) }),
        headers: { authorization: `Bearer ${as.key}`, 'x-tenant-id': as.tenant, 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(r.status).toBe(200);
      return ((await r.json()) as { data: { result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> } }).data.result;
    };
    const first = await waitFor('every point to be queryable', async () => {
      const r = await read();
      return r.length === 3 && r.every((s) => s.values.length === points.length) ? r : undefined;
    }, 30_000, 200);
    for (const [k, instance] of instances.entries()) {
      expect(first.find((s) => s.metric.instance === instance)!.values).toEqual(points.map(([t, v]) => [t / 1000, String(v + k)]));
    }
    // The lists were read in reads small enough, kept, and answer the next read.
    const status = async () => ((await (await fetch(`${floe.querierAdminUrl}/status`)).json()) as { series_lists: Record<string, number> }).series_lists;
    const filled = await status();
    expect(filled.kept_files).toBeGreaterThanOrEqual(5);
    expect(await read()).toEqual(first);
    const next = await status();
    expect(next.queries_from_lists! - filled.queries_from_lists!).toBe(1);
    expect(next.files_read).toBe(filled.files_read);
  });
});
