// Iceberg single-value binary serialization (table spec, Appendix D), used for the column
// lower/upper bounds of data files and for partition field summaries in manifest lists.
//
//   boolean            1 byte, 0x00 false / 0x01 true
//   int, date          4 bytes little-endian
//   long, time,        8 bytes little-endian (time, timestamp, timestamptz in microseconds;
//   timestamp(tz)(_ns)                       the _ns variants in nanoseconds)
//   float, double      4 / 8 bytes IEEE 754 little-endian
//   string             UTF-8 bytes, no length prefix
//   uuid               16 bytes big-endian
//   fixed[L], binary   the bytes themselves
//   decimal(P, S)      unscaled value, two's-complement big-endian, minimum number of bytes

import type { PrimitiveType } from './types.ts';

export type BoundValue = number | bigint | string | boolean | Uint8Array;

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: false });

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function serializeInt(value: number): Uint8Array {
  const out = new Uint8Array(4);
  view(out).setInt32(0, value, true);
  return out;
}

export function serializeLong(value: bigint | number): Uint8Array {
  const out = new Uint8Array(8);
  view(out).setBigInt64(0, typeof value === 'bigint' ? value : BigInt(Math.trunc(value)), true);
  return out;
}

export function serializeFloat(value: number): Uint8Array {
  const out = new Uint8Array(4);
  view(out).setFloat32(0, value, true);
  return out;
}

export function serializeDouble(value: number): Uint8Array {
  const out = new Uint8Array(8);
  view(out).setFloat64(0, value, true);
  return out;
}

export function serializeBoolean(value: boolean): Uint8Array {
  return Uint8Array.of(value ? 1 : 0);
}

export function serializeString(value: string): Uint8Array {
  return utf8.encode(value);
}

/** `value` is the unscaled integer (e.g. 12.34 in decimal(4, 2) is 1234n). */
export function serializeDecimal(unscaled: bigint): Uint8Array {
  // Minimal two's-complement big-endian: strip redundant sign bytes.
  const bytes: number[] = [];
  let v = unscaled;
  for (;;) {
    const byte = Number(v & 0xffn);
    bytes.unshift(byte);
    v >>= 8n;
    const signBit = (byte & 0x80) !== 0;
    if ((v === 0n && !signBit) || (v === -1n && signBit)) break;
  }
  return Uint8Array.from(bytes);
}

export function serializeUuid(value: string): Uint8Array {
  const hex = value.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new TypeError(`not a uuid: ${value}`);
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function toBigInt(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return BigInt(Math.trunc(value));
  if (typeof value === 'string') return BigInt(value);
  if (value instanceof Date) return BigInt(value.getTime()) * 1000n;
  throw new TypeError(`cannot serialize ${typeof value} as a long`);
}

/** Serializes one value of an Iceberg primitive type (a Date is taken as a timestamp in ms). */
export function serializeValue(type: PrimitiveType, value: BoundValue | Date): Uint8Array {
  switch (type) {
    case 'boolean':
      return serializeBoolean(Boolean(value));
    case 'int':
    case 'date':
      return serializeInt(Number(value));
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
      return serializeLong(toBigInt(value));
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return serializeLong(value instanceof Date ? BigInt(value.getTime()) * 1_000_000n : toBigInt(value));
    case 'float':
      return serializeFloat(Number(value));
    case 'double':
      return serializeDouble(Number(value));
    case 'string':
      return serializeString(String(value));
    case 'uuid':
      return value instanceof Uint8Array ? value : serializeUuid(String(value));
    case 'binary':
      if (!(value instanceof Uint8Array)) throw new TypeError('binary bounds must be a Uint8Array');
      return value;
    default:
      if (type.startsWith('fixed[')) {
        if (!(value instanceof Uint8Array)) throw new TypeError(`${type} bounds must be a Uint8Array`);
        return value;
      }
      if (type.startsWith('decimal(')) return serializeDecimal(toBigInt(value));
      throw new TypeError(`no single-value serialization for ${type}`);
  }
}

/**
 * The inverse of serializeValue. Longs and timestamps come back as `bigint` (exact), ints, dates,
 * floats and doubles as `number`, decimals as the unscaled `bigint`, uuids as their string form.
 */
export function deserializeValue(type: PrimitiveType, bytes: Uint8Array): BoundValue {
  switch (type) {
    case 'boolean':
      return bytes[0] !== 0;
    case 'int':
    case 'date':
      return view(bytes).getInt32(0, true);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return view(bytes).getBigInt64(0, true);
    case 'float':
      return view(bytes).getFloat32(0, true);
    case 'double':
      return view(bytes).getFloat64(0, true);
    case 'string':
      return utf8Decoder.decode(bytes);
    case 'uuid': {
      const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    }
    default:
      if (type.startsWith('decimal(')) {
        let v = 0n;
        for (const b of bytes) v = (v << 8n) | BigInt(b);
        if (bytes.length > 0 && (bytes[0]! & 0x80) !== 0) v -= 1n << BigInt(bytes.length * 8);
        return v;
      }
      return bytes;
  }
}

/** Compares two values of the same primitive type in Iceberg order (strings by UTF-8 bytes). */
export function compareValues(a: BoundValue, b: BoundValue): number {
  if (typeof a === 'string' && typeof b === 'string') return compareBytes(utf8.encode(a), utf8.encode(b));
  if (a instanceof Uint8Array && b instanceof Uint8Array) return compareBytes(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) {
    return a < b ? -1 : a > b ? 1 : 0;
  }
  throw new TypeError(`cannot compare ${typeof a} with ${typeof b}`);
}

/** Unsigned lexicographic byte comparison. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}
