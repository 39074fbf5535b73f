import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, grpcServiceDefinition, Querier, TempoTraceByIDRequestSchema, TempoTraceByIDResponseSchema, toBinary, type TempoTraceByIDResponse } from '@floe/proto';
import { createLogger } from '@floe/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeldResults } from './held-results.ts';
import { encodedAnswers, serveHeld, type TenantAnswer } from './held-answers.ts';

const KB = 1024;

/** A trace answer of about `kb` KB. */
const traceOf = (kb: number): TempoTraceByIDResponse =>
  create(TempoTraceByIDResponseSchema, { trace: { resourceSpans: [{ scopeSpans: [{ spans: Array.from({ length: kb }, (_, i) => ({ name: `${i}`.padEnd(1000, 'x') })) }] }] } });

/** FindTraceByID answers served by serveHeld, each waiting for `answers[tenant]` to settle. */
describe('serveHeld', () => {
  const held = new HeldResults(400 * KB);
  const answers = new Map<string, Promise<TenantAnswer<TempoTraceByIDResponse>>>();
  let server: grpc.Server;
  let client: grpc.Client;
  const ended: string[] = [];

  beforeAll(async () => {
    server = new grpc.Server();
    server.addService(encodedAnswers(grpcServiceDefinition(Querier), ['FindTraceByID']), {
      FindTraceByID: (call: grpc.ServerUnaryCall<unknown, Uint8Array>, callback: grpc.sendUnaryData<Uint8Array>) => {
        const tenant = String(call.metadata.get('x-tenant-id')[0]);
        call.once('cancelled', () => ended.push(tenant));
        serveHeld({ held, schema: TempoTraceByIDResponseSchema, timeoutMs: 30_000, log: createLogger({ level: 'silent' }), what: 'FindTraceByID failed' }, call, callback, answers.get(tenant)!);
      },
    });
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
    client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });
  afterAll(() => {
    client?.close();
    server?.forceShutdown();
  });

  const call = (tenant: string) => {
    const md = new grpc.Metadata();
    md.set('x-tenant-id', tenant);
    const request = Buffer.from(toBinary(TempoTraceByIDRequestSchema, create(TempoTraceByIDRequestSchema, { traceID: new Uint8Array(16) })));
    let handle!: grpc.ClientUnaryCall;
    const done = new Promise<{ spans: number } | { code: number; details: string; retryAfter: unknown }>((resolve) => {
      handle = client.makeUnaryRequest('/tempopb.Querier/FindTraceByID', (x: Buffer) => x, (x: Buffer) => x, request, md, {}, (err, res) =>
        resolve(err ? { code: err.code, details: err.details, retryAfter: err.metadata.get('retry-after')[0] } : { spans: fromBinary(TempoTraceByIDResponseSchema, res!).trace!.resourceSpans[0]!.scopeSpans[0]!.spans.length }),
      );
    });
    return { handle, done };
  };
  const released = async () => {
    for (let i = 0; i < 200 && held.held > 0; i++) await sleep(10);
    return held.held;
  };

  it('sends the answer whole and frees its bytes once sent', async () => {
    answers.set('a', Promise.resolve({ tenant: 'a', answer: traceOf(100) }));
    expect(await call('a').done).toEqual({ spans: 100 });
    expect(await released()).toBe(0);
  });

  it('refuses an answer that does not fit beside what its tenant holds (RESOURCE_EXHAUSTED, Retry-After)', async () => {
    const holding = held.charge('a', 150 * KB);
    answers.set('a', Promise.resolve({ tenant: 'a', answer: traceOf(100) }));
    const refused = await call('a').done;
    expect(refused).toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED, retryAfter: '1' });
    expect((refused as { details: string }).details).toContain('tenant a already holds 1 MB');
    // Another tenant's share is its own.
    answers.set('b', Promise.resolve({ tenant: 'b', answer: traceOf(100) }));
    expect(await call('b').done).toEqual({ spans: 100 });
    holding();
    expect(await released()).toBe(0);
  });

  it('holds nothing for a caller gone before its answer was ready', async () => {
    let answer!: (a: TenantAnswer<TempoTraceByIDResponse>) => void;
    answers.set('a', new Promise((resolve) => (answer = resolve)));
    ended.length = 0;
    const { handle, done } = call('a');
    await sleep(50);
    handle.cancel();
    expect(await done).toMatchObject({ code: grpc.status.CANCELLED });
    for (let i = 0; i < 200 && !ended.includes('a'); i++) await sleep(10);
    answer({ tenant: 'a', answer: traceOf(100) });
    // Settled (charged, and released at once) before the next timer.
    await sleep(10);
    expect(held.held).toBe(0);
    expect(held.heldByTenant()).toEqual({});
  });
});
