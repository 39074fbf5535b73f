import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { Querier, TempoStreamingQuerier, TempoSearchBlockRequestSchema, TempoSearchRequestSchema, TempoSearchTagsRequestSchema, create, grpcServiceDefinition, type TempoSearchResponse, type TempoSearchTagsV2Response } from '@floe/proto';
import { protoTraceExporter, sendSampleTrace, startFloe, waitFor, type FloeMode, type FloeUnderTest, type SentTrace } from '../src/index.ts';

/**
 * Tempo's search and tag discovery (spec 1, "Trace query API") over traces exported by the real
 * OpenTelemetry SDK: what Grafana's Tempo data source asks (reference/api-contracts.md §3.5),
 * answered from the stored rows, with the spec's 400s and 501s and the tenant's own data only.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('trace search and tags (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  const tenant = 'searcher';
  let shop: SentTrace;
  let billing: SentTrace;
  const start = Math.floor(Date.now() / 1000) - 600;
  const window = () => `start=${start}&end=${Math.floor(Date.now() / 1000) + 60}`;

  const get = (path: string, apiKey = key, asTenant = tenant) => fetch(`${floe.routerUrl}/tracequery${path}`, { headers: { authorization: `Bearer ${apiKey}`, 'x-tenant-id': asTenant, accept: 'application/json' } });
  const json = async <T>(path: string): Promise<T> => {
    const res = await get(path);
    expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
    return (await res.json()) as T;
  };
  const search = (q: string, extra = '') => json<SearchBody>(`/api/search?q=${encodeURIComponent(q)}&${window()}${extra}`);

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
    otherKey = (await floe.bootstrap('bystander')).api_key;
    shop = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'shop');
    billing = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'billing');
    // SimpleSpanProcessor exports each span as it ends, so a trace's spans may be committed apart:
    // wait for all three of each (the root comes last), not just for both trace ids.
    const whole = (t: SearchBody['traces'][number]) => t.spanSets[0]!.matched === 3;
    await waitFor('both traces searchable, whole', async () => {
      const { traces } = await search('{}');
      return traces.length === 2 && traces.every(whole) ? true : undefined;
    }, 30_000, 200);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('finds a trace by service, with its root, bounds and matching span', async () => {
    const body = await search('{ resource.service.name = "shop" }');
    expect(body.traces).toHaveLength(1);
    const t = body.traces[0]!;
    expect(t.traceID).toBe(shop.traceId);
    expect(t.rootServiceName).toBe('shop');
    expect(t.rootTraceName).toBe('GET /checkout');
    expect(BigInt(t.startTimeUnixNano)).toBeGreaterThan(BigInt(start) * 1_000_000_000n);
    expect(typeof t.durationMs).toBe('number');
    expect(t.spanSets).toHaveLength(1);
    expect(t.spanSets[0]!.matched).toBe(3);
    expect(t.spanSets[0]!.spans.map((s) => s.spanID).sort()).toEqual([...shop.spanIds].sort());
    expect(t.spanSet).toEqual(t.spanSets[0]);
    for (const s of t.spanSets[0]!.spans) {
      expect(s.attributes).toEqual([{ key: 'service.name', value: { stringValue: 'shop' } }]);
      expect(Object.keys(s).sort()).toEqual(['attributes', 'durationNanos', 'name', 'spanID', 'startTimeUnixNano']);
    }
    expect(Object.keys(body).sort()).toEqual(['metrics', 'traces']);
  });

  it('matches typed attributes and intrinsics, showing the queried attributes', async () => {
    const errors = await search('{ status = error && .http.status_code = 500 && kind = server }');
    expect(errors.traces.map((t) => t.traceID).sort()).toEqual([shop.traceId, billing.traceId].sort());
    for (const t of errors.traces) {
      expect(t.spanSets[0]!.matched).toBe(1);
      expect(t.spanSets[0]!.spans[0]).toMatchObject({ name: 'GET /checkout', attributes: [{ key: 'http.status_code', value: { intValue: '500' } }] });
    }
    const db = await search('{ span.db.system = "postgresql" && .service.name = "billing" }');
    expect(db.traces.map((t) => [t.traceID, t.spanSets[0]!.spans.map((s) => s.name)])).toEqual([[billing.traceId, ['SELECT carts']]]);
    expect(db.traces[0]!.spanSets[0]!.spans[0]!.attributes).toEqual([
      { key: 'service.name', value: { stringValue: 'billing' } },
      { key: 'db.system', value: { stringValue: 'postgresql' } },
    ]);
    expect((await search('{ .ratio = 0.25 && .cache.hit = false && name = "GET /checkout" }')).traces).toHaveLength(2);
    expect((await search('{ .http.status_code = "500" }')).traces).toEqual([]);
    expect((await search('{ resource.deployment.environment = "e2e" && span.deployment.environment = "e2e" }')).traces).toEqual([]);
  });

  it('takes spss, limit, minDuration and the legacy tags parameter', async () => {
    const capped = await search('{ resource.service.name = "shop" }', '&spss=1');
    expect(capped.traces[0]!.spanSets[0]!.matched).toBe(3);
    expect(capped.traces[0]!.spanSets[0]!.spans).toHaveLength(1);
    expect((await search('{}', '&limit=1')).traces).toHaveLength(1);
    expect((await search('{}', '&minDuration=1h')).traces).toEqual([]);
    expect((await search('{}', '&maxDuration=1h')).traces).toHaveLength(2);
    const legacy = await json<SearchBody>(`/api/search?tags=${encodeURIComponent('service.name=billing http.method=GET')}&${window()}`);
    expect(legacy.traces.map((t) => t.traceID)).toEqual([billing.traceId]);
    const old = await json<SearchBody>(`/api/search?q=${encodeURIComponent('{}')}&start=${start - 7200}&end=${start - 3600}`);
    expect(old.traces).toEqual([]);
  });

  it.each([
    ['q=hello', 400, 'bad_data'],
    ['q=%7B%20.a%20%7D', 400, 'bad_data'],
    ['q=%7B%20.a%20!%3D%20%22x%22%20%7D', 501, 'not_implemented'],
    ['q=%7B%20duration%20%3E%20100ms%20%7D', 501, 'not_implemented'],
    ['q=%7B%7D&tags=a%3Db', 400, 'bad_data'],
    ['tags=%22oops', 400, 'bad_data'],
    ['q=%7B%7D&start=1700000000000', 400, 'bad_data'],
    ['q=%7B%7D&start=1700000100&end=1700000000', 400, 'bad_data'],
    ['q=%7B%7D&limit=0', 400, 'bad_data'],
    ['q=%7B%7D&minDuration=soon', 400, 'bad_data'],
  ])('/api/search?%s is %i %s in the shared envelope', async (query, status, errorType) => {
    const res = await get(`/api/search?${query}`);
    expect(res.status).toBe(status);
    const body = (await res.json()) as { status: string; errorType: string; error: string };
    expect(body).toMatchObject({ status: 'error', errorType });
    expect(body.error.length).toBeGreaterThan(0);
  });

  it('TraceQL metrics answer 501', async () => {
    for (const path of ['/api/metrics/query_range?q=%7B%7D%7Crate()', '/api/metrics/query?q=%7B%7D%7Crate()']) {
      const res = await get(path);
      expect(res.status).toBe(501);
      expect(((await res.json()) as { errorType: string }).errorType).toBe('not_implemented');
    }
  });

  it('lists tag names, v1 flat and v2 by scope', async () => {
    const v1 = await json<{ tagNames: string[] }>(`/api/search/tags?${window()}`);
    expect(v1.tagNames).toEqual([...v1.tagNames].sort());
    expect(v1.tagNames).toEqual(expect.arrayContaining(['db.system', 'http.method', 'http.status_code', 'ratio', 'service.name', 'deployment.environment', 'host.cpus', 'name', 'status', 'kind', 'duration', 'rootServiceName', 'rootName']));
    const v2 = await json<{ scopes: Array<{ name: string; tags: string[] }> }>(`/api/v2/search/tags?${window()}`);
    expect(v2.scopes.map((s) => s.name)).toEqual(['resource', 'span', 'intrinsic']);
    const scope = (n: string) => v2.scopes.find((s) => s.name === n)!.tags;
    expect(scope('resource')).toEqual(['deployment.environment', 'host.cpus', 'service.name']);
    expect(scope('span')).toEqual(expect.arrayContaining(['cache.hit', 'db.system', 'http.method', 'items']));
    expect(scope('span')).not.toContain('host.cpus');
    expect(scope('intrinsic')).toEqual(['duration', 'kind', 'name', 'rootName', 'rootServiceName', 'status']);
    const resourceOnly = await json<{ scopes: Array<{ name: string }> }>(`/api/v2/search/tags?scope=resource&${window()}`);
    expect(resourceOnly.scopes.map((s) => s.name)).toEqual(['resource']);
    expect((await get(`/api/v2/search/tags?scope=nonsense`)).status).toBe(400);
    const empty = await json<{ scopes: Array<{ name: string; tags: string[] }> }>(`/api/v2/search/tags?start=${start - 7200}&end=${start - 3600}`);
    expect(empty.scopes.find((s) => s.name === 'intrinsic')!.tags).toEqual(['duration', 'kind', 'name', 'rootName', 'rootServiceName', 'status']);
    expect(empty.scopes.find((s) => s.name === 'span')!.tags).toEqual([]);
    // q narrows the keys to those of the spans it matches; a half-typed q narrows nothing.
    const dbOnly = await json<{ scopes: Array<{ name: string; tags: string[] }> }>(`/api/v2/search/tags?scope=span&q=${encodeURIComponent('{ span.db.system = "postgresql" }')}&${window()}`);
    expect(dbOnly.scopes[0]!.tags).toContain('db.system');
    expect(dbOnly.scopes[0]!.tags).not.toContain('http.method');
    const typing = await json<{ scopes: Array<{ name: string; tags: string[] }> }>(`/api/v2/search/tags?scope=span&q=${encodeURIComponent('{ span.db.system = ')}&${window()}`);
    expect(typing.scopes[0]!.tags).toEqual(scope('span'));
  });

  it('lists tag values, v1 as text and v2 typed; scoped names resolve like bare ones', async () => {
    expect((await json<{ tagValues: string[] }>(`/api/search/tag/service.name/values?${window()}`)).tagValues).toEqual(['billing', 'shop']);
    const v2 = (tag: string, extra = '') => json<{ tagValues: Array<{ type: string; value: string }> }>(`/api/v2/search/tag/${encodeURIComponent(tag)}/values?${window()}${extra}`);
    expect((await v2('resource.service.name')).tagValues).toEqual([{ type: 'string', value: 'billing' }, { type: 'string', value: 'shop' }]);
    expect((await v2('.service.name')).tagValues).toEqual([{ type: 'string', value: 'billing' }, { type: 'string', value: 'shop' }]);
    expect((await v2('span.http.status_code')).tagValues).toEqual([{ type: 'int', value: '500' }]);
    expect((await v2('resource.http.status_code')).tagValues).toEqual([{ type: 'int', value: '500' }]);
    expect((await v2('status')).tagValues).toEqual([{ type: 'keyword', value: 'error' }, { type: 'keyword', value: 'unset' }]);
    expect((await v2('kind')).tagValues).toEqual([
      { type: 'keyword', value: 'client' },
      { type: 'keyword', value: 'internal' },
      { type: 'keyword', value: 'server' },
    ]);
    expect((await v2('name', `&q=${encodeURIComponent('{ span.db.system = "postgresql" }')}`)).tagValues).toEqual([{ type: 'string', value: 'SELECT carts' }]);
    // Grafana sends the query being typed, often incomplete: it narrows nothing.
    expect((await v2('resource.service.name', `&q=${encodeURIComponent('{ span.http.method = }')}`)).tagValues).toHaveLength(2);
    expect((await v2('no.such.tag')).tagValues).toEqual([]);
    expect((await v2('duration')).tagValues).toEqual([]);
    // A trace's root service and name: the root spans' only.
    expect((await v2('rootServiceName')).tagValues).toEqual([{ type: 'string', value: 'billing' }, { type: 'string', value: 'shop' }]);
    expect((await v2('trace:rootName')).tagValues).toEqual([{ type: 'string', value: 'GET /checkout' }]);
    expect((await json<{ tagValues: string[] }>(`/api/search/tag/rootName/values?${window()}`)).tagValues).toEqual(['GET /checkout']);
    expect((await get(`/api/v2/search/tag/name/values?start=1700000000000`)).status).toBe(400);
  });

  it("serves SearchRecent and the static tags on the querier's Tempo protocol, tenant from X-Scope-OrgID", async () => {
    const client = new (grpc.makeGenericClientConstructor(grpcServiceDefinition(Querier), 'Querier'))(floe.flightAddress, grpc.credentials.createInsecure()) as grpc.Client &
      Record<string, (req: unknown, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void>;
    const call = <T>(method: string, req: unknown, md: Record<string, string>) =>
      new Promise<T>((resolve, reject) => {
        const metadata = new grpc.Metadata();
        for (const [k, v] of Object.entries(md)) metadata.set(k, v);
        client[method]!(req, metadata, (err, res) => (err ? reject(err) : resolve(res as T)));
      });
    try {
      const now = Math.floor(Date.now() / 1000);
      const req = create(TempoSearchRequestSchema, { Query: '{ resource.service.name = "billing" && status = error }', start: start, end: now + 60, SpansPerSpanSet: 1 });
      const res = await call<TempoSearchResponse>('SearchRecent', req, { authorization: `Bearer ${key}`, 'x-scope-orgid': tenant });
      expect(res.traces.map((t) => [t.traceID, t.rootServiceName, t.rootTraceName, t.spanSets[0]!.matched, t.spanSets[0]!.spans.length])).toEqual([[billing.traceId, 'billing', 'GET /checkout', 2, 1]]);
      const tags = create(TempoSearchRequestSchema, { Tags: { 'service.name': 'shop', 'http.status_code': '500' }, start, end: now + 60 });
      expect((await call<TempoSearchResponse>('SearchRecent', tags, { authorization: `Bearer ${key}`, 'x-scope-orgid': tenant })).traces.map((t) => t.traceID)).toEqual([shop.traceId]);
      // Another tenant's header with this tenant's key, and no key at all, are refused; the other tenant sees nothing of this one.
      await expect(call('SearchRecent', req, { authorization: `Bearer ${key}`, 'x-scope-orgid': 'bystander' })).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
      await expect(call('SearchRecent', req, { 'x-scope-orgid': tenant })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      expect((await call<TempoSearchResponse>('SearchRecent', req, { authorization: `Bearer ${otherKey}`, 'x-scope-orgid': 'bystander' })).traces).toEqual([]);
      await expect(call('SearchRecent', create(TempoSearchRequestSchema, { Query: '{ .a != 1 }' }), { authorization: `Bearer ${key}`, 'x-scope-orgid': tenant })).rejects.toMatchObject({
        code: grpc.status.UNIMPLEMENTED,
      });
      const v2 = await call<TempoSearchTagsV2Response>('SearchTagsV2', create(TempoSearchTagsRequestSchema, {}), { authorization: `Bearer ${key}`, 'x-scope-orgid': tenant });
      expect(v2.scopes.map((s) => [s.name, s.tags])).toEqual([
        ['resource', ['service.name']],
        ['intrinsic', ['name', 'status']],
      ]);
      await expect(call('SearchBlock', create(TempoSearchBlockRequestSchema, {}), { authorization: `Bearer ${key}`, 'x-scope-orgid': tenant })).rejects.toMatchObject({ code: grpc.status.UNIMPLEMENTED });
    } finally {
      client.close();
    }
  });

  it("serves Grafana's streaming search (tempopb.StreamingQuerier/Search) as gRPC on the router's own port, beside HTTP", async () => {
    const target = new URL(floe.routerUrl).host;
    const client = new (grpc.makeGenericClientConstructor(grpcServiceDefinition(TempoStreamingQuerier), 'StreamingQuerier'))(target, grpc.credentials.createInsecure()) as grpc.Client &
      Record<string, (req: unknown, md: grpc.Metadata) => grpc.ClientReadableStream<unknown>>;
    const stream = <T>(method: string, req: unknown, md: Record<string, string>) =>
      new Promise<T[]>((resolve, reject) => {
        const metadata = new grpc.Metadata();
        for (const [k, v] of Object.entries(md)) metadata.set(k, v);
        const got: T[] = [];
        const call = client[method]!(req, metadata);
        call.on('data', (m: T) => got.push(m));
        call.on('error', reject);
        call.on('end', () => resolve(got));
      });
    try {
      const now = Math.floor(Date.now() / 1000);
      const req = create(TempoSearchRequestSchema, { Query: '{ resource.service.name = "billing" && status = error }', start, end: now + 60, SpansPerSpanSet: 1, Limit: 20 });
      // Grafana's data source sends its configured credentials as metadata (Basic auth names the tenant too).
      const basic = `Basic ${Buffer.from(`${tenant}:${key}`).toString('base64')}`;
      for (const md of [{ authorization: `Bearer ${key}`, 'x-scope-orgid': tenant }, { authorization: basic }] as Record<string, string>[]) {
        const messages = await stream<TempoSearchResponse>('Search', req, md);
        expect(messages).toHaveLength(1);
        expect(messages[0]!.traces.map((t) => [t.traceID, t.rootServiceName, t.spanSets[0]!.matched])).toEqual([[billing.traceId, 'billing', 2]]);
      }
      // "Save & test" with streaming on: Search for {} over the last 15 minutes, limit 1.
      const probe = await stream<TempoSearchResponse>('Search', create(TempoSearchRequestSchema, { Query: '{}', start: now - 900, end: now, Limit: 1 }), { authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
      expect(probe).toHaveLength(1);
      await expect(stream('Search', req, { authorization: 'Bearer nope', 'x-scope-orgid': tenant })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      await expect(stream('Search', req, { authorization: `Bearer ${key}`, 'x-scope-orgid': 'bystander' })).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
      // As on /tracequery/api/search: a key naming no tenant is a bad request, no key at all unauthenticated.
      await expect(stream('Search', req, { authorization: `Bearer ${key}` })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringContaining('X-Tenant-ID') });
      await expect(stream('Search', req, { 'x-scope-orgid': tenant })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      await expect(stream('Search', create(TempoSearchRequestSchema, { Query: '{ resource.service.name = ' }), { authorization: `Bearer ${key}`, 'x-tenant-id': tenant })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
      expect((await stream<TempoSearchResponse>('Search', req, { authorization: `Bearer ${otherKey}`, 'x-tenant-id': 'bystander' }))[0]!.traces).toEqual([]);
      await expect(stream('SearchTags', create(TempoSearchTagsRequestSchema, {}), { authorization: `Bearer ${key}`, 'x-tenant-id': tenant })).rejects.toMatchObject({ code: grpc.status.UNIMPLEMENTED });
      // A stranger is refused before the message is read: bytes that are no SearchRequest are UNAUTHENTICATED without a key, INVALID_ARGUMENT with one.
      const raw = (md: Record<string, string>) =>
        new Promise<grpc.ServiceError>((resolve) => {
          const metadata = new grpc.Metadata();
          for (const [k, v] of Object.entries(md)) metadata.set(k, v);
          const call = client.makeServerStreamRequest('/tempopb.StreamingQuerier/Search', (b: Buffer) => b, (b: Buffer) => b, Buffer.from([0xff, 0xff, 0xff]), metadata);
          call.on('data', () => {});
          call.on('error', resolve);
        });
      expect((await raw({ 'x-scope-orgid': tenant })).code).toBe(grpc.status.UNAUTHENTICATED);
      expect((await raw({ authorization: `Bearer ${key}`, 'x-scope-orgid': tenant })).code).toBe(grpc.status.INVALID_ARGUMENT);
      // The same port still answers HTTP/1.1.
      expect((await get(`/api/search?q=%7B%7D&${window()}`, key, tenant)).status).toBe(200);
    } finally {
      client.close();
    }
  });

  it('shows a tenant only its own traces', async () => {
    const res = await get(`/api/search?q=%7B%7D&${window()}`, otherKey, 'bystander');
    expect(res.status).toBe(200);
    expect(((await res.json()) as SearchBody).traces).toEqual([]);
    const tags = await get(`/api/v2/search/tag/resource.service.name/values?${window()}`, otherKey, 'bystander');
    expect(((await tags.json()) as { tagValues: unknown[] }).tagValues).toEqual([]);
    expect((await get(`/api/search?q=%7B%7D`, otherKey, tenant)).status).toBe(403);
    expect((await get(`/api/search?q=%7B%7D`, 'nope', tenant)).status).toBe(401);
    const noTenant = await fetch(`${floe.routerUrl}/tracequery/api/search?q=%7B%7D`, { headers: { authorization: `Bearer ${key}` } });
    expect(noTenant.status).toBe(400);
    expect(((await noTenant.json()) as { errorType: string }).errorType).toBe('bad_data');
  });
});

interface SearchBody {
  traces: Array<{
    traceID: string;
    rootServiceName: string;
    rootTraceName?: string;
    startTimeUnixNano: string;
    durationMs: number;
    spanSet: unknown;
    spanSets: Array<{ matched: number; spans: Array<{ spanID: string; name?: string; startTimeUnixNano: string; durationNanos: string; attributes?: unknown[] }> }>;
  }>;
  metrics: Record<string, number>;
}
