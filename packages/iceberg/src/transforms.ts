// Partition transforms of the Iceberg table spec: result types, applying a transform to a source
// value, and the human-readable partition path (`timestamp_hour=2026-05-01-13`).

import type { IcebergType, NestedField, PartitionField, PartitionSpec, PartitionValue, PrimitiveType, Schema, StructType, Transform } from './types.ts';
import { InvalidMetadataError } from './errors.ts';

const US_PER_HOUR = 3_600_000_000n;
const US_PER_DAY = 86_400_000_000n;
const MS_PER_DAY = 86_400_000;

/** Floor division on bigints (rounds toward negative infinity, as the spec requires). */
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

function isTimestamp(t: PrimitiveType): boolean {
  return t === 'timestamp' || t === 'timestamptz' || t === 'timestamp_ns' || t === 'timestamptz_ns';
}

/** Microseconds (or nanoseconds for the _ns types) → microseconds. */
function toMicros(t: PrimitiveType, v: PartitionValue | Date): bigint {
  let n: bigint;
  if (v instanceof Date) return BigInt(v.getTime()) * 1000n;
  if (typeof v === 'bigint') n = v;
  else if (typeof v === 'number') n = BigInt(Math.trunc(v));
  else if (typeof v === 'string') n = BigInt(v);
  else throw new TypeError(`expected a timestamp, got ${typeof v}`);
  return t === 'timestamp_ns' || t === 'timestamptz_ns' ? floorDiv(n, 1000n) : n;
}

/** The type of a partition field given the transform and the source column's type. */
export function transformResultType(transform: Transform, sourceType: IcebergType): PrimitiveType {
  if (transform === 'identity' || transform.startsWith('truncate[')) {
    if (typeof sourceType !== 'string') throw new InvalidMetadataError(`cannot partition by ${transform} of a nested type`);
    return sourceType;
  }
  if (transform === 'day') return 'date';
  if (transform === 'void') return typeof sourceType === 'string' ? sourceType : 'int';
  // year, month, hour, bucket[N]
  return 'int';
}

/** Days since 1970-01-01 → [year, month0]. */
function civil(days: number): [number, number] {
  const d = new Date(days * MS_PER_DAY);
  return [d.getUTCFullYear(), d.getUTCMonth()];
}

/**
 * Applies a transform to a source value. Timestamps are microseconds since the epoch as number or
 * bigint (nanoseconds for the _ns types) or a Date; dates are days since the epoch.
 * bucket[N] and truncate[W] are not implemented (Floe doesn't write them).
 */
export function applyTransform(transform: Transform, sourceType: PrimitiveType, value: PartitionValue | Date): PartitionValue {
  if (value === null || value === undefined) return null;
  if (transform === 'identity') return value instanceof Date ? Number(toMicros(sourceType, value)) : value;
  if (transform === 'void') return null;
  let days: number;
  if (isTimestamp(sourceType)) {
    const us = toMicros(sourceType, value);
    if (transform === 'hour') return Number(floorDiv(us, US_PER_HOUR));
    days = Number(floorDiv(us, US_PER_DAY));
  } else if (sourceType === 'date') {
    days = value instanceof Date ? Math.floor(value.getTime() / MS_PER_DAY) : Number(value);
    if (transform === 'hour') throw new TypeError('hour() needs a timestamp source');
  } else {
    throw new TypeError(`${transform}() needs a date or timestamp source, not ${sourceType}`);
  }
  if (transform === 'day') return days;
  const [y, m] = civil(days);
  if (transform === 'month') return (y - 1970) * 12 + m;
  if (transform === 'year') return y - 1970;
  throw new TypeError(`transform ${transform} is not supported`);
}

/** Finds a field by id anywhere in a schema. */
export function findField(schema: StructType, id: number): NestedField | undefined {
  const visit = (t: IcebergType): NestedField | undefined => {
    if (typeof t === 'string') return undefined;
    if (t.type === 'struct') {
      for (const f of t.fields) {
        if (f.id === id) return f;
        const inner = visit(f.type);
        if (inner) return inner;
      }
      return undefined;
    }
    if (t.type === 'list') return visit(t.element);
    return visit(t.key) ?? visit(t.value);
  };
  return visit(schema);
}

export interface PartitionFieldInfo {
  field: PartitionField;
  sourceType: PrimitiveType;
  resultType: PrimitiveType;
}

/** Partition fields with their source and result types, in spec order. */
export function partitionFieldInfo(spec: PartitionSpec, schema: Schema): PartitionFieldInfo[] {
  return spec.fields.map((field) => {
    const source = findField(schema, field['source-id']);
    if (!source) throw new InvalidMetadataError(`partition field ${field.name}: source column ${field['source-id']} not in schema`);
    if (typeof source.type !== 'string') throw new InvalidMetadataError(`partition field ${field.name}: source column is nested`);
    return { field, sourceType: source.type, resultType: transformResultType(field.transform, source.type) };
  });
}

/** Computes the partition tuple of a row given its source values keyed by field id. */
export function partitionFor(spec: PartitionSpec, schema: Schema, sourceValues: Record<number, PartitionValue | Date>): Record<string, PartitionValue> {
  const out: Record<string, PartitionValue> = {};
  for (const info of partitionFieldInfo(spec, schema)) {
    out[info.field.name] = applyTransform(info.field.transform, info.sourceType, sourceValues[info.field['source-id']] ?? null);
  }
  return out;
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

/** Human-readable form of one partition value, as Java and PyIceberg print it in paths. */
export function humanPartitionValue(transform: Transform, resultType: PrimitiveType, value: PartitionValue): string {
  if (value === null) return 'null';
  const n = Number(value);
  if (transform === 'hour') {
    const d = new Date(n * 3_600_000);
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}-${pad(d.getUTCHours())}`;
  }
  if (transform === 'day' || (transform === 'identity' && resultType === 'date')) {
    return new Date(n * MS_PER_DAY).toISOString().slice(0, 10);
  }
  if (transform === 'month') return `${1970 + Math.floor(n / 12)}-${pad(((n % 12) + 12) % 12 + 1)}`;
  if (transform === 'year') return String(1970 + n);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  return String(value);
}

/** `name=value/name=value` path segment of a partition tuple (values URL-encoded). */
export function partitionPath(spec: PartitionSpec, schema: Schema, partition: Record<string, PartitionValue>): string {
  return partitionFieldInfo(spec, schema)
    .map(({ field, resultType }) => `${encodeURIComponent(field.name)}=${encodeURIComponent(humanPartitionValue(field.transform, resultType, partition[field.name] ?? null))}`)
    .join('/');
}
