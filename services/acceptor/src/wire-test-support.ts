import { expect } from 'vitest';
import type { AnyValueSchema, MessageInitShape } from '@floe/proto';
import type { TableDef } from '@floe/schema';
import { ColumnBatchBuilder, plainBatch, readColumnBatch } from '@floe/storage';
import { STRICTER_THAN_PROTOBUF_ES, type ConvertedPayloads } from './otlp-wire.ts';
import type { ConvertedRows } from './rows.ts';

/**
 * What the wire transcoders' tests (traces-wire.test.ts, logs-wire.test.ts) share: the
 * differential check against the general path (protobuf-es, the signal's *-to-rows converter,
 * addRow) with a readable report of where two payloads differ, deterministic random OTLP
 * content, and wire-level rewriting of valid requests.
 */

export type Outcome<T> = { ok: true; v: T } | { ok: false; err: Error };
/** The reference payloads, and each hour's row objects they were made of (to show on a mismatch). */
export type Reference = ConvertedPayloads & { rows: Map<number, Record<string, unknown>[]> };

export function run<T>(f: () => T): Outcome<T> {
  try {
    return { ok: true, v: f() };
  } catch (err) {
    expect(err).toBeInstanceOf(Error);
    return { ok: false, err: err as Error };
  }
}

/** The general path's payloads: each hour's row objects through addRow into a batch of `table` (as Ingest does). */
export function referenceOf(table: TableDef, converted: ConvertedRows): Reference {
  const byHour: ConvertedPayloads['byHour'] = new Map();
  const rows = new Map<number, Record<string, unknown>[]>();
  for (const [hour, batch] of converted.byHour) {
    const b = ColumnBatchBuilder.forTable(table);
    for (const row of batch.items) b.addRow(row);
    byHour.set(hour, { hour, rows: batch.rows, payload: b.finish() });
    rows.set(hour, batch.items);
  }
  return { byHour, accepted: converted.accepted, rejected: converted.rejected, rejectReason: converted.rejectReason, refusedBy: converted.refusedBy, rows };
}

const shown = (v: unknown) => {
  const s = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : typeof x === 'bigint' ? `${x}n` : x));
  return s.length > 2000 ? `${s.slice(0, 2000)}…` : s;
};
const hexAround = (b: Uint8Array, at: number) => `…${Buffer.from(b.subarray(Math.max(0, at - 16), at + 32)).toString('hex')}…`;

/** Where two payloads differ, leaf by leaf (readColumnBatch), with the reference rows' values of that column. */
export function describeMismatch(got: Uint8Array, want: Uint8Array, rows: Record<string, unknown>[]): string {
  let g: ReturnType<typeof readColumnBatch>;
  try {
    g = plainBatch(readColumnBatch(got));
  } catch (err) {
    return `the payload is not a readable column batch: ${(err as Error).message}`;
  }
  const w = plainBatch(readColumnBatch(want));
  if (g.rows !== w.rows) return `rows ${g.rows}, want ${w.rows}`;
  if (g.schema !== w.schema) return `schema ${g.schema.text}, want ${w.schema.text}`;
  if (g.leaves.length !== w.leaves.length) return `${g.leaves.length} leaves, want ${w.leaves.length}`;
  const names = w.schema.leafNames;
  const out: string[] = [];
  for (let i = 0; i < w.leaves.length; i++) {
    const a = g.leaves[i]!;
    const b = w.leaves[i]!;
    const parts = [
      ['definition levels', a.defs, b.defs],
      ['repetition levels', a.reps ?? new Uint8Array(0), b.reps ?? new Uint8Array(0)],
      ['values', a.values, b.values],
    ] as const;
    const diffs: string[] = [];
    for (const [what, x, y] of parts) {
      if (Buffer.from(x).equals(y)) continue;
      let at = 0;
      while (at < x.length && at < y.length && x[at] === y[at]) at++;
      diffs.push(`  ${what}: ${x.length} bytes, want ${y.length}; first difference at byte ${at}\n    got  ${hexAround(x, at)}\n    want ${hexAround(y, at)}`);
    }
    if (diffs.length === 0 && a.levels === b.levels) continue;
    const column = names[i]!.replace(/\..*$/, '');
    out.push(`leaf ${names[i]} (${a.levels} levels, want ${b.levels}):\n${diffs.join('\n')}\n  reference values: ${shown(rows.map((r) => r[column]))}`);
  }
  return out.length > 0 ? out.join('\n') : 'payloads differ outside the leaves';
}

/**
 * Whether two payloads hold the same rows leaf by leaf, their run leaves (the constant columns a
 * transcoder writes once per run) taken as the plain leaves they stand for.
 */
function samePlainBatches(got: Uint8Array, want: Uint8Array): boolean {
  if (Buffer.compare(got, want) === 0) return true;
  let g: ReturnType<typeof readColumnBatch>;
  try {
    g = plainBatch(readColumnBatch(got));
  } catch {
    return false;
  }
  const w = plainBatch(readColumnBatch(want));
  const same = (x: Uint8Array | undefined, y: Uint8Array | undefined) => Buffer.from(x ?? []).equals(y ?? new Uint8Array(0));
  return (
    g.rows === w.rows &&
    g.schema === w.schema &&
    g.leaves.every((a, i) => {
      const b = w.leaves[i]!;
      return a.levels === b.levels && same(a.defs, b.defs) && same(a.reps, b.reps) && same(a.values, b.values);
    })
  );
}

export function expectEqualPayloads(got: ConvertedPayloads, want: Reference): void {
  expect([got.accepted, got.rejected, got.rejectReason]).toEqual([want.accepted, want.rejected, want.rejectReason]);
  expect([...got.byHour.keys()]).toEqual([...want.byHour.keys()]);
  for (const [hour, batch] of want.byHour) {
    const g = got.byHour.get(hour)!;
    expect([g.hour, g.rows]).toEqual([hour, batch.rows]);
    if (!samePlainBatches(g.payload, batch.payload)) expect.fail(`hour ${hour}: payload differs from the reference\n${describeMismatch(g.payload, batch.payload, want.rows.get(hour)!)}`);
  }
}

/**
 * The differential checks of a transcoder `name` (`transcode`) against `referencePayloads`: on
 * valid input both give the same payloads; on any input the transcoder throws iff protobuf-es
 * does, or where protobuf-es accepts input that is not valid protobuf with one of
 * STRICTER_THAN_PROTOBUF_ES.
 */
export function differential(name: string, referencePayloads: (bytes: Uint8Array) => Reference, transcode: (bytes: Uint8Array) => ConvertedPayloads) {
  const reference = (bytes: Uint8Array): Outcome<Reference> => run(() => referencePayloads(bytes));
  const wire = (bytes: Uint8Array): Outcome<ConvertedPayloads> => run(() => transcode(bytes));

  /** Both accept with identical payloads (valid input). */
  function expectSame(bytes: Uint8Array): ConvertedPayloads {
    const want = reference(bytes);
    const got = wire(bytes);
    if (!want.ok) throw new Error(`test input is not valid protobuf: ${want.err.message}`);
    if (!got.ok) throw new Error(`${name} threw on valid input: ${got.err.message}`);
    expectEqualPayloads(got.v, want.v);
    return got.v;
  }

  /** Any input: same payloads, both throw, or only the wire path throws with a stricter-than error. */
  function expectConsistent(bytes: Uint8Array): 'same' | 'both-throw' | 'stricter' {
    const want = reference(bytes);
    const got = wire(bytes);
    if (want.ok && got.ok) {
      expectEqualPayloads(got.v, want.v);
      return 'same';
    }
    if (!want.ok && !got.ok) return 'both-throw';
    if (want.ok && !got.ok) {
      expect(STRICTER_THAN_PROTOBUF_ES, `protobuf-es accepts ${Buffer.from(bytes).toString('hex')}`).toContain(got.err.message);
      return 'stricter';
    }
    throw new Error(`${name} accepted input protobuf-es rejects (${(want as { err: Error }).err.message}): ${Buffer.from(bytes).toString('hex')}`);
  }

  /** Every proper prefix of a valid one-resource body throws in both paths. */
  function expectEveryPrefixThrows(body: Uint8Array): void {
    expect(wire(body).ok).toBe(true);
    for (let n = 1; n < body.length; n++) {
      expect(wire(body.subarray(0, n)).ok, `prefix of ${n} bytes`).toBe(false);
      expect(reference(body.subarray(0, n)).ok).toBe(false);
    }
  }

  /** Every prefix of a larger body is consistent (a cut between messages is a shorter request); how many throw. */
  function prefixesThatThrow(body: Uint8Array): number {
    let threw = 0;
    for (let n = 0; n < body.length; n++) if (expectConsistent(body.subarray(0, n)) === 'both-throw') threw++;
    return threw;
  }

  /** `n` random corruptions of the bodies, each checked for consistency; the outcomes counted. */
  function corruptions(r: Rng, bodies: readonly Uint8Array[], n: number): Record<'same' | 'both-throw' | 'stricter', number> {
    const seen = { same: 0, 'both-throw': 0, stricter: 0 };
    for (let i = 0; i < n; i++) seen[expectConsistent(corrupt(r, r.pick(bodies)))]++;
    return seen;
  }

  /** A failed call, even one that had written rows to the reused batches, leaves the next calls intact. */
  function expectNoStateKept(valid: Uint8Array, single: Uint8Array): void {
    expect(wire(Uint8Array.of(0x0a, 0x05, 0x12)).ok).toBe(false);
    expectSame(valid);
    expectSame(valid);
    const tail = Uint8Array.from([...valid, 0x0a, 0x05, 0x12]);
    expect(wire(tail).ok).toBe(false);
    expectSame(single);
    expectSame(valid);
  }

  /** The body as a Buffer and as a subarray at an offset gives the same payloads. */
  function expectBuffersAndOffsets(valid: Uint8Array): void {
    const padded = new Uint8Array(valid.length + 7);
    padded.set(valid, 5);
    expectEqualPayloads(transcode(padded.subarray(5, 5 + valid.length)), referencePayloads(valid));
    expectEqualPayloads(transcode(Buffer.from(valid)), referencePayloads(valid));
  }

  return { reference, wire, expectSame, expectConsistent, expectEveryPrefixThrows, prefixesThatThrow, corruptions, expectNoStateKept, expectBuffersAndOffsets };
}

/**
 * A valid body with 1 to 5 random corruptions: a byte set at random or to a byte that matters on
 * the wire, bytes inserted or removed, a length off by a little, the body cut short.
 */
export function corrupt(r: Rng, body: Uint8Array): Uint8Array {
  const b = Array.from(body);
  for (let m = 1 + (r.chance(0.3) ? r.int(4) : 0); m > 0; m--) {
    const at = r.int(b.length);
    switch (r.int(6)) {
      case 0:
        b[at] = r.int(256);
        break;
      case 1:
        b[at] = r.pick([0x00, 0x7f, 0x80, 0xff, 0x0a, 0x12, 0x13, 0x14]);
        break;
      case 2:
        b.splice(at, 0, ...r.bytes(1 + r.int(3)));
        break;
      case 3:
        b.splice(at, 1 + r.int(3));
        break;
      case 4:
        b[at] = (b[at]! + r.pick([1, -1, 2, -2])) & 0xff; // lengths off by a little
        break;
      default:
        b.length = at;
    }
  }
  return Uint8Array.from(b);
}

// ---------------------------------------------------------------------------------------------
// Deterministic random content

export function prng(seed: number) {
  let s = seed | 0;
  const next = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T,>(a: readonly T[]): T => a[int(a.length)]!;
  const chance = (p: number) => next() < p;
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => int(256));
  const u64 = () => (BigInt(int(2 ** 32)) << 32n) | BigInt(int(2 ** 32));
  return { next, int, pick, chance, bytes, u64 };
}
export type Rng = ReturnType<typeof prng>;

export const STRINGS = [
  '',
  'GET',
  'http.method',
  'ünïcödé',
  '中文字符',
  'emoji 😀🎉 ok',
  'quote " backslash \\ slash /',
  'controls \n\r\t\b\f \u0000 \u0001 \u001f \u007f',
  'separators \u2028 \u2029',
  '\ufeffbom first',
  'x'.repeat(33),
  'é'.repeat(40),
  '{"json":"text"}',
  '</script>',
];
export const KEYS = [
  'service.name',
  'http.method',
  'http.status_code',
  'a',
  'b',
  '0',
  '1',
  '7',
  '10',
  '01',
  '-1',
  '1.5',
  '4294967294',
  '4294967295',
  '__proto__',
  'constructor',
  'toString',
  'ключ',
  '',
  'k"ey',
  'k\\ey',
  'k\ney',
];
export const CHARS = ['a', 'Z', '0', ' ', '"', '\\', '\n', '\u0000', '\u001f', 'é', '中', '😀', '\u2028', '\ufffd', '/', '\t'];
export const INTS = [0n, 1n, -1n, 42n, 2n ** 53n - 1n, 2n ** 53n, -(2n ** 53n) + 1n, -(2n ** 53n), -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 32n, -(2n ** 32n), 4294967295n];
export const DOUBLES = [0, -0, 1.5, -2.25, NaN, Infinity, -Infinity, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, 0.1 + 0.2, 123456789012345680000];
export const HOUR = 3_600_000_000_000n;
export const NOW = 1_760_000_000_000_000_000n;

export function str(r: Rng): string {
  if (r.chance(0.6)) return r.pick(STRINGS);
  let s = '';
  for (let i = r.int(12); i > 0; i--) {
    if (r.chance(0.8)) s += r.pick(CHARS);
    else {
      const c = r.pick([0x80, 0x800, 0x10000, 0x110000]);
      const cp = r.int(c);
      s += String.fromCodePoint(cp >= 0xd800 && cp < 0xe000 ? 0xfffd : cp); // any code point, no lone surrogates
    }
  }
  return s;
}

export function anyValue(r: Rng, depth: number): MessageInitShape<typeof AnyValueSchema> {
  const kinds = depth > 2 ? 7 : 9;
  switch (r.int(kinds)) {
    case 0:
      return { value: { case: 'stringValue', value: str(r) } };
    case 1:
      return { value: { case: 'boolValue', value: r.chance(0.5) } };
    case 2:
      return { value: { case: 'intValue', value: r.chance(0.7) ? r.pick(INTS) : BigInt.asIntN(64, r.u64()) } };
    case 3:
      return { value: { case: 'doubleValue', value: r.chance(0.7) ? r.pick(DOUBLES) : (r.next() - 0.5) * 10 ** r.int(30) } };
    case 4:
      return { value: { case: 'bytesValue', value: r.bytes(r.int(7)) } };
    case 5:
      return { value: { case: 'stringValueStrindex', value: r.pick([0, 1, 5, -3, 2147483647]) } };
    case 6:
      return {};
    case 7:
      return { value: { case: 'arrayValue', value: { values: Array.from({ length: r.int(4) }, () => anyValue(r, depth + 1)) } } };
    default:
      return { value: { case: 'kvlistValue', value: { values: attributes(r, depth + 1, 3) } } };
  }
}

export function attributes(r: Rng, depth = 0, max = 9) {
  return Array.from({ length: r.int(max) }, () => ({
    key: r.chance(0.8) ? r.pick(KEYS) : str(r),
    ...(r.chance(0.9) ? { value: anyValue(r, depth) } : {}),
    ...(r.chance(0.1) ? { keyStrindex: r.pick([1, -1, 77]) } : {}),
  }));
}

/** A random resource (service.name mostly a string, entity refs) as either signal's requests carry it. */
export function randomResource(r: Rng) {
  return {
    attributes: [
      ...(r.chance(0.8) ? [{ key: 'service.name', value: r.chance(0.85) ? { value: { case: 'stringValue' as const, value: str(r) } } : anyValue(r, 0) }] : []),
      ...attributes(r),
    ],
    droppedAttributesCount: r.chance(0.2) ? 3 : 0,
    entityRefs: r.chance(0.2) ? [{ schemaUrl: 'u', type: 'service', idKeys: ['service.name'], descriptionKeys: ['a', 'b'] }] : [],
  };
}

/** A random instrumentation scope, with attributes at the given chance. */
export function randomScope(r: Rng, attributesChance: number) {
  return { name: str(r), version: str(r), attributes: r.chance(attributesChance) ? attributes(r) : [], droppedAttributesCount: r.chance(0.2) ? 2 : 0 };
}

/** Byte sequences that are not UTF-8: protobuf-es refuses them in any string field. */
export const INVALID_UTF8: [string, number[]][] = [
  ['a lone continuation byte', [0x61, 0x80]],
  ['a truncated 2-byte sequence', [0xc3]],
  ['a bad continuation', [0xc3, 0x28]],
  ['an overlong encoding', [0xc0, 0xaf]],
  ['a surrogate', [0xed, 0xa0, 0x80]],
  ['beyond U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
  ['0xff', [0xff]],
  ['a truncated 4-byte sequence', [0xf0, 0x9f, 0x98]],
];

/** Valid UTF-8 at its edges: kept as it is. */
export const VALID_UTF8_EDGES: [string, number[]][] = [
  ['a BOM (kept, like protobuf-es)', [0xef, 0xbb, 0xbf, 0x61]],
  ['4-byte characters', [0xf0, 0x9f, 0x98, 0x80, 0xf4, 0x8f, 0xbf, 0xbf]],
  ['U+FFFD itself and noncharacters', [0xef, 0xbf, 0xbd, 0xef, 0xbf, 0xbe]],
  ['NUL and DEL', [0x00, 0x7f]],
];

// ---------------------------------------------------------------------------------------------
// Wire-level rewriting: reorder fields, inject unknown ones, split and repeat fields.

export interface WField {
  no: number;
  wt: number;
  raw?: Uint8Array; // the value bytes of a leaf (varint bytes, fixed bytes, or payload)
  kids?: WField[]; // the fields of a sub-message
  pad?: number; // extra (redundant) varint bytes for the tag and length
}

function readVarint(b: Uint8Array, p: number): [bigint, number] {
  let v = 0n;
  for (let shift = 0n; ; shift += 7n) {
    const c = b[p++]!;
    v |= BigInt(c & 0x7f) << shift;
    if (c < 0x80) return [v, p];
  }
}

export function varint(v: number | bigint, pad = 0): number[] {
  let n = BigInt(v);
  const out: number[] = [];
  do {
    const c = Number(n & 0x7fn);
    n >>= 7n;
    out.push(n > 0n ? c | 0x80 : c);
  } while (n > 0n);
  for (let i = 0; i < pad; i++) {
    out[out.length - 1]! |= 0x80;
    out.push(0);
  }
  return out;
}

export function encodeTree(fields: WField[]): Uint8Array {
  const parts: number[] = [];
  for (const f of fields) {
    const pad = f.pad ?? 0;
    // a padded tag stays within 5 bytes (protobuf-es rejects longer tags)
    const tag = f.no * 8 + f.wt;
    parts.push(...varint(tag, Math.min(pad, 5 - varint(tag).length)));
    const payload = f.kids ? encodeTree(f.kids) : f.raw!;
    if (f.wt === 2) parts.push(...varint(payload.length, pad));
    parts.push(...payload);
  }
  return Uint8Array.from(parts);
}

/** The message types of a request: which fields hold which sub-message, and each type's highest known field. */
export interface MessageShape {
  sub: Record<string, Record<number, string>>;
  maxKnown: Record<string, number>;
}

/** The OTLP common messages (KeyValue, AnyValue, Resource, InstrumentationScope), as each signal's shape has them. */
export const COMMON_SHAPE: MessageShape = {
  sub: {
    Resource: { 1: 'KeyValue', 3: 'EntityRef' },
    EntityRef: {},
    Scope: { 3: 'KeyValue' },
    KeyValue: { 2: 'AnyValue' },
    AnyValue: { 5: 'ArrayValue', 6: 'KeyValueList' },
    ArrayValue: { 1: 'AnyValue' },
    KeyValueList: { 1: 'KeyValue' },
  },
  maxKnown: { Resource: 3, EntityRef: 4, Scope: 4, KeyValue: 3, AnyValue: 8, ArrayValue: 1, KeyValueList: 1 },
};

/**
 * Wire-level rewriting of a signal's requests (`shape`, top type 'Request'; `encode` makes the
 * bytes of a request): parse into a field tree, reorder fields, inject unknown ones, split and
 * repeat fields, and encode again.
 */
export function wireTrees<Init>(shape: MessageShape, encode: (init: Init) => Uint8Array) {
  function parseTree(b: Uint8Array, type: string): WField[] {
    const out: WField[] = [];
    let p = 0;
    while (p < b.length) {
      let t: bigint;
      [t, p] = readVarint(b, p);
      const no = Number(t >> 3n);
      const wt = Number(t & 7n);
      if (wt === 0) {
        const s = p;
        [, p] = readVarint(b, p);
        out.push({ no, wt, raw: b.subarray(s, p) });
      } else if (wt === 1 || wt === 5) {
        const n = wt === 1 ? 8 : 4;
        out.push({ no, wt, raw: b.subarray(p, p + n) });
        p += n;
      } else {
        let n: bigint;
        [n, p] = readVarint(b, p);
        const payload = b.subarray(p, p + Number(n));
        p += Number(n);
        const sub = shape.sub[type]![no];
        out.push(sub ? { no, wt, kids: parseTree(payload, sub) } : { no, wt, raw: payload });
      }
    }
    return out;
  }

  function unknownField(r: Rng, type: string): WField {
    const no = r.pick([shape.maxKnown[type]! + 1, 17, 31, 32, 100, 1000, 2 ** 29 - 1].filter((n) => n > shape.maxKnown[type]!));
    switch (r.pick([0, 1, 2, 5])) {
      case 0:
        return { no, wt: 0, raw: Uint8Array.from(varint(r.chance(0.5) ? r.int(300) : r.u64())) };
      case 1:
        return { no, wt: 1, raw: r.bytes(8) };
      case 2:
        return { no, wt: 2, raw: r.bytes(r.int(12)) };
      default:
        return { no, wt: 5, raw: r.bytes(4) };
    }
  }

  /** Random protobuf-legal rewrites; their meaning is whatever protobuf-es makes of them. */
  function reshape(r: Rng, fields: WField[], type: string, p: number): WField[] {
    let out = fields.map((f) => (f.kids ? { ...f, kids: reshape(r, f.kids, shape.sub[type]![f.no]!, p) } : { ...f }));
    if (r.chance(p)) {
      // any order: shuffle (changes the order of repeated fields, and which scalar comes last)
      for (let i = out.length - 1; i > 0; i--) {
        const j = r.int(i + 1);
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
    }
    if (r.chance(p)) for (let n = 1 + r.int(3); n > 0; n--) out.splice(r.int(out.length + 1), 0, unknownField(r, type));
    if (r.chance(p) && out.length > 0) {
      // repeat a field (last one wins for scalars, merge or append for messages)
      const f = out[r.int(out.length)]!;
      const copy: WField = f.kids ? { ...f, kids: f.kids.slice(0, r.int(f.kids.length + 1)) } : { ...f, raw: f.wt === 2 ? Uint8Array.from(Buffer.from(str(r).replace(/[^\x20-\x7e]/g, ''))) : f.raw };
      out.splice(r.int(out.length + 1), 0, copy);
    }
    if (r.chance(p)) {
      // split a message field in two occurrences (merged if singular)
      const i = out.findIndex((f) => f.kids && f.kids.length > 1);
      if (i >= 0) {
        const f = out[i]!;
        const cut = 1 + r.int(f.kids!.length - 1);
        const between = r.int(Math.min(2, out.length - i - 1) + 1);
        out = [...out.slice(0, i), { ...f, kids: f.kids!.slice(0, cut) }, ...out.slice(i + 1, i + 1 + between), { ...f, kids: f.kids!.slice(cut) }, ...out.slice(i + 1 + between)];
      }
    }
    if (r.chance(p / 2)) for (const f of out) if (r.chance(0.3)) f.pad = 1 + r.int(3); // non-minimal varints
    return out;
  }

  /** The length-delimited leaves of a request's tree that hold exactly `marker`. */
  function markerPlaces(tree: WField[], marker: string): WField[] {
    const m = Buffer.from(marker);
    const places: WField[] = [];
    const visit = (fields: WField[]) => {
      for (const f of fields) {
        if (f.kids) visit(f.kids);
        else if (f.wt === 2 && Buffer.from(f.raw!).equals(m)) places.push(f);
      }
    };
    visit(tree);
    expect(places.length).toBeGreaterThan(0);
    return places;
  }

  /** A valid request whose string `marker` is replaced by raw bytes (e.g. invalid UTF-8) everywhere. */
  function withRawString(init: Init, marker: string, raw: number[]): Uint8Array {
    const tree = parseTree(encode(init), 'Request');
    for (const f of markerPlaces(tree, marker)) f.raw = Uint8Array.from(raw);
    return encodeTree(tree);
  }

  /** The request with `marker` replaced by raw bytes at one place at a time (the others left as they are), one body a place. */
  function withRawStringAtEachPlace(init: Init, marker: string, raw: number[]): Uint8Array[] {
    const tree = parseTree(encode(init), 'Request');
    return markerPlaces(tree, marker).map((f) => {
      const saved = f.raw!;
      f.raw = Uint8Array.from(raw);
      const body = encodeTree(tree);
      f.raw = saved;
      return body;
    });
  }

  return { parseTree, reshape, withRawString, withRawStringAtEachPlace };
}
