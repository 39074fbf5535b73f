import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * router.max_query_samples (Prometheus's --query.max-samples): a PromQL query that would read more
 * points than the limit is refused with Prometheus's 422 execution error in the shared envelope;
 * one within the limit answers. Ten points of one remote-written series, a limit of five. The
 * series also carries an exemplar, which /query_exemplars returns under the series' labels.
 */
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

describe('PromQL sample limit and exemplars', () => {
  let floe: FloeUnderTest;
  let key: string;
  const nowMs = Date.now() - 60_000;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { router: { max_query_samples: 5 } } });
    key = (await floe.bootstrap('acme')).api_key;
    const body = toBinary(
      PromWriteRequestSchema,
      create(PromWriteRequestSchema, {
        timeseries: [
          {
            labels: [{ name: '__name__', value: 'queue_depth' }, { name: 'job', value: 'q' }],
            samples: Array.from({ length: 10 }, (_, i) => ({ value: i, timestamp: BigInt(nowMs - (9 - i) * 1000) })),
            exemplars: [{ labels: [{ name: 'trace_id', value: TRACE_ID }, { name: 'user', value: 'ann' }], value: 7.5, timestamp: BigInt(nowMs - 2000) }],
          },
        ],
      }),
    );
    const res = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, {
      method: 'POST',
      body: compress(body),
      headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' },
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

  it("answers with Prometheus's infos and warnings: rate over a gauge's name, a quantile outside [0, 1]", async () => {
    const body = await waitFor('the points to be queryable', async () => {
      const res = await query('rate(queue_depth[3s]) or quantile_over_time(1.5, queue_depth[3s])');
      const b = (await res.json()) as { status: string; data: { result: unknown[] }; warnings?: string[]; infos?: string[] };
      return res.status === 200 && b.data.result.length > 0 ? b : undefined;
    }, 30_000, 200);
    expect(body.infos).toEqual(['PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "queue_depth" (1:6)']);
    expect(body.warnings).toEqual(['PromQL warning: quantile value should be between 0 and 1, got 1.5 (1:45)']);
    // A range query reports them too; a query without any has neither key.
    const range = await fetch(`${floe.routerUrl}/metricquery/api/v1/query_range`, {
      method: 'POST',
      body: new URLSearchParams({ query: 'rate(queue_depth[3s])', start: String(nowMs / 1000 - 2), end: String(nowMs / 1000), step: '1' }),
      headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme', 'content-type': 'application/x-www-form-urlencoded' },
    });
    const rangeBody = (await range.json()) as { infos?: string[]; warnings?: string[] };
    expect(range.status).toBe(200);
    expect(rangeBody.infos).toEqual(['PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "queue_depth" (1:6)']);
    expect(rangeBody.warnings).toBeUndefined();
    // (The selector reads 2 s: a bare one's 5 m lookback would pass the test's 5-sample limit.)
    const plain = (await (await query('last_over_time(queue_depth[2s])')).json()) as Record<string, unknown>;
    expect(Object.keys(plain).sort()).toEqual(['data', 'status']);
  });

  it('query_exemplars returns the exemplar under its series, and nothing for a selector that matches no series', async () => {
    const exemplars = (q: string) =>
      fetch(`${floe.routerUrl}/metricquery/api/v1/query_exemplars?${new URLSearchParams({ query: q, start: String(nowMs / 1000 - 60), end: String(nowMs / 1000 + 1) })}`, {
        headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' },
      });
    const body = await waitFor('the exemplar to be queryable', async () => {
      const res = await exemplars('queue_depth{job="q"}');
      const b = (await res.json()) as { status: string; data: unknown[] };
      return res.status === 200 && b.data.length > 0 ? b : undefined;
    }, 30_000, 200);
    expect(body).toEqual({
      status: 'success',
      data: [{ seriesLabels: { __name__: 'queue_depth', job: 'q' }, exemplars: [{ labels: { trace_id: TRACE_ID, user: 'ann' }, value: '7.5', timestamp: (nowMs - 2000) / 1000 }] }],
    });
    const none = await exemplars('queue_depth{job="other"}');
    expect(none.status).toBe(200);
    expect(await none.json()).toEqual({ status: 'success', data: [] });
  });
});
