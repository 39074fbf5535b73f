/**
 * OTLP/protobuf trace export → rows of the traces table, straight from the wire bytes.
 *
 * Why this is hand-written: no well-kept library transcodes OTLP wire bytes into rows, and the
 * general path, `spansToRows(fromBinary(ExportTraceServiceRequestSchema, bytes))`, builds the
 * full protobuf-es object graph of every request (a message object per span, key-value and
 * value, a bigint per timestamp, a Uint8Array per id) only to throw it away after one
 * JSON.stringify per row. Under load that decode, its garbage collection and the stringify
 * dominated the acceptor's CPU profile. This module walks the wire bytes and writes the NDJSON
 * bytes directly into reused buffers; spansToPayloadsFromWire, used by Ingest, allocates one
 * payload per hour and nothing per span. OTLP/JSON bodies keep the protobuf-es path
 * (decodeOtlpJson, then spansToRows).
 *
 * Contract: for every input, `spansToRowsFromWire(bytes)` either returns exactly what
 * `spansToRows(fromBinary(ExportTraceServiceRequestSchema, bytes))` returns (same hours, same
 * lines byte for byte, same counts and first reject reason) or throws an Error. It throws on
 * everything protobuf-es throws on: truncated varints and fields, lengths beyond the buffer,
 * varints over 10 bytes in known fields, illegal tags, wire types 6/7, invalid UTF-8 in any
 * string field (proto3 strings are validated: fromBinary throws on them too, it does not
 * substitute U+FFFD), recursion deeper than 100 messages. It also throws on a few inputs that
 * protobuf-es accepts although they are not valid protobuf, with one of the messages in
 * STRICTER_THAN_PROTOBUF_ES:
 *  - a field that runs past the end of its enclosing message (protobuf-es reads on into the
 *    parent's bytes and resumes the parent there);
 *  - a known field with the wrong wire type (protobuf-es reinterprets the bytes by the field's
 *    type, e.g. a varint as a string length);
 *  - groups (wire types 3 and 4), which OTLP never uses, even well-formed ones in unknown fields;
 *  - an unknown varint field longer than 10 bytes.
 * The first error in wire order is the one reported, as protobuf-es would meet it; the tests
 * check all of this differentially, including on hundreds of thousands of corrupted bodies.
 *
 * Protobuf rules: fields may come in any order and unknown fields are skipped by wire type;
 * scalar fields are last-one-wins; singular message fields that occur more than once are merged
 * (resource, scope, status, a key-value's value); the resource and the scope are applied to their
 * spans wherever they appear, so ResourceSpans and ScopeSpans are read in two passes. The only
 * repeated scalar fields here are strings (EntityRef keys), never packed. Array and key-value-list
 * attribute values are validated here and rendered by protobuf-es (decoding just that key-value),
 * exactly as anyValueText and toJson(KeyValueSchema) do.
 *
 * The row layout is written out by hand below (writeLine, putEntry, event, link): a change to
 * traces-to-rows.ts or attributes.ts must be mirrored here; traces-wire.test.ts fails until it is.
 */
import { isUtf8 } from 'node:buffer';
import { KeyValueSchema, fromBinary, toJson } from '@floe/proto';
import { anyValueText } from './attributes.ts';
import { SPAN_TIME_RANGE, type ConvertedSpans, type HourBatch } from './traces-to-rows.ts';

const ERR_OVERRUN = 'a field runs past the end of its enclosing message';
const ERR_WIRE_TYPE = 'a known field has the wrong wire type';
const ERR_GROUP = 'groups (wire types 3 and 4) are not supported';
const ERR_LONG_VARINT = 'an unknown varint field is longer than 10 bytes';
const ERR_EOF = 'premature end of data';

/** Messages of the errors thrown on inputs that protobuf-es accepts (see the header). */
export const STRICTER_THAN_PROTOBUF_ES: readonly string[] = [ERR_OVERRUN, ERR_WIRE_TYPE, ERR_GROUP, ERR_LONG_VARINT];

/** protobuf-es's default recursion limit: the request is depth 1, a message at depth 101 fails. */
const MAX_DEPTH = 100;
const NS_PER_HOUR_DIV_4096 = 878_906_250; // 3.6e12 / 2^12

// ---------------------------------------------------------------------------------------------
// Output buffers

class Out {
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

/** Bytes that JSON.stringify escapes: 1 (all below 0x20, '"', '\'); 2 marks non-ASCII. */
const CLASS = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) CLASS[c] = 1;
CLASS[0x22] = 1;
CLASS[0x5c] = 1;
for (let c = 0x80; c < 0x100; c++) CLASS[c] = 2;
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

/** A JSON string literal of an input string field (validated, esc = it has bytes to escape). */
function putStr(w: Out, s: number, e: number, esc: boolean): void {
  room(w, strRoom(s, e, esc));
  w.p = rStr(w.b, w.p, s, e, esc);
}

/** A JSON string literal whose content is JSON text in src[s, e) (no raw control characters). */
function putQuotedJson(w: Out, src: Uint8Array, s: number, e: number): void {
  room(w, 2 * (e - s) + 2);
  const b = w.b;
  b[w.p] = 0x22;
  const p = rEscape(b, w.p + 1, src, s, e);
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

/** attributes.ts float() / toJson: finite as a JSON number, NaN and ±Infinity as strings. */
function putDoubleJson(w: Out, v: number): void {
  room(w, 28);
  w.p = rDouble(w.b, w.p, v);
}

// Raw writers for the hot path: (buffer, position, …) → new position, into room the caller has
// reserved (one check per section instead of one per piece; small functions V8 inlines). A JS
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

/** Room a JSON string literal of input [s, e) needs. */
const strRoom = (s: number, e: number, esc: boolean) => (esc ? 6 : 1) * (e - s) + 2;

/** A JSON string literal of an input string field (validated; esc: it has bytes to escape). */
function rStr(b: Uint8Array, p: number, s: number, e: number, esc: boolean): number {
  b[p++] = 0x22;
  if (esc) p = rEscape(b, p, buf, s, e);
  else if (e - s > 48) {
    b.set(buf.subarray(s, e), p);
    p += e - s;
  } else for (let i = s; i < e; i++) b[p++] = buf[i]!;
  b[p++] = 0x22;
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

// ---------------------------------------------------------------------------------------------
// Input

const EMPTY = new Uint8Array(0);
let buf: Uint8Array = EMPTY;
let len = 0;
let pos = 0;
const EMPTY_VIEW: DataView = new DataView(EMPTY.buffer);
let view = EMPTY_VIEW;

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
let strEsc = false;

/** A string field: validated as UTF-8 (proto3; protobuf-es throws too), range into strS/strE. */
function str(end: number): void {
  const e = lenDelim(end);
  const s = pos;
  let cls = 0;
  for (let i = s; i < e; i++) cls |= CLASS[buf[i]!]!;
  if (cls & 2 && !isUtf8(buf.subarray(s, e))) throw new Error('invalid UTF-8 in a string field');
  strS = s;
  strE = e;
  strEsc = (cls & 1) !== 0;
  pos = e;
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

// The last key-value read by keyValue(): its key, whether the value field occurred, key_strindex,
// and the value's final oneof case with its scalar. Arrays and kvlists are only validated.
let kS = 0;
let kE = 0;
let kEsc = false;
let kHasValue = false;
let kIdx = 0;
let vCase = V_NONE;
let vS = 0;
let vE = 0;
let vEsc = false;
let vLo = 0;
let vHi = 0;
let vNum = 0;

function keyValue(end: number, depth: number): void {
  if (depth > MAX_DEPTH) tooDeep();
  kS = kE = 0;
  kEsc = false;
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
        kEsc = strEsc;
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
        vEsc = strEsc;
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
        need(end, 8);
        vNum = view.getFloat64(pos, true);
        pos += 8;
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

function checkArrayValue(end: number, depth: number): void {
  if (depth > MAX_DEPTH) tooDeep();
  while (pos < end) {
    const t = tag(end);
    if (t === 0x0a) {
      const e = lenDelim(end);
      checkAnyValue(e, depth + 1);
    } else skip(t, end, 0b10);
  }
}

function checkKeyValueList(end: number, depth: number): void {
  if (depth > MAX_DEPTH) tooDeep();
  while (pos < end) {
    const t = tag(end);
    if (t === 0x0a) {
      const e = lenDelim(end);
      checkKeyValue(e, depth + 1);
    } else skip(t, end, 0b10);
  }
}

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

// ---------------------------------------------------------------------------------------------
// Typed attribute maps (attributes.ts splitAttributes): the key-values of one attribute list are
// recorded in a table, then each map is written out from it.

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
let eEsc = new Uint8Array(0); // 1: the key needs escaping, 2: the value does
let eNum = new Float64Array(0); // double, bool, string index
/**
 * Per map bit: JSON.stringify of the plain object that splitAttributes builds orders array-index
 * keys first, keeps a repeated key at its first position with its last value, and drops
 * "__proto__" (assigning a primitive to it is a no-op). Maps with such keys take emitMapSlow().
 */
let eOdd = 0;

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
  const f = new Uint8Array(cap);
  f.set(eEsc.subarray(0, cap));
  eEsc = f;
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
  eEsc[i] = (kEsc ? 1 : 0) | (vEsc && vCase === V_STR ? 2 : 0);
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

const TRUE = ascii('true');
const FALSE = ascii('false');
const C_SIDX_TEXT = ascii('"{\\"stringValueStrindex\\":');
const C_SIDX_TEXT_END = ascii('}"');

/** A signed 64-bit integer (int32 bit patterns) as attributes.ts int64() writes it (≤ 22 bytes). */
function rI64Json(b: Uint8Array, p: number, lo: number, hi: number): number {
  const l = lo >>> 0;
  if (hi >= 0 ? hi < 0x200000 : hi > -0x200000 || (hi === -0x200000 && l !== 0)) {
    const v = hi * 4294967296 + l;
    if (v >= 0) return rUint(b, p, v);
    b[p++] = 0x2d;
    return rUint(b, p, -v);
  }
  b[p++] = 0x22;
  if (hi < 0) {
    b[p++] = 0x2d;
    const nlo = (~lo + 1) >>> 0;
    p = rU64(b, p, nlo, nlo === 0 ? (~hi + 1) >>> 0 : ~hi >>> 0);
  } else p = rU64(b, p, l, hi);
  b[p++] = 0x22;
  return p;
}

/** A double as attributes.ts float() / toJson write it (≤ 26 bytes). */
function rDouble(b: Uint8Array, p: number, v: number): number {
  const t = String(v);
  const fin = Number.isFinite(v);
  if (!fin) b[p++] = 0x22;
  for (let i = 0; i < t.length; i++) b[p++] = t.charCodeAt(i);
  if (!fin) b[p++] = 0x22;
  return p;
}

/** `"key":value` of entry i, after a comma unless it is the first. */
function putEntry(w: Out, i: number, first: boolean): void {
  const c = eCase[i]!;
  const esc = eEsc[i]!;
  const ks = eKS[i]!;
  const ke = eKE[i]!;
  const keyRoom = strRoom(ks, ke, (esc & 1) !== 0) + 2;
  if (c === V_STR) room(w, keyRoom + strRoom(eS[i]!, eE[i]!, (esc & 2) !== 0));
  else room(w, keyRoom + 40);
  const b = w.b;
  let p = w.p;
  if (!first) b[p++] = 0x2c;
  p = rStr(b, p, ks, ke, (esc & 1) !== 0);
  b[p++] = 0x3a;
  switch (c) {
    case V_STR:
      w.p = rStr(b, p, eS[i]!, eE[i]!, (esc & 2) !== 0);
      return;
    case V_INT:
      w.p = rI64Json(b, p, eS[i]!, eE[i]!);
      return;
    case V_BOOL:
      w.p = rConst(b, p, eNum[i] ? TRUE : FALSE);
      return;
    case V_DBL:
      w.p = rDouble(b, p, eNum[i]!);
      return;
    case V_SIDX:
      p = rConst(b, p, C_SIDX_TEXT);
      if (eNum[i]! < 0) b[p++] = 0x2d;
      p = rUint(b, p, Math.abs(eNum[i]!));
      w.p = rConst(b, p, C_SIDX_TEXT_END);
      return;
    case V_BYTES:
      w.p = p;
      putByte(w, 0x22);
      putBase64(w, eS[i]!, eE[i]!);
      putByte(w, 0x22);
      return;
    default:
      // arrays and kvlists: anyValueText(), from protobuf-es's decoding of this key-value
      w.p = p;
      putJsString(w, JSON.stringify(anyValueText(decodeKeyValue(eS[i]!, eE[i]!).value)));
  }
}

/** The entries of map m (between its braces). */
function emitMap(w: Out, m: number): void {
  if ((eOdd & (1 << m)) !== 0) {
    emitMapSlow(w, m);
    return;
  }
  let first = true;
  for (let i = 0; i < eN; i++) {
    if (MAP_OF[eCase[i]!] !== m) continue;
    putEntry(w, i, first);
    first = false;
  }
}

const isArrayIndex = (k: string) => /^(?:0|[1-9][0-9]{0,9})$/.test(k) && Number(k) < 4294967295;

function emitMapSlow(w: Out, m: number): void {
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
  let first = true;
  for (const i of [...indexed, ...named]) {
    putEntry(w, slot[i]!, first);
    first = false;
  }
}

// ---------------------------------------------------------------------------------------------
// toJson(KeyValueSchema) for event and link attributes

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

function putKeyValueJson(w: Out, s: number, e: number): void {
  if (vCase === V_ARR || vCase === V_KVL) {
    putJsString(w, JSON.stringify(toJson(KeyValueSchema, decodeKeyValue(s, e))));
    return;
  }
  putByte(w, 0x7b);
  let first = true;
  if (kE > kS) {
    putConst(w, C_KEY);
    putStr(w, kS, kE, kEsc);
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
        putStr(w, vS, vE, vEsc);
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

// ---------------------------------------------------------------------------------------------
// Messages

const ev = new Out(4096); // events_json of the current span (unescaped JSON text)
const lk = new Out(4096); // links_json of the current span
const line = new Out(16384);
const frag = new Out(4096); // builds the two fragments below
/** '},"resource_attr_str":{…},…,"resource_attr_bool":{…},"events_json":' of the current resource. */
let resFrag: Uint8Array = new Uint8Array(0);
/** ',"service_name":…,"scope_name":…,"scope_version":…,"flags":' of the current scope. */
let scopeFrag: Uint8Array = new Uint8Array(0);
let evN = 0;
let lkN = 0;

let byHour = new Map<number, HourBatch>();
interface OutBatch {
  hour: number;
  rows: number;
  out: Out;
}
/** Set by spansToPayloadsFromWire: lines go straight into one buffer per hour. */
let payloads: Map<number, OutBatch> | undefined;
const hourOuts: Out[] = [];
let accepted = 0;
let rejected = 0;
let rejectReason: string | undefined;

let svcFound = false;
let svcSet = false;
let svcS = 0;
let svcE = 0;
let svcEsc = false;
const SERVICE_NAME = ascii('service.name');

const C_EV_OPEN = ascii('{"timeUnixNano":"');
const C_EV_NAME = ascii('","name":');
const C_ATTRS = ascii(',"attributes":[');
const C_EV_DROPPED = ascii('],"droppedAttributesCount":');
const C_LK_OPEN = ascii('{"traceId":"');
const C_LK_SPAN = ascii('","spanId":"');
const C_LK_STATE = ascii('","traceState":');
const C_LK_FLAGS = ascii('],"flags":');
const C_CLOSE_ARR_OBJ = ascii(']}');

/** Span.Event (depth 5) → one element of events_json. */
function event(end: number): void {
  const start = pos;
  let tLo = 0;
  let tHi = 0;
  let nS = 0;
  let nE = 0;
  let nEsc = false;
  let dropped = 0;
  try {
    while (pos < end) {
      const t = tag(end);
      switch (t) {
        case 0x09:
          need(end, 8);
          tLo = fixedAt(pos);
          tHi = fixedAt(pos + 4);
          pos += 8;
          break;
        case 0x12:
          str(end);
          nS = strS;
          nE = strE;
          nEsc = strEsc;
          break;
        case 0x1a:
          pos = lenDelim(end); // attributes: second pass
          break;
        case 0x20:
          dropped = u32(end);
          break;
        default:
          skip(t, end, 0b11110);
      }
    }
  } catch (err) {
    failInWireOrder(err, start, end, 0x1a, eventAttr);
  }
  const w = ev;
  putByte(w, evN++ === 0 ? 0x5b : 0x2c);
  putConst(w, C_EV_OPEN);
  putU64(w, tLo, tHi);
  putConst(w, C_EV_NAME);
  putStr(w, nS, nE, nEsc);
  putConst(w, C_ATTRS);
  pos = start;
  let n = 0;
  while (pos < end) {
    const t = tag(end);
    if (t === 0x1a) {
      const e = lenDelim(end);
      if (n++ > 0) putByte(w, 0x2c);
      eventAttr(e);
    } else skipValue(t & 7, end);
  }
  if (dropped !== 0) {
    putConst(w, C_EV_DROPPED);
    putUint(w, dropped);
    putByte(w, 0x7d);
  } else putConst(w, C_CLOSE_ARR_OBJ);
}

function eventAttr(end: number): void {
  const s = pos;
  keyValue(end, 6);
  putKeyValueJson(ev, s, end);
}

function linkAttr(end: number): void {
  const s = pos;
  keyValue(end, 6);
  putKeyValueJson(lk, s, end);
}

/** Span.Link (depth 5) → one element of links_json. */
function link(end: number): void {
  const start = pos;
  let trS = 0;
  let trE = 0;
  let spS = 0;
  let spE = 0;
  let tsS = 0;
  let tsE = 0;
  let tsEsc = false;
  let flags = 0;
  try {
    while (pos < end) {
      const t = tag(end);
      switch (t) {
        case 0x0a:
          trE = lenDelim(end);
          trS = pos;
          pos = trE;
          break;
        case 0x12:
          spE = lenDelim(end);
          spS = pos;
          pos = spE;
          break;
        case 0x1a:
          str(end);
          tsS = strS;
          tsE = strE;
          tsEsc = strEsc;
          break;
        case 0x22:
          pos = lenDelim(end); // attributes: second pass
          break;
        case 0x28:
          u32(end); // dropped_attributes_count: not kept
          break;
        case 0x35:
          need(end, 4);
          flags = fixedAt(pos);
          pos += 4;
          break;
        default:
          skip(t, end, 0b1111110);
      }
    }
  } catch (err) {
    failInWireOrder(err, start, end, 0x22, linkAttr);
  }
  const w = lk;
  putByte(w, lkN++ === 0 ? 0x5b : 0x2c);
  putConst(w, C_LK_OPEN);
  putHex(w, trS, trE);
  putConst(w, C_LK_SPAN);
  putHex(w, spS, spE);
  putConst(w, C_LK_STATE);
  putStr(w, tsS, tsE, tsEsc);
  putConst(w, C_ATTRS);
  pos = start;
  let n = 0;
  while (pos < end) {
    const t = tag(end);
    if (t === 0x22) {
      const e = lenDelim(end);
      if (n++ > 0) putByte(w, 0x2c);
      linkAttr(e);
    } else skipValue(t & 7, end);
  }
  if (flags !== 0) {
    putConst(w, C_LK_FLAGS);
    putUint(w, flags);
    putByte(w, 0x7d);
  } else putConst(w, C_CLOSE_ARR_OBJ);
}

// Span.status, merged over occurrences
let stMsgS = 0;
let stMsgE = 0;
let stMsgEsc = false;
let stCode = 0;

function status(end: number): void {
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x12:
        str(end);
        stMsgS = strS;
        stMsgE = strE;
        stMsgEsc = strEsc;
        break;
      case 0x18:
        stCode = u32(end) | 0;
        break;
      default:
        skip(t, end, 0b1100);
    }
  }
}

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'].map((k) => ascii(`,"kind":"${k}","start_time_unix_nano":"`));
const STATUS = ['unset', 'ok', 'error'].map((c) => ascii(`","status_code":"${c}","status_message":`));

const C_TRACE_ID = ascii('{"trace_id":"');
const C_SPAN_ID = ascii('","span_id":"');
const C_PARENT = ascii('","parent_span_id":"');
const C_TRACE_STATE = ascii('","trace_state":');
const C_NAME = ascii(',"name":');
const C_END = ascii('","end_time_unix_nano":"');
const C_DURATION = ascii('","duration_nano":"');
const C_SPAN_STR = ascii(',"span_attr_str":{');
const C_SPAN_INT = ascii('},"span_attr_int":{');
const C_SPAN_DBL = ascii('},"span_attr_double":{');
const C_SPAN_BOOL = ascii('},"span_attr_bool":{');
const C_RES_STR = ascii('},"resource_attr_str":{');
const C_RES_INT = ascii('},"resource_attr_int":{');
const C_RES_DBL = ascii('},"resource_attr_double":{');
const C_RES_BOOL = ascii('},"resource_attr_bool":{');
const C_RES_END = ascii('},"events_json":');
const C_LINKS = ascii(',"links_json":');
const C_NO_EVENTS_LINKS = ascii('null,"links_json":null,"dropped_counts":');
const C_DROPPED = ascii(',"dropped_counts":');
const C_DROPPED_A = ascii('"{\\"attributes\\":');
const C_DROPPED_E = ascii(',\\"events\\":');
const C_DROPPED_L = ascii(',\\"links\\":');
const C_DROPPED_END = ascii('}"}');
const C_NULL = ascii('null');
const C_NULL_END = ascii('null}');
const C_SERVICE = ascii(',"service_name":');
const C_UNKNOWN_SERVICE = ascii('"unknown_service"');
const C_SCOPE_NAME = ascii(',"scope_name":');
const C_SCOPE_VERSION = ascii(',"scope_version":');
const C_FLAGS = ascii(',"flags":');

const R_TRACE_ID = 'span has an invalid trace_id (must be 16 non-zero bytes)';
const R_SPAN_ID = 'span has an invalid span_id (must be 8 non-zero bytes)';
const R_PARENT = 'span has an invalid parent_span_id (must be empty or 8 bytes)';
const R_START = 'span has no start_time_unix_nano';
const R_RANGE = SPAN_TIME_RANGE;

function allZero(s: number, e: number): boolean {
  for (let i = s; i < e; i++) if (buf[i] !== 0) return false;
  return true;
}

// The span being converted (module state, so that writeLine() is a function of its own).
let trS = 0;
let trE = 0;
let spS = 0;
let spE = 0;
let paS = 0;
let paE = 0;
let tsS = 0;
let tsE = 0;
let tsEsc = false;
let nmS = 0;
let nmE = 0;
let nmEsc = false;
let kind = 0;
let stLo = 0;
let stHi = 0;
let enLo = 0;
let enHi = 0;
let dAttrs = 0;
let dEvents = 0;
let dLinks = 0;
let flags = 0;

/** Span (depth 4) → one NDJSON line, or a rejection. */
function span(end: number): void {
  trS = trE = spS = spE = paS = paE = tsS = tsE = nmS = nmE = 0;
  tsEsc = nmEsc = false;
  kind = stLo = stHi = enLo = enHi = dAttrs = dEvents = dLinks = flags = 0;
  stMsgS = stMsgE = 0;
  stMsgEsc = false;
  stCode = 0;
  eN = 0;
  eOdd = 0;
  ev.p = 0;
  evN = 0;
  lk.p = 0;
  lkN = 0;
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x0a:
        trE = lenDelim(end);
        trS = pos;
        pos = trE;
        break;
      case 0x12:
        spE = lenDelim(end);
        spS = pos;
        pos = spE;
        break;
      case 0x1a:
        str(end);
        tsS = strS;
        tsE = strE;
        tsEsc = strEsc;
        break;
      case 0x22:
        paE = lenDelim(end);
        paS = pos;
        pos = paE;
        break;
      case 0x2a:
        str(end);
        nmS = strS;
        nmE = strE;
        nmEsc = strEsc;
        break;
      case 0x30:
        kind = u32(end) | 0;
        break;
      case 0x39:
        need(end, 8);
        stLo = fixedAt(pos);
        stHi = fixedAt(pos + 4);
        pos += 8;
        break;
      case 0x41:
        need(end, 8);
        enLo = fixedAt(pos);
        enHi = fixedAt(pos + 4);
        pos += 8;
        break;
      case 0x4a: {
        const e = lenDelim(end);
        const s = pos;
        keyValue(e, 5);
        addAttr(s, e);
        break;
      }
      case 0x50:
        dAttrs = u32(end);
        break;
      case 0x5a: {
        const e = lenDelim(end);
        event(e);
        break;
      }
      case 0x60:
        dEvents = u32(end);
        break;
      case 0x6a: {
        const e = lenDelim(end);
        link(e);
        break;
      }
      case 0x70:
        dLinks = u32(end);
        break;
      case 0x7a: {
        const e = lenDelim(end);
        status(e);
        break;
      }
      case 0x85: // field 16, fixed32
        need(end, 4);
        flags = fixedAt(pos);
        pos += 4;
        break;
      default:
        skip(t, end, 0x1fffe);
    }
  }

  const reason =
    trE - trS !== 16 || allZero(trS, trE)
      ? R_TRACE_ID
      : spE - spS !== 8 || allZero(spS, spE)
        ? R_SPAN_ID
        : paE - paS !== 0 && paE - paS !== 8
          ? R_PARENT
          : stLo === 0 && stHi === 0
            ? R_START
            : stHi >= 0x80000000 || enHi >= 0x80000000
              ? R_RANGE
              : undefined;
  if (reason !== undefined) {
    rejected++;
    rejectReason ??= reason;
    return;
  }
  if (!(enHi > stHi || (enHi === stHi && enLo >= stLo))) {
    enLo = stLo;
    enHi = stHi;
  }
  // floor(start / 3.6e12) = floor(floor(start / 2^12) / 878906250); start / 2^12 < 2^52 is exact
  const x = stHi * 1048576 + (stLo >>> 12);
  let hour = Math.floor(x / NS_PER_HOUR_DIV_4096);
  if (hour * NS_PER_HOUR_DIV_4096 > x) hour--;
  else if ((hour + 1) * NS_PER_HOUR_DIV_4096 <= x) hour++;
  accepted++;

  if (payloads !== undefined) {
    let batch = payloads.get(hour);
    if (!batch) {
      // scratch buffers reused across requests; the payloads are copied out at the end
      const i = payloads.size;
      if (i === hourOuts.length) hourOuts.push(new Out(65536));
      const out = hourOuts[i]!;
      out.p = 0;
      payloads.set(hour, (batch = { hour, rows: 0, out }));
    }
    writeLine(batch.out);
    putByte(batch.out, 0x0a);
    batch.rows++;
    return;
  }
  line.p = 0;
  writeLine(line);
  let batch = byHour.get(hour);
  if (!batch) byHour.set(hour, (batch = { hour, rows: 0, lines: [] }));
  batch.lines.push(line.b.toString('utf8', 0, line.p));
  batch.rows++;
}

/** The row of the current span (JSON.stringify(row) of spansToRows), appended to w. */
function writeLine(w: Out): void {
  let duLo = enLo - stLo;
  let duHi = enHi - stHi;
  if (duLo < 0) {
    duLo += 4294967296;
    duHi--;
  }
  room(w, 480 + 2 * (trE - trS + spE - spS + paE - paS) + strRoom(tsS, tsE, tsEsc) + strRoom(nmS, nmE, nmEsc) + strRoom(stMsgS, stMsgE, stMsgEsc) + scopeFrag.length);
  const b = w.b;
  let p = w.p;
  p = rConst(b, p, C_TRACE_ID);
  p = rHex(b, p, trS, trE);
  p = rConst(b, p, C_SPAN_ID);
  p = rHex(b, p, spS, spE);
  p = rConst(b, p, C_PARENT);
  p = rHex(b, p, paS, paE);
  p = rConst(b, p, C_TRACE_STATE);
  p = rStr(b, p, tsS, tsE, tsEsc);
  p = rConst(b, p, C_NAME);
  p = rStr(b, p, nmS, nmE, nmEsc);
  p = rConst(b, p, KINDS[kind] ?? KINDS[0]!);
  p = rU64(b, p, stLo, stHi);
  p = rConst(b, p, C_END);
  p = rU64(b, p, enLo, enHi);
  p = rConst(b, p, C_DURATION);
  p = rU64(b, p, duLo, duHi);
  p = rConst(b, p, STATUS[stCode] ?? STATUS[0]!);
  p = rStr(b, p, stMsgS, stMsgE, stMsgEsc);
  p = rConst(b, p, scopeFrag);
  p = rUint(b, p, flags);
  w.p = p;
  putConst(w, C_SPAN_STR);
  emitMap(w, M_STR);
  putConst(w, C_SPAN_INT);
  emitMap(w, M_INT);
  putConst(w, C_SPAN_DBL);
  emitMap(w, M_DBL);
  putConst(w, C_SPAN_BOOL);
  emitMap(w, M_BOOL);
  putConst(w, resFrag);
  if (evN === 0 && lkN === 0) putConst(w, C_NO_EVENTS_LINKS);
  else {
    if (evN > 0) {
      putByte(ev, 0x5d);
      putQuotedJson(w, ev.b, 0, ev.p);
    } else putConst(w, C_NULL);
    putConst(w, C_LINKS);
    if (lkN > 0) {
      putByte(lk, 0x5d);
      putQuotedJson(w, lk.b, 0, lk.p);
    } else putConst(w, C_NULL);
    putConst(w, C_DROPPED);
  }
  if (dAttrs !== 0 || dEvents !== 0 || dLinks !== 0) {
    putConst(w, C_DROPPED_A);
    putUint(w, dAttrs);
    putConst(w, C_DROPPED_E);
    putUint(w, dEvents);
    putConst(w, C_DROPPED_L);
    putUint(w, dLinks);
    putConst(w, C_DROPPED_END);
  } else putConst(w, C_NULL_END);
}

/** InstrumentationScope (depth 4), merged over occurrences: name and version into scope*. */
let scNameS = 0;
let scNameE = 0;
let scNameEsc = false;
let scVerS = 0;
let scVerE = 0;
let scVerEsc = false;

function scope(end: number): void {
  while (pos < end) {
    const t = tag(end);
    switch (t) {
      case 0x0a:
        str(end);
        scNameS = strS;
        scNameE = strE;
        scNameEsc = strEsc;
        break;
      case 0x12:
        str(end);
        scVerS = strS;
        scVerE = strE;
        scVerEsc = strEsc;
        break;
      case 0x1a: {
        const e = lenDelim(end);
        keyValue(e, 5); // scope attributes are not kept, only validated
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

/** ScopeSpans (depth 3): the scope first (it may follow the spans on the wire), then the spans. */
function scopeSpans(end: number): void {
  const start = pos;
  scNameS = scNameE = scVerS = scVerE = 0;
  scNameEsc = scVerEsc = false;
  try {
    while (pos < end) {
      const t = tag(end);
      switch (t) {
        case 0x0a: {
          const e = lenDelim(end);
          scope(e);
          break;
        }
        case 0x12:
          pos = lenDelim(end); // spans: second pass
          break;
        case 0x1a:
          str(end); // schema_url
          break;
        default:
          skip(t, end, 0b1110);
      }
    }
  } catch (err) {
    failInWireOrder(err, start, end, 0x12, span);
  }
  const f = frag;
  f.p = 0;
  putConst(f, C_SERVICE);
  if (svcSet) putStr(f, svcS, svcE, svcEsc);
  else putConst(f, C_UNKNOWN_SERVICE);
  putConst(f, C_SCOPE_NAME);
  putStr(f, scNameS, scNameE, scNameEsc);
  putConst(f, C_SCOPE_VERSION);
  putStr(f, scVerS, scVerE, scVerEsc);
  putConst(f, C_FLAGS);
  scopeFrag = new Uint8Array(f.b.subarray(0, f.p)); // a copy (Buffer#slice is a view)
  pos = start;
  while (pos < end) {
    const t = tag(end);
    if (t === 0x12) {
      const e = lenDelim(end);
      span(e);
    } else skipValue(t & 7, end);
  }
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
            svcEsc = vEsc;
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

/** ResourceSpans (depth 2): the resource first (it may follow the scope spans), then those. */
function resourceSpans(end: number): void {
  const start = pos;
  eN = 0;
  eOdd = 0;
  svcFound = svcSet = false;
  try {
    while (pos < end) {
      const t = tag(end);
      switch (t) {
        case 0x0a: {
          const e = lenDelim(end);
          resource(e);
          break;
        }
        case 0x12:
          pos = lenDelim(end); // scope_spans: second pass
          break;
        case 0x1a:
          str(end); // schema_url
          break;
        default:
          skip(t, end, 0b1110);
      }
    }
  } catch (err) {
    failInWireOrder(err, start, end, 0x12, scopeSpans);
  }
  const f = frag;
  f.p = 0;
  putConst(f, C_RES_STR);
  emitMap(f, M_STR);
  putConst(f, C_RES_INT);
  emitMap(f, M_INT);
  putConst(f, C_RES_DBL);
  emitMap(f, M_DBL);
  putConst(f, C_RES_BOOL);
  emitMap(f, M_BOOL);
  putConst(f, C_RES_END);
  resFrag = new Uint8Array(f.b.subarray(0, f.p)); // a copy
  pos = start;
  while (pos < end) {
    const t = tag(end);
    if (t === 0x12) {
      const e = lenDelim(end);
      scopeSpans(e);
    } else skipValue(t & 7, end);
  }
}

/** Scratch buffers grown by a huge request are dropped, so one outlier does not pin memory. */
function shrink(w: Out, size: number): void {
  if (w.b.length > 1 << 20) w.b = Buffer.allocUnsafe(size);
  w.p = 0;
}

/** One hour's rows as the WAL record payload: NDJSON lines, each ending in a newline. */
export interface HourPayload {
  hour: number;
  rows: number;
  payload: Buffer;
}

export interface ConvertedPayloads {
  byHour: Map<number, HourPayload>;
  accepted: number;
  rejected: number;
  rejectReason: string | undefined;
}

function convert(bytes: Uint8Array): void {
  buf = bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  len = bytes.length;
  pos = 0;
  view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  accepted = 0;
  rejected = 0;
  rejectReason = undefined;
  try {
    while (pos < len) {
      const t = tag(len);
      if (t === 0x0a) {
        const e = lenDelim(len);
        resourceSpans(e);
      } else skip(t, len, 0b10);
    }
  } finally {
    buf = EMPTY;
    view = EMPTY_VIEW;
    shrink(line, 16384);
    shrink(ev, 4096);
    shrink(lk, 4096);
    shrink(frag, 4096);
    if (eCap > 4096) {
      eCap = 0;
      growEntries();
    }
    resFrag = scopeFrag = EMPTY;
  }
}

/**
 * Converts an ExportTraceServiceRequest in protobuf wire format into rows, exactly as
 * `spansToRows(fromBinary(ExportTraceServiceRequestSchema, bytes))` does. Throws an Error on
 * malformed input (see the header for the cases stricter than protobuf-es).
 */
export function spansToRowsFromWire(bytes: Uint8Array): ConvertedSpans {
  byHour = new Map();
  payloads = undefined;
  try {
    convert(bytes);
    return { byHour, accepted, rejected, rejectReason };
  } finally {
    byHour = new Map();
  }
}

/**
 * The same conversion, with each hour's lines already joined into the WAL record payload
 * (`${lines.join('\n')}\n` as UTF-8): what Ingest appends, without a string per line to encode again.
 */
export function spansToPayloadsFromWire(bytes: Uint8Array): ConvertedPayloads {
  const out = new Map<number, OutBatch>();
  payloads = out;
  try {
    convert(bytes);
    const result = new Map<number, HourPayload>();
    for (const [hour, b] of out) {
      const payload = Buffer.allocUnsafe(b.out.p);
      b.out.b.copy(payload, 0, 0, b.out.p);
      result.set(hour, { hour, rows: b.rows, payload });
    }
    return { byHour: result, accepted, rejected, rejectReason };
  } finally {
    payloads = undefined;
    for (const w of hourOuts) shrink(w, 65536);
    if (hourOuts.length > 4) hourOuts.length = 4;
  }
}
