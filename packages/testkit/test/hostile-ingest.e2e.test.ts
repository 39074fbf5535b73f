import { connect as http2Connect } from 'node:http2';
import { gzipSync } from 'node:zlib';
import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ExportLogsServiceRequestSchema,
  ExportLogsServiceResponseSchema,
  ExportMetricsServiceRequestSchema,
  ExportMetricsServiceResponseSchema,
  ExportProfilesServiceRequestSchema,
  ExportProfilesServiceResponseSchema,
  LokiPushRequestSchema,
  PromWriteRequestSchema,
  PyroPushRequestSchema,
  RwV2RequestSchema,
  create,
  fromBinary,
  toBinary,
} from '@floe/proto';
import { REMOTE_WRITE_HEADERS, goCpuPprof, startFloe, tenantSql, type FloeUnderTest } from '../src/index.ts';

/**
 * The acceptor's ingest protocols other than plain OTLP traces, sent by a hostile or careless
 * client (ingest-bad-input.e2e.test.ts covers OTLP traces and the shared checks): inputs that
 * used to crash or stall the acceptor or answer 500 get their documented answer, garbled bodies of
 * every protocol (seeded mutations of valid ones, reproducible) never get a 5xx, and a valid
 * request after all of it still lands.
 */

const MAX_BODY = 1024 * 1024;
const MAX_INFLATED = 4 * 1024 * 1024;
const GRPC_STATUS = { INTERNAL: 13, RESOURCE_EXHAUSTED: 8, UNIMPLEMENTED: 12 } as const;

/** xorshift32: the same mutations on every run. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

/** A valid body with a few bytes flipped, cut, repeated, removed or a huge varint put in. */
function mutate(src: Uint8Array, seed: number): Buffer {
  const r = rng(seed);
  let b = Buffer.from(src);
  for (let k = 1 + Math.floor(r() * 4); k > 0; k--) {
    const at = Math.floor(r() * Math.max(1, b.length));
    const op = Math.floor(r() * 6);
    if (op === 0) b[at] = Math.floor(r() * 256);
    else if (op === 1) b = b.subarray(0, at);
    else if (op === 2) b = Buffer.concat([b.subarray(0, at), b.subarray(at, at + Math.floor(r() * 16)), b.subarray(at)]);
    else if (op === 3) b = Buffer.concat([b.subarray(0, at), b.subarray(at + Math.floor(r() * 8))]);
    else if (op === 4) b = Buffer.concat([b.subarray(0, at), Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]), b.subarray(at)]);
    else if (at < b.length) b[at] = b[at]! ^ (1 << Math.floor(r() * 8));
  }
  return b;
}

// Thrift binary protocol, enough for a Jaeger Batch.
const i32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const i64 = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(n);
  return b;
};
const tField = (type: number, id: number, value: Buffer) => Buffer.concat([Buffer.from([type, id >> 8, id & 0xff]), value]);
const tString = (s: string) => Buffer.concat([i32(Buffer.byteLength(s)), Buffer.from(s)]);
const tStruct = (...fields: Buffer[]) => Buffer.concat([...fields, Buffer.from([0])]);
const tList = (elemType: number, items: Buffer[]) => Buffer.concat([Buffer.from([elemType]), i32(items.length), ...items]);

// JFR: one chunk with compressed integers (the layout of services/acceptor/src/jfr/reader.ts).
function varint(n: number | bigint): number[] {
  let x = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  for (let i = 0; i < 8; i++) {
    const b = Number(x & 0x7fn);
    x >>= 7n;
    if (x === 0n) return [...out, b];
    out.push(b | 0x80);
  }
  return [...out, Number(x & 0xffn)];
}
const jfrString = (s: string) => [3, ...varint(Buffer.byteLength(s)), ...Buffer.from(s)];
const sized = (body: number[]) => {
  for (let len = 1; ; len++) {
    const size = varint(body.length + len);
    if (size.length === len) return [...size, ...body];
  }
};
/** A recording of execution samples on `traces` stack traces of `frames` frames each, every frame the method `method`. */
function jfrRecording(method: string, traces: number, frames: number): Buffer {
  const classes: Array<[string, string, Array<[string, string, boolean?, boolean?]>]> = [
    ['1', 'long', []],
    ['2', 'java.lang.String', []],
    ['3', 'jdk.types.Symbol', [['string', '2']]],
    ['4', 'java.lang.Class', [['name', '3', true]]],
    ['5', 'jdk.types.Method', [['type', '4', true], ['name', '3', true]]],
    ['6', 'jdk.types.StackFrame', [['method', '5', true]]],
    ['7', 'jdk.types.StackTrace', [['frames', '6', false, true]]],
    ['8', 'jdk.ExecutionSample', [['startTime', '1'], ['stackTrace', '7', true]]],
  ];
  const strings: string[] = [];
  const idx = (s: string) => (strings.includes(s) ? strings.indexOf(s) : strings.push(s) - 1);
  const element = (name: string, attrs: Record<string, string>, children: number[][]): number[] => [
    ...varint(idx(name)),
    ...varint(Object.keys(attrs).length),
    ...Object.entries(attrs).flatMap(([k, v]) => [...varint(idx(k)), ...varint(idx(v))]),
    ...varint(children.length),
    ...children.flat(),
  ];
  const classElements = classes.map(([id, name, fields]) =>
    element('class', { id, name }, fields.map(([f, type, pool, array]) => element('field', { name: f, class: type, ...(pool ? { constantPool: 'true' } : {}), ...(array ? { dimension: '1' } : {}) }, []))),
  );
  const root = element('root', {}, [element('metadata', {}, classElements)]);
  const metadata = sized([...varint(0), ...varint(0), ...varint(0), ...varint(0), ...varint(strings.length), ...strings.flatMap(jfrString), ...root]);
  const constants = (classId: number, values: number[][]) => [...varint(classId), ...varint(values.length), ...values.flatMap((v, i) => [...varint(i + 1), ...v])];
  const stackTraces = Array.from({ length: traces }, () => [...varint(frames), ...new Array<number>(frames).fill(1)]);
  const pool = sized([...varint(1), ...varint(0), ...varint(0), ...varint(0), 1, ...varint(4), ...constants(3, [jfrString(method)]), ...constants(4, [varint(1)]), ...constants(5, [[1, 1]]), ...constants(7, stackTraces)]);
  const events = Array.from({ length: traces }, (_, t) => sized([...varint(8), ...varint(5), ...varint(t + 1)])).flat();
  const metaOffset = 68 + events.length;
  const cpOffset = metaOffset + metadata.length;
  const header = Buffer.alloc(68);
  header.write('FLR\0', 0, 'latin1');
  header.writeUInt16BE(2, 4);
  header.writeUInt16BE(1, 6);
  header.writeBigInt64BE(BigInt(cpOffset + pool.length), 8);
  header.writeBigInt64BE(BigInt(cpOffset), 16);
  header.writeBigInt64BE(BigInt(metaOffset), 24);
  header.writeBigInt64BE(1_000_000_000n, 56);
  header.writeInt32BE(1, 64);
  return Buffer.concat([header, Buffer.from(events), Buffer.from(metadata), Buffer.from(pool)]);
}

/** A resource of 4,096 string attributes (service.name among them): copied onto every row, thousands of entries each. */
const thousandsOfResourceAttributes = (service: string) => [
  { key: 'service.name', value: { value: { case: 'stringValue' as const, value: service } } },
  ...Array.from({ length: 4095 }, (_, i) => ({ key: `k${i}`, value: { value: { case: 'stringValue' as const, value: 'v' } } })),
];

describe('hostile ingest on the other protocols', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'acme';
  const nowMs = Date.now();
  const nowNs = BigInt(nowMs) * 1_000_000n;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { acceptor: { max_body_bytes: MAX_BODY, max_decompressed_bytes: MAX_INFLATED } } });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const auth = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
  const post = (path: string, body: Uint8Array | string, headers: Record<string, string>) =>
    fetch(`${floe.otlpHttpUrl}${path}`, { method: 'POST', body, headers: { ...auth(), ...headers } });
  const { rowsOf } = tenantSql(() => floe.flightAddress, auth);
  const envelope = async (res: Response) => ({ status: res.status, body: (await res.json()) as { status: string; errorType: string; error: string } });

  /** One gRPC call over HTTP/2 with a hand-made frame (grpc-js's client would not send these): its grpc-status. */
  const grpcRaw = (method: string, frame: Buffer, headers: Record<string, string>) =>
    new Promise<string | undefined>((resolve, reject) => {
      const client = http2Connect(`http://${floe.otlpGrpcAddress}`);
      client.on('error', reject);
      const req = client.request({ ':method': 'POST', ':path': method, 'content-type': 'application/grpc', te: 'trailers', ...auth(), ...headers });
      let status: string | undefined;
      const take = (h: Record<string, unknown>) => {
        if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
      };
      req.on('response', take);
      req.on('trailers', take);
      req.on('data', () => {});
      req.on('end', () => {
        client.close();
        resolve(status);
      });
      req.on('error', reject);
      req.end(frame);
    });
  const grpcFrame = (compressed: boolean, message: Buffer) => {
    const head = Buffer.alloc(5);
    head[0] = compressed ? 1 : 0;
    head.writeUInt32BE(message.length, 1);
    return Buffer.concat([head, message]);
  };
  const LOGS_EXPORT = '/opentelemetry.proto.collector.logs.v1.LogsService/Export';

  it.each([
    ['a compressed message in an encoding the server does not know', 'UNIMPLEMENTED', () => grpcFrame(true, Buffer.from('xxxx')), { 'grpc-encoding': 'br' }],
    ['a gzip message that inflates past the size limit', 'RESOURCE_EXHAUSTED', () => grpcFrame(true, gzipSync(Buffer.alloc(MAX_BODY * 4))), { 'grpc-encoding': 'gzip' }],
    ['a gzip message that is not gzip', 'INTERNAL', () => grpcFrame(true, Buffer.from('not gzip at all')), { 'grpc-encoding': 'gzip' }],
  ] as const)('gRPC: %s is %s', async (_name, status, frame, headers) => {
    expect(await grpcRaw(LOGS_EXPORT, frame(), headers)).toBe(String(GRPC_STATUS[status]));
  });


  const bomb = () => gzipSync(Buffer.alloc(MAX_INFLATED * 2, 0x20));
  /** A snappy block whose header announces more than the body could hold. */
  const lyingSnappy = Buffer.from([0xc0, 0x84, 0x3d, 0x00, 0x61]);
  const pprofForm = (part: string, bytes: Uint8Array) => {
    const form = new FormData();
    form.set(part, new Blob([bytes]), part);
    return form;
  };
  const window = () => ({ from: String(Math.floor(nowMs / 1000) - 10), until: String(Math.floor(nowMs / 1000)) });

  it.each<[string, string, () => Uint8Array | string | FormData, Record<string, string>, number, string, RegExp]>([
    ['Loki push JSON, a gzip bomb', '/loki/api/v1/push', bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip' }, 413, 'too_large', /inflates beyond 4194304 bytes/],
    ['Loki push protobuf, a snappy header past the inflate cap', '/loki/api/v1/push', () => compress(Buffer.alloc(MAX_INFLATED + 1)), { 'content-type': 'application/x-protobuf' }, 413, 'too_large', /inflates beyond/],
    ['Loki push protobuf, a snappy header announcing more than the body holds', '/loki/api/v1/push', () => lyingSnappy, { 'content-type': 'application/x-protobuf' }, 400, 'bad_data', /not snappy/],
    ['Loki push protobuf, snappy cut short', '/loki/api/v1/push', () => {
      const whole = compress(toBinary(LokiPushRequestSchema, create(LokiPushRequestSchema, { streams: [{ labels: '{app="x"}', entries: [{ line: 'l'.repeat(100) }] }] })));
      return whole.subarray(0, whole.length - 3);
    }, { 'content-type': 'application/x-protobuf' }, 400, 'bad_data', /not snappy/],
    ['Loki push JSON, zstd', '/loki/api/v1/push', () => '{}', { 'content-type': 'application/json', 'content-encoding': 'zstd' }, 415, 'unsupported_media_type', /Content-Encoding/],
    ['remote write, gzip instead of snappy', '/api/v1/write', () => gzipSync(Buffer.from('x')), { ...REMOTE_WRITE_HEADERS, 'content-encoding': 'gzip' }, 415, 'unsupported_media_type', /snappy/],
    ['remote write, a snappy header past the inflate cap', '/api/v1/write', () => compress(Buffer.alloc(MAX_INFLATED + 1)), REMOTE_WRITE_HEADERS, 413, 'too_large', /inflates beyond/],
    ['remote write 2.0, a label reference beyond the symbols', '/api/v1/write', () => compress(toBinary(RwV2RequestSchema, create(RwV2RequestSchema, { symbols: ['', '__name__'], timeseries: [{ labelsRefs: [1, 4_000_000_000], samples: [{ value: 1, timestamp: BigInt(nowMs) }] }] }))), { ...REMOTE_WRITE_HEADERS, 'content-type': 'application/x-protobuf;proto=io.prometheus.write.v2.Request' }, 400, 'bad_data', /references symbol 4000000000 of 2/],
    ['Zipkin, a gzip bomb', '/api/v2/spans', bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip' }, 413, 'too_large', /inflates beyond/],
    ['Zipkin, zstd', '/api/v2/spans', () => '[]', { 'content-type': 'application/json', 'content-encoding': 'zstd' }, 415, 'unsupported_media_type', /Content-Encoding/],
    ['Jaeger, a gzip bomb', '/api/traces', bomb, { 'content-type': 'application/x-thrift', 'content-encoding': 'gzip' }, 413, 'too_large', /inflates beyond/],
    ['Jaeger, a list claiming more elements than bytes', '/api/traces', () => tStruct(tField(12, 1, tStruct(tField(11, 1, tString('svc')))), tField(15, 2, Buffer.concat([Buffer.from([12]), i32(0x7fffffff)]))), { 'content-type': 'application/x-thrift' }, 400, 'bad_data', /list of 2147483647/],
    ['Pyroscope ingest, a gzip bomb', `/ingest?${new URLSearchParams({ name: 'bomb.cpu' })}`, bomb, { 'content-encoding': 'gzip' }, 413, 'too_large', /inflates beyond/],
    ['Pyroscope ingest, a gzipped pprof part that inflates past the cap', `/ingest?${new URLSearchParams({ name: 'bomb.cpu', format: 'pprof' })}`, () => pprofForm('profile', bomb()), {}, 413, 'too_large', /inflate beyond 4194304 bytes/],
    ['Pyroscope ingest, a gzipped JFR part that inflates past the cap', `/ingest?${new URLSearchParams({ name: 'bomb', format: 'jfr' })}`, () => pprofForm('jfr', bomb()), {}, 413, 'too_large', /inflates beyond/],
    ['Pyroscope ingest, a multipart form cut short', `/ingest?${new URLSearchParams({ name: 'cut.cpu', format: 'pprof' })}`, () => '--xyz\r\nContent-Disposition: form-data; name="profile"; filename="p"\r\n\r\nabc', { 'content-type': 'multipart/form-data; boundary=xyz' }, 400, 'bad_data', /multipart/],
  ])('%s', async (_name, path, body, headers, status, errorType, message) => {
    const res = await envelope(await post(path, body() as never, headers));
    expect(res).toEqual({ status, body: { status: 'error', errorType, error: expect.stringMatching(message) } });
  });

  it('Pyroscope push: a gzip bomb, and a pprof inside that inflates past the cap, are Connect errors', async () => {
    const push = (body: Uint8Array, headers: Record<string, string> = {}) => post('/push.v1.PusherService/Push', body, { 'content-type': 'application/proto', 'connect-protocol-version': '1', ...headers });
    const outer = await push(bomb(), { 'content-encoding': 'gzip' });
    expect({ status: outer.status, body: await outer.json() }).toEqual({ status: 429, body: { code: 'resource_exhausted', message: expect.stringMatching(/inflates beyond 4194304 bytes/) } });
    const inner = await push(toBinary(PyroPushRequestSchema, create(PyroPushRequestSchema, { series: [{ labels: [{ name: 'service_name', value: 'bomb' }], samples: [{ rawProfile: bomb() }] }] })));
    expect({ status: inner.status, body: await inner.json() }).toEqual({ status: 429, body: { code: 'resource_exhausted', message: expect.stringMatching(/profiles inflate beyond 4194304 bytes/) } });
  });


  /** Valid bodies of every protocol, each with where it goes and how it is framed after mutation. */
  const corpus = (): Array<{ name: string; path: string; headers: Record<string, string>; body: Uint8Array; frame?: (b: Uint8Array) => Uint8Array; connect?: true }> => {
    const ns = nowNs.toString();
    const jaeger = tStruct(
      tField(12, 1, tStruct(tField(11, 1, tString('fuzz-jaeger')), tField(15, 2, tList(12, [tStruct(tField(11, 1, tString('hostname')), tField(8, 2, i32(0)), tField(11, 3, tString('h1')))])))),
      tField(15, 2, tList(12, [tStruct(tField(10, 1, i64(7n)), tField(10, 2, i64(0n)), tField(10, 3, i64(9n)), tField(10, 4, i64(0n)), tField(11, 5, tString('op')), tField(8, 7, i32(1)), tField(10, 8, i64(BigInt(nowMs) * 1000n)), tField(10, 9, i64(5n)), tField(15, 10, tList(12, [tStruct(tField(11, 1, tString('error')), tField(8, 2, i32(2)), tField(2, 5, Buffer.from([1])))])))])),
    );
    const zipkin = JSON.stringify([{ traceId: '5af7183fb1d4cf5f', id: '352bff9a74ca9ad2', name: 'get', timestamp: nowMs * 1000, duration: 5, kind: 'SERVER', localEndpoint: { serviceName: 'fuzz-zipkin' }, tags: { a: 'b' }, annotations: [{ timestamp: nowMs * 1000, value: 'x' }] }]);
    const lokiJson = JSON.stringify({ streams: [{ stream: { app: 'fuzz-loki' }, values: [[ns, 'line', { trace_id: '0102030405060708090a0b0c0d0e0f10' }]] }] });
    const lokiProto = toBinary(LokiPushRequestSchema, create(LokiPushRequestSchema, { streams: [{ labels: '{app="fuzz-loki"}', entries: [{ timestamp: { seconds: BigInt(Math.floor(nowMs / 1000)) }, line: 'line', structuredMetadata: [{ name: 'k', value: 'v' }] }] }] }));
    const rw1 = toBinary(
      PromWriteRequestSchema,
      create(PromWriteRequestSchema, {
        timeseries: [
          { labels: [{ name: '__name__', value: 'fuzz_total' }, { name: 'job', value: 'j' }], samples: [{ value: 1, timestamp: BigInt(nowMs) }], exemplars: [{ labels: [{ name: 'trace_id', value: '0102030405060708090a0b0c0d0e0f10' }], value: 1, timestamp: BigInt(nowMs) }] },
          { labels: [{ name: '__name__', value: 'fuzz_hist' }], histograms: [{ count: { case: 'countInt', value: 3n }, zeroCount: { case: 'zeroCountInt', value: 1n }, schema: 1, timestamp: BigInt(nowMs), positiveSpans: [{ offset: 1, length: 2 }], positiveDeltas: [1n, 0n] }] },
        ],
      }),
    );
    const rw2 = toBinary(RwV2RequestSchema, create(RwV2RequestSchema, { symbols: ['', '__name__', 'fuzz_v2', 'help'], timeseries: [{ labelsRefs: [1, 2], samples: [{ value: 2, timestamp: BigInt(nowMs) }], metadata: { type: 2, helpRef: 3 } }] }));
    const pprof = goCpuPprof(nowNs);
    const push = toBinary(PyroPushRequestSchema, create(PyroPushRequestSchema, { series: [{ labels: [{ name: '__name__', value: 'process_cpu' }, { name: 'service_name', value: 'fuzz-push' }], samples: [{ rawProfile: pprof }] }] }));
    const logsJson = JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'fuzz-logs' } }] }, scopeLogs: [{ logRecords: [{ timeUnixNano: ns, body: { kvlistValue: { values: [{ key: 'a', value: { arrayValue: { values: [{ intValue: '-9223372036854775808' }, { doubleValue: 'NaN' }] } } }] } }, traceId: '0102030405060708090a0b0c0d0e0f10' }] }] }] });
    const metricsJson = JSON.stringify({ resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'fuzz_m', histogram: { aggregationTemporality: 2, dataPoints: [{ timeUnixNano: ns, count: '2', bucketCounts: ['1', '1'], explicitBounds: [1], sum: 'Infinity' }] } }, { name: 'fuzz_e', exponentialHistogram: { aggregationTemporality: 1, dataPoints: [{ timeUnixNano: ns, count: '1', scale: 3, zeroCount: '0', positive: { offset: -5, bucketCounts: ['1'] } }] } }] }] }] });
    const logsProto = toBinary(ExportLogsServiceRequestSchema, create(ExportLogsServiceRequestSchema, { resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: nowNs, body: { value: { case: 'stringValue', value: 'x' } } }] }] }] }));
    const profiles = toBinary(
      ExportProfilesServiceRequestSchema,
      create(ExportProfilesServiceRequestSchema, {
        dictionary: { stringTable: ['', 'cpu', 'ns', 'main', 'k'], functionTable: [{}, { nameStrindex: 3 }], locationTable: [{}, { lines: [{ functionIndex: 1 }] }], stackTable: [{}, { locationIndices: [1, 1] }], attributeTable: [{}, { keyStrindex: 4, value: { value: { case: 'intValue', value: 3n } } }], linkTable: [{}, { traceId: new Uint8Array(16).fill(1), spanId: new Uint8Array(8).fill(2) }] },
        resourceProfiles: [{ scopeProfiles: [{ profiles: [{ sampleType: { typeStrindex: 1, unitStrindex: 2 }, timeUnixNano: nowNs, samples: [{ stackIndex: 1, values: [5n], attributeIndices: [1], linkIndex: 1 }] }] }] }],
      }),
    );
    const q = (o: Record<string, string>) => new URLSearchParams({ ...window(), ...o }).toString();
    const text = (t: string) => Buffer.from(t);
    const json = { 'content-type': 'application/json' };
    const proto = { 'content-type': 'application/x-protobuf' };
    return [
      { name: 'jaeger', path: '/api/traces', headers: { 'content-type': 'application/x-thrift' }, body: jaeger },
      { name: 'zipkin', path: '/api/v2/spans', headers: json, body: text(zipkin) },
      { name: 'loki json', path: '/loki/api/v1/push', headers: json, body: text(lokiJson) },
      { name: 'loki protobuf', path: '/loki/api/v1/push', headers: proto, body: lokiProto, frame: compress },
      { name: 'loki snappy bytes', path: '/loki/api/v1/push', headers: proto, body: compress(lokiProto) },
      { name: 'remote write 1.0', path: '/api/v1/write', headers: REMOTE_WRITE_HEADERS, body: rw1, frame: compress },
      { name: 'remote write 2.0', path: '/api/v1/write', headers: { ...REMOTE_WRITE_HEADERS, 'content-type': 'application/x-protobuf;proto=io.prometheus.write.v2.Request' }, body: rw2, frame: compress },
      { name: 'pyroscope pprof', path: `/ingest?${q({ name: 'fuzz.pprof.cpu', format: 'pprof' })}`, headers: {}, body: pprof },
      { name: 'pyroscope folded', path: `/ingest?${q({ name: 'fuzz.folded.cpu' })}`, headers: {}, body: text('main;work 3\nmain 1\n') },
      { name: 'pyroscope jfr', path: `/ingest?${q({ name: 'fuzz.jfr', format: 'jfr' })}`, headers: {}, body: jfrRecording('work', 2, 3) },
      { name: 'pyroscope push', path: '/push.v1.PusherService/Push', headers: { 'content-type': 'application/proto' }, body: push, connect: true },
      { name: 'otlp logs json', path: '/v1/logs', headers: json, body: text(logsJson) },
      { name: 'otlp logs gzip', path: '/v1/logs', headers: { ...proto, 'content-encoding': 'gzip' }, body: gzipSync(logsProto) },
      { name: 'otlp metrics json', path: '/v1/metrics', headers: json, body: text(metricsJson) },
      { name: 'otlp profiles', path: '/v1development/profiles', headers: proto, body: profiles },
    ];
  };

  it('seeded mutations of a valid body of every protocol are answered 2xx or 4xx in the envelope, never 5xx', async () => {
    const failures: string[] = [];
    for (const c of corpus()) {
      expect(`${c.name} ${(await post(c.path, c.frame ? c.frame(c.body) : c.body, c.headers)).status}`).toMatch(new RegExp(`^${c.name} 20[024]$`));
      for (let seed = 1; seed <= 60; seed++) {
        const mutated = mutate(c.body, seed);
        const res = await post(c.path, c.frame ? c.frame(mutated) : mutated, c.headers);
        const text = await res.text();
        if (res.status < 300) continue;
        let body: Record<string, unknown> | undefined;
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          body = undefined;
        }
        const ok = res.status < 500 && (c.connect ? typeof body?.code === 'string' && typeof body.message === 'string' : body?.status === 'error' && typeof body.errorType === 'string' && typeof body.error === 'string');
        if (!ok) failures.push(`${c.name} seed ${seed}: ${res.status} ${text.slice(0, 200)}`);
      }
    }
    expect(failures).toEqual([]);
    // And every protocol still stores: the valid bodies' rows are there.
    const traces = await rowsOf('the valid Jaeger and Zipkin spans', `SELECT DISTINCT service_name FROM traces WHERE service_name IN ('fuzz-jaeger', 'fuzz-zipkin') ORDER BY 1`, 2);
    expect(traces).toEqual([{ service_name: 'fuzz-jaeger' }, { service_name: 'fuzz-zipkin' }]);
    const profiles = await rowsOf('the valid profiles', `SELECT DISTINCT service_name FROM profiles WHERE service_name LIKE 'fuzz%' ORDER BY 1`, 4);
    expect(profiles.map((r) => r.service_name)).toEqual(expect.arrayContaining(['fuzz-push', 'fuzz.folded', 'fuzz.jfr', 'fuzz.pprof']));
  });



  const logsJson = (record: string) => `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"hostile-json"}}]},"scopeLogs":[{"logRecords":[${record}]}]}]}`;
  const at = () => `"timeUnixNano":"${nowNs}"`;

  it.each([
    ['an int beyond 2^64', `{${at()},"body":{"intValue":"99999999999999999999999"}}`, /int_value from JSON: expected bigint \(int64\): 99999999999999999999999 out of range/],
    ['an int below -2^63', `{${at()},"body":{"intValue":"-9223372036854775809"}}`, /out of range/],
    ['a time beyond 2^64', `{"timeUnixNano":"18446744073709551616"}`, /time_unix_nano from JSON: expected bigint \(uint64\)/],
    ['NaN spelled in lower case', `{${at()},"body":{"doubleValue":"nan"}}`, /double_value from JSON: expected number \(float64\), got "nan"/],
    ['a number past float64', `{${at()},"body":{"doubleValue":1e400}}`, /unexpected infinite number/],
    ['an AnyValue array nested 5,000 deep', `{${at()},"body":${'{"arrayValue":{"values":['.repeat(5000)}{"stringValue":"x"}${']}}'.repeat(5000)}}`, /: values nested deeper than 100 levels$/],
    ['a kvlist nested 150 deep', `{${at()},"body":${'{"kvlistValue":{"values":[{"key":"k","value":'.repeat(150)}{"stringValue":"x"}${'}]}}'.repeat(150)}}`, /maximum recursion depth of 100 reached/],
  ])('OTLP logs JSON: %s is 400 naming it', async (_name, record, message) => {
    const res = await envelope(await post('/v1/logs', logsJson(record), { 'content-type': 'application/json' }));
    expect(res).toEqual({ status: 400, body: { status: 'error', errorType: 'bad_data', error: expect.stringMatching(message) } });
  });

  it('OTLP logs: a resource of thousands of attributes over thousands of records (copied to each row) is cut at the budget of entries, in protobuf and in JSON alike', async () => {
    // 4,096 string attributes and three empty maps, and a scope's four empty maps: 4,103 entries
    // a row, 4,089 rows' worth of the request's budget. (As for traces: unbounded, a 60 KB body
    // of 20,000 × 20,000 took the flush past its memory.)
    const attributes = thousandsOfResourceAttributes('log-resource-bomb');
    const logRecords = Array.from({ length: 4200 }, (_, i) => ({ timeUnixNano: nowNs, body: { value: { case: 'stringValue' as const, value: `r${i}` } } }));
    const message = create(ExportLogsServiceRequestSchema, { resourceLogs: [{ resource: { attributes }, scopeLogs: [{ logRecords }] }] });
    const rejected = "log record's resource and scope attributes, once per record, pass the request's 16777216 entries; send fewer records per resource or fewer resource attributes";
    const proto = await post('/v1/logs', gzipSync(toBinary(ExportLogsServiceRequestSchema, message)), { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' });
    expect(proto.status).toBe(200);
    expect(fromBinary(ExportLogsServiceResponseSchema, new Uint8Array(await proto.arrayBuffer())).partialSuccess).toMatchObject({ rejectedLogRecords: 111n, errorMessage: rejected });
    // The same request as OTLP JSON takes the other conversion, with the same rule.
    const json = JSON.stringify({
      resourceLogs: [{ resource: { attributes: attributes.map((a) => ({ key: a.key, value: { stringValue: a.value.value.value } })) }, scopeLogs: [{ logRecords: logRecords.map((r) => ({ timeUnixNano: String(nowNs), body: { stringValue: `json-${r.body.value.value}` } })) }] }],
    });
    const viaJson = await post('/v1/logs', gzipSync(json), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect({ status: viaJson.status, body: await viaJson.json() }).toEqual({ status: 200, body: { partialSuccess: { rejectedLogRecords: '111', errorMessage: rejected } } });
    const rows = await rowsOf('the records within the budget', `SELECT count(*) AS n, min(cardinality(resource_attr_str)) AS attrs FROM logs WHERE service_name = 'log-resource-bomb' HAVING count(*) >= ${2 * 4089}`);
    expect(rows).toEqual([{ n: BigInt(2 * 4089), attrs: 4096n }]);
  });

  it('OTLP metrics: a resource of thousands of attributes over thousands of points (copied to each row) is cut at the budget of entries', async () => {
    const attributes = thousandsOfResourceAttributes('metric-resource-bomb');
    // One series, a point a millisecond: 4,103 entries a row (as for logs), 4,089 rows' worth.
    const dataPoints = Array.from({ length: 4200 }, (_, i) => ({ timeUnixNano: nowNs - BigInt(i) * 1_000_000n, value: { case: 'asDouble' as const, value: i } }));
    const message = create(ExportMetricsServiceRequestSchema, { resourceMetrics: [{ resource: { attributes }, scopeMetrics: [{ metrics: [{ name: 'resource_bomb_points', data: { case: 'gauge', value: { dataPoints } } }] }] }] });
    const res = await post('/v1/metrics', gzipSync(toBinary(ExportMetricsServiceRequestSchema, message)), { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(fromBinary(ExportMetricsServiceResponseSchema, new Uint8Array(await res.arrayBuffer())).partialSuccess).toMatchObject({
      rejectedDataPoints: 111n,
      errorMessage: "data point's resource and scope attributes, once per point, pass the request's 16777216 entries; send fewer points per resource or fewer resource attributes",
    });
    const rows = await rowsOf('the points within the budget', `SELECT count(*) AS n, min(cardinality(resource_attr_str)) AS attrs FROM metrics WHERE metric_name = 'resource_bomb_points' HAVING count(*) >= 4089`);
    expect(rows).toEqual([{ n: 4089n, attrs: 4096n }]);
  });

  it("OTLP logs JSON: NaN and Infinity in proto3 JSON's spelling, hex ids of the wrong length and uint64's largest time are taken or rejected item by item", async () => {
    const records = [
      `{${at()},"body":{"doubleValue":"NaN"},"attributes":[{"key":"inf","value":{"doubleValue":"-Infinity"}}]}`,
      `{${at()},"body":{"stringValue":"short id"},"traceId":"abc"}`,
      `{"timeUnixNano":"18446744073709551615","body":{"stringValue":"too late"}}`,
    ];
    const res = await post('/v1/logs', logsJson(records.join(',')), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ partialSuccess: { rejectedLogRecords: '2', errorMessage: expect.stringMatching(/trace_id/) } });
    const rows = await rowsOf('the NaN log record', `SELECT body, log_attr_double FROM logs WHERE service_name = 'hostile-json'`);
    expect(rows).toEqual([{ body: 'NaN', log_attr_double: { inf: Number.NEGATIVE_INFINITY } }]);
  });


  it("Pyroscope /ingest: an app whose name ends in one of Object's own names (constructor) is an app, not a profile kind (was 400 'pprof string index 1 is out of range')", async () => {
    const res = await post(`/ingest?${new URLSearchParams({ name: 'hostile.constructor', ...window() })}`, 'main;work 3\n', {});
    expect(res.status).toBe(200);
    const rows = await rowsOf('the profile of hostile.constructor', `SELECT profile_type, total_value FROM profiles WHERE service_name = 'hostile.constructor'`);
    expect(rows).toEqual([{ profile_type: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', total_value: 30_000_000n }]);
    const units = await envelope(await post(`/ingest?${new URLSearchParams({ name: 'hostile', units: 'toString', ...window() })}`, 'main 1\n', {}));
    expect(units).toEqual({ status: 400, body: { status: 'error', errorType: 'bad_data', error: expect.stringMatching(/^units "toString" is not one of/) } });
  });

  it('remote write: a native histogram whose float zero count is NaN or infinite is 400 after the rest is stored (was a 500)', async () => {
    const series = (name: string, zeroCount: number) => ({
      labels: [{ name: '__name__', value: name }],
      histograms: [{ count: { case: 'countInt' as const, value: 2n }, zeroCount: { case: 'zeroCountFloat' as const, value: zeroCount }, schema: 0, timestamp: BigInt(nowMs) }],
    });
    const body = toBinary(
      PromWriteRequestSchema,
      create(PromWriteRequestSchema, {
        timeseries: [series('hostile_nan_zero', Number.NaN), series('hostile_inf_zero', Number.POSITIVE_INFINITY), { labels: [{ name: '__name__', value: 'hostile_rw_ok' }], samples: [{ value: 7, timestamp: BigInt(nowMs) }] }],
      }),
    );
    const res = await envelope(await post('/api/v1/write', compress(body), REMOTE_WRITE_HEADERS));
    expect(res).toEqual({
      status: 400,
      body: { status: 'error', errorType: 'bad_data', error: expect.stringMatching(/^2 samples, histograms or exemplars were refused \(the rest was stored\); first: native histogram has a negative, non-finite or too large count \(hostile_nan_zero/) },
    });
    const rows = await rowsOf('the sample beside the bad histograms', `SELECT metric_name, value FROM metrics WHERE metric_name LIKE 'hostile_%'`);
    expect(rows).toEqual([{ metric_name: 'hostile_rw_ok', value: 7 }]);
  });

  it('remote write: a native histogram whose first bucket lies below the int32 range is refused, not stored wrapped around', async () => {
    const body = toBinary(
      PromWriteRequestSchema,
      create(PromWriteRequestSchema, {
        timeseries: [
          {
            labels: [{ name: '__name__', value: 'hostile_low_offset' }],
            histograms: [{ count: { case: 'countInt', value: 1n }, schema: 0, timestamp: BigInt(nowMs), negativeSpans: [{ offset: -(2 ** 31), length: 1 }], negativeDeltas: [1n] }],
          },
        ],
      }),
    );
    const res = await envelope(await post('/api/v1/write', compress(body), REMOTE_WRITE_HEADERS));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/first bucket index below the int32 range/);
  });


  it('remote write 2.0: a series naming a 1 MB symbol 600 times is 400 after the rest is stored (was a 500: a string past what JavaScript can hold)', async () => {
    const symbols = ['', '__name__', 'hostile_v2_ok', 'hostile_v2_bomb', 'big', 'v'.repeat(1 << 20)];
    const body = toBinary(
      RwV2RequestSchema,
      create(RwV2RequestSchema, {
        symbols,
        timeseries: [
          { labelsRefs: [1, 2], samples: [{ value: 3, timestamp: BigInt(nowMs) }] },
          { labelsRefs: [1, 3, ...new Array<number[]>(600).fill([4, 5]).flat()], samples: [{ value: 4, timestamp: BigInt(nowMs) }] },
        ],
      }),
    );
    const res = await post('/api/v1/write', compress(body), { ...REMOTE_WRITE_HEADERS, 'content-type': 'application/x-protobuf;proto=io.prometheus.write.v2.Request' });
    expect(res.headers.get('x-prometheus-remote-write-samples-written')).toBe('1');
    expect(await envelope(res)).toEqual({
      status: 400,
      body: { status: 'error', errorType: 'bad_data', error: '1 samples, histograms or exemplars were refused (the rest was stored); first: request resolves to more than 268435456 bytes of labels; send fewer series per request' },
    });
    expect(await rowsOf('the series beside the bomb', `SELECT metric_name, value FROM metrics WHERE metric_name LIKE 'hostile_v2%'`)).toEqual([{ metric_name: 'hostile_v2_ok', value: 3 }]);
  });

  it('OTLP profiles: a stack resolving past the row cap, used by a hundred profiles, is resolved once (each profile used to resolve it again, minutes of event loop)', async () => {
    const cpu = { sampleType: { typeStrindex: 2, unitStrindex: 3 }, timeUnixNano: nowNs };
    const req = create(ExportProfilesServiceRequestSchema, {
      dictionary: {
        stringTable: ['', 'f', 'cpu', 'nanoseconds', 'main', 'service.name', 'hostile-profiles'],
        functionTable: [{}, { nameStrindex: 1 }, { nameStrindex: 4 }],
        // A location of ten thousand inlined one-letter frames, 850 times in one stack: 34 MB of names.
        locationTable: [{}, { lines: Array.from({ length: 10_000 }, () => ({ functionIndex: 1 })) }, { lines: [{ functionIndex: 2 }] }],
        stackTable: [{}, { locationIndices: new Array<number>(850).fill(1) }, { locationIndices: [2] }],
      },
      resourceProfiles: [
        {
          resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: 'hostile-profiles' } } }] },
          scopeProfiles: [{ profiles: [...Array.from({ length: 100 }, () => ({ ...cpu, samples: [{ stackIndex: 1, values: [1n] }] })), { ...cpu, samples: [{ stackIndex: 2, values: [7n] }] }] }],
        },
      ],
    });
    const res = await post('/v1development/profiles', toBinary(ExportProfilesServiceRequestSchema, req), { 'content-type': 'application/x-protobuf' });
    expect(res.status).toBe(200);
    const answer = fromBinary(ExportProfilesServiceResponseSchema, new Uint8Array(await res.arrayBuffer()));
    expect(answer.partialSuccess).toMatchObject({ rejectedProfiles: 100n, errorMessage: 'profile references stack 1, which resolves to more than 33554432 bytes of frame names' });
    const rows = await rowsOf('the valid profile beside the bomb', `SELECT total_value, stacktraces_json FROM profiles WHERE service_name = 'hostile-profiles'`);
    expect(rows).toEqual([{ total_value: 7n, stacktraces_json: '[["main"]]' }]);
  });

  it('OTLP profiles: a resource of thousands of attributes over thousands of profiles (copied to each row) is cut at the budget of entries', async () => {
    const attributes = thousandsOfResourceAttributes('profile-resource-bomb');
    const cpu = { sampleType: { typeStrindex: 2, unitStrindex: 3 }, timeUnixNano: nowNs, samples: [{ stackIndex: 1, values: [1n] }] };
    // 4,096 string attributes and three empty maps: 4,099 entries a row, 4,093 rows' worth.
    const req = create(ExportProfilesServiceRequestSchema, {
      dictionary: { stringTable: ['', 'main', 'cpu', 'nanoseconds'], functionTable: [{}, { nameStrindex: 1 }], locationTable: [{}, { lines: [{ functionIndex: 1 }] }], stackTable: [{}, { locationIndices: [1] }] },
      resourceProfiles: [{ resource: { attributes }, scopeProfiles: [{ profiles: Array.from({ length: 4200 }, () => cpu) }] }],
    });
    const res = await post('/v1development/profiles', gzipSync(toBinary(ExportProfilesServiceRequestSchema, req)), { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(fromBinary(ExportProfilesServiceResponseSchema, new Uint8Array(await res.arrayBuffer())).partialSuccess).toMatchObject({
      rejectedProfiles: 107n,
      errorMessage: "profile's resource attributes, once per profile, pass the request's 16777216 entries; send fewer profiles per resource or fewer resource attributes",
    });
    const rows = await rowsOf('the profiles within the budget', `SELECT count(*) AS n, min(cardinality(resource_attr_str)) AS attrs FROM profiles WHERE service_name = 'profile-resource-bomb' HAVING count(*) >= 4093`);
    expect(rows).toEqual([{ n: 4093n, attrs: 4096n }]);
  });

  it("Pyroscope /ingest: a JFR recording whose few kilobytes of frames name a long method fold to no more than the request's budget (was gigabytes, then out of memory)", async () => {
    // 30 traces of 1,000 frames of a 10,000-character method: 300 MB of folded text from 40 KB.
    const recording = jfrRecording(`a.${'m'.repeat(10_000)}`, 30, 1000);
    expect(recording.length).toBeLessThan(64 * 1024);
    const qs = new URLSearchParams({ name: 'hostile.jfr', format: 'jfr', from: String(Math.floor(nowMs / 1000) - 10), until: String(Math.floor(nowMs / 1000)) });
    const res = await envelope(await post(`/ingest?${qs}`, recording, { 'content-type': 'application/octet-stream' }));
    expect(res).toEqual({ status: 400, body: { status: 'error', errorType: 'bad_data', error: 'the body is not a JFR recording Floe can read: its stack traces name more than 268435456 bytes of frames' } });
    // The same shape with short names is an ordinary recording.
    const ok = await post(`/ingest?${new URLSearchParams({ ...Object.fromEntries(qs), name: 'hostile.jfr.ok' })}`, jfrRecording('work', 3, 5), { 'content-type': 'application/octet-stream' });
    expect(ok.status).toBe(200);
    const rows = await rowsOf('the small JFR profile', `SELECT total_value, stacktraces_json FROM profiles WHERE service_name = 'hostile.jfr.ok'`);
    expect(rows).toEqual([{ total_value: 30_000_000n, stacktraces_json: JSON.stringify([new Array(5).fill('work.work')]) }]);
  });
});
