/**
 * Thrift compact protocol. `ThriftWriter` writes the types Parquet's metadata uses (bool, i32,
 * i64, binary, list, struct); `readThriftStruct` and `encodeThriftStruct` read any struct into a
 * schema-less tree and write it back byte for byte, so a Parquet footer can be edited field by
 * field (parquet-concat.ts). Hand-written: the few Parquet structures Floe emits and edits do not
 * justify a Thrift runtime and its generated code, and the npm Thrift packages implement the
 * binary protocol for RPC, not compact encoding into a buffer.
 */

const utf8 = new TextEncoder();

const T_BOOL_TRUE = 1;
const T_BOOL_FALSE = 2;
const T_I32 = 5;
const T_I64 = 6;
const T_BYTE = 3;
const T_I16 = 4;
const T_DOUBLE = 7;
const T_BINARY = 8;
const T_LIST = 9;
const T_SET = 10;
const T_MAP = 11;
const T_STRUCT = 12;

export class ThriftWriter {
  #b = new Uint8Array(256);
  #p = 0;
  #last: number[] = [];
  #field = 0;

  #room(n: number): void {
    if (this.#p + n <= this.#b.length) return;
    const b = new Uint8Array(Math.max(this.#b.length * 2, this.#p + n));
    b.set(this.#b.subarray(0, this.#p));
    this.#b = b;
  }

  #byte(v: number): void {
    this.#room(1);
    this.#b[this.#p++] = v;
  }

  #varint(v: number): void {
    this.#room(10);
    while (v >= 0x80) {
      this.#b[this.#p++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.#b[this.#p++] = v;
  }

  #zigzag(v: number): void {
    // Numbers here are below 2^53 in magnitude: zigzag by arithmetic, not 32-bit shifts.
    this.#varint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  #header(id: number, type: number): void {
    const delta = id - this.#field;
    if (delta > 0 && delta <= 15) this.#byte((delta << 4) | type);
    else {
      this.#byte(type);
      this.#zigzag(id);
    }
    this.#field = id;
  }

  i32(id: number, v: number): this {
    this.#header(id, T_I32);
    this.#zigzag(v);
    return this;
  }

  i64(id: number, v: number): this {
    this.#header(id, T_I64);
    this.#zigzag(v);
    return this;
  }

  /** A boolean field: compact Thrift folds the value into the field header. */
  bool(id: number, v: boolean): this {
    this.#header(id, v ? T_BOOL_TRUE : T_BOOL_FALSE);
    return this;
  }

  binary(id: number, bytes: Uint8Array): this {
    this.#header(id, T_BINARY);
    this.#varint(bytes.length);
    this.#room(bytes.length);
    this.#b.set(bytes, this.#p);
    this.#p += bytes.length;
    return this;
  }

  string(id: number, s: string): this {
    return this.binary(id, utf8.encode(s));
  }

  beginStruct(id: number): this {
    this.#header(id, T_STRUCT);
    this.#last.push(this.#field);
    this.#field = 0;
    return this;
  }

  endStruct(): this {
    this.#byte(0);
    this.#field = this.#last.pop() ?? 0;
    return this;
  }

  #listHeader(id: number, size: number, elem: number): void {
    this.#header(id, T_LIST);
    if (size < 15) this.#byte((size << 4) | elem);
    else {
      this.#byte(0xf0 | elem);
      this.#varint(size);
    }
  }

  listI32(id: number, values: readonly number[]): this {
    this.#listHeader(id, values.length, T_I32);
    for (const v of values) this.#zigzag(v);
    return this;
  }

  listString(id: number, values: readonly string[]): this {
    this.#listHeader(id, values.length, T_BINARY);
    for (const s of values) {
      const bytes = utf8.encode(s);
      this.#varint(bytes.length);
      this.#room(bytes.length);
      this.#b.set(bytes, this.#p);
      this.#p += bytes.length;
    }
    return this;
  }

  /** A list of structs: `each` writes one element's fields (its struct is opened and closed here). */
  listStruct<T>(id: number, items: readonly T[], each: (w: ThriftWriter, item: T, index: number) => void): this {
    this.#listHeader(id, items.length, T_STRUCT);
    for (let i = 0; i < items.length; i++) {
      this.#last.push(this.#field);
      this.#field = 0;
      each(this, items[i]!, i);
      this.endStruct();
    }
    return this;
  }

  /** Ends the top-level struct being written (a page header, the file metadata). */
  end(): Uint8Array {
    this.#byte(0);
    return this.#b.subarray(0, this.#p);
  }
}

/**
 * A value as read, typed by its compact type id. Integers of every width are bigints (a zigzag
 * varint may need 64 bits); bools in a struct are `boolean`, a list element's bool is its byte as
 * sent; a double keeps its 8 bytes.
 */
export type ThriftValue = boolean | bigint | Uint8Array | ThriftList | ThriftMap | ThriftStruct;

export interface ThriftField {
  id: number;
  type: number;
  value: ThriftValue;
}

/** A struct's fields in the order they were read. */
export interface ThriftStruct {
  fields: ThriftField[];
}

export interface ThriftList {
  /** T_LIST or T_SET. */
  kind: number;
  elem: number;
  items: ThriftValue[];
}

export interface ThriftMap {
  key: number;
  value: number;
  entries: Array<[ThriftValue, ThriftValue]>;
}

/** Malformed or truncated compact Thrift (a damaged Parquet footer). */
export class ThriftDecodeError extends Error {
  override readonly name = 'ThriftDecodeError';
}

/** Nesting deeper than any Parquet structure: a damaged footer, not a reason to exhaust the stack. */
const MAX_DEPTH = 64;

class Reader {
  readonly b: Uint8Array;
  p: number;
  constructor(b: Uint8Array, start: number) {
    this.b = b;
    this.p = start;
  }

  byte(): number {
    if (this.p >= this.b.length) throw new ThriftDecodeError('compact thrift: truncated');
    return this.b[this.p++]!;
  }

  varint(): bigint {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const x = this.byte();
      v |= BigInt(x & 0x7f) << shift;
      if ((x & 0x80) === 0) return v;
      shift += 7n;
      if (shift > 63n) throw new ThriftDecodeError('compact thrift: varint too long');
    }
  }

  zigzag(): bigint {
    const v = this.varint();
    return (v >> 1n) ^ -(v & 1n);
  }

  bytes(n: number): Uint8Array {
    if (n < 0 || this.p + n > this.b.length) throw new ThriftDecodeError('compact thrift: truncated');
    const out = this.b.subarray(this.p, this.p + n);
    this.p += n;
    return out;
  }

  value(type: number, depth: number): ThriftValue {
    if (depth > MAX_DEPTH) throw new ThriftDecodeError('compact thrift: nested too deeply');
    switch (type) {
      case T_BOOL_TRUE:
      case T_BOOL_FALSE:
        // Only reached for list, set and map elements: a byte each.
        return BigInt(this.byte());
      case T_BYTE:
        return BigInt(this.byte());
      case T_I16:
      case T_I32:
      case T_I64:
        return this.zigzag();
      case T_DOUBLE:
        return this.bytes(8);
      case T_BINARY:
        return this.bytes(Number(this.varint()));
      case T_LIST:
      case T_SET: {
        const h = this.byte();
        const size = h >> 4 === 15 ? Number(this.varint()) : h >> 4;
        const elem = h & 0x0f;
        if (size > this.b.length - this.p) throw new ThriftDecodeError('compact thrift: list longer than its buffer');
        const items: ThriftValue[] = [];
        for (let i = 0; i < size; i++) items.push(this.value(elem, depth + 1));
        return { kind: type, elem, items };
      }
      case T_MAP: {
        const size = Number(this.varint());
        if (size === 0) return { key: 0, value: 0, entries: [] };
        if (size > this.b.length - this.p) throw new ThriftDecodeError('compact thrift: map longer than its buffer');
        const kv = this.byte();
        const entries: Array<[ThriftValue, ThriftValue]> = [];
        for (let i = 0; i < size; i++) entries.push([this.value(kv >> 4, depth + 1), this.value(kv & 0x0f, depth + 1)]);
        return { key: kv >> 4, value: kv & 0x0f, entries };
      }
      case T_STRUCT:
        return this.struct(depth + 1);
      default:
        throw new ThriftDecodeError(`compact thrift: unknown type ${type}`);
    }
  }

  struct(depth: number): ThriftStruct {
    const fields: ThriftField[] = [];
    let last = 0;
    for (;;) {
      const h = this.byte();
      if (h === 0) return { fields };
      const type = h & 0x0f;
      const id = h >> 4 === 0 ? Number(this.zigzag()) : last + (h >> 4);
      last = id;
      const value = type === T_BOOL_TRUE ? true : type === T_BOOL_FALSE ? false : this.value(type, depth);
      fields.push({ id, type, value });
    }
  }
}

/** Reads one struct starting at `start`; `end` is the offset just past it. */
export function readThriftStruct(bytes: Uint8Array, start = 0): { struct: ThriftStruct; end: number } {
  const r = new Reader(bytes, start);
  const struct = r.struct(0);
  return { struct, end: r.p };
}

class Encoder {
  b = new Uint8Array(1024);
  p = 0;

  room(n: number): void {
    if (this.p + n <= this.b.length) return;
    const b = new Uint8Array(Math.max(this.b.length * 2, this.p + n));
    b.set(this.b.subarray(0, this.p));
    this.b = b;
  }

  byte(v: number): void {
    this.room(1);
    this.b[this.p++] = v;
  }

  varint(v: bigint): void {
    this.room(10);
    let x = BigInt.asUintN(64, v);
    while (x >= 0x80n) {
      this.b[this.p++] = Number(x & 0x7fn) | 0x80;
      x >>= 7n;
    }
    this.b[this.p++] = Number(x);
  }

  zigzag(v: bigint): void {
    this.varint((v << 1n) ^ (v >> 63n));
  }

  raw(bytes: Uint8Array): void {
    this.room(bytes.length);
    this.b.set(bytes, this.p);
    this.p += bytes.length;
  }

  value(type: number, v: ThriftValue): void {
    switch (type) {
      case T_BOOL_TRUE:
      case T_BOOL_FALSE:
      case T_BYTE:
        return this.byte(Number(v as bigint) & 0xff);
      case T_I16:
      case T_I32:
      case T_I64:
        return this.zigzag(v as bigint);
      case T_DOUBLE:
        return this.raw(v as Uint8Array);
      case T_BINARY: {
        const bytes = v as Uint8Array;
        this.varint(BigInt(bytes.length));
        return this.raw(bytes);
      }
      case T_LIST:
      case T_SET: {
        const l = v as ThriftList;
        if (l.items.length < 15) this.byte((l.items.length << 4) | l.elem);
        else {
          this.byte(0xf0 | l.elem);
          this.varint(BigInt(l.items.length));
        }
        for (const item of l.items) this.value(l.elem, item);
        return;
      }
      case T_MAP: {
        const m = v as ThriftMap;
        this.varint(BigInt(m.entries.length));
        if (m.entries.length === 0) return;
        this.byte((m.key << 4) | m.value);
        for (const [k, x] of m.entries) {
          this.value(m.key, k);
          this.value(m.value, x);
        }
        return;
      }
      case T_STRUCT:
        return this.struct(v as ThriftStruct);
      default:
        throw new ThriftDecodeError(`compact thrift: unknown type ${type}`);
    }
  }

  struct(s: ThriftStruct): void {
    let last = 0;
    for (const f of s.fields) {
      const type = f.type === T_BOOL_TRUE || f.type === T_BOOL_FALSE ? (f.value === true ? T_BOOL_TRUE : T_BOOL_FALSE) : f.type;
      const delta = f.id - last;
      if (delta > 0 && delta <= 15) this.byte((delta << 4) | type);
      else {
        this.byte(type);
        this.zigzag(BigInt(f.id));
      }
      last = f.id;
      if (type !== T_BOOL_TRUE && type !== T_BOOL_FALSE) this.value(type, f.value);
    }
    this.byte(0);
  }
}

/** A struct as compact Thrift (the inverse of readThriftStruct). */
export function encodeThriftStruct(s: ThriftStruct): Uint8Array {
  const e = new Encoder();
  e.struct(s);
  return e.b.subarray(0, e.p);
}

/** The field `id` of a struct, if present. */
export const thriftField = (s: ThriftStruct, id: number): ThriftField | undefined => s.fields.find((f) => f.id === id);

/** An integer field's value (0n when absent). */
export function thriftInt(s: ThriftStruct, id: number): bigint {
  const v = thriftField(s, id)?.value;
  return typeof v === 'bigint' ? v : 0n;
}
