import { AnyValueSchema, toJson, type AnyValue, type KeyValue } from '@floe/proto';

/**
 * Splits OTLP attributes into the four typed maps of a row. Arrays, key-value lists and bytes
 * have no map of their own: they are kept as JSON text in the string map, so nothing is dropped.
 */
export interface TypedAttributes {
  str: Record<string, string>;
  int: Record<string, number | string>;
  double: Record<string, number | string>;
  bool: Record<string, boolean>;
}

export const emptyTyped = (): TypedAttributes => ({ str: {}, int: {}, double: {}, bool: {} });

/** JSON cannot carry NaN/Infinity or int64 beyond 2^53: those go as strings DuckDB casts back. */
const int64 = (v: bigint): number | string => (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString());
const float = (v: number): number | string => (Number.isFinite(v) ? v : String(v));

export function anyValueText(v: AnyValue | undefined): string {
  if (!v) return '';
  switch (v.value.case) {
    case 'stringValue':
      return v.value.value;
    case 'boolValue':
      return String(v.value.value);
    case 'intValue':
      return v.value.value.toString();
    case 'doubleValue':
      return String(v.value.value);
    case 'bytesValue':
      return Buffer.from(v.value.value).toString('base64');
    default:
      return JSON.stringify(toJson(AnyValueSchema, v));
  }
}

export function splitAttributes(attrs: readonly KeyValue[], into: TypedAttributes = emptyTyped()): TypedAttributes {
  for (const kv of attrs) {
    const v = kv.value?.value;
    if (!v || v.case === undefined) continue;
    switch (v.case) {
      case 'stringValue':
        into.str[kv.key] = v.value;
        break;
      case 'intValue':
        into.int[kv.key] = int64(v.value);
        break;
      case 'doubleValue':
        into.double[kv.key] = float(v.value);
        break;
      case 'boolValue':
        into.bool[kv.key] = v.value;
        break;
      default:
        into.str[kv.key] = anyValueText(kv.value);
    }
  }
  return into;
}

export const stringAttribute = (attrs: readonly KeyValue[], key: string): string | undefined => {
  const kv = attrs.find((a) => a.key === key);
  return kv?.value?.value.case === 'stringValue' ? kv.value.value.value : undefined;
};
