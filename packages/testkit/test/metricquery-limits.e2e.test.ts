import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import { startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * router.max_query_samples (Prometheus's --query.max-samples): a PromQL query that would read more
 * points than the limit is refused with Prometheus's 422 execution error in the shared envelope;
 * one within the limit answers. Ten points of one remote-written series, a limit of five.
 */
describe('PromQL sample limit', () => {
  let floe: FloeUnderTest;
  let key: string;
  const nowMs = Date.now() - 60_000;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { router: { max_query_samples: 5 } } });
    key = (await floe.bootstrap('acme')).api_key;
    const body = toBinary(
      PromWriteRequestSchema,
      create(PromWriteRequestSchema, {
        timeseries: [{ labels: [{ name: '__name__', value: 'queue_depth' }, { name: 'job', value: 'q' }], samples: Array.from({ length: 10 }, (_, i) => ({ value: i, timestamp: BigInt(nowMs - (9 - i) * 1000) })) }],
      }),
    );
    const res = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, {
      method: 'POST',
      body: compress(body),
      headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme', 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', 'x-prometheus-remote-write-version': '0.1.0' },
    });
    expect(res.status).toBe(204);
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const query = (q: string) =>
    fetch(`${floe.routerUrl}/metricquery/api/v1/query?${new URLSearchParams({ query: q, time: String(nowMs / 1000 + 0.5) })}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' } });

  it('answers within the limit and refuses beyond it with 422', async () => {
    // (t − 3 s, t] holds 3 points: within the limit (waits until the writer has committed them).
    const within = await waitFor('the points to be queryable', async () => {
      const res = await query('count_over_time(queue_depth[3s])');
      const body = (await res.json()) as { data?: { result?: Array<{ value: [number, string] }> } };
      return res.status === 200 && body.data?.result?.[0]?.value[1] === '3' ? body : undefined;
    }, 30_000, 200);
    expect(within.data!.result).toHaveLength(1);
    const res = await query('count_over_time(queue_depth[1m])');
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ status: 'error', errorType: 'execution', error: 'query processing would load too many samples into memory in query execution' });
  });
});
