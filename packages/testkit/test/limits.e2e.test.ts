import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { ExportTraceServiceRequestSchema, create, toBinary } from '@floe/proto';
import { startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Per-tenant limits (spec 1, Errors 3–5; Ingest rule 5), both modes (the cluster keeps buckets and
 * resend fingerprints in Redis): the router's query budget, the acceptor's ingest rate limit over
 * HTTP and gRPC, the storage quota, and byte-identical resends stored once.
 */

/** One span of a fresh trace as an OTLP protobuf body. */
function spanBody(): { body: Buffer; traceId: string } {
  const traceId = randomBytes(16);
  const now = BigInt(Date.now()) * 1_000_000n;
  const req = create(ExportTraceServiceRequestSchema, {
    resourceSpans: [{ scopeSpans: [{ spans: [{ traceId, spanId: randomBytes(8), name: 'limited', startTimeUnixNano: now, endTimeUnixNano: now + 1000n }] }] }],
  });
  return { body: Buffer.from(toBinary(ExportTraceServiceRequestSchema, req)), traceId: traceId.toString('hex') };
}
describe.each<FloeMode>(['embedded', 'cluster'])('limits (%s)', (mode) => {
  let floe: FloeUnderTest;

  beforeAll(async () => {
    floe = await startFloe({ mode, config: { acceptor: { quota_cache_ttl: '200ms' } } });
  });
  afterAll(async () => {
    await floe?.stop();
  });

  async function tenantWith(id: string, limits: Record<string, number>): Promise<string> {
    const res = await fetch(`${floe.routerUrl}/api/v1/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id, settings: { limits } }),
    });
    expect(res.status).toBe(201);
    return (await floe.bootstrap(id)).api_key;
  }

  it('the query budget answers 429 with retryAfterMs, Retry-After and X-RateLimit-* once the burst is spent', async () => {
    const key = await tenantWith('budget', { max_query_requests_per_sec: 0.2, max_query_requests_burst: 2 });
    const echo = () => fetch(`${floe.routerUrl}/tracequery/api/echo`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'budget' } });
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 4; i++) {
      const res = await echo();
      statuses.push(res.status);
      if (res.status === 429) refused ??= res;
      else await res.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 429, 429]);
    const body = (await refused!.json()) as { status: string; errorType: string; error: string; retryAfterMs: number };
    expect(body).toMatchObject({ status: 'error', errorType: 'rate_limited' });
    // One token comes back every 5 s.
    expect(body.retryAfterMs).toBeGreaterThan(3000);
    expect(body.retryAfterMs).toBeLessThanOrEqual(5000);
    expect(refused!.headers.get('retry-after')).toBe(String(Math.ceil(body.retryAfterMs / 1000)));
    expect(refused!.headers.get('x-ratelimit-limit')).toBe('0.2');
    expect(refused!.headers.get('x-ratelimit-burst')).toBe('2');
    // Another tenant's budget is its own.
    const other = await tenantWith('budget-other', { max_query_requests_per_sec: 0.2, max_query_requests_burst: 2 });
    const res = await fetch(`${floe.routerUrl}/tracequery/api/echo`, { headers: { authorization: `Bearer ${other}`, 'x-tenant-id': 'budget-other' } });
    expect(res.status).toBe(200);
  });

  it('the log, metric and profile query APIs draw on the same budget, and refuse in their envelope', async () => {
    const key = await tenantWith('budget-apis', { max_query_requests_per_sec: 0.2, max_query_requests_burst: 2 });
    const get = (path: string) => fetch(`${floe.routerUrl}${path}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'budget-apis' } });
    const first = await get('/logquery/loki/api/v1/labels');
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    const second = await get('/metricquery/api/v1/status/buildinfo');
    expect(second.status).toBe(200);
    await second.arrayBuffer();
    for (const path of ['/logquery/loki/api/v1/query?query=vector(1)', '/metricquery/api/v1/query?query=1%2B1', '/profilequery/label-names', '/api/profiles/trace/0123456789abcdef0123456789abcdef']) {
      const res = await get(path);
      expect(res.status).toBe(429);
      expect(await res.json()).toMatchObject({ status: 'error', errorType: 'rate_limited' });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
  });

  it('an unauthenticated request is 401, not charged to anyone', async () => {
    const res = await fetch(`${floe.routerUrl}/tracequery/api/echo`);
    expect(res.status).toBe(401);
  });

  const post = (url: string, key: string, tenant: string, body: Buffer) =>
    fetch(`${url}/v1/traces`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/x-protobuf' } });
  const spansStored = async (key: string, tenant: string, traceId: string) => {
    const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT count(*) AS n FROM traces WHERE trace_id = '${traceId}'`), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 20_000 });
    return Number(t.getChildAt(0)!.get(0));
  };

  it('ingest over the rate limit: 429 with Retry-After and X-RateLimit-* over HTTP, RESOURCE_EXHAUSTED over gRPC', async () => {
    const key = await tenantWith('ingest-rl', { ingest_requests_per_sec: 0.2, ingest_requests_burst: 2 });
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 3; i++) {
      const res = await post(floe.otlpHttpUrl, key, 'ingest-rl', spanBody().body);
      statuses.push(res.status);
      if (res.status === 429) refused = res;
      else await res.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 429]);
    const body = (await refused!.json()) as { errorType: string; error: string; retryAfterMs: number };
    expect(body.errorType).toBe('rate_limited');
    expect(body.retryAfterMs).toBeGreaterThan(3000);
    expect(refused!.headers.get('retry-after')).toBe(String(Math.ceil(body.retryAfterMs / 1000)));
    expect(refused!.headers.get('x-ratelimit-limit')).toBe('0.2');
    expect(refused!.headers.get('x-ratelimit-burst')).toBe('2');
    // gRPC: the same bucket, now empty.
    const client = new grpc.Client(floe.otlpGrpcAddress, grpc.credentials.createInsecure());
    try {
      const md = new grpc.Metadata();
      md.set('authorization', `Bearer ${key}`);
      md.set('x-tenant-id', 'ingest-rl');
      const code = await new Promise<number>((resolve) => {
        client.makeUnaryRequest('/opentelemetry.proto.collector.trace.v1.TraceService/Export', (b: Buffer) => b, (b: Buffer) => b, spanBody().body, md, (err) => resolve(err?.code ?? 0));
      });
      expect(code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    } finally {
      client.close();
    }
  });

  it('at the storage quota, ingest is 429 quota_exceeded without Retry-After', async () => {
    const key = await tenantWith('quota', { max_storage_bytes: 1 });
    const first = spanBody();
    expect((await post(floe.otlpHttpUrl, key, 'quota', first.body)).status).toBe(200);
    await waitFor('the first span committed', async () => ((await spansStored(key, 'quota', first.traceId)) === 1 ? true : undefined), 30_000, 200);
    const refused = await waitFor('quota enforced', async () => {
      const res = await post(floe.otlpHttpUrl, key, 'quota', spanBody().body);
      return res.status === 429 ? res : (await res.arrayBuffer(), undefined);
    }, 10_000, 100);
    const body = (await refused.json()) as { errorType: string; error: string; retryAfterMs?: number };
    expect(body.errorType).toBe('rate_limited');
    expect(body.error).toContain('quota_exceeded');
    expect(body.retryAfterMs).toBeUndefined();
    expect(refused.headers.get('retry-after')).toBeNull();
  });

  it('a byte-identical resend is acknowledged and stored once, on whichever acceptor it arrives', async () => {
    const key = (await floe.bootstrap('resend')).api_key;
    const { body, traceId } = spanBody();
    expect((await post(floe.otlpHttpUrl, key, 'resend', body)).status).toBe(200);
    const extra = mode === 'cluster' ? await floe.startExtraAcceptor() : undefined;
    try {
      const again = await post(extra?.otlpHttpUrl ?? floe.otlpHttpUrl, key, 'resend', body);
      expect(again.status).toBe(200);
      // A different body of the same trace is not a resend.
      const other = spanBody();
      const third = await post(floe.otlpHttpUrl, key, 'resend', other.body);
      expect(third.status).toBe(200);
      await waitFor('other committed', async () => ((await spansStored(key, 'resend', other.traceId)) === 1 ? true : undefined), 30_000, 200);
      await new Promise((r) => setTimeout(r, 1500)); // more than one writer flush after the resend
      expect(await spansStored(key, 'resend', traceId)).toBe(1);
    } finally {
      await extra?.stop();
    }
  });

  // Only a cluster has several acceptors (the test is not defined at all in embedded mode).
  if (mode === 'cluster') it('two acceptors spend one ingest budget (Redis)', async () => {
    const key = await tenantWith('shared-budget', { ingest_requests_per_sec: 0.01, ingest_requests_burst: 3 });
    const extra = await floe.startExtraAcceptor();
    try {
      const urls = [floe.otlpHttpUrl, extra.otlpHttpUrl, floe.otlpHttpUrl, extra.otlpHttpUrl, floe.otlpHttpUrl];
      const answers: Response[] = [];
      for (const url of urls) answers.push(await post(url, key, 'shared-budget', spanBody().body));
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
      // Both acceptors refuse with the bucket's headers.
      for (const refused of answers.slice(3)) {
        expect(refused.headers.get('x-ratelimit-limit')).toBe('0.01');
        expect(refused.headers.get('x-ratelimit-burst')).toBe('3');
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(((await refused.json()) as { errorType: string }).errorType).toBe('rate_limited');
      }
    } finally {
      await extra.stop();
    }
  });
});
