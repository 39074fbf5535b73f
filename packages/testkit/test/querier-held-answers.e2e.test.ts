import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, TempoSearchRequestSchema, TempoSearchResponseSchema, TempoTraceByIDRequestSchema, TempoTraceByIDResponseSchema, toBinary, type TempoSearchResponse, type TempoTraceByIDResponse } from '@floe/proto';
import { findTraceById, flightDoGet } from '@floe/flight';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stallingRelay, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Tempo answers held for callers that do not read them (querier.max_held_result_mb): a
 * FindTraceByID answer is encoded whole and handed to HTTP/2, which keeps it until the client has
 * taken it, after the lookup's slot is free. Such an answer counts against its tenant's half of
 * the budget as a Flight result does, so the tenant's next answer that does not fit is refused with
 * RESOURCE_EXHAUSTED (a trace or a Flight result alike), other tenants still answer, and once the
 * call ends (read at last, or cancelled) its bytes are free again.
 * 4 MB in all, 2 MB per tenant; a trace of about 1.2 MB (120 spans of 10,000 characters), far more
 * than the HTTP/2 window (64 KiB) a client that reads nothing grants. A SearchRecent answer is
 * charged the same way: one of about 1.2 MB (a trace of 60 spans whose names are 10,000
 * characters, every span in the answer) for a stalled reader fills the tenant's share as a trace does.
 */
describe('Tempo answers held for stalled readers (embedded)', () => {
  let floe: FloeUnderTest;
  const keys: Record<string, string> = {};
  const traces: Record<string, Uint8Array> = {};
  const SPANS = 120;
  const WIDE_SPANS = 60;
  const QUERIER = '/tempopb.Querier/';

  const metadata = (tenant: string) => ({ authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant });
  type Queries = { held_result_bytes: number; held_result_bytes_by_tenant: Record<string, number> };
  const status = async () => ((await (await fetch(`${floe.querierAdminUrl}/status`)).json()) as { queries: Queries }).queries;
  const spanCount = (res: TempoTraceByIDResponse) => (res.trace?.resourceSpans ?? []).reduce((n, r) => n + r.scopeSpans.reduce((m, s) => m + s.spans.length, 0), 0);
  const find = (tenant: string) => findTraceById({ url: floe.flightAddress, traceId: traces[tenant]!, metadata: metadata(tenant), deadlineMs: 30_000 });
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => ({ code: grpc.status.OK, details: '' }),
      (err: grpc.ServiceError) => ({ code: err.code, details: err.details }),
    );

  /** One trace of SPANS spans, each with a 10,000-character attribute, for `tenant`. */
  async function sendBigTrace(tenant: string): Promise<Uint8Array> {
    const traceId = randomBytes(16);
    const now = BigInt(Date.now()) * 1_000_000n;
    const spans = Array.from({ length: SPANS }, (_, i) => ({
      traceId: traceId.toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      name: `step ${i}`,
      kind: 1,
      startTimeUnixNano: `${now + BigInt(i)}`,
      endTimeUnixNano: `${now + BigInt(i) + 1000n}`,
      attributes: [{ key: 'payload', value: { stringValue: `${i}:`.padEnd(10_000, 'x') } }],
    }));
    const body = { resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'big' } }] }, scopeSpans: [{ spans }] }] };
    const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', headers: { ...metadata(tenant), 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    return traceId;
  }

  /** One trace of WIDE_SPANS spans of service `wide`, each named with 10,000 characters, for `tenant`: a search names them all. */
  async function sendWideTrace(tenant: string): Promise<void> {
    const traceId = randomBytes(16).toString('hex');
    const now = BigInt(Date.now()) * 1_000_000n;
    const spans = Array.from({ length: WIDE_SPANS }, (_, i) => ({
      traceId,
      spanId: randomBytes(8).toString('hex'),
      name: `${i}:`.padEnd(10_000, 'n'),
      kind: 1,
      startTimeUnixNano: `${now + BigInt(i)}`,
      endTimeUnixNano: `${now + BigInt(i) + 1000n}`,
    }));
    const body = { resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'wide' } }] }, scopeSpans: [{ spans }] }] };
    const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', headers: { ...metadata(tenant), 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
  }

  /** The SearchRecent request for the wide trace, every span of it in the answer. */
  const wideSearch = () =>
    Buffer.from(
      toBinary(
        TempoSearchRequestSchema,
        create(TempoSearchRequestSchema, { Tags: { 'service.name': 'wide' }, start: Math.floor(Date.now() / 1000) - 600, end: Math.floor(Date.now() / 1000) + 60, Limit: 5, SpansPerSpanSet: WIDE_SPANS }),
      ),
    );
  /** Spans in a search answer (its spanSet; spanSets repeats it). */
  const searchSpans = (res: TempoSearchResponse) => res.traces.reduce((n, t) => n + (t.spanSet?.spans.length ?? 0), 0);
  /** The wide search for `tenant` straight to the querier, read at once: its answer, or how it failed. */
  const searchWide = (tenant: string) =>
    new Promise<{ code: number; details: string; bytes: number; spans: number }>((resolve) => {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(metadata(tenant))) md.set(k, v);
      const direct = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
      direct.makeUnaryRequest(`${QUERIER}SearchRecent`, (x: Buffer) => x, (x: Buffer) => x, wideSearch(), md, { deadline: Date.now() + 30_000 }, (err, res) => {
        direct.close();
        resolve(err ? { code: err.code, details: err.details, bytes: 0, spans: 0 } : { code: grpc.status.OK, details: '', bytes: res!.byteLength, spans: searchSpans(fromBinary(TempoSearchResponseSchema, res!)) });
      });
    });
  /** The wide search without a deadline through `client`: the call (to cancel) and how it ended. */
  function rawSearch(client: grpc.Client, tenant: string) {
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(metadata(tenant))) md.set(k, v);
    let call!: grpc.ClientUnaryCall;
    const ended = new Promise<{ code: number; spans: number }>((resolve) => {
      call = client.makeUnaryRequest(`${QUERIER}SearchRecent`, (x: Buffer) => x, (x: Buffer) => x, wideSearch(), md, {}, (err, res) =>
        resolve(err ? { code: err.code, spans: 0 } : { code: grpc.status.OK, spans: searchSpans(fromBinary(TempoSearchResponseSchema, res!)) }),
      );
    });
    return { call, ended };
  }

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { querier: { max_held_result_mb: 4, max_result_mb: 2, query_timeout: '60s' } } });
    for (const t of ['stalled', 'calm']) {
      keys[t] = (await floe.bootstrap(t)).api_key;
      traces[t] = await sendBigTrace(t);
      await sendWideTrace(t);
    }
    for (const t of ['stalled', 'calm']) await waitFor(`the trace of ${t} whole`, async () => (spanCount(await find(t)) === SPANS ? true : undefined), 60_000, 200);
    for (const t of ['stalled', 'calm']) await waitFor(`the wide trace of ${t} found whole`, async () => ((await searchWide(t)).spans === WIDE_SPANS ? true : undefined), 60_000, 200);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  /** A FindTraceByID without a deadline through `client`: the call (to cancel) and how it ended. */
  function rawFind(client: grpc.Client, tenant: string) {
    const request = Buffer.from(toBinary(TempoTraceByIDRequestSchema, create(TempoTraceByIDRequestSchema, { traceID: traces[tenant]! })));
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(metadata(tenant))) md.set(k, v);
    let call!: grpc.ClientUnaryCall;
    const ended = new Promise<{ code: number; spans: number }>((resolve) => {
      call = client.makeUnaryRequest(`${QUERIER}FindTraceByID`, (x: Buffer) => x, (x: Buffer) => x, request, md, {}, (err, res) =>
        resolve(err ? { code: err.code, spans: 0 } : { code: grpc.status.OK, spans: spanCount(fromBinary(TempoTraceByIDResponseSchema, res!)) }),
      );
    });
    return { call, ended };
  }

  /** The bytes held for `tenant` once something is held. */
  const heldFor = (tenant: string) =>
    waitFor(`an answer held for ${tenant}`, async () => {
      const s = await status();
      return s.held_result_bytes > 0 ? s : undefined;
    }, 20_000, 20).then((s) => {
      expect(s.held_result_bytes_by_tenant).toEqual({ [tenant]: s.held_result_bytes });
      return s.held_result_bytes;
    });
  const nothingHeld = () => waitFor('nothing held', async () => ((await status()).held_result_bytes === 0 ? true : undefined), 20_000, 20);

  it("charges a stalled reader's trace to its tenant's share, refuses the tenant's next answer that does not fit, and frees it once read", async () => {
    const whole = await find('stalled');
    const encoded = toBinary(TempoTraceByIDResponseSchema, whole).byteLength;
    expect(encoded).toBeGreaterThan(1_200_000);
    expect(await status()).toMatchObject({ held_result_bytes: 0 });

    const relay = await stallingRelay(floe.flightAddress, 32 * 1024);
    // A channel of its own (grpc-js shares connections between clients of one address otherwise).
    const client = new grpc.Client(relay.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    try {
      const stalled = rawFind(client, 'stalled');
      // Before, nothing counted it: the querier showed nothing held however many such readers waited.
      const held = await heldFor('stalled');
      await relay.stalled;
      expect(held).toBeGreaterThan(1_200_000);
      expect(held).toBeLessThan(encoded + 64 * 1024);

      // The tenant's next trace does not fit its 2 MB beside it: refused at once, to be retried.
      const refused = await failure(find('stalled'));
      expect(refused.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(refused.details).toContain('too many unread results');
      expect(refused.details).toContain('tenant stalled already holds 2 MB');
      // The same budget as Flight results: 1 MB of BIGINTs does not fit beside it either.
      const flight = await failure(flightDoGet({ url: floe.flightAddress, ticket: Buffer.from('SELECT i FROM range(131072) t(i)'), metadata: metadata('stalled'), deadlineMs: 30_000 }));
      expect(flight.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      // A small answer of the tenant still fits (a search), and is not held once read.
      const search = create(TempoSearchRequestSchema, { Tags: { 'service.name': 'big' }, start: Math.floor(Date.now() / 1000) - 600, end: Math.floor(Date.now() / 1000) + 60, Limit: 5 });
      const found = await new Promise<Buffer>((resolve, reject) => {
        const md = new grpc.Metadata();
        for (const [k, v] of Object.entries(metadata('stalled'))) md.set(k, v);
        const direct = new grpc.Client(floe.flightAddress, grpc.credentials.createInsecure());
        direct.makeUnaryRequest(`${QUERIER}SearchRecent`, (x: Buffer) => x, (x: Buffer) => x, Buffer.from(toBinary(TempoSearchRequestSchema, search)), md, {}, (err, res) => {
          direct.close();
          if (err) reject(err);
          else resolve(res!);
        });
      });
      expect(fromBinary(TempoSearchResponseSchema, found).traces.map((t) => t.rootServiceName)).toEqual(['big']);
      // Another tenant's trace answers whole.
      expect(spanCount(await find('calm'))).toBe(SPANS);
      expect((await status()).held_result_bytes_by_tenant).toEqual({ stalled: held });

      // Read at last: the answer comes whole and its bytes are free again.
      relay.resume();
      expect(await stalled.ended).toEqual({ code: grpc.status.OK, spans: SPANS });
      await nothingHeld();
      expect(spanCount(await find('stalled'))).toBe(SPANS);
      expect(await status()).toMatchObject({ held_result_bytes: 0, held_result_bytes_by_tenant: {} });
    } finally {
      client.close();
      relay.close();
    }
  }, 120_000);

  it('frees a stalled trace once its caller cancels the call', async () => {
    const relay = await stallingRelay(floe.flightAddress, 32 * 1024);
    const client = new grpc.Client(relay.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    try {
      const stalled = rawFind(client, 'stalled');
      await heldFor('stalled');
      expect((await failure(find('stalled'))).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      stalled.call.cancel();
      expect((await stalled.ended).code).toBe(grpc.status.CANCELLED);
      await nothingHeld();
      expect(spanCount(await find('stalled'))).toBe(SPANS);
    } finally {
      client.close();
      relay.close();
    }
  }, 60_000);

  it("charges a stalled reader's search answer to its tenant's share, refuses the tenant's next answer that does not fit, answers another tenant, and frees it once read", async () => {
    const whole = await searchWide('stalled');
    expect(whole).toMatchObject({ code: grpc.status.OK, spans: WIDE_SPANS });
    expect(whole.bytes).toBeGreaterThan(1_100_000);
    expect(whole.bytes).toBeLessThan(2 * 1024 * 1024);
    expect(await status()).toMatchObject({ held_result_bytes: 0 });

    const relay = await stallingRelay(floe.flightAddress, 32 * 1024);
    const client = new grpc.Client(relay.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    try {
      const stalled = rawSearch(client, 'stalled');
      const held = await heldFor('stalled');
      await relay.stalled;
      expect(held).toBe(whole.bytes);

      // The tenant's next search does not fit its 2 MB beside it: refused at once, to be retried.
      const refused = await searchWide('stalled');
      expect(refused.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(refused.details).toBe(
        'too many unread results: a result of 2 MB does not fit; tenant stalled already holds 2 MB of results its clients have not read yet, and may hold at most 2 MB (half of querier.max_held_result_mb)',
      );
      // The same share as traces: the tenant's big trace does not fit beside it either.
      const trace = await failure(find('stalled'));
      expect(trace.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(trace.details).toContain('tenant stalled already holds 2 MB');
      // Another tenant's search answers whole.
      expect(await searchWide('calm')).toMatchObject({ code: grpc.status.OK, spans: WIDE_SPANS, bytes: whole.bytes });
      expect((await status()).held_result_bytes_by_tenant).toEqual({ stalled: held });

      // Read at last: the answer comes whole and its bytes are free again.
      relay.resume();
      expect(await stalled.ended).toEqual({ code: grpc.status.OK, spans: WIDE_SPANS });
      await nothingHeld();
      expect(await searchWide('stalled')).toMatchObject({ code: grpc.status.OK, spans: WIDE_SPANS });
      expect(await status()).toMatchObject({ held_result_bytes: 0, held_result_bytes_by_tenant: {} });
    } finally {
      client.close();
      relay.close();
    }
  }, 120_000);

  it('frees a stalled search answer once its caller cancels the call', async () => {
    const relay = await stallingRelay(floe.flightAddress, 32 * 1024);
    const client = new grpc.Client(relay.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    try {
      const stalled = rawSearch(client, 'stalled');
      await heldFor('stalled');
      expect((await searchWide('stalled')).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      stalled.call.cancel();
      expect((await stalled.ended).code).toBe(grpc.status.CANCELLED);
      await nothingHeld();
      expect(await searchWide('stalled')).toMatchObject({ code: grpc.status.OK, spans: WIDE_SPANS });
    } finally {
      client.close();
      relay.close();
    }
  }, 60_000);
});
