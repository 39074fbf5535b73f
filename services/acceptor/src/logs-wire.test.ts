import { describe, expect, it } from 'vitest';
import { ExportLogsServiceRequestSchema, create, fromBinary, toBinary, type MessageInitShape } from '@floe/proto';
import { logsTable } from '@floe/schema';
import { readColumnBatch } from '@floe/storage';
import { logsToRows } from './logs-to-rows.ts';
import { AcceptedTimes } from './accepted-times.ts';
import { logsToPayloadsFromWire } from './logs-wire.ts';
import {
  COMMON_SHAPE,
  INVALID_UTF8,
  VALID_UTF8_EDGES,
  DOUBLES,
  HOUR,
  INTS,
  KEYS,
  NOW,
  STRINGS,
  anyValue,
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
 * logsToPayloadsFromWire(bytes, receivedNs) must give, for every input both accept, the payloads
 * Ingest makes of logsToRows(fromBinary(bytes), receivedNs) (a column batch per hour, byte for
 * byte), and throw whenever protobuf-es throws. It may also throw where protobuf-es accepts input
 * that is not valid protobuf, but only with one of STRICTER_THAN_PROTOBUF_ES.
 */

type Init = MessageInitShape<typeof ExportLogsServiceRequestSchema>;

/** The receive time both paths get (a record with neither time is stored at it). */
const RECEIVED = NOW + 7n * HOUR + 123_456_789n;

/** The general path: protobuf-es, logsToRows, then each hour's row objects through addRow (as Ingest does). */
const referencePayloads = (bytes: Uint8Array): Reference => referenceOf(logsTable, logsToRows(fromBinary(ExportLogsServiceRequestSchema, bytes), RECEIVED));
const transcode = (bytes: Uint8Array) => logsToPayloadsFromWire(bytes, RECEIVED);

const { wire, expectSame, expectConsistent, expectEveryPrefixThrows, prefixesThatThrow, corruptions, expectNoStateKept, expectBuffersAndOffsets } = differential('logsToPayloadsFromWire', referencePayloads, transcode);

const encode = (init: Init) => toBinary(ExportLogsServiceRequestSchema, create(ExportLogsServiceRequestSchema, init));

// ---------------------------------------------------------------------------------------------
// Deterministic random content (wire-test-support.ts has the common messages')

const id = (r: Rng, n: number) => (r.chance(0.6) ? r.bytes(n) : r.pick([new Uint8Array(0), new Uint8Array(n), r.bytes(n - 1), r.bytes(n + 1), r.bytes(3)]));

function time(r: Rng): bigint {
  return r.pick([0n, 1n, NOW + BigInt(r.int(1e9)), 470_000n * HOUR - 1n, 470_000n * HOUR, 2n ** 53n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n, r.u64(), NOW - 5n * HOUR]);
}

/** Bodies are mostly strings, as exporters send them; the rest any value, arrays and kvlists nested. */
const body = (r: Rng) => (r.chance(0.4) ? { value: { case: 'stringValue' as const, value: str(r) } } : anyValue(r, 0));

function logRecord(r: Rng) {
  return {
    timeUnixNano: r.chance(0.7) ? NOW + BigInt(r.int(4)) * HOUR + BigInt(r.int(1e9)) : time(r),
    observedTimeUnixNano: r.chance(0.5) ? NOW + BigInt(r.int(1e9)) : r.chance(0.5) ? 0n : time(r),
    severityNumber: r.chance(0.8) ? r.int(25) : r.pick([-1, 25, 100, 2147483647, -2147483648]),
    severityText: r.chance(0.7) ? r.pick(['INFO', 'WARN', 'ERROR', 'DEBUG', '']) : str(r),
    ...(r.chance(0.9) ? { body: body(r) } : {}),
    attributes: attributes(r),
    droppedAttributesCount: r.chance(0.2) ? r.pick([1, 4294967295, r.int(1000)]) : 0,
    flags: r.chance(0.5) ? r.pick([1, 256, 257, 768, 4294967295]) : 0,
    traceId: id(r, 16),
    spanId: id(r, 8),
    eventName: r.chance(0.3) ? str(r) : '',
  };
}

function request(r: Rng): Init {
  return {
    resourceLogs: Array.from({ length: 1 + r.int(3) }, () => ({
      ...(r.chance(0.85) ? { resource: randomResource(r) } : {}),
      schemaUrl: r.chance(0.3) ? 'https://opentelemetry.io/schemas/1.26.0' : '',
      scopeLogs: Array.from({ length: r.int(3) + 1 }, () => ({
        ...(r.chance(0.8) ? { scope: randomScope(r, 0.5) } : {}),
        logRecords: Array.from({ length: r.int(6) }, () => logRecord(r)),
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
    Request: { 1: 'ResourceLogs' },
    ResourceLogs: { 1: 'Resource', 2: 'ScopeLogs' },
    ScopeLogs: { 1: 'Scope', 2: 'LogRecord' },
    LogRecord: { 5: 'AnyValue', 6: 'KeyValue' },
  },
  maxKnown: { ...COMMON_SHAPE.maxKnown, Request: 1, ResourceLogs: 3, ScopeLogs: 3, LogRecord: 12 },
};

const { parseTree, reshape, withRawString, withRawStringAtEachPlace } = wireTrees(SHAPE, encode);

/** The fields of the first log record of a request's tree. */
const recordFields = (tree: WField[]) => tree[0]!.kids!.find((f) => f.no === 2)!.kids!.find((f) => f.no === 2)!.kids!;

// ---------------------------------------------------------------------------------------------

const T = new Uint8Array(16).fill(0x11);
const S = new Uint8Array(8).fill(0x22);
const base = (logRecords: object[], resource?: object, scope?: object): Init => ({
  resourceLogs: [{ ...(resource ? { resource } : {}), scopeLogs: [{ ...(scope ? { scope } : {}), logRecords: logRecords as never }] }],
});
const sv = (value: string) => ({ value: { case: 'stringValue' as const, value } });
const iv = (value: bigint) => ({ value: { case: 'intValue' as const, value } });
const dv = (value: number) => ({ value: { case: 'doubleValue' as const, value } });
const bv = (value: boolean) => ({ value: { case: 'boolValue' as const, value } });
const arr = (...values: object[]) => ({ value: { case: 'arrayValue' as const, value: { values } } });
const kvl = (...values: object[]) => ({ value: { case: 'kvlistValue' as const, value: { values } } });
const bytesv = (...b: number[]) => ({ value: { case: 'bytesValue' as const, value: Uint8Array.from(b) } });
/** One record per body, all valid and in one hour. */
const bodies = (...values: (object | undefined)[]) => base(values.map((b) => ({ timeUnixNano: NOW, ...(b ? { body: b } : {}) })));

/** Attributes of every type, with the keys a plain object orders or merges specially. */
const quirkyAttrs = [
  ...['b', '10', 'a', '2', '__proto__', '01', '4294967295', '4294967294', 'b', '0', 'constructor', '2', 'toString'].map((key, i) => ({ key, value: sv(`v${i}`) })),
  ...INTS.map((v, i) => ({ key: `i${i}`, value: iv(v) })),
  { key: 'i0', value: iv(5n) },
  ...DOUBLES.map((v, i) => ({ key: `d${i}`, value: dv(v) })),
  { key: '1', value: dv(NaN) },
  { key: 't', value: bv(true) },
  { key: 'f', value: bv(false) },
  { key: 't', value: bv(false) },
  { key: 'bytes', value: bytesv(250, 251, 252, 253) },
  { key: 'arr', value: arr(sv('a'), iv(2n ** 60n), {}, arr()) },
  { key: 'kv', value: kvl({ key: 'x', value: dv(NaN) }, { key: '' }, { key: 'y', keyStrindex: 4 }) },
  { key: 'idx', value: { value: { case: 'stringValueStrindex' as const, value: 7 } } },
  { key: 'none', value: {} },
  { key: 'novalue' },
];

describe('logsToPayloadsFromWire: the payloads of logsToRows(fromBinary())', () => {
  it.each<[string, Init]>([
    ['an empty request', {}],
    ['a resource without scope logs', { resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: sv('x') }] } }] }],
    ['a scope without records', { resourceLogs: [{ scopeLogs: [{ scope: { name: 's', attributes: [{ key: 'a', value: sv('b') }] } }] }] }],
    ['a record with nothing set (receive time, empty body, NULL ids)', base([{}])],
    [
      'string bodies: escapes, unicode, long, empty',
      bodies(sv('plain'), sv('str "\\\n\u0001 é 😀 \u2028'), sv(''), sv('x'.repeat(5000)), sv('{"json":"text"}'), ...STRINGS.map(sv)),
    ],
    ['scalar bodies: bool, int, double (NaN, ±Infinity, -0, exponents)', bodies(bv(true), bv(false), ...INTS.map(iv), ...DOUBLES.map(dv))],
    ['bytes bodies (base64 with and without padding)', bodies(...[0, 1, 2, 3, 4, 5, 40].map((n) => bytesv(...Array.from({ length: n }, (_, i) => 250 - i))))],
    [
      'array and kvlist bodies, nested, as plain JSON',
      bodies(
        arr(),
        kvl(),
        arr(sv('a'), iv(-(2n ** 63n)), dv(NaN), dv(-0), dv(1e21), bv(true), bytesv(1, 2, 3), {}, { value: { case: 'stringValueStrindex', value: 3 } }, arr(arr(), kvl())),
        kvl({ key: 'k"ey\n', value: sv('v\u0000') }, { key: 'dup', value: iv(1n) }, { key: 'dup', value: iv(2n) }, { key: '' }, { value: sv('no key') }, { key: 'n', value: {} }, { key: 'idx', keyStrindex: 9, value: dv(Infinity) }),
        kvl({ key: 'nested', value: kvl({ key: 'a', value: arr(kvl({ key: 'b', value: dv(-Infinity) })) }) }),
        arr(...INTS.map(iv), ...DOUBLES.map(dv)),
      ),
    ],
    ['an empty body value and a string index body', bodies({}, { value: { case: 'stringValueStrindex', value: 7 } }, undefined)],
    ['every severity number, and out-of-range ones', base([...Array.from({ length: 25 }, (_, i) => i), -1, 25, 2147483647, -2147483648].map((n) => ({ timeUnixNano: NOW, severityNumber: n, severityText: `S${n}` })))],
    [
      'time rules: time, else observed time, else the receive time; observed kept when set',
      base([
        { timeUnixNano: NOW, observedTimeUnixNano: NOW + 5n },
        { timeUnixNano: NOW },
        { observedTimeUnixNano: NOW + 2n * HOUR },
        {},
        { timeUnixNano: 1n },
        { timeUnixNano: 2n ** 63n - 1n, observedTimeUnixNano: 2n ** 63n - 1n },
        { timeUnixNano: 470_000n * HOUR - 1n },
        { timeUnixNano: 470_000n * HOUR },
        { timeUnixNano: 2n ** 53n + 1n },
      ]),
    ],
    [
      'ids: hex, NULL when empty or all zeros',
      base([
        { timeUnixNano: NOW, traceId: T, spanId: S },
        { timeUnixNano: NOW, traceId: new Uint8Array(16), spanId: new Uint8Array(8) },
        { timeUnixNano: NOW, traceId: Uint8Array.of(...new Uint8Array(15), 1), spanId: Uint8Array.of(1, 0, 0, 0, 0, 0, 0, 0) },
        { timeUnixNano: NOW },
      ]),
    ],
    [
      'invalid records: the first reason is reported, valid ones kept',
      base([
        { timeUnixNano: NOW, traceId: new Uint8Array(15) },
        { timeUnixNano: NOW, traceId: new Uint8Array(17), spanId: new Uint8Array(7) },
        { timeUnixNano: NOW, spanId: new Uint8Array(9) },
        { timeUnixNano: 2n ** 63n },
        { timeUnixNano: NOW, observedTimeUnixNano: 2n ** 64n - 1n },
        { observedTimeUnixNano: 2n ** 63n },
        { timeUnixNano: NOW, traceId: T, spanId: S, attributes: [{ key: 'ok', value: sv('kept') }] },
      ]),
    ],
    ['flags, dropped attributes, event names', base([0, 1, 255, 256, 0xffffffff].map((flags, i) => ({ timeUnixNano: NOW, flags, droppedAttributesCount: [0, 1, 7, 4294967295, 3][i], eventName: i % 2 ? `event.${i}` : '' })))],
    [
      'attributes of every type, duplicate and array-index keys, __proto__: record, resource and scope',
      base([{ timeUnixNano: NOW, attributes: quirkyAttrs }], { attributes: [{ key: 'service.name', value: sv('svc') }, ...quirkyAttrs] }, { name: 'sc', version: '1', attributes: quirkyAttrs }),
    ],
    [
      'service.name: the first one decides, even when it is not a string',
      base([{ timeUnixNano: NOW }], { attributes: [{ key: 'service.name', value: iv(1n) }, { key: 'service.name', value: sv('late') }] }),
    ],
    ['service.name without a value', base([{ timeUnixNano: NOW }], { attributes: [{ key: 'service.name' }, { key: 'service.name', value: sv('late') }] })],
    [
      'several resources and scopes, records in several hours',
      {
        resourceLogs: [0, 1, 2].map((r) => ({
          resource: { attributes: [{ key: 'service.name', value: sv(`svc${r}`) }, { key: 'r', value: iv(BigInt(r)) }] },
          scopeLogs: [0, 1].map((s) => ({
            scope: { name: `scope${s}`, version: `${r}.${s}`, attributes: s ? [{ key: 'sa', value: dv(s + 0.5) }] : [] },
            logRecords: [0, 1, 2].map((i) => ({ timeUnixNano: NOW + BigInt((r * 3 + s + i) % 4) * HOUR, body: sv(`r${r} s${s} i${i}`), attributes: [{ key: 'i', value: iv(BigInt(i)) }] })),
          })),
        })),
      },
    ],
  ])('%s', (_name, init) => {
    expectSame(encode(init));
  });

  it("writes a resource's and a scope's columns once per run of records", () => {
    const init: Init = {
      resourceLogs: [4, 2].map((n, r) => ({
        resource: { attributes: [{ key: 'service.name', value: sv(`svc${r}`) }, { key: 'host.name', value: sv(`h${r}`) }] },
        scopeLogs: [{ scope: { name: 'sc', version: '1' }, logRecords: Array.from({ length: n }, (_, i) => ({ timeUnixNano: NOW + BigInt(i), body: sv(`b${i}`) })) }],
      })),
    };
    const [batch] = [...expectSame(encode(init)).byHour.values()];
    const view = readColumnBatch(batch!.payload);
    const runs = (leaf: string) => view.leaves[view.schema.leafNames.indexOf(leaf)]!.runs;
    for (const leaf of ['service_name', 'scope_name', 'resource_attr_str.key', 'resource_attr_str.value', 'scope_attr_int.key']) expect([...(runs(leaf) ?? [])], leaf).toEqual([4, 2]);
    for (const leaf of ['time_unix_nano', 'body', 'log_attr_str.key']) expect(runs(leaf), leaf).toBeUndefined();
  });

  it('a record without either time goes to the receive time (the default is now)', () => {
    const body = encode(base([{ body: sv('x') }]));
    expect([...expectSame(body).byHour.keys()]).toEqual([Number(RECEIVED / HOUR)]);
    const before = BigInt(Date.now()) * 1_000_000n;
    const got = logsToPayloadsFromWire(body);
    const after = BigInt(Date.now()) * 1_000_000n;
    const [batch] = [...got.byHour.values()];
    const t = readColumnBatch(batch!.payload).leaves[0]!.values; // time_unix_nano, the first raw column
    const ns = Buffer.from(t.buffer, t.byteOffset, t.byteLength).readBigInt64LE(0);
    expect(ns >= before && ns <= after).toBe(true);
    expect(batch!.hour).toBe(Number(ns / HOUR));
  });

  it('a NaN with any payload on the wire: stored as Number("NaN"), rendered as "NaN"', () => {
    const init = base([{ timeUnixNano: NOW, body: dv(1), attributes: [{ key: 'a', value: dv(2) }] }, { timeUnixNano: NOW, body: arr(dv(3), kvl({ key: 'k', value: dv(4) })) }], { attributes: [{ key: 'r', value: dv(5) }] }, { attributes: [{ key: 's', value: dv(6) }] });
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
    expect(n).toBe(6);
    expectSame(encodeTree(tree));
  });

  it('random requests (differential, 400 cases)', () => {
    const r = prng(11);
    let records = 0;
    let rejected = 0;
    for (let i = 0; i < 400; i++) {
      const got = expectSame(encode(request(r)));
      records += got.accepted;
      rejected += got.rejected;
    }
    expect(records).toBeGreaterThan(1000);
    expect(rejected).toBeGreaterThan(100);
  });

  it('accepted times (limits.ingest_max_age, ingest_max_future): both paths refuse the same records, the receive time standing in for a missing time (differential, 300 cases)', () => {
    // NOW - 1 h to RECEIVED (NOW + 7 h) + 1 m.
    const times = new AcceptedTimes(Number((RECEIVED - 8n * HOUR) / 1_000_000n) + 7 * 3_600_000, 8 * 3_600_000, 60_000);
    const windowed = differential(
      'logsToPayloadsFromWire',
      (bytes) => referenceOf(logsTable, logsToRows(fromBinary(ExportLogsServiceRequestSchema, bytes), RECEIVED, times)),
      (bytes) => logsToPayloadsFromWire(bytes, RECEIVED, times),
    );
    const r = prng(17);
    const reasons = new Set<string>();
    let accepted = 0;
    for (let i = 0; i < 300; i++) {
      const got = windowed.expectSame(encode(request(r)));
      accepted += got.accepted;
      if (got.rejectReason?.startsWith('log record time')) reasons.add(got.rejectReason.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/, 'T'));
    }
    expect(accepted).toBeGreaterThan(300);
    expect(reasons).toEqual(new Set(['log record time is more than 8h in the past (limits.ingest_max_age; oldest accepted: T)', 'log record time is more than 1m in the future (limits.ingest_max_future; latest accepted: T)']));
  });

  it('random requests reshaped on the wire: any field order, unknown fields, repeated and split fields, padded varints', () => {
    const r = prng(12);
    for (let i = 0; i < 400; i++) {
      const tree = reshape(r, parseTree(encode(request(r)), 'Request'), 'Request', r.pick([0.2, 0.5, 1]));
      expectSame(encodeTree(tree));
    }
  });

  const record = (fields: object) => parseTree(encode(base([{ timeUnixNano: NOW, ...fields }])), 'Request');

  it.each<[string, WField[]]>([
    [
      'record fields reversed, resource after its scope logs, scope after its records',
      (() => {
        const tree = parseTree(
          encode(
            base(
              [{ timeUnixNano: NOW, observedTimeUnixNano: NOW + 1n, severityNumber: 9, severityText: 'INFO', body: kvl({ key: 'a', value: sv('b') }), attributes: [{ key: 'a', value: sv('1') }], droppedAttributesCount: 2, flags: 1, traceId: T, spanId: S, eventName: 'e' }],
              { attributes: [{ key: 'service.name', value: sv('s') }] },
              { name: 'sc', version: 'v', attributes: [{ key: 'x', value: iv(1n) }] },
            ),
          ),
          'Request',
        );
        const rl = tree[0]!.kids!;
        rl.reverse();
        const sl = rl[0]!.kids!;
        sl.reverse();
        sl[0]!.kids!.reverse();
        return tree;
      })(),
    ],
    [
      'a string body split in two occurrences (merged: the last value wins), severity text repeated',
      (() => {
        const tree = record({ body: sv('first'), severityText: 'A' });
        const fields = recordFields(tree);
        fields.push({ no: 5, wt: 2, kids: [{ no: 1, wt: 2, raw: Buffer.from('second') }] }, { no: 3, wt: 2, raw: Buffer.from('B') }, { no: 5, wt: 2, kids: [] });
        return tree;
      })(),
    ],
    [
      'a kvlist body split in two occurrences (merged: the entries of both)',
      (() => {
        const tree = record({ body: kvl({ key: 'a', value: sv('1') }, { key: 'b', value: sv('2') }) });
        const fields = recordFields(tree);
        const value = fields.find((f) => f.no === 5)!;
        const entries = value.kids![0]!.kids!;
        value.kids![0]!.kids = [entries[0]!];
        fields.push({ no: 6, wt: 2, kids: [{ no: 1, wt: 2, raw: Buffer.from('attr') }] }, { no: 5, wt: 2, kids: [{ no: 6, wt: 2, kids: [entries[1]!] }] });
        return tree;
      })(),
    ],
    [
      'an array body whose value changes case and back (protobuf-es starts a new array)',
      (() => {
        const tree = record({ body: arr(sv('x'), sv('y')) });
        const value = recordFields(tree).find((f) => f.no === 5)!;
        const a = value.kids![0]!;
        value.kids = [a, { no: 3, wt: 0, raw: Uint8Array.of(7) }, { no: 5, wt: 2, kids: [a.kids![1]!] }];
        return tree;
      })(),
    ],
    [
      'a body changing case across occurrences, ending as an int',
      (() => {
        const tree = record({ body: arr(sv('x')) });
        recordFields(tree).push({ no: 5, wt: 2, kids: [{ no: 3, wt: 0, raw: Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01) }] });
        return tree;
      })(),
    ],
    [
      'inside a kvlist body: a key-value with two value fields (merged), an element with two oneof fields',
      (() => {
        const tree = record({ body: kvl({ key: 'k', value: arr(sv('x'), sv('y')) }, { key: 'j', value: sv('a') }) });
        const list = recordFields(tree).find((f) => f.no === 5)!.kids![0]!.kids!;
        const kv0 = list[0]!.kids!;
        const v = kv0.find((f) => f.no === 2)!;
        kv0.push({ no: 2, wt: 2, kids: [{ no: 5, wt: 2, kids: [v.kids![0]!.kids![0]!] }] });
        list[1]!.kids!.find((f) => f.no === 2)!.kids!.push({ no: 2, wt: 0, raw: Uint8Array.of(1) });
        return tree;
      })(),
    ],
    [
      'an array element with a oneof field twice (the last wins), and unknown fields inside the body',
      (() => {
        const tree = record({ body: arr(sv('x'), iv(1n)) });
        const body = recordFields(tree).find((f) => f.no === 5)!;
        const elems = body.kids![0]!.kids!;
        elems[0]!.kids!.push({ no: 1, wt: 2, raw: Buffer.from('y') });
        elems[1]!.kids!.unshift({ no: 99, wt: 2, raw: Uint8Array.of(1, 2) });
        body.kids!.push({ no: 1000, wt: 0, raw: Uint8Array.of(5) });
        body.kids![0]!.kids!.push({ no: 7, wt: 5, raw: Uint8Array.of(1, 2, 3, 4) });
        return tree;
      })(),
    ],
    [
      'the reserved field 4 and the highest field number as unknown fields of a record, in every wire type',
      (() => {
        const tree = record({ body: sv('b') });
        recordFields(tree).push(
          { no: 4, wt: 0, raw: Uint8Array.of(0x80, 0x01) },
          { no: 4, wt: 1, raw: new Uint8Array(8) },
          { no: 4, wt: 2, raw: Uint8Array.of(1, 2, 3) },
          { no: 4, wt: 5, raw: new Uint8Array(4) },
          { no: 2 ** 29 - 1, wt: 0, raw: Uint8Array.of(1) },
        );
        return tree;
      })(),
    ],
    [
      'scope and resource repeated (merged: attributes of both, the last name)',
      (() => {
        const tree = parseTree(encode(base([{ timeUnixNano: NOW }], { attributes: [{ key: 'a', value: sv('1') }] }, { name: 'first', attributes: [{ key: 's', value: sv('1') }] })), 'Request');
        const rl = tree[0]!.kids!;
        rl.push({ no: 1, wt: 2, kids: [{ no: 1, wt: 2, kids: [{ no: 1, wt: 2, raw: Buffer.from('service.name') }, { no: 2, wt: 2, kids: [{ no: 1, wt: 2, raw: Buffer.from('svc') }] }] }] });
        rl[1]!.kids!.push({ no: 1, wt: 2, kids: [{ no: 1, wt: 2, raw: Buffer.from('second') }, { no: 3, wt: 2, kids: [{ no: 1, wt: 2, raw: Buffer.from('s') }, { no: 2, wt: 2, kids: [{ no: 3, wt: 0, raw: Uint8Array.of(2) }] }] }] });
        return tree;
      })(),
    ],
    ['the highest field number and field 1000 (reserved) as unknown fields', [{ no: 2 ** 29 - 1, wt: 0, raw: Uint8Array.of(1) }, ...parseTree(encode(request(prng(13))), 'Request'), { no: 1000, wt: 2, raw: Uint8Array.of(1, 2) }]],
  ])('%s', (_name, tree) => {
    expectSame(encodeTree(tree));
  });

  it('nesting depth: throws exactly where protobuf-es stops (100 messages)', () => {
    const nest = (n: number): object => (n === 0 ? sv('leaf') : arr(nest(n - 1)));
    const nestKv = (n: number): object => (n === 0 ? sv('leaf') : kvl({ key: 'k', value: nestKv(n - 1) }));
    const results: string[] = [];
    for (let n = 40; n <= 52; n++) {
      for (const init of [
        base([{ timeUnixNano: NOW, body: nest(n) }]),
        base([{ timeUnixNano: NOW, body: nestKv(Math.floor((n * 2) / 3)) }]),
        base([{ timeUnixNano: NOW, attributes: [{ key: 'a', value: nest(n) }] }]),
        base([{ timeUnixNano: NOW }], { attributes: [{ key: 'a', value: nest(n) }] }),
        base([{ timeUnixNano: NOW }], undefined, { attributes: [{ key: 'a', value: nest(n) }] }),
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
      [
        { timeUnixNano: NOW, severityText: m, eventName: m, body: sv(m), attributes: [{ key: m, value: sv(m) }, { key: 'a', value: arr(sv(m)) }] },
        { timeUnixNano: NOW, body: kvl({ key: m, value: arr(sv(m)) }) },
      ],
      { attributes: [{ key: m, value: sv(m) }], entityRefs: [{ type: m, idKeys: [m] }] },
      { name: m, version: m, attributes: [{ key: m, value: sv(m) }] },
    );
    // every occurrence at once, and each place alone (the others left valid)
    const each = withRawStringAtEachPlace(init, m, raw);
    expect(each.length).toBeGreaterThanOrEqual(16);
    for (const body of [withRawString(init, m, raw), ...each]) expect(expectConsistent(body)).toBe('both-throw');
  });

  it.each(VALID_UTF8_EDGES)('valid UTF-8 edge: %s', (_name, raw) => {
    const m = 'MARKER';
    expectSame(withRawString(base([{ timeUnixNano: NOW, severityText: m, body: kvl({ key: m, value: arr(sv(m)) }), attributes: [{ key: m, value: sv(m) }] }, { timeUnixNano: NOW, body: sv(m) }]), m, raw));
  });

  it('every key of KEYS as a kvlist body key and attribute key', () => {
    expectSame(encode(base([{ timeUnixNano: NOW, body: kvl(...KEYS.map((key, i) => ({ key, value: iv(BigInt(i)) }))), attributes: KEYS.map((key, i) => ({ key, value: sv(String(i)) })) }])));
  });
});

describe('logsToPayloadsFromWire: malformed input throws', () => {
  const valid = encode(request(prng(14)));
  const single = encode(
    base(
      [{ timeUnixNano: NOW, severityNumber: 9, severityText: 'INFO', body: kvl({ key: 'a', value: arr(iv(1n), dv(1.5)) }), attributes: [{ key: 'a', value: dv(1.5) }], traceId: T, spanId: S, flags: 1, eventName: 'e' }],
      { attributes: [{ key: 'service.name', value: sv('s') }] },
      { name: 'sc', attributes: [{ key: 'x', value: bv(true) }] },
    ),
  );

  it('a truncation at every byte offset of a one-resource body throws', () => {
    expectEveryPrefixThrows(single);
  });

  it('a truncation at every byte offset of a larger body: throws, or both accept a shorter request', () => {
    expect(prefixesThatThrow(valid)).toBeGreaterThan(valid.length * 0.9);
  });

  const recordStart = (extra: number[]) => {
    // Request{ResourceLogs{ScopeLogs{LogRecord{time, …extra}}}}
    const rec = [0x09, ...Buffer.from(new BigUint64Array([NOW]).buffer), ...extra];
    const sl = [0x12, ...varint(rec.length), ...rec];
    const rl = [0x12, ...varint(sl.length), ...sl];
    return Uint8Array.from([0x0a, ...varint(rl.length), ...rl]);
  };

  it('the hand-built record frame is valid', () => {
    expect(expectSame(recordStart([0x1a, 1, 0x61])).accepted).toBe(1);
  });

  it.each<[string, Uint8Array, 'both' | 'stricter']>([
    ['garbage', Uint8Array.of(0xff, 0xff, 0xff, 0x0f, 0x99, 0x01), 'both'],
    ['a length prefix beyond the end', Uint8Array.of(0x0a, 0x05, 0x12, 0x00), 'both'],
    ['a truncated varint', Uint8Array.of(0x0a, 0x80), 'both'],
    ['field number 0', Uint8Array.of(0x02, 0x00), 'both'],
    ['wire type 6', Uint8Array.of(0x0e), 'both'],
    ['a 5-byte tag overflowing 32 bits', Uint8Array.of(0x8a, 0x80, 0x80, 0x80, 0x10, 0x00), 'both'],
    ['an 11-byte varint in a known field (severity_number)', recordStart([0x10, ...Array(10).fill(0x80), 0x01]), 'both'],
    ['an 11-byte varint in an unknown field of a record', recordStart([0x20, ...Array(10).fill(0x80), 0x01]), 'stricter'],
    ['a well-formed group in the reserved field 4', recordStart([0x23, 0x08, 0x01, 0x24]), 'stricter'],
    ['a truncated fixed64 (observed time)', recordStart([0x59, 1, 2, 3]), 'both'],
    ['a fixed32 (flags) running past its record', recordStart([0x45, 1, 2]), 'both'],
    ['a body whose field runs past its end', recordStart([0x2a, 0x02, 0x0a, 0x03, 0x61, 0x62, 0x63]), 'stricter'],
    ['a body truncated inside a kvlist', recordStart([0x2a, 0x04, 0x32, 0x05, 0x0a, 0x00]), 'both'],
    // protobuf-es reads these by the field's type: a varint as the body's length, 4 bytes as the flags, 8 as the time
    ['a known field with the wrong wire type (body as varint)', recordStart([0x28, 0x00]), 'stricter'],
    ['a known field with the wrong wire type (flags as varint)', recordStart([0x40, 0x01, 0x10, 0x01, 0x10]), 'stricter'],
    ['a known field with the wrong wire type (time as fixed32)', recordStart([0x0d, 1, 2, 3, 4, 0x10, 0x01, 0x10, 0x01]), 'stricter'],
    ['a known field with the wrong wire type (flags as varint, the record too short for protobuf-es)', recordStart([0x40, 0x01]), 'both'],
    ['invalid UTF-8 in the severity text', recordStart([0x1a, 2, 0xc3, 0x28]), 'both'],
    ['invalid UTF-8 in a string body', recordStart([0x2a, 4, 0x0a, 2, 0xc3, 0x28]), 'both'],
  ])('%s', (_name, bytes, kind) => {
    const got = wire(bytes);
    expect(got.ok).toBe(false);
    expect(expectConsistent(bytes)).toBe(kind === 'both' ? 'both-throw' : 'stricter');
  });

  it('random corruption of valid bodies never yields rows protobuf-es would not (5000 mutations)', () => {
    const r = prng(15);
    const bodies = [valid, single, ...Array.from({ length: 8 }, () => encodeTree(reshape(r, parseTree(encode(request(r)), 'Request'), 'Request', 0.3)))];
    const seen = corruptions(r, bodies, 5000);
    expect(seen.same).toBeGreaterThan(100);
    expect(seen['both-throw']).toBeGreaterThan(1000);
  });

  it('does not keep state between calls (a failed call leaves the next one intact)', () => {
    expectNoStateKept(valid, single);
  });

  it('reused batches: many hours, then a huge request (its batches are dropped afterwards), then small ones', () => {
    const many = encode(base(Array.from({ length: 9 }, (_, i) => ({ timeUnixNano: NOW + BigInt(i) * HOUR, attributes: [{ key: 'i', value: sv(String(i)) }] }))));
    const big = 'x'.repeat(5 << 20); // beyond the 4 MiB a kept batch, resource or scope leaf may hold
    const huge = encode({
      resourceLogs: [0, 1].map((r) => ({
        resource: { attributes: [{ key: 'service.name', value: sv(`svc${r}`) }, { key: 'big', value: sv(big) }] },
        scopeLogs: [{ scope: { name: 's', attributes: [{ key: 'big', value: sv(big) }] }, logRecords: [0, 1, 2].map((i) => ({ timeUnixNano: NOW + BigInt(i % 2) * HOUR, body: kvl({ key: 'k', value: sv(big.slice(0, 1 << 20)) }) })) }],
      })),
    });
    for (const body of [many, single, huge, valid, many, single, valid]) expectSame(body);
  });

  it('accepts Buffers and subarrays at an offset', () => {
    expectBuffersAndOffsets(valid);
  });
});
