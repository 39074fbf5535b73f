import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { ExportTraceServiceRequestSchema, create, toBinary } from '@floe/proto';
import { startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * kill -9 of the compactor while it rewrites a table (cluster): the rewrite is published by one
 * catalog commit or not at all, so every span stays readable exactly once while the compactor is
 * down, after its restart, and after the pass it then completes. Likewise kill -9 of the querier
 * during a query: the caller gets the unavailable envelope at once, and the restarted querier
 * answers the same query.
 */
describe('kill -9 of the compactor and the querier (cluster)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'crashy';
  const ROUNDS = 6;
  const REQUESTS_PER_ROUND = 10;
  const SPANS_PER_REQUEST = 1000;
  const TOTAL = ROUNDS * REQUESTS_PER_ROUND * SPANS_PER_REQUEST;

  const sql = async (q: string) =>
    (await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(q), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 30_000 })).toArray();
  const stored = async () => {
    const row = (await sql(`SELECT count(*) AS total, count(DISTINCT span_id) AS distinct_ids FROM traces`))[0]!;
    return { total: Number(row.total), distinct: Number(row.distinct_ids) };
  };
  const ops = (path: string, body?: unknown) =>
    fetch(`${floe.routerUrl}/api/v1/ops/compact${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${floe.adminApiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const dataFiles = async () => {
    const res = await ops('/dry-run', { tenant, table: 'traces' });
    expect(res.status).toBe(200);
    return ((await res.json()) as { tables: Array<{ files: number }> }).tables[0]?.files ?? 0;
  };

  function request(): Buffer {
    const now = BigInt(Date.now()) * 1_000_000n;
    const spans = Array.from({ length: SPANS_PER_REQUEST }, (_, i) => ({
      traceId: randomBytes(16),
      spanId: randomBytes(8),
      name: `op-${i % 17}`,
      startTimeUnixNano: now + BigInt(i),
      endTimeUnixNano: now + BigInt(i) + 1000n,
      attributes: [{ key: 'http.route', value: { value: { case: 'stringValue' as const, value: `/r/${i % 50}` } } }],
    }));
    const req = create(ExportTraceServiceRequestSchema, {
      resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: 'crash-test' } } }] }, scopeSpans: [{ spans }] }],
    });
    return Buffer.from(toBinary(ExportTraceServiceRequestSchema, req));
  }

  beforeAll(async () => {
    // Files are mergeable at once; the periodic pass stays out of the way (passes run on demand).
    floe = await startFloe({ mode: 'cluster', config: { compactor: { min_file_age: '0s', interval: '1h', open_hour_interval: '0s' }, writer: { flush_interval: '200ms', poll_interval: '50ms' } } });
    key = (await floe.bootstrap(tenant)).api_key;
    // Rounds of one size, each committed before the next: files the pass merges together.
    for (let round = 1; round <= ROUNDS; round++) {
      await Promise.all(
        Array.from({ length: REQUESTS_PER_ROUND }, async () => {
          const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: request(), headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/x-protobuf' } });
          expect(res.status).toBe(200);
        }),
      );
      const want = round * REQUESTS_PER_ROUND * SPANS_PER_REQUEST;
      await waitFor(`round ${round} committed`, async () => ((await stored()).total === want ? true : undefined), 60_000, 200);
    }
  }, 240_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('a compactor killed during its pass loses and duplicates nothing; restarted, it completes the pass', async () => {
    const before = await dataFiles();
    expect(before).toBeGreaterThanOrEqual(ROUNDS);
    const compactorStatus = async () => (await (await fetch(`${floe.compactorAdminUrl}/status`)).json()) as { runningSince: string | null; passes: number };
    const passesBefore = (await compactorStatus()).passes;
    expect((await ops('', { tenant, table: 'traces' })).status).toBe(202);
    // Killed as soon as the pass is running (planning, rewriting or committing; should it have
    // ended between two looks, killed after it, which must hold as well).
    await waitFor(
      'the pass running',
      async () => {
        const status = await compactorStatus();
        return status.runningSince !== null || status.passes > passesBefore ? true : undefined;
      },
      30_000,
      2,
    );
    await floe.kill('compactor');
    expect(await stored()).toEqual({ total: TOTAL, distinct: TOTAL });

    await floe.restart('compactor');
    expect(await stored()).toEqual({ total: TOTAL, distinct: TOTAL });
    const started = await ops('', { tenant, table: 'traces' });
    expect(started.status).toBe(202);
    const { id } = (await started.json()) as { id: string };
    type Status = { requests: Array<{ id: string; finishedAt: string | null; result: { failed: boolean; filesAfter: number } | null }> };
    const done = await waitFor('the pass after the restart', async () => ((await (await ops('/status')).json()) as Status).requests.find((r) => r.id === id && r.finishedAt !== null), 120_000, 200);
    expect(done.result).toMatchObject({ failed: false });
    expect(await dataFiles()).toBeLessThan(before);
    expect(await stored()).toEqual({ total: TOTAL, distinct: TOTAL });
  });

  it('a querier killed during a query: the caller gets 503 in the envelope, the restarted querier answers', async () => {
    const search = () => fetch(`${floe.routerUrl}/tracequery/api/search?limit=5`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    // A query long enough to be running when the querier dies (a self-join of the table).
    const heavy = sql(`SELECT count(*) AS n FROM traces a, traces b WHERE a.name = b.name AND a.span_id < b.span_id`).then(
      () => 'answered',
      (e: unknown) => (e as Error).message,
    );
    await new Promise((r) => setTimeout(r, 300));
    await floe.kill('querier');
    const killed = await heavy;
    expect(killed).not.toBe('answered');
    const down = await search();
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ status: 'error', errorType: 'unavailable' });
    await floe.restart('querier');
    // The router's channel looks again within a second (then fails fast no more).
    await waitFor('the router reaching the restarted querier', async () => ((await search()).status === 200 ? true : undefined), 10_000, 100);
    expect(await stored()).toEqual({ total: TOTAL, distinct: TOTAL });
  });
});
