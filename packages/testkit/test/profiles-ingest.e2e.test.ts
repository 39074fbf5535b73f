import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExportProfilesServiceResponseSchema, fromBinary } from '@floe/proto';
import { flightDoGet } from '@floe/flight';
import {
  SAMPLE_CPU_STACKS,
  SAMPLE_PROFILE_ID_HEX,
  profilesRequestJson,
  profilesRequestProtobuf,
  protoTraceExporter,
  sampleProfilesRequest,
  sendSampleTrace,
  plain,
  postProfiles,
  startFloe,
  waitFor,
  type FloeMode,
  type FloeUnderTest,
  type ProfilesRequestInit,
  type SentTrace,
} from '../src/index.ts';

/**
 * OTLP profiles end to end, in both modes: a hand-built ExportProfilesServiceRequest whose
 * dictionary is shared by two profiles (CPU and heap) — shared stacks, several functions, an
 * inlined location, an unsymbolized location known only by its mapping, a linked span, attributes
 * of every type — sent over HTTP protobuf, HTTP JSON (gzip) and gRPC → acceptor → WAL → writer →
 * `<tenant>.<dataset>.profiles` → SQL over Flight: stacks read as function names, types and
 * values as sent, and the CPU profile's trace_id/span_id join the traces table. Then malformed
 * dictionary indexes (partial success) and bad bodies (400 / INVALID_ARGUMENT).
 */

describe.each<FloeMode>(['embedded', 'cluster'])('profiles ingest end to end (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let trace: SentTrace;
  const tenant = 'acme';
  const traceService = 'profiled-checkout';

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
    trace = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), traceService);
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const meta = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
  const sql = async (text: string) => {
    const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: meta(), deadlineMs: 20_000 });
    return table.toArray().map((r) => plain(r) as Record<string, unknown>);
  };
  const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;
  const waitForRows = (what: string, query: string, count: number) =>
    waitFor(
      what,
      async () => {
        const rows = await sql(query);
        return rows.length === count ? rows : undefined;
      },
      30_000,
      200,
    );

  const post = (body: Uint8Array | string, headers: Record<string, string> = {}) =>
    fetch(`${floe.otlpHttpUrl}/v1development/profiles`, {
      method: 'POST',
      body,
      headers: { ...meta(), 'content-type': 'application/x-protobuf', ...headers },
    });

  const grpcExport = (body: Uint8Array, md: Record<string, string> = meta()) => {
    const client = new grpc.Client(floe.otlpGrpcAddress, grpc.credentials.createInsecure());
    return new Promise<{ code: number; details: string; response?: Buffer }>((resolve) => {
      const m = new grpc.Metadata();
      for (const [k, v] of Object.entries(md)) m.set(k, v);
      client.makeUnaryRequest(
        '/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from(body),
        m,
        (err, response) => resolve(err ? { code: err.code, details: err.details } : { code: 0, details: '', response }),
      );
    }).finally(() => client.close());
  };

  /** Sends `init` over one transport; resolves to the export response's partial success (undefined: none). */
  const send: Record<string, (init: ProfilesRequestInit) => Promise<{ rejectedProfiles: bigint; errorMessage: string } | undefined>> = {
    'http-protobuf': async (init) => {
      const res = await post(profilesRequestProtobuf(init));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('application/x-protobuf');
      return fromBinary(ExportProfilesServiceResponseSchema, new Uint8Array(await res.arrayBuffer())).partialSuccess;
    },
    'http-json-gzip': async (init) => {
      const res = await post(gzipSync(profilesRequestJson(init)), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      expect(res.status).toBe(200);
      const json = (await res.json()) as { partialSuccess?: { rejectedProfiles?: string; errorMessage?: string } };
      return json.partialSuccess ? { rejectedProfiles: BigInt(json.partialSuccess.rejectedProfiles ?? 0), errorMessage: json.partialSuccess.errorMessage ?? '' } : undefined;
    },
    grpc: async (init) => {
      const r = await grpcExport(profilesRequestProtobuf(init));
      expect(r).toMatchObject({ code: 0 });
      return fromBinary(ExportProfilesServiceResponseSchema, r.response!).partialSuccess;
    },
  };

  it.each(Object.keys(send))('profiles sent over %s read back over SQL: function names, types, values; the linked span joins traces', async (transport) => {
    const service = `profiles-${transport}`;
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    const linked = { traceId: trace.traceId, spanId: trace.spanIds[1]! }; // compute-cart
    expect(await send[transport]!(sampleProfilesRequest(service, linked, nowNs))).toBeUndefined();

    const rows = await waitForRows(
      `2 profile rows of ${service}`,
      `SELECT * EXCLUDE ("timestamp"), epoch_us("timestamp") AS timestamp_us FROM profiles WHERE service_name = ${quote(service)} ORDER BY sample_type DESC`,
      2,
    );
    const [cpu, heap] = rows as [Record<string, unknown>, Record<string, unknown>];
    expect(cpu).toMatchObject({
      service_name: service,
      time_unix_nano: nowNs,
      timestamp_us: nowNs / 1000n,
      profile_id: SAMPLE_PROFILE_ID_HEX,
      profile_type: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds',
      sample_type: 'cpu',
      sample_unit: 'nanoseconds',
      period_type: 'cpu',
      period_unit: 'nanoseconds',
      period: 10_000_000n,
      duration_nano: 10_000_000_000n,
      trace_id: trace.traceId,
      span_id: trace.spanIds[1],
      total_value: 65_000_000n,
      scope_name: 'floe-e2e-profiler',
      scope_version: '0.9.0',
      profile_attr_str: { 'thread.name': 'worker-1' },
      profile_attr_int: { 'thread.id': 42n },
      profile_attr_double: { load: 0.75 },
      profile_attr_bool: { sampled: true },
      resource_attr_str: { 'service.name': service },
      resource_attr_int: { 'host.cpus': 8n },
    });
    expect(JSON.parse(cpu.stacktraces_json as string)).toEqual(SAMPLE_CPU_STACKS);
    const link = { trace_id: trace.traceId, span_id: trace.spanIds[1] };
    expect(JSON.parse(cpu.samples_json as string)).toEqual([
      { stack: 0, value: 30_000_000, values: [30_000_000], attributes: { 'thread.name': 'worker-1' }, ...link },
      { stack: 1, value: 20_000_000, values: [20_000_000], ...link },
      { stack: 0, value: 10_000_000, values: [10_000_000], ...link },
      { stack: 2, value: 5_000_000, values: [5_000_000], timestamps: [String(nowNs + 1000n)] },
    ]);

    expect(heap).toMatchObject({
      profile_type: 'memory:alloc_space:bytes:space:bytes',
      sample_type: 'alloc_space',
      sample_unit: 'bytes',
      period: 524_288n,
      total_value: 5120n,
      trace_id: null,
      span_id: null,
      profile_id: null,
    });
    expect(JSON.parse(heap.stacktraces_json as string)).toEqual([SAMPLE_CPU_STACKS[1], ['handleCheckout', 'main']]);
    expect(JSON.parse(heap.samples_json as string)).toEqual([
      { stack: 0, value: 4096, values: [4096] },
      { stack: 1, value: 1024, values: [1024] },
    ]);

    // The frames are plain text to SQL too: each stack's leaf, per stack.
    const leaves = await sql(
      `SELECT json_extract_string(stacktraces_json, '$[0][0]') AS leaf, json_extract_string(stacktraces_json, '$[2][0]') AS unsymbolized, json_array_length(stacktraces_json) AS stacks FROM profiles WHERE service_name = ${quote(service)} AND sample_type = 'cpu'`,
    );
    expect(leaves).toEqual([{ leaf: 'memmove', unsymbolized: '/usr/lib/x86_64-linux-gnu/libc.so.6', stacks: 3n }]);

    // The profile's linked span joins the traces table (the trace went in over OTLP/HTTP protobuf).
    const joined = await waitForRows(
      `the profile of ${service} joined to its span`,
      `SELECT p.sample_type, t.name AS span_name, t.service_name AS span_service, p.total_value FROM profiles p JOIN traces t ON p.trace_id = t.trace_id AND p.span_id = t.span_id WHERE p.service_name = ${quote(service)}`,
      1,
    );
    expect(joined).toEqual([{ sample_type: 'cpu', span_name: 'compute-cart', span_service: traceService, total_value: 65_000_000n }]);
    const byTrace = await sql(`SELECT count(*) AS n FROM traces t JOIN profiles p ON p.trace_id = t.trace_id WHERE p.service_name = ${quote(service)}`);
    expect(byTrace).toEqual([{ n: 3n }]); // the trace's three spans, all joined through the trace id
    // The tenant-pinned name reads the same table as the bare one.
    const pinned = await sql(`SELECT count(*) AS n FROM sql_profiles WHERE service_name = ${quote(service)}`);
    const bare = await sql(`SELECT count(*) AS n FROM profiles WHERE service_name = ${quote(service)}`);
    expect(pinned).toEqual(bare);
    expect((bare[0] as { n: bigint }).n).toBeGreaterThan(0n);
  });

  it.each(Object.keys(send))('%s: a profile with an out-of-range dictionary index is rejected as partial success; the others land', async (transport) => {
    const service = `profiles-partial-${transport}`;
    const partial = await send[transport]!(sampleProfilesRequest(service, { traceId: trace.traceId, spanId: trace.spanIds[0]! }, BigInt(Date.now()) * 1_000_000n, true));
    expect(partial).toEqual(expect.objectContaining({ rejectedProfiles: 1n, errorMessage: 'profile references stack_index 42, out of range of the stack_table (5 entries)' }));
    const rows = await waitForRows(`2 profile rows of ${service}`, `SELECT sample_type, total_value FROM profiles WHERE service_name = ${quote(service)} ORDER BY sample_type`, 2);
    expect(rows).toEqual([
      { sample_type: 'alloc_space', total_value: 5120n },
      { sample_type: 'cpu', total_value: 65_000_000n },
    ]);
  });

  describe('bad input', () => {
    it.each([
      ['garbage protobuf', Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x99, 0x01]), {}, 400, 'bad_data', /not a valid .*ExportProfilesServiceRequest protobuf/],
      ['invalid JSON', '{"resourceProfiles": [', { 'content-type': 'application/json' }, 400, 'bad_data', /not a valid OTLP JSON/],
      ['JSON of the wrong shape', '{"dictionary": {"stringTable": 5}}', { 'content-type': 'application/json' }, 400, 'bad_data', /not a valid OTLP JSON/],
      ['broken gzip', Buffer.from('definitely not gzip'), { 'content-encoding': 'gzip' }, 400, 'bad_data', /not valid gzip/],
      ['wrong content type', 'hello', { 'content-type': 'text/plain' }, 415, 'unsupported_media_type', /Content-Type/],
      ['missing key', Buffer.alloc(0), { authorization: '' }, 401, 'unauthorized', /Authorization/],
    ] as const)('POST /v1development/profiles with %s → %i %s', async (_name, body, headers, status, kind, message) => {
      const res = await post(body, headers as Record<string, string>);
      expect(res.status).toBe(status);
      const json = (await res.json()) as { status: string; errorType: string; error: string };
      expect(json).toMatchObject({ status: 'error', errorType: kind });
      expect(json.error).toMatch(message);
    });

    it('an empty request is acknowledged', async () => {
      const res = await post(Buffer.alloc(0));
      expect(res.status).toBe(200);
    });

    it('gRPC ProfilesService/Export: garbage is INVALID_ARGUMENT, no key UNAUTHENTICATED', async () => {
      const garbage = await grpcExport(Buffer.from([0xff, 0xff, 0xff]));
      expect(garbage.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(garbage.details).toMatch(/ExportProfilesServiceRequest/);
      expect((await grpcExport(new Uint8Array(0), { 'x-tenant-id': tenant })).code).toBe(grpc.status.UNAUTHENTICATED);
    });
  });
});

/**
 * Spec 1, Ingest rule 6: accepted profile requests are logged at debug level only. An acceptor
 * process running at debug writes its lines to its own log file; after an accepted profile export
 * none of them above debug is about that request (fastify's own per-request lines were at info),
 * while the debug lines say what happened.
 */
describe('profiles ingest logging (cluster, log level debug)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'acme';

  beforeAll(async () => {
    floe = await startFloe({ mode: 'cluster', storage: 'fs', config: { log: { level: 'debug' } } });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  type Line = { level: string; msg: string; path?: string; status?: number; profiles?: number };
  const acceptorLines = (): Line[] =>
    readFileSync(join(floe.dataDir, 'acceptor.log'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line);

  it('an accepted profile export leaves only debug lines: the acceptance and the request', async () => {
    const before = acceptorLines().length;
    const res = await postProfiles(floe.otlpHttpUrl, { apiKey: key, tenant }, sampleProfilesRequest('logged-svc', { traceId: '5b8aa5a2d2c872e8321cf37308d69df2', spanId: '051581bf3cb55c13' }, BigInt(Date.now()) * 1_000_000n));
    expect(res.status).toBe(200);
    const lines = await waitFor(
      'the request line in the acceptor log',
      async () => {
        const now = acceptorLines().slice(before);
        return now.some((l) => l.msg === 'request completed' && l.path === '/v1development/profiles') ? now : undefined;
      },
      10_000,
      100,
    );
    expect(lines.filter((l) => l.level !== 'debug' && l.level !== 'trace')).toEqual([]);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ level: 'debug', msg: 'profiles accepted', profiles: 2 }),
        expect.objectContaining({ level: 'debug', msg: 'request completed', path: '/v1development/profiles', status: 200 }),
      ]),
    );
  });
});
