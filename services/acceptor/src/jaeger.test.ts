import { describe, expect, it } from 'vitest';
import { Span_SpanKind, Status_StatusCode, type KeyValue } from '@floe/proto';
import { jaegerToOtlp } from './jaeger.ts';
import { spansToRows } from './traces-to-rows.ts';
import { TType } from './thrift-binary.ts';
import { encodeStruct, tw, type TW } from './thrift-binary-test-support.ts';

// jaeger.thrift's structs, written as a Jaeger client writes them.
type TagValue = string | number | boolean | bigint | Uint8Array;
// A number is a DOUBLE tag (as jaeger-client sends every number), a bigint a LONG one.
const tag = (key: string, v: TagValue): TW => {
  if (typeof v === 'string') return tw.struct([[1, tw.str(key)], [2, tw.i32(0)], [3, tw.str(v)]]);
  if (typeof v === 'number') return tw.struct([[1, tw.str(key)], [2, tw.i32(1)], [4, tw.double(v)]]);
  if (typeof v === 'boolean') return tw.struct([[1, tw.str(key)], [2, tw.i32(2)], [5, tw.bool(v)]]);
  if (typeof v === 'bigint') return tw.struct([[1, tw.str(key)], [2, tw.i32(3)], [6, tw.i64(v)]]);
  return tw.struct([[1, tw.str(key)], [2, tw.i32(4)], [7, tw.str(v)]]);
};
const tags = (t: Array<[string, TagValue]>) => tw.list(TType.STRUCT, t.map(([k, v]) => tag(k, v)));
const ref = (refType: number, low: bigint, high: bigint, spanId: bigint) => tw.struct([[1, tw.i32(refType)], [2, tw.i64(low)], [3, tw.i64(high)], [4, tw.i64(spanId)]]);
const log = (timestamp: bigint, fields: Array<[string, TagValue]>) => tw.struct([[1, tw.i64(timestamp)], [2, tags(fields)]]);
interface SpanInit {
  low: bigint;
  high?: bigint;
  id: bigint;
  parent?: bigint;
  name: string;
  refs?: TW[];
  flags?: number;
  start?: bigint;
  duration?: bigint;
  tags?: Array<[string, TagValue]>;
  logs?: TW[];
}
const span = (s: SpanInit): TW =>
  tw.struct([
    [1, tw.i64(s.low)],
    [2, tw.i64(s.high ?? 0n)],
    [3, tw.i64(s.id)],
    [4, tw.i64(s.parent ?? 0n)],
    [5, tw.str(s.name)],
    ...(s.refs ? ([[6, tw.list(TType.STRUCT, s.refs)]] as Array<[number, TW]>) : []),
    [7, tw.i32(s.flags ?? 1)],
    [8, tw.i64(s.start ?? 1_700_000_000_000_000n)],
    [9, tw.i64(s.duration ?? 1000n)],
    ...(s.tags ? ([[10, tags(s.tags)]] as Array<[number, TW]>) : []),
    ...(s.logs ? ([[11, tw.list(TType.STRUCT, s.logs)]] as Array<[number, TW]>) : []),
  ]);
const batch = (service: string, processTags: Array<[string, TagValue]>, spans: TW[]) =>
  encodeStruct([
    [1, tw.struct([[1, tw.str(service)], [2, tags(processTags)]])],
    [2, tw.list(TType.STRUCT, spans)],
  ]);

const plain = (attrs: readonly KeyValue[]) => Object.fromEntries(attrs.map((a) => [a.key, a.value?.value.value]));

describe('Jaeger thrift batches', () => {
  it('become OTLP spans as the Collector maps them: process, ids, parents, tags, kind, error, logs, references', () => {
    const req = jaegerToOtlp(
      batch('checkout', [['hostname', 'web-1'], ['jaeger.version', 'Node-3.19.0'], ['ip', '10.0.0.7'], ['region', 'eu']], [
        span({
          low: 0x463ac35c9f6413adn,
          id: 0x0a2fb4a1d1a96d31n,
          name: 'GET /cart',
          tags: [['span.kind', 'server'], ['http.method', 'GET'], ['ratio', 0.5], ['cached', false], ['retries', 3n], ['blob', Uint8Array.from([1, 2, 255])], ['error', true], ['otel.status_description', 'boom'], ['dup', 'first'], ['dup', 'last']],
          logs: [log(1_700_000_000_000_500n, [['event', 'retry'], ['attempt', 2n]]), log(1_700_000_000_000_600n, [['message', 'no name']])],
        }),
        // 128-bit trace id with the sign bit set in both halves; parent from parentSpanId.
        span({ low: -2n, high: -0x7000000000000000n, id: 0xffffffffffffff01n, parent: 0x0a2fb4a1d1a96d31n, name: 'select', tags: [['span.kind', 'client']], flags: 0 }),
        // No parentSpanId: the CHILD_OF reference of the same trace is the parent, the other references links.
        span({ low: 5n, id: 6n, name: 'consume', refs: [ref(1, 5n, 0n, 8n), ref(0, 5n, 0n, 7n), ref(0, 9n, 0n, 10n)], tags: [['span.kind', 'consumer']] }),
        // Only a FOLLOWS_FROM reference: it is the parent and stays a link.
        span({ low: 5n, id: 11n, name: 'later', refs: [ref(1, 5n, 0n, 6n)] }),
        // A blank span is skipped.
        span({ low: 0n, id: 0n, name: '', flags: 0, start: 0n, duration: 0n }),
      ]),
    );
    expect(req.resourceSpans).toHaveLength(1);
    const rs = req.resourceSpans[0]!;
    // hostname becomes host.name and jaeger.version opencensus.exporterversion, moved to the end.
    expect(rs.resource!.attributes.map((a) => [a.key, a.value?.value.value])).toEqual([
      ['service.name', 'checkout'],
      ['ip', '10.0.0.7'],
      ['region', 'eu'],
      ['host.name', 'web-1'],
      ['opencensus.exporterversion', 'Jaeger-Node-3.19.0'],
    ]);
    expect(rs.scopeSpans[0]!.scope!.name).toBe('jaeger');
    const [root, select, consume, later, ...rest] = rs.scopeSpans[0]!.spans;
    expect(rest).toEqual([]);
    const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

    expect([hex(root!.traceId), hex(root!.spanId), hex(root!.parentSpanId), root!.name, root!.kind, root!.flags]).toEqual(['0000000000000000463ac35c9f6413ad', '0a2fb4a1d1a96d31', '', 'GET /cart', Span_SpanKind.SERVER, 1]);
    expect([root!.startTimeUnixNano, root!.endTimeUnixNano]).toEqual([1_700_000_000_000_000_000n, 1_700_000_000_001_000_000n]);
    expect(root!.status).toMatchObject({ code: Status_StatusCode.ERROR, message: 'boom' });
    expect(root!.attributes.map((a) => [a.key, a.value?.value.case, a.value?.value.value])).toEqual([
      ['http.method', 'stringValue', 'GET'],
      ['ratio', 'doubleValue', 0.5],
      ['cached', 'boolValue', false],
      ['retries', 'intValue', 3n],
      ['blob', 'bytesValue', Uint8Array.from([1, 2, 255])],
      ['dup', 'stringValue', 'last'],
    ]);
    expect(root!.events.map((e) => [e.timeUnixNano, e.name, plain(e.attributes)])).toEqual([
      [1_700_000_000_000_500_000n, 'retry', { attempt: 2n }],
      [1_700_000_000_000_600_000n, '', { message: 'no name' }],
    ]);
    expect(root!.links).toEqual([]);

    expect([hex(select!.traceId), hex(select!.spanId), hex(select!.parentSpanId), select!.kind, select!.flags, select!.status]).toEqual(['9000000000000000fffffffffffffffe', 'ffffffffffffff01', '0a2fb4a1d1a96d31', Span_SpanKind.CLIENT, 0, undefined]);

    expect([hex(consume!.parentSpanId), consume!.kind]).toEqual(['0000000000000007', Span_SpanKind.CONSUMER]);
    expect(consume!.links.map((l) => [hex(l.traceId), hex(l.spanId), plain(l.attributes)])).toEqual([
      ['00000000000000000000000000000005', '0000000000000008', { 'opentracing.ref_type': 'follows_from' }],
      ['00000000000000000000000000000009', '000000000000000a', { 'opentracing.ref_type': 'child_of' }],
    ]);
    expect([hex(later!.parentSpanId), later!.links.map((l) => plain(l.attributes))]).toEqual(['0000000000000006', [{ 'opentracing.ref_type': 'follows_from' }]]);

    // And as rows: typed attribute maps, bytes as base64 text, the events' names.
    const rows = [...spansToRows(req).byHour.values()].flatMap((b) => b.items as Array<Record<string, unknown>>);
    expect(rows.map((r) => [r.trace_id, r.span_id, r.parent_span_id, r.name, r.kind, r.service_name, r.status_code, r.status_message])).toEqual([
      ['0000000000000000463ac35c9f6413ad', '0a2fb4a1d1a96d31', '', 'GET /cart', 'server', 'checkout', 'error', 'boom'],
      ['9000000000000000fffffffffffffffe', 'ffffffffffffff01', '0a2fb4a1d1a96d31', 'select', 'client', 'checkout', 'unset', ''],
      ['00000000000000000000000000000005', '0000000000000006', '0000000000000007', 'consume', 'consumer', 'checkout', 'unset', ''],
      ['00000000000000000000000000000005', '000000000000000b', '0000000000000006', 'later', 'unspecified', 'checkout', 'unset', ''],
    ]);
    expect([rows[0]!.span_attr_str, rows[0]!.span_attr_double, rows[0]!.span_attr_bool, rows[0]!.span_attr_int]).toEqual([{ 'http.method': 'GET', blob: 'AQL/', dup: 'last' }, { ratio: 0.5 }, { cached: false }, { retries: 3 }]);
    expect(rows[0]!.resource_attr_str).toEqual({ 'service.name': 'checkout', ip: '10.0.0.7', region: 'eu', 'host.name': 'web-1', 'opencensus.exporterversion': 'Jaeger-Node-3.19.0' });
  });

  it.each(['constructor', 'toString', 'bogus'])('a span.kind of %s is unspecified (one of Object\'s own names was taken for a kind, a function)', (name) => {
    const s = jaegerToOtlp(batch('svc', [], [span({ low: 1n, id: 2n, name: 'op', tags: [['span.kind', name]] })])).resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect(s.kind).toBe(Span_SpanKind.UNSPECIFIED);
  });

  it('derive the status as the Collector does: error tag, otel.status_code, then http.status_code', () => {
    const status = (t: Array<[string, TagValue]>) => {
      const s = jaegerToOtlp(batch('svc', [], [span({ low: 1n, id: 2n, name: 'op', tags: t })])).resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
      return [s.status ? [Status_StatusCode[s.status.code], s.status.message] : undefined, Object.keys(plain(s.attributes))];
    };
    expect(status([['error', true], ['http.status_message', 'Bad Gateway']])).toEqual([['ERROR', 'Bad Gateway'], ['http.status_message']]);
    // The error tag wins over otel.status_code, which is dropped all the same.
    expect(status([['error', true], ['otel.status_code', 'OK']])).toEqual([['ERROR', ''], []]);
    expect(status([['error', false]])).toEqual([undefined, ['error']]);
    expect(status([['error', 'true']])).toEqual([undefined, ['error']]);
    expect(status([['otel.status_code', 'ok'], ['otel.status_description', 'fine']])).toEqual([['OK', 'fine'], []]);
    expect(status([['otel.status_code', 'ERROR']])).toEqual([['ERROR', ''], []]);
    expect(status([['http.status_code', 503n]])).toEqual([['ERROR', ''], ['http.status_code']]);
    expect(status([['http.status_code', '500'], ['http.status_message', 'oops']])).toEqual([['ERROR', 'oops'], ['http.status_code', 'http.status_message']]);
    expect(status([['span.kind', 'client'], ['http.status_code', 404n]])).toEqual([['ERROR', ''], ['http.status_code']]);
    expect(status([['span.kind', 'server'], ['http.status_code', 404n]])).toEqual([undefined, ['http.status_code']]);
    expect(status([['http.status_code', 200n]])).toEqual([undefined, ['http.status_code']]);
    // A double http.status_code (jaeger-client sends every number as one) sets nothing, as in the Collector.
    expect(status([['http.status_code', 500]])).toEqual([undefined, ['http.status_code']]);
  });

  it('refuse malformed batches naming the place', () => {
    const refusal = (body: Uint8Array) => {
      try {
        jaegerToOtlp(body);
      } catch (err) {
        expect((err as { code?: string }).code).toBe('FLOE_ERR_INGEST_DECODE');
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    const processOnly = [1, tw.struct([[1, tw.str('svc')]])] as [number, TW];
    expect(refusal(encodeStruct([[2, tw.list(TType.STRUCT, [])]]))).toBe('process is required');
    expect(refusal(encodeStruct([processOnly]))).toBe('spans is required');
    expect(refusal(encodeStruct([[1, tw.struct([])], [2, tw.list(TType.STRUCT, [])]]))).toBe('process.serviceName is required');
    expect(refusal(encodeStruct([processOnly, [2, tw.list(TType.I32, [tw.i32(1)])]]))).toBe('spans must be a list of structs, not of i32');
    expect(refusal(encodeStruct([[1, tw.str('svc')], [2, tw.list(TType.STRUCT, [])]]))).toBe('process must be a struct, not a string');
    expect(refusal(encodeStruct([processOnly, [2, tw.list(TType.STRUCT, [tw.struct([[1, tw.i64(1n)]])])]]))).toBe('spans[0].traceIdHigh is required');
    expect(refusal(encodeStruct([processOnly, [2, tw.list(TType.STRUCT, [tw.struct([[1, tw.i32(1)]])])]]))).toBe('spans[0].traceIdLow must be an i64, not an i32');
    expect(refusal(batch('svc', [], [span({ low: 1n, id: 2n, name: 'op', start: -5n })]))).toBe('spans[0].startTime must not be negative');
    expect(refusal(batch('svc', [], [span({ low: 1n, id: 2n, name: 'op', duration: -5n })]))).toBe('spans[0].duration must not be negative');
    expect(refusal(batch('svc', [], [span({ low: 1n, id: 2n, name: 'op', logs: [tw.struct([[1, tw.i64(1n)]])] })]))).toBe('spans[0].logs[0].fields is required');
    expect(refusal(batch('svc', [], [span({ low: 1n, id: 2n, name: 'op', refs: [tw.struct([[1, tw.i32(0)]])] })]))).toBe('spans[0].references[0].traceIdLow is required');
    expect(refusal(batch('svc', [['k', 'v']], []).subarray(0, 20))).toMatch(/^body is not valid Thrift binary protocol: /);
    expect(refusal(new Uint8Array(0))).toMatch(/^body is not valid Thrift binary protocol: field type at byte 0 needs 1 bytes, 0 left/);
    expect(refusal(batch('svc', [], [span({ low: 1n, id: 2n, name: 'op', tags: [] })]).subarray(0, 40))).toMatch(/^body is not valid Thrift binary protocol: /);
    // Fields the IDL does not name are passed over, as generated readers skip them.
    expect(jaegerToOtlp(encodeStruct([processOnly, [2, tw.list(TType.STRUCT, [span({ low: 1n, id: 2n, name: 'op' })])], [3, tw.list(TType.STRUCT, [tw.struct([[1, tw.i32(1)]])])]])).resourceSpans[0]!.scopeSpans[0]!.spans).toHaveLength(1);
    // An unknown tag type is kept as a marker string, as the Collector keeps it; a tag needs a key.
    expect(refusal(batch('svc', [], [span({ low: 1n, id: 2n, name: 'op', logs: [tw.struct([[1, tw.i64(1n)], [2, tw.list(TType.STRUCT, [tw.struct([[2, tw.i32(0)]])])]])] })]))).toBe('spans[0].logs[0].fields[0].key is required');
    const odd = jaegerToOtlp(
      encodeStruct([processOnly, [2, tw.list(TType.STRUCT, [tw.struct([[1, tw.i64(1n)], [2, tw.i64(0n)], [3, tw.i64(2n)], [4, tw.i64(0n)], [5, tw.str('op')], [7, tw.i32(0)], [8, tw.i64(1n)], [9, tw.i64(0n)], [10, tw.list(TType.STRUCT, [tw.struct([[1, tw.str('k')], [2, tw.i32(9)]])])]])])]]),
    );
    expect(plain(odd.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.attributes)).toEqual({ k: '<Unknown Jaeger TagType 9>' });
  });

  it('take an empty batch as nothing to store', () => {
    const req = jaegerToOtlp(encodeStruct([[1, tw.struct([[1, tw.str('svc')]])], [2, tw.list(TType.STRUCT, [])]]));
    expect(req.resourceSpans.flatMap((r) => r.scopeSpans)).toEqual([]);
    expect(spansToRows(req).byHour.size).toBe(0);
  });
});
