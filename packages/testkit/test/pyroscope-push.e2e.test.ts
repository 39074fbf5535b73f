import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, PprofProfileSchema, PyroPushRequestSchema, toBinary, toJsonString } from '@floe/proto';
import { goCpuPprof, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Pyroscope's push API end to end, in both modes: a pprof CPU profile pushed over Connect as
 * Grafana Alloy's pyroscope.write pushes it (binary protobuf; the pprof gzip-compressed) and one
 * pushed as Connect JSON come back from the profile query API under their series labels, with the
 * flamegraph's total; bad profiles and missing credentials get Connect's error shape; another
 * tenant sees nothing.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('Pyroscope push API (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';

  const push = (body: Uint8Array | string, contentType: string, as: { key?: string | null; tenant?: string } = {}) =>
    fetch(`${floe.otlpHttpUrl}/push.v1.PusherService/Push`, {
      method: 'POST',
      body,
      headers: { 'content-type': contentType, 'connect-protocol-version': '1', 'x-tenant-id': as.tenant ?? 'acme', ...(as.key === null ? {} : { authorization: `Bearer ${as.key ?? key}` }) },
    });
  const render = async (query: string, tenant = 'acme', k = key) => {
    const qs = new URLSearchParams({ query, from: String(Number(nowNs / 1_000_000n) - 60_000), until: String(Number(nowNs / 1_000_000n) + 60_000) });
    const res = await fetch(`${floe.routerUrl}/profilequery/render?${qs}`, { headers: { authorization: `Bearer ${k}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { flamebearer: { names: string[]; numTicks: number } }).flamebearer;
  };

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap('acme')).api_key;
    otherKey = (await floe.bootstrap('globex')).api_key;
    const request = (service: string, raw: Uint8Array) =>
      create(PyroPushRequestSchema, { series: [{ labels: [{ name: '__name__', value: 'process_cpu' }, { name: 'service_name', value: service }, { name: 'env', value: 'prod' }], samples: [{ rawProfile: raw, ID: 'x' }] }] });
    const binary = await push(toBinary(PyroPushRequestSchema, request('alloy-app', gzipSync(goCpuPprof(nowNs)))), 'application/proto');
    expect(binary.status).toBe(200);
    expect(binary.headers.get('content-type')).toContain('application/proto');
    const json = await push(toJsonString(PyroPushRequestSchema, request('json-app', goCpuPprof(nowNs + 1n))), 'application/json');
    expect(json.status).toBe(200);
    expect(await json.json()).toEqual({});
    await waitFor('the pushed profiles to be queryable', async () => ((await render(`${CPU}{service_name="json-app"}`)).numTicks === 40_000_000 ? true : undefined), 30_000, 250);
  }, 180_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('answers the profile query API under the pushed labels', async () => {
    const fb = await render(`${CPU}{service_name="alloy-app", env="prod"}`);
    expect(fb.numTicks).toBe(40_000_000);
    expect(fb.names).toEqual(expect.arrayContaining(['total', 'main.main', 'main.work']));
    expect((await render('process_cpu:samples:count:cpu:nanoseconds{service_name="alloy-app"}')).numTicks).toBe(4);
    expect((await render(`${CPU}{service_name="alloy-app"}`, 'globex', otherKey)).numTicks).toBe(0);
  });

  it("serves a span's profile from the span_id labels Pyroscope's SDKs put on samples", async () => {
    const strings = ['', 'cpu', 'nanoseconds', 'main.handle', 'main.other', 'span_id', 'a1b2c3d4e5f60718', '0102030405060708'];
    const raw = toBinary(
      PprofProfileSchema,
      create(PprofProfileSchema, {
        sampleType: [{ type: 1n, unit: 2n }],
        periodType: { type: 1n, unit: 2n },
        timeNanos: nowNs,
        stringTable: strings,
        function: [
          { id: 1n, name: 3n },
          { id: 2n, name: 4n },
        ],
        location: [
          { id: 1n, line: [{ functionId: 1n }] },
          { id: 2n, line: [{ functionId: 2n }] },
        ],
        sample: [
          { locationId: [1n], value: [7_000_000n], label: [{ key: 5n, str: 6n }] },
          { locationId: [2n], value: [2_000_000n], label: [{ key: 5n, str: 7n }] },
        ],
      }),
    );
    const pushed = await push(toBinary(PyroPushRequestSchema, create(PyroPushRequestSchema, { series: [{ labels: [{ name: '__name__', value: 'process_cpu' }, { name: 'service_name', value: 'spans-app' }], samples: [{ rawProfile: raw }] }] })), 'application/proto');
    expect(pushed.status).toBe(200);
    await waitFor('the span profile', async () => ((await render(`${CPU}{service_name="spans-app"}`)).numTicks === 9_000_000 ? true : undefined), 30_000, 250);
    const res = await fetch(`${floe.routerUrl}/profilequery/querier.v1.QuerierService/SelectMergeSpanProfile`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'connect-protocol-version': '1', authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' },
      body: JSON.stringify({ profileTypeID: CPU, labelSelector: '{service_name="spans-app"}', spanSelector: ['a1b2c3d4e5f60718'], start: String(Number(nowNs / 1_000_000n) - 60_000), end: String(Number(nowNs / 1_000_000n) + 60_000) }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { flamegraph: { names: string[]; total: string } };
    expect(body.flamegraph.total).toBe('7000000');
    expect(body.flamegraph.names).toContain('main.handle');
    expect(body.flamegraph.names).not.toContain('main.other');
  });

  it("answers errors in Connect's shape", async () => {
    const bad = toBinary(PyroPushRequestSchema, create(PyroPushRequestSchema, { series: [{ labels: [{ name: 'service_name', value: 'x' }], samples: [{ rawProfile: new Uint8Array([0x0a, 0xff]) }] }] }));
    const r = await push(bad, 'application/proto');
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ code: 'invalid_argument', message: expect.stringContaining('not a valid pprof') });
    const noKey = await push(bad, 'application/proto', { key: null });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ code: 'unauthenticated' });
    const wrongTenant = await push(bad, 'application/proto', { key: otherKey, tenant: 'acme' });
    expect(wrongTenant.status).toBe(403);
    expect(await wrongTenant.json()).toMatchObject({ code: 'permission_denied' });
    const codec = await push('x', 'text/plain');
    expect(codec.status).toBe(415);
  });
});
