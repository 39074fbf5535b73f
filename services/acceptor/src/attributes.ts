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

// Prototype-free maps: an attribute may be called `__proto__` (or `constructor`) like any other.
const map = <T>(): Record<string, T> => Object.create(null) as Record<string, T>;
export const emptyTyped = (): TypedAttributes => ({ str: map(), int: map(), double: map(), bool: map() });

/** Map entries a row holds for these attributes, an empty map counting one (rows.ts RESOURCE_ENTRIES_BUDGET). */
export const entryCount = (m: TypedAttributes): number => [m.str, m.int, m.double, m.bool].reduce((n, one) => n + Math.max(1, Object.keys(one).length), 0);

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

/** The value of attribute `key` as text, whatever its type (anyValueText); undefined when absent. */
export const attributeText = (attrs: readonly KeyValue[], key: string): string | undefined => {
  const kv = attrs.find((a) => a.key === key);
  return kv === undefined ? undefined : anyValueText(kv.value);
};

/** The resource's service.name, as every table's service_name column holds it. */
export const serviceName = (resourceAttrs: readonly KeyValue[]): string => stringAttribute(resourceAttrs, 'service.name') ?? 'unknown_service';

/** The OTLP kind of a value, as the logs table's body_type names it. */
export function anyValueKind(v: AnyValue | undefined): 'string' | 'bool' | 'int' | 'double' | 'bytes' | 'array' | 'kvlist' | 'empty' {
  switch (v?.value.case) {
    case 'stringValue':
      return 'string';
    case 'boolValue':
      return 'bool';
    case 'intValue':
      return 'int';
    case 'doubleValue':
      return 'double';
    case 'bytesValue':
      return 'bytes';
    case 'arrayValue':
      return 'array';
    case 'kvlistValue':
      return 'kvlist';
    default:
      return 'empty';
  }
}

/**
 * A value as plain text, the way the OpenTelemetry Collector's `pcommon.Value.AsString` (and so
 * Loki's OTLP ingest) renders a log body: strings verbatim, numbers and booleans as their JSON
 * text, bytes as base64, arrays and key-value lists as plain JSON (`["a",1]`, `{"k":"v"}`, not the
 * OTLP JSON encoding), an empty value as ''.
 */
export function anyValueAsString(v: AnyValue | undefined): string {
  const c = v?.value;
  if (!c || c.case === undefined) return '';
  switch (c.case) {
    case 'stringValue':
      return c.value;
    case 'bytesValue':
      return Buffer.from(c.value).toString('base64');
    case 'doubleValue':
      // JavaScript's number-to-string is the ES6 rule AsString follows; NaN and ±Infinity too.
      return String(c.value);
    default:
      return plainJson(v);
  }
}

/**
 * Plain JSON of a value: integers exact (digits of the int64, also beyond 2^53), NaN and
 * ±Infinity as strings (JSON has no such numbers), bytes as base64 strings, empty as null; key
 * order and duplicate keys of a key-value list as sent.
 */
export function plainJson(v: AnyValue | undefined): string {
  const c = v?.value;
  if (!c) return 'null';
  switch (c.case) {
    case 'stringValue':
      return JSON.stringify(c.value);
    case 'boolValue':
      return c.value ? 'true' : 'false';
    case 'intValue':
      return c.value.toString();
    case 'doubleValue':
      return Number.isFinite(c.value) ? JSON.stringify(c.value) : JSON.stringify(String(c.value));
    case 'bytesValue':
      return JSON.stringify(Buffer.from(c.value).toString('base64'));
    case 'arrayValue':
      return `[${c.value.values.map(plainJson).join(',')}]`;
    case 'kvlistValue':
      return `{${c.value.values.map((kv) => `${JSON.stringify(kv.key)}:${plainJson(kv.value)}`).join(',')}}`;
    default:
      return 'null';
  }
}

/**
 * An OTLP KeyValue as `create()` takes it, for the converters that build OTLP requests from other
 * protocols (Loki push, Zipkin, pprof).
 */
export type KeyValueInit = { key: string; value: AnyValueInit };
export type AnyValueInit = { value: { case: 'stringValue'; value: string } | { case: 'intValue'; value: bigint } };
export const stringKeyValue = (key: string, value: string): KeyValueInit => ({ key, value: { value: { case: 'stringValue', value } } });
export const intKeyValue = (key: string, value: bigint): KeyValueInit => ({ key, value: { value: { case: 'intValue', value } } });
