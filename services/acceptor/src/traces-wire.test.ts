import { describe, expect, it } from 'vitest';
import { ExportTraceServiceRequestSchema, create, fromBinary, toBinary, type MessageInitShape } from '@floe/proto';
import { tracesTable } from '@floe/schema';
import { SPAN_RESOURCE_OVER_BUDGET, spansToRows } from './traces-to-rows.ts';
import { AcceptedTimes } from './accepted-times.ts';
import { spanPartsOf, spansToPayloadsFromWire } from './traces-wire.ts';
import {
  COMMON_SHAPE,
  INVALID_UTF8,
  VALID_UTF8_EDGES,
  DOUBLES,
  HOUR,
  INTS,
  NOW,
  attributes,
  differential,
  randomResource,
  randomScope,
  encodeTree,
  prng,
  referenceOf,
  str,
  varint,
  wireTrees,
  type MessageShape,
  type Reference,
  type Rng,
  type WField,
} from './wire-test-support.ts';

/**
 * spansToPayloadsFromWire(bytes) must give, for every input both accept, the payloads Ingest makes
 * of spansToRows(fromBinary(bytes)) (a column batch per hour, byte for byte), and throw whenever
 * protobuf-es throws. It may also throw where protobuf-es accepts input that is not valid
 * protobuf, but only with one of STRICTER_THAN_PROTOBUF_ES.
 */

type Init = MessageInitShape<typeof ExportTraceServiceRequestSchema>;

/** The general path: protobuf-es, spansToRows, then each hour's row objects through addRow (as Ingest does). */
const referencePayloads = (bytes: Uint8Array): Reference => referenceOf(tracesTable, spansToRows(fromBinary(ExportTraceServiceRequestSchema, bytes)));

const { wire, expectSame, expectConsistent, expectEveryPrefixThrows, prefixesThatThrow, corruptions, expectNoStateKept, expectBuffersAndOffsets } = differential('spansToPayloadsFromWire', referencePayloads, spansToPayloadsFromWire);

const encode = (init: Init) => toBinary(ExportTraceServiceRequestSchema, create(ExportTraceServiceRequestSchema, init));

// ---------------------------------------------------------------------------------------------
// Deterministic random content (wire-test-support.ts has the common messages')

const id = (r: Rng, n: number) => (r.chance(0.85) ? r.bytes(n) : r.pick([new Uint8Array(n), new Uint8Array(0), r.bytes(n - 1), r.bytes(n + 1), r.bytes(3)]));

function time(r: Rng): bigint {
  return r.pick([0n, 1n, NOW + BigInt(r.int(1e9)), 470_000n * HOUR - 1n, 470_000n * HOUR, 470_000n * HOUR + 1n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n, r.u64(), NOW - 5n * HOUR]);
}

function span(r: Rng) {
  const start = r.chance(0.8) ? NOW + BigInt(r.int(4)) * HOUR + BigInt(r.int(1e9)) : time(r);
  const end = r.chance(0.7) ? start + BigInt(r.int(1e9)) : r.chance(0.5) ? time(r) : start - 1n;
  return {
    traceId: id(r, 16),
    spanId: id(r, 8),
    parentSpanId: r.pick([new Uint8Array(0), r.bytes(8), r.bytes(4), r.bytes(9)]),
    traceState: r.chance(0.3) ? str(r) : '',
    name: str(r),
    kind: r.pick([0, 1, 2, 3, 4, 5, 6, 100, -1]),
    startTimeUnixNano: start,
    endTimeUnixNano: end < 0n ? 0n : end > 2n ** 64n - 1n ? 2n ** 64n - 1n : end,
    attributes: attributes(r),
    droppedAttributesCount: r.chance(0.2) ? r.pick([1, 4294967295, r.int(1000)]) : 0,
    events: Array.from({ length: r.chance(0.5) ? r.int(4) : 0 }, () => ({
      timeUnixNano: time(r),
      name: str(r),
      attributes: attributes(r, 0, 4),
      droppedAttributesCount: r.chance(0.3) ? r.int(10) : 0,
    })),
    droppedEventsCount: r.chance(0.2) ? r.int(100) : 0,
    links: Array.from({ length: r.chance(0.4) ? r.int(4) : 0 }, () => ({
      traceId: r.chance(0.8) ? r.bytes(16) : r.bytes(r.int(20)),
      spanId: r.chance(0.8) ? r.bytes(8) : r.bytes(r.int(10)),
      traceState: r.chance(0.3) ? str(r) : '',
      attributes: attributes(r, 0, 4),
      droppedAttributesCount: r.chance(0.2) ? r.int(5) : 0,
      flags: r.chance(0.5) ? r.pick([1, 256, 769, 4294967295]) : 0,
    })),
    droppedLinksCount: r.chance(0.2) ? r.int(100) : 0,
    ...(r.chance(0.7) ? { status: { code: r.pick([0, 1, 2, 3, -1]), message: r.chance(0.5) ? str(r) : '' } } : {}),
    flags: r.chance(0.5) ? r.pick([1, 256, 257, 768, 4294967295]) : 0,
  };
}

function request(r: Rng): Init {
  return {
    resourceSpans: Array.from({ length: 1 + r.int(3) }, () => ({
      ...(r.chance(0.85) ? { resource: randomResource(r) } : {}),
      schemaUrl: r.chance(0.3) ? 'https://opentelemetry.io/schemas/1.26.0' : '',
      scopeSpans: Array.from({ length: r.int(3) + 1 }, () => ({
        ...(r.chance(0.8) ? { scope: randomScope(r, 0.3) } : {}),
        spans: Array.from({ length: r.int(6) }, () => span(r)),
        schemaUrl: r.chance(0.3) ? 'https://example.com/s' : '',
      })),
    })),
  };
}

// ---------------------------------------------------------------------------------------------
// Wire-level rewriting (wire-test-support.ts)

/** Field numbers that hold sub-messages, per message type, and each type's highest known field. */
const SHAPE: MessageShape = {
  sub: {
    ...COMMON_SHAPE.sub,
    Request: { 1: 'ResourceSpans' },
    ResourceSpans: { 1: 'Resource', 2: 'ScopeSpans' },
    ScopeSpans: { 1: 'Scope', 2: 'Span' },
    Span: { 9: 'KeyValue', 11: 'Event', 13: 'Link', 15: 'Status' },
    Event: { 3: 'KeyValue' },
    Link: { 4: 'KeyValue' },
    Status: {},
  },
  maxKnown: { ...COMMON_SHAPE.maxKnown, Request: 1, ResourceSpans: 3, ScopeSpans: 3, Span: 16, Event: 4, Link: 6, Status: 3 },
};

const { parseTree, reshape, withRawString, withRawStringAtEachPlace } = wireTrees(SHAPE, encode);

// ---------------------------------------------------------------------------------------------

const T = new Uint8Array(16).fill(0x11);
const S = new Uint8Array(8).fill(0x22);
const base = (spans: object[], resource?: object, scope?: object): Init => ({
  resourceSpans: [{ ...(resource ? { resource } : {}), scopeSpans: [{ ...(scope ? { scope } : {}), spans: spans as never }] }],
});
const sv = (value: string) => ({ value: { case: 'stringValue' as const, value } });

describe('spansToPayloadsFromWire: the payloads of spansToRows(fromBinary())', () => {
  it.each<[string, Init]>([
    ['an empty request', {}],
    ['a resource without scope spans', { resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: sv('x') }] } }] }],
    ['a minimal span', base([{ traceId: T, spanId: S, startTimeUnixNano: NOW }])],
    [
      'attribute keys that name Object.prototype members',
      base(
        [{ traceId: T, spanId: S, startTimeUnixNano: NOW, attributes: [{ key: '__proto__', value: sv('p') }, { key: 'constructor', value: { value: { case: 'intValue', value: 7n } } }, { key: 'toString', value: sv('t') }] }],
        { attributes: [{ key: '__proto__', value: { value: { case: 'boolValue', value: true } } }] },
      ),
    ],
    [
      'times at and beyond the int64 range (rejected: one such row would fail the whole commit)',
      base([
        { traceId: T, spanId: S, startTimeUnixNano: 2n ** 63n - 1n, endTimeUnixNano: 2n ** 63n - 1n },
        { traceId: T, spanId: S, startTimeUnixNano: 2n ** 63n },
        { traceId: T, spanId: S, startTimeUnixNano: NOW, endTimeUnixNano: 2n ** 64n - 1n },
        { traceId: T, spanId: S, startTimeUnixNano: 2n ** 64n - 1n, endTimeUnixNano: 2n ** 64n - 1n },
      ]),
    ],
    ['no resource, no scope (unknown_service, empty scope)', base([{ traceId: T, spanId: S, startTimeUnixNano: NOW, endTimeUnixNano: NOW + 10n }])],
    [
      'every AnyValue kind as span and resource attributes',
      base(
        [
          {
            traceId: T,
            spanId: S,
            startTimeUnixNano: NOW,
            attributes: [
              { key: 's', value: sv('str "\\\n\u0001 é 😀') },
              { key: 'b', value: { value: { case: 'boolValue', value: true } } },
              { key: 'f', value: { value: { case: 'boolValue', value: false } } },
              ...INTS.map((v, i) => ({ key: `i${i}`, value: { value: { case: 'intValue' as const, value: v } } })),
              ...DOUBLES.map((v, i) => ({ key: `d${i}`, value: { value: { case: 'doubleValue' as const, value: v } } })),
              ...[0, 1, 2, 3, 4, 5].map((n) => ({ key: `bytes${n}`, value: { value: { case: 'bytesValue' as const, value: Uint8Array.from({ length: n }, (_, i) => 250 + i) } } })),
              { key: 'arr', value: { value: { case: 'arrayValue', value: { values: [sv('a'), { value: { case: 'intValue', value: 2n ** 60n } }, {}, { value: { case: 'arrayValue', value: { values: [] } } }] } } } },
              { key: 'emptyarr', value: { value: { case: 'arrayValue', value: {} } } },
              { key: 'kv', value: { value: { case: 'kvlistValue', value: { values: [{ key: 'x', value: { value: { case: 'doubleValue', value: NaN } } }, { key: '' }, { key: 'y', keyStrindex: 4 }] } } } },
              { key: 'emptykv', value: { value: { case: 'kvlistValue', value: {} } } },
              { key: 'idx', value: { value: { case: 'stringValueStrindex', value: 7 } } },
              { key: 'idx0', value: { value: { case: 'stringValueStrindex', value: 0 } } },
              { key: 'none', value: {} },
              { key: 'novalue' },
            ],
          },
        ],
        { attributes: [{ key: 'service.name', value: sv('svc') }, { key: 'r.int', value: { value: { case: 'intValue', value: -(2n ** 63n) } } }, { key: 'r.arr', value: { value: { case: 'arrayValue', value: { values: [sv('p')] } } } }] },
      ),
    ],
    [
      'object-key quirks: array-index keys first, repeated keys keep their first place, __proto__ kept',
      base(
        [
          {
            traceId: T,
            spanId: S,
            startTimeUnixNano: NOW,
            attributes: ['b', '10', 'a', '2', '__proto__', '01', '4294967295', '4294967294', 'b', '0', 'constructor', '2'].map((key, i) => ({ key, value: sv(`v${i}`) })),
          },
        ],
        { attributes: ['__proto__', '1', 'x', '1', 'x'].map((key, i) => ({ key, value: { value: { case: 'intValue' as const, value: BigInt(i) } } })) },
      ),
    ],
    [
      'service.name: the first one decides, even when it is not a string',
      base([{ traceId: T, spanId: S, startTimeUnixNano: NOW }], { attributes: [{ key: 'service.name', value: { value: { case: 'intValue', value: 1n } } }, { key: 'service.name', value: sv('late') }] }),
    ],
    ['service.name without a value', base([{ traceId: T, spanId: S, startTimeUnixNano: NOW }], { attributes: [{ key: 'service.name' }, { key: 'service.name', value: sv('late') }] })],
    [
      'events and links with attributes, dropped counts, flags',
      base([
        {
          traceId: T,
          spanId: S,
          startTimeUnixNano: NOW,
          endTimeUnixNano: NOW + 1n,
          events: [
            { timeUnixNano: 2n ** 64n - 1n, name: 'e"1', attributes: [{ key: 'k', value: { value: { case: 'intValue', value: 5n } } }, { key: 'b', value: { value: { case: 'bytesValue', value: Uint8Array.of(1, 2) } } }], droppedAttributesCount: 3 },
            { name: '', attributes: [{ key: 'arr', value: { value: { case: 'arrayValue', value: { values: [sv('\n')] } } } }, { key: 'none', value: {} }, { key: '' }, { key: 'i', keyStrindex: -2 }] },
          ],
          links: [
            { traceId: T, spanId: S, traceState: 'a=b', attributes: [{ key: 'd', value: { value: { case: 'doubleValue', value: -Infinity } } }], flags: 0x301, droppedAttributesCount: 9 },
            { traceId: new Uint8Array(0), spanId: Uint8Array.of(0), attributes: [{ key: 'kv', value: { value: { case: 'kvlistValue', value: { values: [{ key: 'z', value: sv('"') }] } } } }] },
          ],
          droppedAttributesCount: 1,
          droppedEventsCount: 4294967295,
          droppedLinksCount: 2,
          flags: 0xffffffff,
          status: { code: 2, message: 'boom\t"' },
        },
      ]),
    ],
    [
      'invalid spans: the first reason is reported, valid ones kept',
      base([
        { traceId: new Uint8Array(15), spanId: S, startTimeUnixNano: NOW },
        { traceId: new Uint8Array(16), spanId: S, startTimeUnixNano: NOW },
        { traceId: T, spanId: new Uint8Array(8), startTimeUnixNano: NOW },
        { traceId: T, spanId: new Uint8Array(9).fill(1), startTimeUnixNano: NOW },
        { traceId: T, spanId: S, parentSpanId: new Uint8Array(7), startTimeUnixNano: NOW },
        { traceId: T, spanId: S, startTimeUnixNano: 0n },
        { traceId: T, spanId: S, parentSpanId: S, startTimeUnixNano: NOW, attributes: [{ key: 'ok', value: sv('kept') }] },
      ]),
    ],
    [
      'end before start, start at hour boundaries and at the 64-bit extremes',
      base(
        [1n, HOUR - 1n, HOUR, HOUR + 1n, 470_000n * HOUR - 1n, 470_000n * HOUR, 2n ** 53n - 1n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n].map((start, i) => ({
          traceId: T,
          spanId: S,
          startTimeUnixNano: start,
          endTimeUnixNano: i % 2 ? start - 1n : start + 2n ** 40n > 2n ** 64n - 1n ? 2n ** 64n - 1n : start + 2n ** 40n,
        })),
      ),
    ],
    ['kinds and status codes out of range', base([0, 1, 2, 3, 4, 5, 6, -1, 2147483647].map((kind) => ({ traceId: T, spanId: S, startTimeUnixNano: NOW, kind, status: { code: kind - 2 } })))],
    [
      'several resources and scopes, spans in several hours',
      {
        resourceSpans: [0, 1, 2].map((r) => ({
          resource: { attributes: [{ key: 'service.name', value: sv(`svc${r}`) }, { key: 'r', value: { value: { case: 'intValue', value: BigInt(r) } } }] },
          scopeSpans: [0, 1].map((s) => ({
            scope: { name: `scope${s}`, version: `${r}.${s}` },
            spans: [0, 1, 2].map((i) => ({ traceId: T, spanId: Uint8Array.of(1, 2, 3, 4, 5, 6, r, i + 1), startTimeUnixNano: NOW + BigInt((r * 3 + s + i) % 4) * HOUR })),
          })),
        })),
      },
    ],
    ['long strings (copy paths)', base([{ traceId: T, spanId: S, startTimeUnixNano: NOW, name: 'n'.repeat(5000), attributes: [{ key: 'k'.repeat(100), value: sv('\u0001'.repeat(3000) + 'é'.repeat(3000)) }] }])],
  ])('%s', (_name, init) => {
    expectSame(encode(init));
  });

  it('rejects spans timed beyond the int64 range, on both paths, and keeps the rest', () => {
    const init = base([
      { traceId: T, spanId: S, startTimeUnixNano: 2n ** 63n - 1n },
      { traceId: T, spanId: S, startTimeUnixNano: 2n ** 63n },
      { traceId: T, spanId: S, startTimeUnixNano: NOW, endTimeUnixNano: 2n ** 63n },
    ]);
    const got = expectSame(toBinary(ExportTraceServiceRequestSchema, create(ExportTraceServiceRequestSchema, init)));
    expect([got.accepted, got.rejected, got.rejectReason]).toEqual([1, 2, 'span has a time beyond the int64 range of unix nanoseconds']);
  });

  it("rejects spans past the request's budget of resource attribute entries (counted per span), on both paths, and keeps the rest", () => {
    // 8,192 attributes and three empty maps: 8,195 entries a span, 2,047 spans' worth of the budget.
    const attributes = Array.from({ length: 8192 }, (_, i) => ({ key: `k${i}`, value: sv('v') }));
    const spans = (n: number) => Array.from({ length: n }, () => ({ traceId: T, spanId: S, startTimeUnixNano: NOW }));
    const body = toBinary(ExportTraceServiceRequestSchema, create(ExportTraceServiceRequestSchema, { resourceSpans: [{ resource: { attributes }, scopeSpans: [{ spans: spans(2049) }] }, { scopeSpans: [{ spans: spans(2) }] }] }));
    const got = expectSame(body);
    expect([got.accepted, got.rejected, got.rejectReason]).toEqual([2049, 2, SPAN_RESOURCE_OVER_BUDGET]);
  });

  it("spanPartsOf counts the spans, their attributes, events and links, and the resources' and scopes' attributes", () => {
    const kv = { key: 'k', value: sv('v') };
    const body = encode({
      resourceSpans: [
        { resource: { attributes: [kv, kv] }, scopeSpans: [{ spans: [{ traceId: T, spanId: S, attributes: [kv], events: [{}, {}], links: [{}] }, { traceId: T }] }, {}] },
        { scopeSpans: [{ scope: { attributes: [kv] }, spans: [{}] }] },
      ],
    });
    expect(spanPartsOf(body)).toBe(2 + 3 + 1 + 2 + 1 + 1);
  });

  it('resources without spans (none at all, or only empty scope groups) beside one with a span: the same rows as protobuf-es gives', () => {
    const init = base([{ traceId: T, spanId: S, startTimeUnixNano: NOW }]);
    const empties = [
      ...Array.from({ length: 1000 }, () => ({})),
      ...Array.from({ length: 1000 }, () => ({ scopeSpans: [{}, { scope: { name: 'idle' } }] })),
      { resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue' as const, value: 'quiet' } } }] }, scopeSpans: [{}] },
    ];
    const body = toBinary(ExportTraceServiceRequestSchema, create(ExportTraceServiceRequestSchema, { resourceSpans: [...empties, ...init.resourceSpans!, ...empties] }));
    const got = expectSame(body);
    expect([got.accepted, got.rejected]).toEqual([1, 0]);
  });

  it('a NaN with any payload on the wire is stored as Number("NaN") (float() makes it "NaN")', () => {
    const dbl = (value: number) => ({ value: { case: 'doubleValue' as const, value } });
    const init = base(
      [{ traceId: T, spanId: S, startTimeUnixNano: NOW, attributes: [{ key: 'a', value: dbl(1) }, { key: 'b', value: dbl(2) }, { key: 'c', value: dbl(3) }], events: [{ name: 'e', attributes: [{ key: 'd', value: dbl(4) }] }] }],
      { attributes: [{ key: 'r', value: dbl(5) }] },
    );
    const tree = parseTree(encode(init), 'Request');
    const nans = ['010000000000f4ff', '000000000000f8ff', 'ffffffffffffff7f', '000000000000f87f', '0100000000f0ff7f'];
    let n = 0;
    const visit = (fields: WField[]) => {
      for (const f of fields) {
        if (f.kids) visit(f.kids);
        else if (f.no === 4 && f.wt === 1) f.raw = Buffer.from(nans[n++ % nans.length]!, 'hex'); // AnyValue.double_value
      }
    };
    visit(tree);
    expect(n).toBe(5);
    expectSame(encodeTree(tree));
  });

  it('random requests (differential, 400 cases)', () => {
    const r = prng(1);
    let spans = 0;
    for (let i = 0; i < 400; i++) spans += expectSame(encode(request(r))).accepted;
    expect(spans).toBeGreaterThan(500);
  });

  it('accepted times (limits.ingest_max_age, ingest_max_future): both paths refuse the same spans, with the same first reason (differential, 300 cases)', () => {
    // NOW - 2 h to NOW + 1 h: the random spans start from NOW - 5 h to NOW + 4 h, or anywhere.
    const times = new AcceptedTimes(Number(NOW / 1_000_000n), 2 * 3_600_000, 3_600_000);
    const windowed = differential(
      'spansToPayloadsFromWire',
      (bytes) => referenceOf(tracesTable, spansToRows(fromBinary(ExportTraceServiceRequestSchema, bytes), times)),
      (bytes) => spansToPayloadsFromWire(bytes, times),
    );
    const r = prng(7);
    const reasons = new Set<string>();
    let accepted = 0;
    for (let i = 0; i < 300; i++) {
      const got = windowed.expectSame(encode(request(r)));
      accepted += got.accepted;
      if (got.rejectReason) reasons.add(got.rejectReason.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/, 'T'));
    }
    expect(accepted).toBeGreaterThan(150);
    expect(reasons).toContain('span start time is more than 2h in the past (limits.ingest_max_age; oldest accepted: T)');
    expect(reasons).toContain('span start time is more than 1h in the future (limits.ingest_max_future; latest accepted: T)');
    // The window is the request's only: the next call without one takes every time again.
    const late = encode(base([{ traceId: T, spanId: S, startTimeUnixNano: NOW + 10n * HOUR }]));
    expect(windowed.expectSame(late).rejected).toBe(1);
    expect(expectSame(late).accepted).toBe(1);
  });

  it('random requests reshaped on the wire: any field order, unknown fields, repeated and split fields, padded varints', () => {
    const r = prng(2);
    for (let i = 0; i < 400; i++) {
      const tree = reshape(r, parseTree(encode(request(r)), 'Request'), 'Request', r.pick([0.2, 0.5, 1]));
      expectSame(encodeTree(tree));
    }
  });

  it.each<[string, WField[]]>([
    [
      'span fields reversed, resource after its scope spans, scope after its spans',
      (() => {
        const tree = parseTree(
          encode(
            base(
              [{ traceId: T, spanId: S, parentSpanId: S, traceState: 't', name: 'n', kind: 3, startTimeUnixNano: NOW, endTimeUnixNano: NOW + 5n, attributes: [{ key: 'a', value: sv('1') }], events: [{ name: 'e' }], links: [{ traceId: T }], status: { code: 1, message: 'm' }, flags: 1, droppedLinksCount: 1 }],
              { attributes: [{ key: 'service.name', value: sv('s') }] },
              { name: 'sc', version: 'v' },
            ),
          ),
          'Request',
        );
        const rs = tree[0]!.kids!;
        rs.reverse();
        const ss = rs[0]!.kids!;
        ss.reverse();
        ss[0]!.kids!.reverse();
        return tree;
      })(),
    ],
    [
      'status and a key-value value split in two occurrences (merged), name repeated (last wins)',
      (() => {
        const tree = parseTree(encode(base([{ traceId: T, spanId: S, startTimeUnixNano: NOW, name: 'first', status: { code: 2, message: 'm' }, attributes: [{ key: 'a', value: { value: { case: 'arrayValue', value: { values: [sv('x'), sv('y')] } } } }] }])), 'Request');
        const spanFields = tree[0]!.kids![0]!.kids![0]!.kids!;
        const status = spanFields.find((f) => f.no === 15)!;
        spanFields.push({ no: 15, wt: 2, kids: [status.kids![1]!] }, { no: 5, wt: 2, raw: Buffer.from('second') });
        status.kids = [status.kids![0]!];
        const kv = spanFields.find((f) => f.no === 9)!.kids!;
        const value = kv.find((f) => f.no === 2)!;
        const arr = value.kids![0]!.kids!;
        kv.push({ no: 2, wt: 2, kids: [{ no: 5, wt: 2, kids: [arr[1]!] }] }, { no: 2, wt: 2, kids: [] });
        value.kids![0]!.kids = [arr[0]!];
        return tree;
      })(),
    ],
    [
      'a value that changes case across occurrences',
      (() => {
        const tree = parseTree(encode(base([{ traceId: T, spanId: S, startTimeUnixNano: NOW, attributes: [{ key: 'a', value: { value: { case: 'arrayValue', value: { values: [sv('x')] } } } }, { key: 'b', value: sv('s') }] }])), 'Request');
        const attrs = tree[0]!.kids![0]!.kids![0]!.kids!.filter((f) => f.no === 9);
        attrs[0]!.kids!.push({ no: 2, wt: 2, kids: [{ no: 3, wt: 0, raw: Uint8Array.of(7) }] });
        attrs[1]!.kids!.push({ no: 2, wt: 2, kids: [{ no: 6, wt: 2, kids: [] }] });
        return tree;
      })(),
    ],
    ['the highest field number and field 1000 (reserved) as unknown fields', [{ no: 2 ** 29 - 1, wt: 0, raw: Uint8Array.of(1) }, ...parseTree(encode(request(prng(3))), 'Request'), { no: 1000, wt: 2, raw: Uint8Array.of(1, 2) }]],
  ])('%s', (_name, tree) => {
    expectSame(encodeTree(tree));
  });

  it('nesting depth: throws exactly where protobuf-es stops (100 messages)', () => {
    const nest = (n: number): object => (n === 0 ? sv('leaf') : { value: { case: 'arrayValue', value: { values: [nest(n - 1)] } } });
    const nestKv = (n: number): object => (n === 0 ? sv('leaf') : { value: { case: 'kvlistValue', value: { values: [{ key: 'k', value: nestKv(n - 1) }] } } });
    const results: string[] = [];
    for (let n = 40; n <= 52; n++) {
      for (const init of [
        base([{ traceId: T, spanId: S, startTimeUnixNano: NOW, attributes: [{ key: 'a', value: nest(n) }] }]),
        base([{ traceId: T, spanId: S, startTimeUnixNano: NOW }], { attributes: [{ key: 'a', value: nest(n) }] }),
        base([{ traceId: T, spanId: S, startTimeUnixNano: NOW, events: [{ attributes: [{ key: 'a', value: nest(n) }] }] }]),
        base([{ traceId: T, spanId: S, startTimeUnixNano: NOW, attributes: [{ key: 'a', value: nestKv(Math.floor((n * 2) / 3)) }] }]),
        base([{ traceId: T, spanId: S, startTimeUnixNano: NOW }], undefined, { attributes: [{ key: 'a', value: nest(n) }] }),
      ]) {
        results.push(expectConsistent(encode(init)));
      }
    }
    expect(results).toContain('same');
    expect(results).toContain('both-throw');
    expect(results).not.toContain('stricter');
  });

  it.each(INVALID_UTF8)('invalid UTF-8 (%s) throws in every string field, like fromBinary', (_name, raw) => {
    const m = 'MARKER';
    const init = base(
      [{ traceId: T, spanId: S, startTimeUnixNano: NOW, name: m, traceState: m, attributes: [{ key: m, value: sv(m) }, { key: 'a', value: { value: { case: 'arrayValue', value: { values: [sv(m)] } } } }], events: [{ name: m }], links: [{ traceState: m }], status: { message: m } }],
      { attributes: [{ key: m, value: sv(m) }], entityRefs: [{ type: m, idKeys: [m] }] },
      { name: m, version: m, attributes: [{ key: m }] },
    );
    // every occurrence at once, and each place alone (the others left valid)
    const each = withRawStringAtEachPlace(init, m, raw);
    expect(each.length).toBeGreaterThanOrEqual(15);
    for (const body of [withRawString(init, m, raw), ...each]) expect(expectConsistent(body)).toBe('both-throw');
  });

  it.each(VALID_UTF8_EDGES)('valid UTF-8 edge: %s', (_name, raw) => {
    const m = 'MARKER';
    expectSame(withRawString(base([{ traceId: T, spanId: S, startTimeUnixNano: NOW, name: m, attributes: [{ key: m, value: sv(m) }], events: [{ name: m, attributes: [{ key: m, value: sv(m) }] }] }]), m, raw));
  });
});

describe('spansToPayloadsFromWire: malformed input throws', () => {
  const valid = encode(request(prng(4)));
  const single = encode(
    base(
      [{ traceId: T, spanId: S, startTimeUnixNano: NOW, name: 'n', kind: 2, attributes: [{ key: 'a', value: { value: { case: 'doubleValue', value: 1.5 } } }], events: [{ timeUnixNano: NOW, name: 'e' }], status: { code: 1 }, flags: 1 }],
      { attributes: [{ key: 'service.name', value: sv('s') }] },
    ),
  );

  it('a truncation at every byte offset of a one-resource body throws', () => {
    expectEveryPrefixThrows(single);
  });

  it('a truncation at every byte offset of a larger body: throws, or both accept a shorter request', () => {
    expect(prefixesThatThrow(valid)).toBeGreaterThan(valid.length * 0.9);
  });

  const spanStart = (extra: number[]) => {
    // Request{ResourceSpans{ScopeSpans{Span{trace_id, span_id, start, …extra}}}}
    const span = [0x0a, 16, ...T, 0x12, 8, ...S, 0x39, ...Buffer.from(new BigUint64Array([NOW]).buffer), ...extra];
    const ss = [0x12, ...varint(span.length), ...span];
    const rs = [0x12, ...varint(ss.length), ...ss];
    return Uint8Array.from([0x0a, ...varint(rs.length), ...rs]);
  };

  it('the hand-built span frame is valid', () => {
    expect(expectSame(spanStart([0x2a, 1, 0x61])).accepted).toBe(1);
  });

  it.each<[string, Uint8Array, 'both' | 'stricter']>([
    ['garbage', Uint8Array.of(0xff, 0xff, 0xff, 0x0f, 0x99, 0x01), 'both'],
    ['three bytes of garbage', Uint8Array.of(0xff, 0xff, 0xff), 'both'],
    ['a length prefix beyond the end', Uint8Array.of(0x0a, 0x05, 0x12, 0x00), 'both'],
    ['a huge length prefix', Uint8Array.of(0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f), 'both'],
    ['a truncated varint', Uint8Array.of(0x0a, 0x80), 'both'],
    ['a tag alone', Uint8Array.of(0x0a), 'both'],
    ['field number 0', Uint8Array.of(0x02, 0x00), 'both'],
    ['wire type 6', Uint8Array.of(0x0e), 'both'],
    ['wire type 7', Uint8Array.of(0x0f, 0x00), 'both'],
    ['a tag longer than 5 bytes', Uint8Array.of(0x8a, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00), 'both'],
    ['a 5-byte tag overflowing 32 bits', Uint8Array.of(0x8a, 0x80, 0x80, 0x80, 0x10, 0x00), 'both'],
    ['an 11-byte varint in a known field (kind)', spanStart([0x30, ...Array(10).fill(0x80), 0x01]), 'both'],
    ['an 11-byte varint as a length', Uint8Array.of(0x0a, ...Array(10).fill(0x80), 0x00), 'both'],
    ['an 11-byte varint in an unknown field', Uint8Array.of(0x10, ...Array(10).fill(0x80), 0x01), 'stricter'],
    ['an unterminated group (wire type 3)', Uint8Array.of(0x13, 0x08, 0x01), 'both'],
    ['a well-formed group in an unknown field', Uint8Array.of(0x13, 0x08, 0x01, 0x14), 'stricter'],
    ['a group in a known field', Uint8Array.of(0x0b, 0x00), 'stricter'],
    ['a stray end-group (wire type 4)', Uint8Array.of(0x14), 'both'],
    ['a nested group inside a span', spanStart([0xa3, 0x01, 0xa4, 0x01]), 'stricter'],
    ['a truncated fixed64 (start time)', Uint8Array.from([0x0a, 7, 0x12, 5, 0x12, 3, 0x39, 1, 2]), 'both'],
    ['a fixed64 running past its message', spanStart([0x39, 1, 2, 3]).slice(0, -3), 'both'],
    ['a sub-message whose field runs past its end', Uint8Array.of(0x0a, 0x02, 0x1a, 0x03, 0x61, 0x62, 0x63), 'stricter'],
    ['a known field with the wrong wire type (name as varint)', spanStart([0x28, 0x01, 0x61]), 'stricter'],
    ['a known field with the wrong wire type (resource_spans as varint)', Uint8Array.of(0x08, 0x00), 'stricter'],
    ['invalid UTF-8 in the span name', spanStart([0x2a, 2, 0xc3, 0x28]), 'both'],
  ])('%s', (_name, bytes, kind) => {
    const got = wire(bytes);
    expect(got.ok).toBe(false);
    expect(expectConsistent(bytes)).toBe(kind === 'both' ? 'both-throw' : 'stricter');
  });

  it('random corruption of valid bodies never yields rows protobuf-es would not (5000 mutations)', () => {
    const r = prng(5);
    const bodies = [valid, single, ...Array.from({ length: 8 }, () => encodeTree(reshape(r, parseTree(encode(request(r)), 'Request'), 'Request', 0.3)))];
    const seen = corruptions(r, bodies, 5000);
    expect(seen.same).toBeGreaterThan(100);
    expect(seen['both-throw']).toBeGreaterThan(1000);
  });

  it('does not keep state between calls (a failed call leaves the next one intact)', () => {
    expectNoStateKept(valid, single);
  });

  it('reused batches: many hours, then a huge request (its batches are dropped afterwards), then small ones', () => {
    const many = encode(base(Array.from({ length: 9 }, (_, i) => ({ traceId: T, spanId: S, startTimeUnixNano: NOW + BigInt(i) * HOUR, attributes: [{ key: 'i', value: sv(String(i)) }] }))));
    const big = 'x'.repeat(5 << 20); // beyond the 4 MiB a kept batch or resource leaf may hold
    const huge = encode({
      resourceSpans: [0, 1].map((r) => ({
        resource: { attributes: [{ key: 'service.name', value: sv(`svc${r}`) }, { key: 'big', value: sv(big) }] },
        scopeSpans: [{ scope: { name: 's' }, spans: [0, 1, 2].map((i) => ({ traceId: T, spanId: S, startTimeUnixNano: NOW + BigInt(i % 2) * HOUR, name: big.slice(0, 1 << 20) })) }],
      })),
    });
    for (const body of [many, single, huge, valid, many, single, valid]) expectSame(body);
  });

  it('accepts Buffers and subarrays at an offset', () => {
    expectBuffersAndOffsets(valid);
  });
});
