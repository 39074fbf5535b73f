/**
 * The OTLP/protobuf wire reading that the hand-written transcoders (traces-wire.ts, logs-wire.ts)
 * share: the reader of the request bytes with protobuf-es's errors, the common messages
 * (KeyValue and AnyValue with protobuf-es's depth limit, Resource, InstrumentationScope, the
 * request → resource group → scope group walk that every Export*ServiceRequest has), the typed
 * attribute maps of attributes.ts splitAttributes written straight into column-batch leaves, the
 * JSON text writers, and each request's per-hour column batches.
 *
 * Why hand-written: see traces-wire.ts. Why module state: the reader's position, the last field's
 * range and the last key-value are module variables rather than fields of a reader object, which
 * kept the trace transcoder measurably faster. They are private to this module, and so are its
 * functions: an exported binding is a module cell, slower to use in this module's own inner loops
 * (and ES module exports are read-only to importers anyway). The transcoders take the functions
 * from the `wire` object at the end, as module constants, and see the reader's state only through
 * them: next() gives the next field's tag, at() the position, str() and bytes() a field's start.
 *
 * Contract: every reader here throws exactly where protobuf-es's fromBinary throws, or with one of
 * STRICTER_THAN_PROTOBUF_ES on the few inputs protobuf-es accepts although they are not valid
 * protobuf:
 *  - a field that runs past the end of its enclosing message (protobuf-es reads on into the
 *    parent's bytes and resumes the parent there);
 *  - a known field with the wrong wire type (protobuf-es reinterprets the bytes by the field's
 *    type, e.g. a varint as a string length);
 *  - groups (wire types 3 and 4), which OTLP never uses, even well-formed ones in unknown fields;
 *  - an unknown varint field longer than 10 bytes.
 * The first error in wire order is the one reported, as protobuf-es would meet it.
 *
 * Protobuf rules: fields may come in any order and unknown fields are skipped by wire type;
 * scalar fields are last-one-wins; singular message fields that occur more than once are merged
 * (resource, scope, a key-value's value); the resource and the scope apply to their items
 * wherever they appear, so resource and scope groups are read in two passes. Array and
 * key-value-list attribute values are validated here and rendered by protobuf-es (decoding just
 * that key-value), exactly as anyValueText does.
 */
import { isUtf8 } from 'node:buffer';
import { KeyValueSchema, fromBinary, toJson } from '@floe/proto';
import { ColumnBatchBuilder, Leaf, REUSE_BYTES } from '@floe/storage';
import { AcceptedTimes, nsOfHalves } from './accepted-times.ts';
import { anyValueText } from './attributes.ts';
import { payloadBuffers } from './payload-buffers.ts';
import type { HourPayload, RefusalCounts, RefusalKind } from './rows.ts';

const ERR_OVERRUN = 'a field runs past the end of its enclosing message';
const ERR_WIRE_TYPE = 'a known field has the wrong wire type';
const ERR_GROUP = 'groups (wire types 3 and 4) are not supported';
const ERR_LONG_VARINT = 'an unknown varint field is longer than 10 bytes';
const ERR_EOF = 'premature end of data';

/** Messages of the errors thrown on inputs that protobuf-es accepts (see the header). */
export const STRICTER_THAN_PROTOBUF_ES: readonly string[] = [ERR_OVERRUN, ERR_WIRE_TYPE, ERR_GROUP, ERR_LONG_VARINT];

/** protobuf-es's default recursion limit: the request is depth 1, a message at depth 101 fails. */
export const MAX_DEPTH = 100;
const NS_PER_HOUR_DIV_4096 = 878_906_250; // 3.6e12 / 2^12

// ---------------------------------------------------------------------------------------------
// JSON text (events_json, links_json, dropped_counts, log bodies) and other values built in
// scratch buffers

export class Out {
  b: Buffer;
  p = 0;
  constructor(size: number) {
    this.b = Buffer.allocUnsafe(size);
  }
}

function room(w: Out, n: number): void {
  if (w.p + n > w.b.length) {
    const b = Buffer.allocUnsafe(Math.max(w.b.length * 2, w.p + n));
    w.b.copy(b, 0, 0, w.p);
    w.b = b;
  }
}

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

function putConst(w: Out, c: Uint8Array): void {
  room(w, c.length);
  w.p = rConst(w.b, w.p, c);
}

function putByte(w: Out, c: number): void {
  room(w, 1);
  w.b[w.p++] = c;
}

/** Bytes that JSON.stringify escapes (1): all below 0x20, '"' and '\'. */
const CLASS = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) CLASS[c] = 1;
CLASS[0x22] = 1;
CLASS[0x5c] = 1;
const HEX = ascii('0123456789abcdef');

/** Writes src[s, e) (valid UTF-8) escaped as JSON.stringify does, into reserved room. */
function rEscape(b: Uint8Array, p: number, src: Uint8Array, s: number, e: number): number {
  for (let i = s; i < e; i++) {
    const c = src[i]!;
    if (CLASS[c] !== 1) {
      b[p++] = c;
      continue;
    }
    b[p++] = 0x5c;
    switch (c) {
      case 0x22:
        b[p++] = 0x22;
        break;
      case 0x5c:
        b[p++] = 0x5c;
        break;
      case 0x08:
        b[p++] = 0x62; // b
        break;
      case 0x0c:
        b[p++] = 0x66; // f
        break;
      case 0x0a:
        b[p++] = 0x6e; // n
        break;
      case 0x0d:
        b[p++] = 0x72; // r
        break;
      case 0x09:
        b[p++] = 0x74; // t
        break;
      default:
        b[p++] = 0x75; // u00XX, lower-case hex like JSON.stringify
        b[p++] = 0x30;
        b[p++] = 0x30;
        b[p++] = HEX[c >> 4]!;
        b[p++] = HEX[c & 15]!;
    }
  }
  return p;
}

/** A JSON string literal of the input string field [s, e) (validated UTF-8). */
function putStr(w: Out, s: number, e: number): void {
  room(w, 6 * (e - s) + 2);
  const b = w.b;
  b[w.p] = 0x22;
  const p = rEscape(b, w.p + 1, buf, s, e);
  b[p] = 0x22;
  w.p = p + 1;
}


function putJsString(w: Out, s: string): void {
  room(w, 3 * s.length);
  w.p += w.b.write(s, w.p, 3 * s.length, 'utf8');
}

function putHex(w: Out, s: number, e: number): void {
  room(w, 2 * (e - s));
  w.p = rHex(w.b, w.p, s, e);
}

const B64 = ascii('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');

/** Standard base64 with padding, like Buffer's and protobuf-es's. */
function putBase64(w: Out, s: number, e: number): void {
  room(w, 4 * Math.ceil((e - s) / 3));
  const b = w.b;
  let p = w.p;
  let i = s;
  for (; i + 2 < e; i += 3) {
    const n = (buf[i]! << 16) | (buf[i + 1]! << 8) | buf[i + 2]!;
    b[p++] = B64[n >> 18]!;
    b[p++] = B64[(n >> 12) & 63]!;
    b[p++] = B64[(n >> 6) & 63]!;
    b[p++] = B64[n & 63]!;
  }
  if (i + 1 === e) {
    const n = buf[i]! << 16;
    b[p++] = B64[n >> 18]!;
    b[p++] = B64[(n >> 12) & 63]!;
    b[p++] = 0x3d;
    b[p++] = 0x3d;
  } else if (i + 2 === e) {
    const n = (buf[i]! << 16) | (buf[i + 1]! << 8);
    b[p++] = B64[n >> 18]!;
    b[p++] = B64[(n >> 12) & 63]!;
    b[p++] = B64[(n >> 6) & 63]!;
    b[p++] = 0x3d;
  }
  w.p = p;
}

const DIGITS2 = ascii(Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0')).join(''));

/** A non-negative integer below 2^53, as String(n) writes it. */
function putUint(w: Out, n: number): void {
  room(w, 16);
  w.p = rUint(w.b, w.p, n);
}

function putInt(w: Out, n: number): void {
  if (n < 0) {
    putByte(w, 0x2d);
    n = -n;
  }
  putUint(w, n);
}

/** An unsigned 64-bit integer (two unsigned 32-bit halves) in decimal, as bigint.toString(). */
function putU64(w: Out, lo: number, hi: number): void {
  room(w, 20);
  w.p = rU64(w.b, w.p, lo, hi);
}

/** A signed 64-bit integer (lo, hi as int32 bit patterns) in decimal, as bigint.toString(). */
function putI64(w: Out, lo: number, hi: number): void {
  room(w, 21);
  if (hi < 0) {
    w.b[w.p++] = 0x2d;
    const nlo = (~lo + 1) >>> 0;
    w.p = rU64(w.b, w.p, nlo, nlo === 0 ? (~hi + 1) >>> 0 : ~hi >>> 0);
  } else w.p = rU64(w.b, w.p, lo >>> 0, hi);
}

/** A double as toJson writes it: finite as a JSON number, NaN and ±Infinity as strings. */
function putDoubleJson(w: Out, v: number): void {
  room(w, 28);
  w.p = rDouble(w.b, w.p, v);
}

// Raw writers: (buffer, position, …) → new position, into room the caller has reserved. A JS
// byte loop costs about 1 ns a byte, TypedArray#set about 15 ns a call plus 30 to 60 ns for a
// subarray to copy from: short copies loop, long ones use set.

function rConst(b: Uint8Array, p: number, c: Uint8Array): number {
  const n = c.length;
  if (n > 8) {
    b.set(c, p);
    return p + n;
  }
  for (let i = 0; i < n; i++) b[p++] = c[i]!;
  return p;
}

function rHex(b: Uint8Array, p: number, s: number, e: number): number {
  for (let i = s; i < e; i++) {
    const c = buf[i]!;
    b[p++] = HEX[c >> 4]!;
    b[p++] = HEX[c & 15]!;
  }
  return p;
}

/** 0 <= n < 2^31 in decimal (at most 10 bytes). */
function rSmall(b: Uint8Array, p: number, n: number): number {
  const end =
    p + (n < 10 ? 1 : n < 100 ? 2 : n < 1e3 ? 3 : n < 1e4 ? 4 : n < 1e5 ? 5 : n < 1e6 ? 6 : n < 1e7 ? 7 : n < 1e8 ? 8 : n < 1e9 ? 9 : 10);
  p = end;
  while (n >= 100) {
    const q = (n / 100) | 0;
    const r = (n - q * 100) << 1;
    b[--p] = DIGITS2[r + 1]!;
    b[--p] = DIGITS2[r]!;
    n = q;
  }
  if (n >= 10) {
    b[--p] = DIGITS2[(n << 1) + 1]!;
    b[--p] = DIGITS2[n << 1]!;
  } else b[--p] = 48 + n;
  return end;
}

/** 0 <= n < 1e9 as exactly nine digits. */
function r9(b: Uint8Array, p: number, n: number): number {
  const end = p + 9;
  p = end;
  for (let i = 0; i < 4; i++) {
    const q = (n / 100) | 0;
    const r = (n - q * 100) << 1;
    b[--p] = DIGITS2[r + 1]!;
    b[--p] = DIGITS2[r]!;
    n = q;
  }
  b[--p] = 48 + n;
  return end;
}

/** 0 <= n < 2^53 in decimal (at most 16 bytes). */
function rUint(b: Uint8Array, p: number, n: number): number {
  if (n < 2147483648) return rSmall(b, p, n);
  const q = Math.floor(n / 1e9);
  return r9(b, rSmall(b, p, q), n - q * 1e9);
}

/** An unsigned 64-bit integer (unsigned 32-bit halves) in decimal, as bigint.toString() (≤ 20 bytes). */
function rU64(b: Uint8Array, p: number, lo: number, hi: number): number {
  if (hi < 0x200000) return rUint(b, p, hi * 4294967296 + lo);
  // v = hh·2^48 + hl·2^32 + lo, with 2^48 = 281474·1e9 + 976710656 and 2^32 = 4·1e9 + 294967296:
  // t stays under 2^47, so floor(v / 1e9) and v mod 1e9 are exact in doubles.
  const hh = hi >>> 16;
  const hl = hi & 0xffff;
  const t = hh * 976710656 + hl * 294967296 + lo;
  const tq = Math.floor(t / 1e9);
  return r9(b, rUint(b, p, hh * 281474 + hl * 4 + tq), t - tq * 1e9);
}


/** A double as toJson writes it: finite as a JSON number, NaN and ±Infinity as strings (≤ 26 bytes). */
function rDouble(b: Uint8Array, p: number, v: number): number {
  const t = String(v);
  const fin = Number.isFinite(v);
  if (!fin) b[p++] = 0x22;
  for (let i = 0; i < t.length; i++) b[p++] = t.charCodeAt(i);
  if (!fin) b[p++] = 0x22;
  return p;
}

// ---------------------------------------------------------------------------------------------
// Input

const EMPTY = new Uint8Array(0);
// The request being read, and the reader's position in it.
let buf: Uint8Array = EMPTY;
let len = 0;
let pos = 0;
const EMPTY_VIEW: DataView = new DataView(EMPTY.buffer);
let view = EMPTY_VIEW;

/**
 * Starts reading a request; returns its bytes as a plain Uint8Array, which the transcoder keeps
 * to copy values from (a Buffer is a subclass: plain arrays keep element loads monomorphic).
 */
function beginRequest(bytes: Uint8Array): Uint8Array {
  buf = bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  len = bytes.length;
  pos = 0;
  view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return buf;
}

/** The reader's position. */
const at = (): number => pos;

/** Moves the reader to `p` (the second pass over a message). */
function seek(p: number): void {
  pos = p;
}

/** The next field's tag, or 0 at the end of the message that ends at `end`. */
function next(end: number): number {
  if (pos >= end) return 0;
  // One-byte tags (fields 1 to 15, nearly all) checked here: V8 inlines tag() poorly at this
  // depth, which cost the trace transcoder ~1.5% of its instructions. tag() does the others.
  const b = buf[pos]!;
  if (b < 0x80 && b >= 8 && (b & 7) <= 5) {
    pos++;
    return b;
  }
  return tag(end);
}

function truncated(end: number, want: number): never {
  throw new Error(want > len || end === len ? ERR_EOF : ERR_OVERRUN);
}

function badTag(t: number): never {
  throw new Error(`illegal tag: field no ${t >>> 3} wire type ${t & 7}`);
}

/** An unsigned 32-bit varint read like protobuf-es (up to 10 bytes, the low 32 bits kept). */
function u32(end: number): number {
  let p = pos;
  if (end - p < 10) return u32Slow(end);
  let b = buf[p++]!;
  if (b < 0x80) {
    pos = p;
    return b;
  }
  let r = b & 0x7f;
  b = buf[p++]!;
  r |= (b & 0x7f) << 7;
  if (b < 0x80) {
    pos = p;
    return r;
  }
  b = buf[p++]!;
  r |= (b & 0x7f) << 14;
  if (b < 0x80) {
    pos = p;
    return r;
  }
  b = buf[p++]!;
  r |= (b & 0x7f) << 21;
  if (b < 0x80) {
    pos = p;
    return r;
  }
  b = buf[p++]!;
  r |= (b & 0x0f) << 28;
  for (let i = 5; b >= 0x80 && i < 10; i++) b = buf[p++]!;
  if (b >= 0x80) throw new Error('invalid varint');
  pos = p;
  return r >>> 0;
}

function u32Slow(end: number): number {
  let r = 0;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) truncated(end, end + 1);
    const b = buf[pos++]!;
    if (i < 4) r |= (b & 0x7f) << (7 * i);
    else if (i === 4) r |= (b & 0x0f) << 28;
    if (b < 0x80) return r >>> 0;
  }
  throw new Error('invalid varint');
}

let lo64 = 0;
let hi64 = 0;

/** A 64-bit varint read like protobuf-es's varint64read, into lo64/hi64 (int32 bit patterns). */
function v64(end: number): void {
  let lo = 0;
  let hi = 0;
  let b: number;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= end) truncated(end, end + 1);
    b = buf[pos++]!;
    lo |= (b & 0x7f) << shift;
    if (b < 0x80) {
      lo64 = lo;
      hi64 = hi;
      return;
    }
  }
  if (pos >= end) truncated(end, end + 1);
  b = buf[pos++]!;
  lo |= (b & 0x0f) << 28;
  hi = (b & 0x70) >> 4;
  if (b < 0x80) {
    lo64 = lo;
    hi64 = hi;
    return;
  }
  for (let shift = 3; shift <= 31; shift += 7) {
    if (pos >= end) truncated(end, end + 1);
    b = buf[pos++]!;
    hi |= (b & 0x7f) << shift;
    if (b < 0x80) {
      lo64 = lo;
      hi64 = hi;
      return;
    }
  }
  throw new Error('invalid varint');
}

/** A field tag (field number << 3 | wire type), checked like protobuf-es's BinaryReader.tag(). */
function tag(end: number): number {
  const b = buf[pos]!;
  if (b < 0x80) {
    pos++;
    if (b < 8 || (b & 7) > 5) badTag(b);
    return b;
  }
  const start = pos;
  const t = u32(end);
  const n = pos - start;
  if (n > 5 || (n === 5 && buf[pos - 1]! > 0x0f)) throw new Error('illegal tag: varint overflows uint32');
  if (t >>> 3 === 0 || (t & 7) > 5) badTag(t);
  return t;
}

/** Reads a length prefix; returns the end of the field's payload (pos is at its start). */
function lenDelim(end: number): number {
  const n = u32(end);
  if (n > end - pos) truncated(end, pos + n);
  return pos + n;
}

function fixedAt(p: number): number {
  return (buf[p]! | (buf[p + 1]! << 8) | (buf[p + 2]! << 16) | (buf[p + 3]! << 24)) >>> 0;
}

function need(end: number, n: number): void {
  if (end - pos < n) truncated(end, pos + n);
}

/** A fixed32 field's value (unsigned). */
function fixed32(end: number): number {
  need(end, 4);
  const v = fixedAt(pos);
  pos += 4;
  return v;
}

let fHi = 0;

/** A fixed64 field's low 32 bits (unsigned); fixed64Hi() is its high half. */
function fixed64(end: number): number {
  need(end, 8);
  const lo = fixedAt(pos);
  fHi = fixedAt(pos + 4);
  pos += 8;
  return lo;
}

const fixed64Hi = (): number => fHi;

function double(end: number): number {
  need(end, 8);
  const v = view.getFloat64(pos, true);
  pos += 8;
  return v;
}

/** Skips an unknown field; a known field number (bit set in `known`) here has a wrong wire type. */
function skip(t: number, end: number, known: number): void {
  const f = t >>> 3;
  if (f < 32 && ((known >>> f) & 1) !== 0) throw new Error(ERR_WIRE_TYPE);
  skipValue(t & 7, end);
}

function skipValue(wireType: number, end: number): void {
  switch (wireType) {
    case 0:
      for (let i = 0; ; i++) {
        if (i === 10) throw new Error(ERR_LONG_VARINT);
        if (pos >= end) truncated(end, end + 1);
        if (buf[pos++]! < 0x80) return;
      }
    case 1:
      need(end, 8);
      pos += 8;
      return;
    case 2:
      pos = lenDelim(end);
      return;
    case 5:
      need(end, 4);
      pos += 4;
      return;
    default:
      throw new Error(ERR_GROUP);
  }
}

let strS = 0;
let strE = 0;

/**
 * A string field: validated as UTF-8 (proto3; protobuf-es throws too), its range into strS/strE;
 * returns its start (at() is its end).
 */
function str(end: number): number {
  const e = lenDelim(end);
  const s = pos;
  let or = 0;
  for (let i = s; i < e; i++) or |= buf[i]!;
  if (or >= 0x80 && !isUtf8(buf.subarray(s, e))) throw new Error('invalid UTF-8 in a string field');
  strS = s;
  strE = e;
  pos = e;
  return s;
}

/** A bytes field (ids), unchecked: returns its start (at() is its end). */
function bytes(end: number): number {
  const e = lenDelim(end);
  const s = pos;
  pos = e;
  return s;
}

/** Skips a length-delimited field (one that a second pass reads). */
function skipBytes(end: number): void {
  pos = lenDelim(end);
}

function allZero(s: number, e: number): boolean {
  for (let i = s; i < e; i++) if (buf[i] !== 0) return false;
  return true;
}

function tooDeep(): never {
  throw new Error(`maximum recursion depth of ${MAX_DEPTH} reached`);
}

/**
 * Errors are reported in wire order. A message read in two passes (its `deferred` fields, tag
 * `deferredTag`, skipped by the first) whose first pass failed at `pos` first processes the
 * deferred fields before that point: protobuf-es would have met their errors first, and one of
 * them may be a field overrunning its message, after which protobuf-es reads the rest otherwise.
 */
function failInWireOrder(err: unknown, start: number, end: number, deferredTag: number, deferred: (end: number) => void): never {
  const failedAt = pos;
  pos = start;
  while (pos < failedAt) {
    let e: number;
    try {
      const t = tag(end);
      if (t !== deferredTag) {
        skipValue(t & 7, end);
        continue;
      }
      e = lenDelim(end);
    } catch {
      break; // the field that failed
    }
    if (e > failedAt) break;
    deferred(e);
  }
  throw err;
}

// ---------------------------------------------------------------------------------------------
// KeyValue / AnyValue

const V_NONE = 0;
const V_STR = 1;
const V_BOOL = 2;
const V_INT = 3;
const V_DBL = 4;
const V_ARR = 5;
const V_KVL = 6;
const V_BYTES = 7;
const V_SIDX = 8;

/**
 * The V_* cases for importers (ValueSlot.kind). A copy: an exported binding is a module cell,
 * slower to read in this module's hot paths than the constants above.
 */
export const VALUE = { NONE: V_NONE, STR: V_STR, BOOL: V_BOOL, INT: V_INT, DBL: V_DBL, ARR: V_ARR, KVL: V_KVL, BYTES: V_BYTES, SIDX: V_SIDX } as const;

// The last key-value read by keyValue(): its key, whether the value field occurred, key_strindex,
// and the value's final oneof case with its scalar. Arrays and kvlists are only validated.
let kS = 0;
let kE = 0;
let kHasValue = false;
let kIdx = 0;
let vCase = V_NONE;
let vS = 0;
let vE = 0;
let vLo = 0;
let vHi = 0;
let vNum = 0;

function keyValue(end: number, depth: number): void {
  if (depth > MAX_DEPTH) tooDeep();
  kS = kE = 0;
  kHasValue = false;
  kIdx = 0;
  vCase = V_NONE;
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x0a:
        str(end);
        kS = strS;
        kE = strE;
        break;
      case 0x12: {
        // A repeated singular message merges: every occurrence's fields apply to one AnyValue.
        const e = lenDelim(end);
        anyValue(e, depth + 1);
        kHasValue = true;
        break;
      }
      case 0x18:
        kIdx = u32(end) | 0;
        break;
      default:
        skip(t, end, 0b1110);
    }
  }
}

/** A value kept while other fields are read (a log body): anyValueInto() fills it. */
export interface ValueSlot {
  /** A VALUE case */
  kind: number;
  /** string/bytes range */
  s: number;
  e: number;
  /** int64 as int32 bit patterns */
  lo: number;
  hi: number;
  /** double, bool (0/1) */
  num: number;
}

/**
 * Reads one occurrence of a singular AnyValue field into `slot`. Occurrences merge: the last
 * oneof field over all of them decides, so an occurrence without one leaves the slot as it was
 * (a case that is an array or kvlist in several occurrences merges its elements: the caller
 * renders such values from protobuf-es's decoding).
 */
function anyValueInto(end: number, depth: number, slot: ValueSlot): void {
  vCase = V_NONE;
  anyValue(end, depth);
  if (vCase === V_NONE) return;
  slot.kind = vCase;
  slot.s = vS;
  slot.e = vE;
  slot.lo = vLo;
  slot.hi = vHi;
  slot.num = vNum;
}

function anyValue(end: number, depth: number): void {
  if (depth > MAX_DEPTH) tooDeep();
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x0a:
        str(end);
        vCase = V_STR;
        vS = strS;
        vE = strE;
        break;
      case 0x10:
        v64(end);
        vCase = V_BOOL;
        vNum = (lo64 | hi64) !== 0 ? 1 : 0;
        break;
      case 0x18:
        v64(end);
        vCase = V_INT;
        vLo = lo64;
        vHi = hi64;
        break;
      case 0x21:
        vNum = double(end);
        vCase = V_DBL;
        break;
      case 0x2a: {
        const e = lenDelim(end);
        checkArrayValue(e, depth + 1);
        vCase = V_ARR;
        break;
      }
      case 0x32: {
        const e = lenDelim(end);
        checkKeyValueList(e, depth + 1);
        vCase = V_KVL;
        break;
      }
      case 0x3a:
        vE = lenDelim(end);
        vS = pos;
        pos = vE;
        vCase = V_BYTES;
        break;
      case 0x40:
        vNum = u32(end) | 0;
        vCase = V_SIDX;
        break;
      default:
        skip(t, end, 0b1_1111_1110);
    }
  }
}

// Validation only (the values nested in arrays and kvlists), with protobuf-es's depth limit.

function checkAnyValue(end: number, depth: number): void {
  if (depth > MAX_DEPTH) tooDeep();
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x0a:
        str(end);
        break;
      case 0x10:
      case 0x18:
        v64(end);
        break;
      case 0x21:
        need(end, 8);
        pos += 8;
        break;
      case 0x2a: {
        const e = lenDelim(end);
        checkArrayValue(e, depth + 1);
        break;
      }
      case 0x32: {
        const e = lenDelim(end);
        checkKeyValueList(e, depth + 1);
        break;
      }
      case 0x3a:
        pos = lenDelim(end);
        break;
      case 0x40:
        u32(end);
        break;
      default:
        skip(t, end, 0b1_1111_1110);
    }
  }
}

/** ArrayValue and KeyValueList: one repeated message in field 1, each checked by `each`. */
function checkRepeated(end: number, depth: number, each: (end: number, depth: number) => void): void {
  if (depth > MAX_DEPTH) tooDeep();
  while (pos < end) {
    const t = tag(end);
    if (t === 0x0a) {
      const e = lenDelim(end);
      each(e, depth + 1);
    } else skip(t, end, 0b10);
  }
}

const checkArrayValue = (end: number, depth: number): void => checkRepeated(end, depth, checkAnyValue);
const checkKeyValueList = (end: number, depth: number): void => checkRepeated(end, depth, checkKeyValue);

function checkKeyValue(end: number, depth: number): void {
  if (depth > MAX_DEPTH) tooDeep();
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x0a:
        str(end);
        break;
      case 0x12: {
        const e = lenDelim(end);
        checkAnyValue(e, depth + 1);
        break;
      }
      case 0x18:
        u32(end);
        break;
      default:
        skip(t, end, 0b1110);
    }
  }
}

/** Arrays and kvlists: the key-value [s, e) decoded by protobuf-es (it is valid: checked above). */
const decodeKeyValue = (s: number, e: number) => fromBinary(KeyValueSchema, buf.subarray(s, e));

const putConstValue = (leaf: Leaf, c: Uint8Array): void => leaf.utf8(c, 0, c.length, 0);

// ---------------------------------------------------------------------------------------------
// Values as JSON text: toJson(KeyValueSchema) (span event and link attributes) and plainJson
// (attributes.ts: log bodies)

const C_KEY = ascii('"key":');
const C_VALUE = ascii('"value":');
const C_KEY_IDX = ascii('"keyStrindex":');
const C_EMPTY_OBJ = ascii('{}');
const C_AV_STR = ascii('{"stringValue":');
const C_AV_BOOL_T = ascii('{"boolValue":true}');
const C_AV_BOOL_F = ascii('{"boolValue":false}');
const C_AV_INT = ascii('{"intValue":"');
const C_AV_DBL = ascii('{"doubleValue":');
const C_AV_BYTES = ascii('{"bytesValue":"');
const C_AV_SIDX = ascii('{"stringValueStrindex":');

/** toJson(KeyValueSchema) of the key-value [s, e) just read by keyValue(). */
function putKeyValueJson(w: Out, s: number, e: number): void {
  if (vCase === V_ARR || vCase === V_KVL) {
    putJsString(w, JSON.stringify(toJson(KeyValueSchema, decodeKeyValue(s, e))));
    return;
  }
  putByte(w, 0x7b);
  let first = true;
  if (kE > kS) {
    putConst(w, C_KEY);
    putStr(w, kS, kE);
    first = false;
  }
  if (kHasValue) {
    if (!first) putByte(w, 0x2c);
    putConst(w, C_VALUE);
    switch (vCase) {
      case V_NONE:
        putConst(w, C_EMPTY_OBJ);
        break;
      case V_STR:
        putConst(w, C_AV_STR);
        putStr(w, vS, vE);
        putByte(w, 0x7d);
        break;
      case V_BOOL:
        putConst(w, vNum ? C_AV_BOOL_T : C_AV_BOOL_F);
        break;
      case V_INT:
        putConst(w, C_AV_INT);
        putI64(w, vLo, vHi);
        putByte(w, 0x22);
        putByte(w, 0x7d);
        break;
      case V_DBL:
        putConst(w, C_AV_DBL);
        putDoubleJson(w, vNum);
        putByte(w, 0x7d);
        break;
      case V_BYTES:
        putConst(w, C_AV_BYTES);
        putBase64(w, vS, vE);
        putByte(w, 0x22);
        putByte(w, 0x7d);
        break;
      case V_SIDX:
        putConst(w, C_AV_SIDX);
        putInt(w, vNum);
        putByte(w, 0x7d);
        break;
    }
    first = false;
  }
  if (kIdx !== 0) {
    if (!first) putByte(w, 0x2c);
    putConst(w, C_KEY_IDX);
    putInt(w, kIdx);
  }
  putByte(w, 0x7d);
}



/**
 * plainJson (attributes.ts) of the AnyValue [s, e), which is valid (read by anyValue() before);
 * false when protobuf-es would merge parts of it (a oneof field that occurs twice in one value,
 * a key-value with two value fields): the caller then renders protobuf-es's decoding instead.
 */
function putPlainJson(w: Out, s: number, e: number): boolean {
  pos = s;
  let t1 = 0;
  let at1 = 0;
  while (pos < e) {
    const t = tag(e);
    if (t >>> 3 <= 8) {
      if (t1 !== 0) return false;
      t1 = t;
      at1 = pos;
    }
    skipValue(t & 7, e);
  }
  pos = at1;
  switch (t1) {
    case 0x0a: {
      const fe = lenDelim(e);
      putStr(w, pos, fe);
      return true;
    }
    case 0x10:
      v64(e);
      putConst(w, (lo64 | hi64) !== 0 ? C_TRUE : C_FALSE);
      return true;
    case 0x18:
      v64(e);
      putI64(w, lo64, hi64);
      return true;
    case 0x21:
      putDoubleJson(w, double(e));
      return true;
    case 0x2a:
      return putPlainArray(w, lenDelim(e));
    case 0x32:
      return putPlainObject(w, lenDelim(e));
    case 0x3a: {
      const fe = lenDelim(e);
      putByte(w, 0x22);
      putBase64(w, pos, fe);
      putByte(w, 0x22);
      return true;
    }
    default:
      // no value, or a string index (plainJson has no case for it)
      putConst(w, C_NULL);
      return true;
  }
}

const C_TRUE = ascii('true');
const C_FALSE = ascii('false');
const C_NULL = ascii('null');

/** An ArrayValue (pos at its start) as a JSON array. */
function putPlainArray(w: Out, end: number): boolean {
  putByte(w, 0x5b);
  let n = 0;
  while (pos < end) {
    const t = tag(end);
    if (t !== 0x0a) {
      skipValue(t & 7, end);
      continue;
    }
    const e = lenDelim(end);
    if (n++ > 0) putByte(w, 0x2c);
    if (!putPlainJson(w, pos, e)) return false;
    pos = e;
  }
  putByte(w, 0x5d);
  return true;
}

/** A KeyValueList (pos at its start) as a JSON object, keys in wire order, repeated keys kept. */
function putPlainObject(w: Out, end: number): boolean {
  putByte(w, 0x7b);
  let n = 0;
  while (pos < end) {
    const t = tag(end);
    if (t !== 0x0a) {
      skipValue(t & 7, end);
      continue;
    }
    const e = lenDelim(end);
    let ks = 0;
    let ke = 0;
    let vs = -1;
    let ve = 0;
    while (pos < e) {
      const f = tag(e);
      if (f === 0x0a) {
        ke = lenDelim(e);
        ks = pos;
        pos = ke;
      } else if (f === 0x12) {
        if (vs >= 0) return false;
        ve = lenDelim(e);
        vs = pos;
        pos = ve;
      } else skipValue(f & 7, e);
    }
    if (n++ > 0) putByte(w, 0x2c);
    putStr(w, ks, ke);
    putByte(w, 0x3a);
    if (vs < 0) putConst(w, C_NULL);
    else if (!putPlainJson(w, vs, ve)) return false;
    pos = e;
  }
  putByte(w, 0x7d);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Typed attribute maps (attributes.ts splitAttributes): the key-values of one attribute list are
// recorded in a table, then each map is written from it into its key and value leaves.

/** A map column's two leaves. */
export interface MapLeaves {
  key: Leaf;
  value: Leaf;
}

const M_STR = 0;
const M_INT = 1;
const M_DBL = 2;
const M_BOOL = 3;
/** The map each value case goes to (V_NONE: none, splitAttributes skips it). */
const MAP_OF = Uint8Array.of(255, M_STR, M_BOOL, M_INT, M_DBL, M_STR, M_STR, M_STR, M_STR);

let eCap = 0;
let eN = 0;
let eKS = new Int32Array(0); // key range
let eKE = new Int32Array(0);
let eS = new Int32Array(0); // string/bytes range, int64 lo/hi, or the key-value's range (arrays, kvlists)
let eE = new Int32Array(0);
let eCase = new Uint8Array(0);
let eNum = new Float64Array(0); // double, bool, string index
/**
 * Per map bit: the plain (prototype-free) object that splitAttributes builds iterates array-index
 * keys first, in numeric order, and keeps a repeated key at its first position with its last
 * value ("__proto__" is an ordinary key there). Maps with such keys take emitMapSlow().
 */
let eOdd = 0;

/** Starts a new attribute list. */
function clearEntries(): void {
  eN = 0;
  eOdd = 0;
}

function growEntries(): void {
  const cap = Math.max(64, eCap * 2);
  const i32 = (a: Int32Array) => {
    const b = new Int32Array(cap);
    b.set(a.subarray(0, cap));
    return b;
  };
  eKS = i32(eKS);
  eKE = i32(eKE);
  eS = i32(eS);
  eE = i32(eE);
  const c = new Uint8Array(cap);
  c.set(eCase.subarray(0, cap));
  eCase = c;
  const n = new Float64Array(cap);
  n.set(eNum.subarray(0, cap));
  eNum = n;
  eCap = cap;
}
growEntries();

function sameBytes(a: number, b: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (buf[a + i] !== buf[b + i]) return false;
  return true;
}

function sameConst(s: number, c: Uint8Array): boolean {
  for (let i = 0; i < c.length; i++) if (buf[s + i] !== c[i]) return false;
  return true;
}

/** An attributes field (a KeyValue at `depth`): read, then recorded in the entry table. */
function attribute(end: number, depth: number): void {
  const e = lenDelim(end);
  const s = pos;
  keyValue(e, depth);
  addAttr(s, e);
}

/** Records the key-value just read by keyValue() from [s, e) (splitAttributes' loop body). */
function addAttr(s: number, e: number): void {
  if (vCase === V_NONE) return;
  const m = MAP_OF[vCase]!;
  const n = kE - kS;
  if ((eOdd & (1 << m)) === 0) {
    for (let i = 0; i < eN; i++) {
      if (MAP_OF[eCase[i]!] === m && eKE[i]! - eKS[i]! === n && sameBytes(eKS[i]!, kS, n)) {
        eOdd |= 1 << m;
        break;
      }
    }
    if (n > 0) {
      const c = buf[kS]!;
      if (c >= 0x30 && c <= 0x39) eOdd |= 1 << m;
    }
  }
  if (eN === eCap) growEntries();
  const i = eN++;
  eKS[i] = kS;
  eKE[i] = kE;
  eCase[i] = vCase;
  switch (vCase) {
    case V_STR:
    case V_BYTES:
      eS[i] = vS;
      eE[i] = vE;
      break;
    case V_INT:
      eS[i] = vLo;
      eE[i] = vHi;
      break;
    case V_ARR:
    case V_KVL:
      eS[i] = s;
      eE[i] = e;
      break;
    default:
      eNum[i] = vNum;
  }
}

/** Builds a value's text (base64 of bytes, dropped_counts) before it is copied into its leaf. */
export const tmp = new Out(256);

/**
 * Entry i as entry `rep` of its map in the row (0: the first), the value as addRow stores what
 * splitAttributes gives: strings as they are; bytes as base64, a string index as the text of its
 * toJson, arrays and kvlists as anyValueText (strings); int64() as the int64 itself; float() as
 * the double (NaN is Number('NaN'): the canonical NaN, whatever the wire's NaN payload).
 */
function putEntry(key: Leaf, value: Leaf, i: number, rep: number): void {
  key.utf8(buf, eKS[i]!, eKE[i]!, rep);
  switch (eCase[i]) {
    case V_STR:
      value.utf8(buf, eS[i]!, eE[i]!, rep);
      return;
    case V_INT:
      value.i64(eS[i]!, eE[i]!, rep);
      return;
    case V_BOOL:
      value.bool(eNum[i] !== 0, rep);
      return;
    case V_DBL: {
      const v = eNum[i]!;
      value.f64(v === v ? v : NaN, rep);
      return;
    }
    case V_SIDX:
      value.string(`{"stringValueStrindex":${eNum[i]!}}`, rep);
      return;
    case V_BYTES:
      tmp.p = 0;
      putBase64(tmp, eS[i]!, eE[i]!);
      value.utf8(tmp.b, 0, tmp.p, rep);
      return;
    default:
      // arrays and kvlists: anyValueText(), from protobuf-es's decoding of this key-value
      value.string(anyValueText(decodeKeyValue(eS[i]!, eE[i]!).value), rep);
  }
}

/** The four maps of the recorded entries (indexed by M_*), each as one row of its key and value leaves. */
function emitMaps(maps: readonly MapLeaves[]): void {
  // One pass over the entries for the maps in entry order; bit m of `seen`: map m has an entry.
  let seen = 0;
  for (let i = 0; i < eN; i++) {
    const m = MAP_OF[eCase[i]!]!;
    if ((eOdd & (1 << m)) !== 0) continue;
    const bit = 1 << m;
    putEntry(maps[m]!.key, maps[m]!.value, i, (seen & bit) !== 0 ? 1 : 0);
    seen |= bit;
  }
  for (let m = 0; m < 4; m++) {
    const { key, value } = maps[m]!;
    if ((eOdd & (1 << m)) !== 0) emitMapSlow(key, value, m);
    else if ((seen & (1 << m)) === 0) {
      key.nil(1); // an empty map
      value.nil(1);
    }
  }
}

const isArrayIndex = (k: string) => /^(?:0|[1-9][0-9]{0,9})$/.test(k) && Number(k) < 4294967295;

function emitMapSlow(key: Leaf, value: Leaf, m: number): void {
  const input = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const keys: string[] = [];
  const slot: number[] = [];
  const at = new Map<string, number>();
  for (let i = 0; i < eN; i++) {
    if (MAP_OF[eCase[i]!] !== m) continue;
    const k = input.toString('utf8', eKS[i], eKE[i]);
    const j = at.get(k);
    if (j === undefined) {
      at.set(k, keys.length);
      keys.push(k);
      slot.push(i);
    } else slot[j] = i;
  }
  const order = keys.map((_, i) => i);
  const indexed = order.filter((i) => isArrayIndex(keys[i]!)).sort((a, b) => Number(keys[a]) - Number(keys[b]));
  const named = order.filter((i) => !isArrayIndex(keys[i]!));
  let rep = 0;
  for (const i of [...indexed, ...named]) {
    putEntry(key, value, slot[i]!, rep);
    rep = 1;
  }
  if (rep === 0) {
    key.nil(1);
    value.nil(1);
  }
}
/** The leaves of the four typed maps (M_STR, M_INT, M_DBL, M_BOOL) as a column batch has them. */
const newMapLeaves = (): MapLeaves[] =>
  (['string', 'long', 'double', 'boolean'] as const).map((type) => ({ key: new Leaf('string', 2, 1), value: new Leaf(type, 3, 1) }));

// ---------------------------------------------------------------------------------------------
// Resource, InstrumentationScope, and the request → resource group → scope group walk

// Resource: service.name (attributes.ts serviceName) and the attribute maps as one row of
// resourceMaps, copied to each item of the resource.
let svcFound = false;
let svcSet = false;
let svcS = 0;
let svcE = 0;
const SERVICE_NAME = ascii('service.name');
const UNKNOWN_SERVICE = ascii('unknown_service');
export const resourceMaps: MapLeaves[] = newMapLeaves();

// InstrumentationScope, merged over occurrences: name, version, and (when the signal keeps them)
// the attribute maps as one row of scopeMaps.
let scNameS = 0;
let scNameE = 0;
let scVerS = 0;
let scVerE = 0;
export const scopeMaps: MapLeaves[] = newMapLeaves();

/** What a signal's transcoder adds to the walk: its items and what it does at the end of a scope group. */
export interface SignalReader {
  /** Reads one item (Span, LogRecord: depth 4) of the current scope group. */
  item(end: number): void;
  /** After the items of a scope group (the constant columns of its rows: see HourBatches). */
  endScope(): void;
  /** Scope attributes kept in scopeMaps (logs), or only validated (traces). */
  keepScopeAttrs: boolean;
}

function entityRef(end: number): void {
  while (pos < end) {
    const t = tag(end);
    if (t === 0x0a || t === 0x12 || t === 0x1a || t === 0x22) str(end);
    else skip(t, end, 0b11110);
  }
}

/** Resource (depth 3), merged over occurrences: attributes into the entry table, service.name. */
function resource(end: number): void {
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x0a: {
        const e = lenDelim(end);
        const s = pos;
        keyValue(e, 4);
        // stringAttribute(): the first key-value named service.name decides, string or not
        if (!svcFound && kE - kS === SERVICE_NAME.length && sameConst(kS, SERVICE_NAME)) {
          svcFound = true;
          if (vCase === V_STR) {
            svcSet = true;
            svcS = vS;
            svcE = vE;
          }
        }
        addAttr(s, e);
        break;
      }
      case 0x10:
        u32(end);
        break;
      case 0x1a: {
        const e = lenDelim(end);
        entityRef(e);
        break;
      }
      default:
        skip(t, end, 0b1110);
    }
  }
}

/** InstrumentationScope (depth 4), merged over occurrences. */
function scope(end: number, keepAttrs: boolean): void {
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x0a:
        str(end);
        scNameS = strS;
        scNameE = strE;
        break;
      case 0x12:
        str(end);
        scVerS = strS;
        scVerE = strE;
        break;
      case 0x1a: {
        const e = lenDelim(end);
        const s = pos;
        keyValue(e, 5);
        if (keepAttrs) addAttr(s, e);
        break;
      }
      case 0x20:
        u32(end);
        break;
      default:
        skip(t, end, 0b11110);
    }
  }
}

/**
 * Whether the scope group whose fields run from pos to `end` holds any item (field 2), by its tags
 * alone. A group that does not scan cleanly counts as holding some: it then takes the full path,
 * which reports what is wrong with it as the rest of the reader does.
 */
function groupHasItems(end: number): boolean {
  try {
    while (pos < end) {
      const t = tag(end);
      if (t === 0x12) return true;
      skipValue(t & 7, end);
    }
    return false;
  } catch {
    return true;
  }
}

function clearMaps(maps: readonly MapLeaves[]): void {
  for (const m of maps) {
    m.key.clear();
    m.value.clear();
  }
}

/**
 * ScopeSpans / ScopeLogs (depth 3: scope 1, items 2, schema_url 3): the scope first (it may follow
 * the items on the wire), then the items.
 */
function scopeGroup(end: number, signal: SignalReader): void {
  const start = pos;
  scNameS = scNameE = scVerS = scVerE = 0;
  clearEntries();
  let items = 0;
  try {
    while (pos < end) {
      const t = tag(end);
      switch (t) {
        case 0x0a: {
          const e = lenDelim(end);
          scope(e, signal.keepScopeAttrs);
          break;
        }
        case 0x12:
          pos = lenDelim(end); // items: second pass
          items++;
          break;
        case 0x1a:
          str(end); // schema_url
          break;
        default:
          skip(t, end, 0b1110);
      }
    }
  } catch (err) {
    failInWireOrder(err, start, end, 0x12, signal.item);
  }
  if (items === 0) return;
  if (signal.keepScopeAttrs) {
    clearMaps(scopeMaps);
    emitMaps(scopeMaps);
  }
  pos = start;
  while (pos < end) {
    const t = tag(end);
    if (t === 0x12) {
      const e = lenDelim(end);
      signal.item(e);
    } else skipValue(t & 7, end);
  }
  signal.endScope();
}

/**
 * ResourceSpans / ResourceLogs (depth 2: resource 1, scope groups 2, schema_url 3): the resource
 * first (it may follow the scope groups), then those.
 */
function resourceGroup(end: number, signal: SignalReader): void {
  const start = pos;
  clearEntries();
  svcFound = svcSet = false;
  let filled = false;
  try {
    while (pos < end) {
      const t = tag(end);
      switch (t) {
        case 0x0a: {
          const e = lenDelim(end);
          resource(e);
          break;
        }
        case 0x12: {
          const e = lenDelim(end); // scope groups: second pass
          filled ||= groupHasItems(e);
          pos = e;
          break;
        }
        case 0x1a:
          str(end); // schema_url
          break;
        default:
          skip(t, end, 0b1110);
      }
    }
  } catch (err) {
    failInWireOrder(err, start, end, 0x12, (e) => scopeGroup(e, signal));
  }
  // A resource without items or attributes has nothing to write: a body of millions of empty
  // resources (or empty scope groups) once cost seconds of the event loop in map work. Attributes
  // are still emitted (that checks their text, as protobuf would) and scope groups still read.
  if (filled || eN > 0) {
    clearMaps(resourceMaps);
    emitMaps(resourceMaps);
  }
  pos = start;
  while (pos < end) {
    const t = tag(end);
    if (t === 0x12) {
      const e = lenDelim(end);
      scopeGroup(e, signal);
    } else skipValue(t & 7, end);
  }
}

/**
 * Reads the Export*ServiceRequest begun with beginRequest() (its resource groups are field 1 in
 * every signal), calling the signal for each item. Call endRequest() afterwards, also when this
 * throws.
 */
function readRequest(signal: SignalReader): void {
  while (pos < len) {
    const t = tag(len);
    if (t === 0x0a) {
      const e = lenDelim(len);
      resourceGroup(e, signal);
    } else skip(t, len, 0b10);
  }
}

/** Scratch buffers grown by a huge request are dropped, so one outlier does not pin memory. */
function shrink(w: Out, size: number): void {
  if (w.b.length > 1 << 20) w.b = Buffer.allocUnsafe(size);
  w.p = 0;
}

/** Batches kept for the next request (most requests span one or two hours). */
const POOL_KEEP = 2;

const newLeafLike = (l: Leaf) => new Leaf(l.type, l.maxDef, l.maxRep);

function resetMaps(maps: MapLeaves[]): void {
  for (const m of maps) {
    if (m.key.capacity + m.value.capacity > REUSE_BYTES) {
      m.key = newLeafLike(m.key);
      m.value = newLeafLike(m.value);
    } else {
      m.key.clear();
      m.value.clear();
    }
  }
}

/** Releases the request and what a huge one grew (after readRequest, in a finally). */
function endRequest(): void {
  buf = EMPTY;
  view = EMPTY_VIEW;
  len = 0;
  pos = 0;
  resetMaps(resourceMaps);
  resetMaps(scopeMaps);
  shrink(tmp, 256);
  if (eCap > 4096) {
    eCap = 0;
    growEntries();
  }
}

// ---------------------------------------------------------------------------------------------
// Output: one column batch per hour

/** floor(t / 3.6e12) of a time below 2^63 ns given as its unsigned 32-bit halves. */
function hourOf(lo: number, hi: number): number {
  // floor(t / 3.6e12) = floor(floor(t / 2^12) / 878906250); t / 2^12 < 2^51 is exact
  const x = hi * 1048576 + (lo >>> 12);
  let hour = Math.floor(x / NS_PER_HOUR_DIV_4096);
  if (hour * NS_PER_HOUR_DIV_4096 > x) hour--;
  else if ((hour + 1) * NS_PER_HOUR_DIV_4096 <= x) hour++;
  return hour;
}

/** Each hour's rows as the WAL record payload (a column batch), and the OTLP partial-success counts. */
export interface ConvertedPayloads {
  byHour: Map<number, HourPayload>;
  accepted: number;
  rejected: number;
  rejectReason: string | undefined;
  refusedBy: RefusalCounts;
}

/** One hour's column batch, with the leaves its transcoder writes. */
export interface HourRows {
  batch: ColumnBatchBuilder;
  /** Rows whose constant columns (service, scope, resource maps, …) are still to be written. */
  run: number;
}

/**
 * A transcoder's output: its rows per hour in batches reused across requests (cleared after each;
 * the i-th hour of a request takes pool[i]), and the counts. The columns that are the same for
 * every item of a scope group are written once per run of rows: in each hour's batch those rows
 * are consecutive, so at the end of the group each of those leaves gets its value once and copies
 * of it (putServiceRun, putScopeRun, putMapsRun), for the hours in `pending`.
 */
export class HourBatches<H extends HourRows> {
  readonly make: () => H;
  readonly pool: H[];
  hours = new Map<number, H>();
  lastHour = -1;
  last: H | undefined = undefined;
  /** The hours with rows whose constant columns are still to be written. */
  readonly pending: H[] = [];
  accepted = 0;
  rejected = 0;
  rejectReason: string | undefined = undefined;
  refusedBy: RefusalCounts = {};
  /** The row times the request's tenant may write (set per request; reset() forgets them). */
  times: AcceptedTimes = AcceptedTimes.ANY;

  constructor(make: () => H) {
    this.make = make;
    this.pool = [make()];
  }

  get(hour: number): H {
    if (hour === this.lastHour) return this.last!;
    let h = this.hours.get(hour);
    if (h === undefined) {
      const i = this.hours.size;
      if (i === this.pool.length) this.pool.push(this.make());
      h = this.pool[i]!;
      this.hours.set(hour, h);
    }
    this.lastHour = hour;
    this.last = h;
    return h;
  }

  /** After a row's own columns are written to h. */
  endRow(h: H): void {
    this.accepted++;
    h.batch.endRow();
    if (h.run++ === 0) this.pending.push(h);
  }

  reject(reason: string, kind: RefusalKind = 'invalid'): void {
    this.rejected++;
    this.rejectReason ??= reason;
    this.refusedBy[kind] = (this.refusedBy[kind] ?? 0) + 1;
  }

  /** Whether a row whose time (of `what`) is the halves lo, hi is within `times`; if not, it is rejected. */
  admits(lo: number, hi: number, what: string): boolean {
    const ns = nsOfHalves(lo, hi);
    if (this.times.admits(ns)) return true;
    this.reject(this.rejectReason ?? this.times.refusal(what, ns), this.times.kindOf(ns));
    return false;
  }

  result(): ConvertedPayloads {
    const byHour = new Map<number, HourPayload>();
    for (const [hour, h] of this.hours) byHour.set(hour, { hour, rows: h.batch.rows, payload: h.batch.finish(payloadBuffers.take) });
    return { byHour, accepted: this.accepted, rejected: this.rejected, rejectReason: this.rejectReason, refusedBy: this.refusedBy };
  }

  /** Clears the batches for the next request (also after a failed one), dropping any a huge request grew. */
  reset(): void {
    for (let i = 0; i < this.hours.size; i++) {
      const h = this.pool[i]!;
      h.batch.clear();
      h.run = 0;
      if (!h.batch.reusable) this.pool[i] = this.make();
    }
    if (this.pool.length > POOL_KEEP) this.pool.length = POOL_KEEP;
    this.hours = new Map();
    this.lastHour = -1;
    this.last = undefined;
    this.pending.length = 0;
    this.times = AcceptedTimes.ANY;
    this.accepted = 0;
    this.rejected = 0;
    this.rejectReason = undefined;
    this.refusedBy = {};
  }
}

/** `count` copies of the string [s, e) of the request. */
function putRun(l: Leaf, s: number, e: number, count: number): void {
  const n0 = l.n;
  const vp0 = l.vp;
  l.utf8(buf, s, e, 0);
  l.repeat(n0, vp0, count);
}

/** `count` copies of the current scope's name and version. */
function putScopeRun(name: Leaf, version: Leaf, count: number): void {
  putRun(name, scNameS, scNameE, count);
  putRun(version, scVerS, scVerE, count);
}

/** `count` copies of the current resource's service_name. */
function putServiceRun(l: Leaf, count: number): void {
  const n0 = l.n;
  const vp0 = l.vp;
  if (svcSet) l.utf8(buf, svcS, svcE, 0);
  else putConstValue(l, UNKNOWN_SERVICE);
  l.repeat(n0, vp0, count);
}

/** `count` copies of the one row of `src` (resourceMaps, scopeMaps) in the maps `dst`. */
function putMapsRun(dst: readonly MapLeaves[], src: readonly MapLeaves[], count: number): void {
  for (let m = 0; m < 4; m++) {
    const d = dst[m]!;
    const r = src[m]!;
    let l = d.key;
    let n0 = l.n;
    let vp0 = l.vp;
    l.append(r.key);
    l.repeat(n0, vp0, count);
    l = d.value;
    n0 = l.n;
    vp0 = l.vp;
    l.append(r.value);
    l.repeat(n0, vp0, count);
  }
}

/**
 * The leaves of a new column batch of `table` by column name, checked against the types the
 * transcoder `who` writes; done() throws unless it bound every raw column, so a table change that
 * a transcoder does not mirror fails when the module loads.
 */
function bindColumns(batch: ColumnBatchBuilder, who: string, table: string) {
  const used = new Set<string>();
  const wrong = (name: string, what: string) => new TypeError(`${who} writes the ${table} column ${name} as ${what}`);
  return {
    prim(name: string, type: Leaf['type']): Leaf {
      const c = batch.column(name);
      if (c.kind !== 'primitive' || c.type !== type) throw wrong(name, `a ${type}`);
      used.add(name);
      return c.leaf;
    },
    /** The four typed maps `<prefix>_str`, `_int`, `_double`, `_bool` (indexed by M_*). */
    maps(prefix: string): MapLeaves[] {
      return (['str', 'int', 'double', 'bool'] as const).map((suffix, m) => {
        const name = `${prefix}_${suffix}`;
        const type = (['string', 'long', 'double', 'boolean'] as const)[m];
        const c = batch.column(name);
        if (c.kind !== 'map' || c.type !== type) throw wrong(name, `a map of ${type}`);
        used.add(name);
        return { key: c.key, value: c.value };
      });
    },
    done(): void {
      const unwritten = batch.columns.filter((c) => !used.has(c.name)).map((c) => c.name);
      if (unwritten.length > 0) throw new TypeError(`${who} does not write the ${table} columns ${unwritten.join(', ')}`);
    },
  };
}

// ---------------------------------------------------------------------------------------------

/**
 * The functions the transcoders use, as one object that they destructure into module constants
 * (`const { next, str, … } = wire;`). Not `export function`: an exported binding is a module
 * cell, and this module's own calls through cells (tag, str, keyValue, … in its inner loops)
 * made the trace transcoder about 7% slower than with these local functions.
 */
export const wire = {
  allZero,
  anyValueInto,
  ascii,
  at,
  attribute,
  beginRequest,
  bindColumns,
  bytes,
  clearEntries,
  emitMaps,
  endRequest,
  failInWireOrder,
  fixed32,
  fixed64,
  fixed64Hi,
  hourOf,
  keyValue,
  lenDelim,
  next,
  putBase64,
  putByte,
  putConst,
  putConstValue,
  putHex,
  putI64,
  putKeyValueJson,
  putMapsRun,
  putPlainJson,
  putScopeRun,
  putServiceRun,
  putStr,
  putU64,
  putUint,
  readRequest,
  seek,
  shrink,
  skip,
  skipBytes,
  skipValue,
  str,
  u32,
};
