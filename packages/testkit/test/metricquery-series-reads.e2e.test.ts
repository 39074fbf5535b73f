import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromWriteRequestSchema, create, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * The router reads plain series labels first from the last hour of a query's window, then from the
 * whole window for series that stopped before it, and reads points only of the series the
 * selectors match. Two remote-written gauges of one name: one reporting 2.5 hours ago only,
 * one now; a three-hour range query must answer both with their labels and values, and a label
 * matcher must pick each alone.
 */
describe('PromQL reads of series that stopped before the last hour of the window', () => {
  let floe: FloeUnderTest;
  let key: string;
  const now = Math.floor(Date.now() / 60_000) * 60_000;
  const min = 60_000;

  /** Remote-writes room_temp{instance, job="sensors"} series (points: [ms, value]) as a tenant. */
  const write = async (as: { key: string; tenant: string }, series: Record<string, Array<[number, number]>>) => {
    const timeseries = Object.entries(series).map(([instance, points]) => ({
      labels: [{ name: '__name__', value: 'room_temp' }, { name: 'instance', value: instance }, { name: 'job', value: 'sensors' }],
      samples: points.map(([t, value]) => ({ value, timestamp: BigInt(t) })),
    }));
    const body = compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { timeseries })));
    const res = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body, headers: { ...REMOTE_WRITE_HEADERS, authorization: `Bearer ${as.key}`, 'x-tenant-id': as.tenant } });
    expect(res.status).toBe(204);
  };

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    key = (await floe.bootstrap('acme')).api_key;
    await write({ key, tenant: 'acme' }, {
      old: [[now - 150 * min + 500, 1], [now - 149 * min + 500, 2]],
      new: [[now - 10 * min + 500, 3], [now - 9 * min + 500, 4]],
    });
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const range = async (query: string, as = { key, tenant: 'acme' }, hours = 3) => {
    const res = await fetch(`${floe.routerUrl}/metricquery/api/v1/query_range`, {
      method: 'POST',
      body: new URLSearchParams({ query, start: String((now - hours * 60 * min) / 1000), end: String(now / 1000), step: '60' }),
      headers: { authorization: `Bearer ${as.key}`, 'x-tenant-id': as.tenant, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> } };
    return body.data.result;
  };

  it('answers both series with their labels, and each alone for its instance', async () => {
    const all = await waitFor('both series to be queryable', async () => {
      const r = await range('room_temp');
      return r.length === 2 ? r : undefined;
    }, 30_000, 200);
    const byInstance = Object.fromEntries(all.map((s) => [s.metric.instance, s]));
    expect(byInstance.old!.metric).toEqual({ __name__: 'room_temp', instance: 'old', job: 'sensors' });
    expect(byInstance.new!.metric).toEqual({ __name__: 'room_temp', instance: 'new', job: 'sensors' });
    // The old series: 2 from 149 min (+0.5 s) ago, for the steps of the next five minutes (the lookback).
    expect(byInstance.old!.values[0]).toEqual([(now - 149 * min) / 1000, '1']);
    expect(byInstance.old!.values.at(-1)).toEqual([(now - 144 * min) / 1000, '2']);
    expect(byInstance.new!.values.at(-1)).toEqual([(now - 4 * min) / 1000, '4']);

    const old = await range('room_temp{instance="old"}');
    expect(old.map((s) => s.metric)).toEqual([{ __name__: 'room_temp', instance: 'old', job: 'sensors' }]);
    expect(old[0]!.values).toEqual(byInstance.old!.values);
    const fresh = await range('sum by (instance) (room_temp{instance=~"n.*", job="sensors"})');
    expect(fresh.map((s) => s.metric)).toEqual([{ instance: 'new' }]);
    expect(await range('room_temp{instance="nowhere"}')).toEqual([]);

    // A series new since the labels were cached: its labels are read, and its points beside those
    // of the cached series that match.
    await write({ key, tenant: 'acme' }, { newer: [[now - 3 * min + 500, 5]] });
    const both = await waitFor('the newer series to be queryable', async () => {
      const r = await range('room_temp{instance=~"ne.*"}');
      return r.length === 2 ? r : undefined;
    }, 30_000, 200);
    expect(both.map((s) => s.metric.instance).sort()).toEqual(['new', 'newer']);
    expect(both.find((s) => s.metric.instance === 'newer')!.values).toEqual([2, 1, 0].map((k) => [(now - k * min) / 1000, '5']));
  });

  it("keeps each tenant's series apart though their labels (and so their series ids) are the same", async () => {
    // Another tenant sends room_temp{instance="new", job="sensors"} too, with its own values. The
    // router's label cache and series-id listings are keyed by tenant: neither sees the other's.
    const globex = { key: (await floe.bootstrap('globex')).api_key, tenant: 'globex' };
    await write(globex, { new: [[now - 10 * min + 500, 100]] });
    for (const hours of [3, 1]) {
      const theirs = await waitFor("globex's series to be queryable", async () => {
        const r = await range('room_temp{instance="new"}', globex, hours);
        return r.length === 1 ? r : undefined;
      }, 30_000, 200);
      expect(new Set(theirs[0]!.values.map(([, v]) => v))).toEqual(new Set(['100']));
      const ours = await range('room_temp{instance="new"}', { key, tenant: 'acme' }, hours);
      expect(ours).toHaveLength(1);
      expect(new Set(ours[0]!.values.map(([, v]) => v))).toEqual(new Set(['3', '4']));
      // And globex has no other series of that name.
      expect((await range('room_temp', globex, hours)).map((s) => s.metric.instance)).toEqual(['new']);
    }
  });
});
