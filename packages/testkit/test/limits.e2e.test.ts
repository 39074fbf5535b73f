import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { compress } from 'snappyjs';
import { ExportTraceServiceRequestSchema, ExportTraceServiceResponseSchema, PromWriteRequestSchema, create, fromBinary, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, plain, startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Per-tenant limits (spec 1, Errors 3–5; Ingest rule 5), both modes (the cluster keeps buckets and
 * resend fingerprints in Redis): the router's query budget, the acceptor's ingest rate limit over
 * HTTP and gRPC, the storage quota, and byte-identical resends stored once.
 */

/** Spans of a fresh trace as an OTLP protobuf body, one per start time given (default: now). */
function spanBody(starts: bigint[] = [BigInt(Date.now()) * 1_000_000n]): { body: Buffer; traceId: string } {
  const traceId = randomBytes(16);
  const spans = starts.map((start) => ({ traceId, spanId: randomBytes(8), name: 'limited', startTimeUnixNano: start, endTimeUnixNano: start + 1000n }));
  const req = create(ExportTraceServiceRequestSchema, { resourceSpans: [{ scopeSpans: [{ spans }] }] });
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

  async function tenantWith(id: string, limits: Record<string, number | string>): Promise<string> {
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

  it('rows older than limits.ingest_max_age (7d) or further ahead than ingest_max_future (10m) are refused item by item; a tenant may widen the window', async () => {
    const key = (await floe.bootstrap('times')).api_key;
    const headers = (tenant: string, k: string, contentType: string) => ({ authorization: `Bearer ${k}`, 'x-tenant-id': tenant, 'content-type': contentType });
    const sql = async (tenant: string, k: string, text: string) =>
      (await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: { authorization: `Bearer ${k}`, 'x-tenant-id': tenant }, deadlineMs: 20_000 })).toArray().map((r) => plain(r) as Record<string, unknown>);
    const DAY = 86_400_000_000_000n;
    const now = BigInt(Date.now()) * 1_000_000n;
    const oldest = /oldest accepted: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)$/;

    // OTLP/JSON logs (the decoded path): one record each side of the window, one inside.
    const logs = {
      resourceLogs: [{ scopeLogs: [{ logRecords: [
        { timeUnixNano: String(now - 8n * DAY), body: { stringValue: 'eight days old' } },
        { timeUnixNano: String(now), body: { stringValue: 'now' } },
        { timeUnixNano: String(now + DAY / 24n), body: { stringValue: 'an hour ahead' } },
      ] }] }],
    };
    const res = await fetch(`${floe.otlpHttpUrl}/v1/logs`, { method: 'POST', body: JSON.stringify(logs), headers: headers('times', key, 'application/json') });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { partialSuccess: { rejectedLogRecords: string; errorMessage: string } };
    expect(answer.partialSuccess.rejectedLogRecords).toBe('2');
    expect(answer.partialSuccess.errorMessage).toMatch(/^log record time is more than 7d in the past \(limits\.ingest_max_age; /);
    expect(answer.partialSuccess.errorMessage).toMatch(oldest);

    // OTLP protobuf traces (the wire transcoder): the future span is named when it comes first.
    const spans = spanBody([now + DAY, now, now - 30n * DAY]);
    const traced = await post(floe.otlpHttpUrl, key, 'times', spans.body);
    expect(traced.status).toBe(200);
    const partial = fromBinary(ExportTraceServiceResponseSchema, new Uint8Array(await traced.arrayBuffer())).partialSuccess;
    expect(partial?.rejectedSpans).toBe(2n);
    expect(partial?.errorMessage).toMatch(/^span start time is more than 10m in the future \(limits\.ingest_max_future; latest accepted: \d{4}-/);

    // Remote write: 400 naming the limit, after the sample inside the window is stored.
    const nowMs = BigInt(Date.now());
    const rw = toBinary(
      PromWriteRequestSchema,
      create(PromWriteRequestSchema, {
        timeseries: [{ labels: [{ name: '__name__', value: 'times_total' }, { name: 'job', value: 'times' }], samples: [{ value: 1, timestamp: nowMs - 8n * 86_400_000n }, { value: 2, timestamp: nowMs }] }],
      }),
    );
    const written = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, { method: 'POST', body: compress(rw), headers: { ...headers('times', key, ''), ...REMOTE_WRITE_HEADERS } });
    expect(written.status).toBe(400);
    const refusal = (await written.json()) as { errorType: string; error: string };
    expect(refusal.errorType).toBe('bad_data');
    expect(refusal.error).toMatch(/^1 samples, histograms or exemplars were refused \(the rest was stored\); first: sample timestamp is more than 7d in the past \(limits\.ingest_max_age; oldest accepted: .*\) \(times_total\{job="times"\}\)$/);

    const stored = await waitFor('the rows inside the window', async () => {
      const [l, t, m] = await Promise.all([
        sql('times', key, 'SELECT body FROM logs'),
        sql('times', key, `SELECT start_time_unix_nano AS start FROM traces WHERE trace_id = '${spans.traceId}'`),
        sql('times', key, `SELECT value FROM metrics WHERE metric_name = 'times_total'`),
      ]);
      return l.length > 0 && t.length > 0 && m.length > 0 ? { l, t, m } : undefined;
    }, 30_000, 200);
    expect(stored).toEqual({ l: [{ body: 'now' }], t: [{ start: now }], m: [{ value: 2 }] });

    // A tenant whose settings.limits take 30 days back and any future stores the same spans whole.
    const wideKey = await tenantWith('times-wide', { ingest_max_age: '31d', ingest_max_future: '0s' });
    const wide = spanBody([now + DAY, now, now - 30n * DAY]);
    const accepted = await post(floe.otlpHttpUrl, wideKey, 'times-wide', wide.body);
    expect(accepted.status).toBe(200);
    expect(fromBinary(ExportTraceServiceResponseSchema, new Uint8Array(await accepted.arrayBuffer())).partialSuccess).toBeUndefined();
    const all = await waitFor('the three spans', async () => {
      const rows = await sql('times-wide', wideKey, `SELECT start_time_unix_nano AS start FROM traces WHERE trace_id = '${wide.traceId}' ORDER BY start`);
      return rows.length === 3 ? rows : undefined;
    }, 30_000, 200);
    expect(all.map((r) => r.start)).toEqual([now - 30n * DAY, now, now + DAY]);
  });

  it('limits.max_active_series: at its limit a tenant keeps writing its active series, points of new ones are refused on every acceptor', async () => {
    const key = await tenantWith('series-cap', { max_active_series: 3 });
    const headers = (contentType: string) => ({ authorization: `Bearer ${key}`, 'x-tenant-id': 'series-cap', 'content-type': contentType });
    const now = BigInt(Date.now()) * 1_000_000n;
    const gauge = (values: string[], t: bigint) =>
      JSON.stringify({
        resourceMetrics: [{
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'capped' } }] },
          scopeMetrics: [{ metrics: [{ name: 'capped_gauge', gauge: { dataPoints: values.map((v) => ({ timeUnixNano: String(t), asDouble: Number(v), attributes: [{ key: 'slot', value: { stringValue: v } }] })) } }] }],
        }],
      });
    const otlp = async (url: string, values: string[], t: bigint) => {
      const res = await fetch(`${url}/v1/metrics`, { method: 'POST', body: gauge(values, t), headers: headers('application/json') });
      expect(res.status).toBe(200);
      return ((await res.json()) as { partialSuccess?: { rejectedDataPoints?: string; errorMessage?: string } }).partialSuccess;
    };
    const rw = (url: string, jobs: string[]) =>
      fetch(`${url}/api/v1/write`, {
        method: 'POST',
        body: compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, {
          timeseries: jobs.map((job) => ({ labels: [{ name: '__name__', value: 'capped_total' }, { name: 'job', value: job }], samples: [{ value: 1, timestamp: BigInt(Date.now()) }] })),
        }))),
        headers: { ...headers(''), ...REMOTE_WRITE_HEADERS },
      });
    const refusal = /tenant series-cap is at its limit of 3 active series \(limits\.max_active_series; a series stays active 1h after its last data point\)/;

    // Two OTLP series, then remote write's first series takes the last place and its second is refused.
    expect(await otlp(floe.otlpHttpUrl, ['1', '2'], now)).toBeUndefined();
    const third = await rw(floe.otlpHttpUrl, ['a', 'b']);
    expect(third.status).toBe(400);
    const thirdBody = (await third.json()) as { errorType: string; error: string };
    expect(thirdBody.errorType).toBe('bad_data');
    expect(thirdBody.error).toMatch(/^1 samples, histograms or exemplars were refused \(the rest was stored\); first: tenant series-cap /);
    expect(thirdBody.error).toMatch(refusal);
    expect(thirdBody.error).toMatch(/\(capped_total\{job="b"\}\)$/);

    // An active series keeps taking points; a new one is refused in the partial success.
    const partial = await otlp(floe.otlpHttpUrl, ['1', '3'], now + 1_000_000_000n);
    expect(partial?.rejectedDataPoints).toBe('1');
    expect(partial?.errorMessage).toMatch(refusal);

    // Another acceptor counts the same series (Redis in a cluster): job a is active, c is new.
    const extra = mode === 'cluster' ? await floe.startExtraAcceptor() : undefined;
    try {
      const elsewhere = await rw(extra?.otlpHttpUrl ?? floe.otlpHttpUrl, ['a', 'c']);
      expect(elsewhere.status).toBe(400);
      expect(((await elsewhere.json()) as { error: string }).error).toMatch(/\(capped_total\{job="c"\}\)$/);
    } finally {
      await extra?.stop();
    }

    // Another tenant is not limited by this one's series.
    const otherKey = (await floe.bootstrap('series-free')).api_key;
    const free = await fetch(`${floe.otlpHttpUrl}/v1/metrics`, { method: 'POST', body: gauge(['1', '2', '3', '4', '5'], now), headers: { authorization: `Bearer ${otherKey}`, 'x-tenant-id': 'series-free', 'content-type': 'application/json' } });
    expect(await free.json()).toEqual({});

    // The tenant's usage shows its series against the limit; a tenant without one is not counted.
    const usage = async (tenant: string, k: string) => (await (await fetch(`${floe.routerUrl}/api/v1/tenants/${tenant}/usage`, { headers: { authorization: `Bearer ${k}` } })).json()) as Record<string, unknown>;
    expect(await usage('series-cap', key)).toMatchObject({ active_series: 3, max_active_series: 3 });
    expect(await usage('series-free', otherKey)).toMatchObject({ active_series: null, max_active_series: null });

    const sql = async (text: string) =>
      (await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': 'series-cap' }, deadlineMs: 20_000 })).toArray().map((r) => plain(r) as Record<string, unknown>);
    const query = `SELECT metric_name AS name, coalesce(point_attr_str['slot'], point_attr_str['job']) AS label, count(*) AS points FROM metrics GROUP BY ALL ORDER BY ALL`;
    const rows = await waitFor('the admitted points', async () => {
      const r = await sql(query);
      return r.reduce((n, x) => n + Number(x.points), 0) === 5 ? r : undefined;
    }, 30_000, 200);
    expect(rows).toEqual([
      { name: 'capped_gauge', label: '1', points: 2n },
      { name: 'capped_gauge', label: '2', points: 1n },
      { name: 'capped_total', label: 'a', points: 2n },
    ]);
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

  it('copies of one request sent at once (a client retrying before it has its answer) are stored once, on one acceptor or several', async () => {
    const key = (await floe.bootstrap('resend-at-once')).api_key;
    const extra = mode === 'cluster' ? await floe.startExtraAcceptor() : undefined;
    try {
      for (const urls of extra ? [[floe.otlpHttpUrl], [floe.otlpHttpUrl, extra.otlpHttpUrl]] : [[floe.otlpHttpUrl]]) {
        const { body, traceId } = spanBody();
        const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => post(urls[i % urls.length]!, key, 'resend-at-once', body)));
        expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
        await waitFor('the span committed', async () => ((await spansStored(key, 'resend-at-once', traceId)) > 0 ? true : undefined), 30_000, 200);
        await new Promise((r) => setTimeout(r, 1500)); // more than one writer flush after the last copy
        expect(await spansStored(key, 'resend-at-once', traceId), `copies sent to ${urls.length} acceptor(s)`).toBe(1);
      }
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
