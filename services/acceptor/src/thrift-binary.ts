import { FloeError } from '@floe/errors';

/**
 * A small decoder of the Thrift binary protocol (TBinaryProtocol, as a TSerializer writes one
 * struct: no message envelope), for the Jaeger thrift_http ingest (jaeger.ts). It returns a
 * struct's fields keyed by field id, with the wire type of each, and leaves the meaning to the
 * caller — no code generated from an IDL.
 *
 * Why not a library: no maintained npm package decodes binary-protocol structs without code
 * generation. Apache's `thrift` decodes structs only through code the thrift compiler generates
 * (its protocol classes are RPC plumbing, with ws among its dependencies), and `thriftrw`, which
 * reads an IDL at run time (jaeger-client encodes with it), is no longer maintained.
 *
 * Bounded for hostile input: every length and element count is checked against the bytes left
 * before anything is read or allocated (an element takes at least one byte, so the work is linear
 * in the body), nesting is capped at MAX_DEPTH, unknown type ids and trailing bytes are refused.
 * Every failure is a FloeError bad_data (400) naming the byte offset; nothing here can hang or
 * throw an unexpected error.
 */

/** Thrift's wire type ids. */
export const TType = {
  STOP: 0,
  BOOL: 2,
  BYTE: 3,
  DOUBLE: 4,
  I16: 6,
  I32: 8,
  I64: 10,
  STRING: 11,
  STRUCT: 12,
  MAP: 13,
  SET: 14,
  LIST: 15,
  UUID: 16,
} as const;
export type TTypeId = (typeof TType)[Exclude<keyof typeof TType, 'STOP'>];

const TYPE_NAMES: Record<number, string> = { 2: 'bool', 3: 'byte', 4: 'double', 6: 'i16', 8: 'i32', 10: 'i64', 11: 'string', 12: 'struct', 13: 'map', 14: 'set', 15: 'list', 16: 'uuid' };
export const typeName = (t: number): string => TYPE_NAMES[t] ?? `type ${t}`;

/** The fewest bytes a value of each type takes: lists are checked against it before allocating. */
const MIN_SIZE: Record<number, number> = { 2: 1, 3: 1, 4: 8, 6: 2, 8: 4, 10: 8, 11: 4, 12: 1, 13: 6, 14: 5, 15: 5, 16: 16 };

/** Nesting of structs and containers; Apache Thrift's default recursion limit. */
export const MAX_DEPTH = 64;

/**
 * A decoded value: bool → boolean; byte, i16, i32, double → number; i64 → bigint (signed);
 * string/binary → the bytes (a view of the body; the caller decides whether they are UTF-8);
 * uuid → its 16 bytes; struct, list/set and map as below.
 */
export type ThriftValue = boolean | number | bigint | Uint8Array | ThriftStruct | ThriftList | ThriftMap;
export interface ThriftField {
  type: TTypeId;
  value: ThriftValue;
}
/** A struct's fields by id (the last one wins when an id repeats, as generated readers do). */
export type ThriftStruct = Map<number, ThriftField>;
export interface ThriftList {
  kind: 'list' | 'set';
  elemType: TTypeId;
  items: ThriftValue[];
}
export interface ThriftMap {
  kind: 'map';
  keyType: TTypeId;
  valueType: TTypeId;
  entries: Array<[ThriftValue, ThriftValue]>;
}

const bad = (message: string) => new FloeError('bad_data', `body is not valid Thrift binary protocol: ${message}`, { code: 'FLOE_ERR_INGEST_DECODE' });

/** The struct that `body` holds, all of it. */
export function decodeThriftStruct(body: Uint8Array): ThriftStruct {
  const r = new Reader(body);
  const s = r.struct(1);
  if (r.left() !== 0) throw bad(`${r.left()} bytes after the end of the struct at byte ${r.pos}`);
  return s;
}

class Reader {
  pos = 0;
  private readonly buf: Uint8Array;
  private readonly view: DataView;
  constructor(buf: Uint8Array) {
    this.buf = buf;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  left(): number {
    return this.buf.length - this.pos;
  }

  private need(n: number, what: string): number {
    if (n > this.left()) throw bad(`${what} at byte ${this.pos} needs ${n} bytes, ${this.left()} left`);
    const at = this.pos;
    this.pos += n;
    return at;
  }

  private type(t: number, what: string): TTypeId {
    if (MIN_SIZE[t] === undefined) throw bad(`unknown type id ${t} of ${what} at byte ${this.pos - 1}`);
    return t as TTypeId;
  }

  private size(what: string, elemBytes: number): number {
    const at = this.pos;
    const n = this.view.getInt32(this.need(4, `${what} size`));
    if (n < 0) throw bad(`negative ${what} size ${n} at byte ${at}`);
    // Checked before allocating: a count the bytes left cannot hold is refused at once.
    if (n * elemBytes > this.left()) throw bad(`${what} of ${n} at byte ${at} needs at least ${n * elemBytes} bytes, ${this.left()} left`);
    return n;
  }

  struct(depth: number): ThriftStruct {
    if (depth > MAX_DEPTH) throw bad(`nested deeper than ${MAX_DEPTH} at byte ${this.pos}`);
    const fields: ThriftStruct = new Map();
    for (;;) {
      const t = this.buf[this.need(1, 'field type')]!;
      if (t === TType.STOP) return fields;
      const type = this.type(t, 'a field');
      const id = this.view.getInt16(this.need(2, 'field id'));
      fields.set(id, { type, value: this.value(type, depth) });
    }
  }

  value(type: TTypeId, depth: number): ThriftValue {
    switch (type) {
      case TType.BOOL:
        return this.buf[this.need(1, 'bool')] === 1;
      case TType.BYTE:
        return this.view.getInt8(this.need(1, 'byte'));
      case TType.DOUBLE:
        return this.view.getFloat64(this.need(8, 'double'));
      case TType.I16:
        return this.view.getInt16(this.need(2, 'i16'));
      case TType.I32:
        return this.view.getInt32(this.need(4, 'i32'));
      case TType.I64:
        return this.view.getBigInt64(this.need(8, 'i64'));
      case TType.STRING: {
        const n = this.size('string', 1);
        const at = this.need(n, 'string');
        return this.buf.subarray(at, at + n);
      }
      case TType.UUID: {
        const at = this.need(16, 'uuid');
        return this.buf.subarray(at, at + 16);
      }
      case TType.STRUCT:
        return this.struct(depth + 1);
      case TType.MAP: {
        if (depth + 1 > MAX_DEPTH) throw bad(`nested deeper than ${MAX_DEPTH} at byte ${this.pos}`);
        const keyType = this.type(this.buf[this.need(1, 'map key type')]!, 'a map key');
        const valueType = this.type(this.buf[this.need(1, 'map value type')]!, 'a map value');
        const n = this.size('map', MIN_SIZE[keyType]! + MIN_SIZE[valueType]!);
        const entries: Array<[ThriftValue, ThriftValue]> = [];
        for (let i = 0; i < n; i++) entries.push([this.value(keyType, depth + 1), this.value(valueType, depth + 1)]);
        return { kind: 'map', keyType, valueType, entries };
      }
      case TType.SET:
      case TType.LIST: {
        if (depth + 1 > MAX_DEPTH) throw bad(`nested deeper than ${MAX_DEPTH} at byte ${this.pos}`);
        const kind = type === TType.SET ? 'set' : 'list';
        const elemType = this.type(this.buf[this.need(1, `${kind} element type`)]!, `a ${kind} element`);
        const n = this.size(kind, MIN_SIZE[elemType]!);
        const items: ThriftValue[] = [];
        for (let i = 0; i < n; i++) items.push(this.value(elemType, depth + 1));
        return { kind, elemType, items };
      }
    }
  }
}
