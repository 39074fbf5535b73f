import { FloeError } from '@floe/errors';
import { create, ExportTraceServiceRequestSchema, Span_SpanKind, Status_StatusCode, type ExportTraceServiceRequest } from '@floe/proto';
import { stringKeyValue } from './attributes.ts';
import { decodeThriftStruct, TType, typeName, type ThriftList, type ThriftStruct, type ThriftValue, type TTypeId } from './thrift-binary.ts';

/**
 * Jaeger's thrift_http ingest (POST /api/traces, a Thrift binary-protocol `Batch` of
 * jaeger-idl's thrift/jaeger.thrift), which the Jaeger clients' HTTP senders post and Tempo's
 * distributor accepts: spans become an OTLP trace export stored like any other. Mapped as the
 * OpenTelemetry Collector's Jaeger receiver maps them (pkg/translator/jaeger, ThriftToTraces):
 *
 * - the batch's process is the resource: serviceName → service.name, its tags → attributes,
 *   `hostname` → host.name and `jaeger.version` → opencensus.exporterversion "Jaeger-<v>";
 * - ids are big-endian bytes (traceIdHigh then traceIdLow); startTime, duration and log
 *   timestamps are microseconds; parentSpanId 0 means the first CHILD_OF reference of the same
 *   trace, else the first FOLLOWS_FROM one, else none; other references become links with
 *   opentracing.ref_type child_of / follows_from; the sampled flag becomes the W3C sampled flag;
 * - tags become typed attributes (string, double, bool, int, bytes; a repeated key keeps the last
 *   value); `span.kind` is the kind; `error` = true makes the status ERROR (message
 *   otel.status_description, else http.status_message), else `otel.status_code` OK/ERROR sets
 *   it, else an int http.status_code does (5xx, or 4xx on a client span, is an error); those tags
 *   are taken off the attributes;
 * - logs become events named by their `event` field (unnamed without one), the other fields
 *   their attributes.
 *
 * A body that is not such a Batch (bad Thrift, a required field missing, a field of the wrong
 * type) is a 400 naming the place, as Jaeger's own decoder refuses it.
 */

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_INGEST_DECODE' });

const KINDS: Record<string, Span_SpanKind> = {
  client: Span_SpanKind.CLIENT,
  server: Span_SpanKind.SERVER,
  producer: Span_SpanKind.PRODUCER,
  consumer: Span_SpanKind.CONSUMER,
  internal: Span_SpanKind.INTERNAL,
};

const TAG_TYPES = { STRING: 0, DOUBLE: 1, BOOL: 2, LONG: 3, BINARY: 4 } as const;
const CHILD_OF = 0;
const FOLLOWS_FROM = 1;
const SAMPLED = 1;
const MAX_UINT64 = (1n << 64n) - 1n;

/** An attribute value as `create()` takes it: every type a Jaeger tag can have. */
type AttrValue =
  | { case: 'stringValue'; value: string }
  | { case: 'doubleValue'; value: number }
  | { case: 'boolValue'; value: boolean }
  | { case: 'intValue'; value: bigint }
  | { case: 'bytesValue'; value: Uint8Array };
/** Attributes in order, a repeated key replacing the value in place (as the Collector's pcommon.Map). */
type Attrs = Map<string, AttrValue>;
const keyValues = (attrs: Attrs) => [...attrs].map(([key, value]) => ({ key, value: { value } }));
/** A value as the Collector's Value.Str(): the string, or '' for any other type. */
const str = (v: AttrValue | undefined): string => (v?.case === 'stringValue' ? v.value : '');

/** A Thrift binary Jaeger Batch as an OTLP trace export; a malformed batch is 400 naming the place. */
export function jaegerToOtlp(body: Uint8Array): ExportTraceServiceRequest {
  const batch = decodeThriftStruct(body);
  const process = req(structField(batch, 1, 'process'), 'process');
  const resource: Attrs = new Map();
  const serviceName = text(req(field(process, 1, TType.STRING, 'process.serviceName'), 'process.serviceName'));
  if (serviceName !== '') resource.set('service.name', { case: 'stringValue', value: serviceName });
  tagsInto(structList(process, 2, 'process.tags', false), 'process.tags', resource);
  const hostname = resource.get('hostname');
  if (hostname && !resource.has('host.name')) {
    resource.delete('hostname');
    resource.set('host.name', hostname);
  }
  const version = resource.get('jaeger.version');
  if (version && !resource.has('opencensus.exporterversion')) {
    resource.delete('jaeger.version');
    resource.set('opencensus.exporterversion', { case: 'stringValue', value: `Jaeger-${str(version)}` });
  }

  const spans = structList(batch, 2, 'spans', true)!;
  const otlpSpans = spans.flatMap((s, i) => spanOf(s, `spans[${i}]`));
  return create(ExportTraceServiceRequestSchema, {
    resourceSpans: [{ resource: { attributes: keyValues(resource) }, scopeSpans: otlpSpans.length === 0 ? [] : [{ scope: { name: 'jaeger' }, spans: otlpSpans }] }],
  });
}

function spanOf(s: ThriftStruct, at: string) {
  const i64 = (id: number, name: string) => req(field(s, id, TType.I64, `${at}.${name}`), `${at}.${name}`) as bigint;
  const traceIdLow = i64(1, 'traceIdLow');
  const traceIdHigh = i64(2, 'traceIdHigh');
  const spanId = i64(3, 'spanId');
  const parentSpanId = i64(4, 'parentSpanId');
  const name = text(req(field(s, 5, TType.STRING, `${at}.operationName`), `${at}.operationName`));
  const refs = structList(s, 6, `${at}.references`, false);
  const flags = req(field(s, 7, TType.I32, `${at}.flags`), `${at}.flags`) as number;
  const startTime = i64(8, 'startTime');
  const duration = i64(9, 'duration');
  const tags = structList(s, 10, `${at}.tags`, false);
  const logs = structList(s, 11, `${at}.logs`, false);
  field(s, 12, TType.BOOL, `${at}.incomplete`);
  // A span with nothing set is skipped, as the Collector skips a blank one.
  if (traceIdLow === 0n && traceIdHigh === 0n && spanId === 0n && parentSpanId === 0n && name === '' && flags === 0 && startTime === 0n && duration === 0n && !s.has(6) && !s.has(10) && !s.has(11) && !s.has(12)) return [];

  const start = nanos(startTime, `${at}.startTime`);
  if (duration < 0n) throw bad(`${at}.duration must not be negative`);
  const end = start + duration * 1000n;
  if (end > MAX_UINT64) throw bad(`${at}.startTime + duration is beyond the range of nanosecond timestamps`);

  const references = (refs ?? []).map((r, j) => {
    const where = `${at}.references[${j}]`;
    const one = <T extends ThriftValue>(id: number, type: TTypeId, n: string) => req(field(r, id, type, `${where}.${n}`), `${where}.${n}`) as T;
    return { refType: one<number>(1, TType.I32, 'refType'), traceIdLow: one<bigint>(2, TType.I64, 'traceIdLow'), traceIdHigh: one<bigint>(3, TType.I64, 'traceIdHigh'), spanId: one<bigint>(4, TType.I64, 'spanId') };
  });
  // parentSpanId 0: the first reference of the same trace, CHILD_OF before FOLLOWS_FROM.
  let parent = parentSpanId;
  if (parent === 0n) {
    const sameTrace = references.filter((r) => r.traceIdLow === traceIdLow && r.traceIdHigh === traceIdHigh);
    parent = (sameTrace.find((r) => r.refType === CHILD_OF) ?? sameTrace.find((r) => r.refType === FOLLOWS_FROM))?.spanId ?? 0n;
  }
  const links = references
    .filter((r) => !(r.spanId === parent && r.refType === CHILD_OF))
    .map((r) => ({ traceId: traceIdBytes(r.traceIdHigh, r.traceIdLow), spanId: spanIdBytes(r.spanId), attributes: [stringKeyValue('opentracing.ref_type', r.refType === CHILD_OF ? 'child_of' : 'follows_from')] }));

  const attrs: Attrs = new Map();
  tagsInto(tags, `${at}.tags`, attrs);
  let kind: Span_SpanKind = Span_SpanKind.UNSPECIFIED;
  if (attrs.has('span.kind')) {
    const name = str(attrs.get('span.kind'));
    // Own keys only: a span.kind of `constructor` is unknown, as any other.
    kind = Object.hasOwn(KINDS, name) ? KINDS[name]! : Span_SpanKind.UNSPECIFIED;
    attrs.delete('span.kind');
  }
  const status = statusOf(attrs, kind);

  const events = (logs ?? []).map((l, j) => {
    const where = `${at}.logs[${j}]`;
    const timestamp = req(field(l, 1, TType.I64, `${where}.timestamp`), `${where}.timestamp`) as bigint;
    const fields: Attrs = new Map();
    tagsInto(req(structList(l, 2, `${where}.fields`, true), `${where}.fields`), `${where}.fields`, fields);
    const eventName = fields.get('event');
    fields.delete('event');
    return { timeUnixNano: nanos(timestamp, `${where}.timestamp`), name: str(eventName), attributes: keyValues(fields) };
  });

  return [
    {
      traceId: traceIdBytes(traceIdHigh, traceIdLow),
      spanId: spanIdBytes(spanId),
      parentSpanId: parent === 0n ? new Uint8Array(0) : spanIdBytes(parent),
      name,
      kind,
      flags: flags & SAMPLED ? 1 : 0,
      startTimeUnixNano: start,
      endTimeUnixNano: end,
      attributes: keyValues(attrs),
      events,
      links,
      ...(status ? { status } : {}),
    },
  ];
}

/**
 * The span status from its tags, as the Collector's setInternalSpanStatus: `error` = true is the
 * final word, then `otel.status_code`, then an int (or integer string) http.status_code. The tags
 * that made it are taken off.
 */
function statusOf(attrs: Attrs, kind: Span_SpanKind): { code: Status_StatusCode; message: string } | undefined {
  let code = Status_StatusCode.UNSET;
  let message = '';
  let exists = false;
  const takeDescription = (): string | undefined => {
    const d = attrs.get('otel.status_description');
    if (d === undefined) return undefined;
    attrs.delete('otel.status_description');
    return str(d);
  };
  const error = attrs.get('error');
  if (error?.case === 'boolValue' && error.value) {
    code = Status_StatusCode.ERROR;
    attrs.delete('error');
    exists = true;
    const description = takeDescription();
    if (description !== undefined) message = description;
    else if (attrs.has('http.status_message')) message = str(attrs.get('http.status_message'));
  }
  const otelCode = attrs.get('otel.status_code');
  if (otelCode !== undefined) {
    if (!exists) {
      exists = true;
      const c = str(otelCode).toUpperCase();
      if (c === 'OK') code = Status_StatusCode.OK;
      else if (c === 'ERROR') code = Status_StatusCode.ERROR;
      const description = takeDescription();
      if (description !== undefined) message = description;
    }
    attrs.delete('otel.status_code');
  } else if (!exists && attrs.has('http.status_code')) {
    const http = httpCode(attrs.get('http.status_code')!);
    if (http !== undefined) {
      const c = httpStatus(http, kind);
      if (c !== Status_StatusCode.UNSET) {
        exists = true;
        code = c;
      }
      if (attrs.has('http.status_message')) message = str(attrs.get('http.status_message'));
    }
  }
  return exists ? { code, message } : undefined;
}

/** The Collector's status of an HTTP code: 4xx is an error on a client span, unset on a server one. */
function httpStatus(code: bigint, kind: Span_SpanKind): Status_StatusCode {
  if (code >= 400n && code < 500n) {
    if (kind === Span_SpanKind.CLIENT) return Status_StatusCode.ERROR;
    if (kind === Span_SpanKind.SERVER) return Status_StatusCode.UNSET;
  }
  // The Collector's bounds, 399 included among errors.
  return code >= 100n && code < 399n ? Status_StatusCode.UNSET : Status_StatusCode.ERROR;
}

/** An http.status_code tag as an integer: an int, or a string of one (strconv.ParseInt); else none. */
function httpCode(v: AttrValue): bigint | undefined {
  if (v.case === 'intValue') return v.value;
  if (v.case !== 'stringValue' || !/^[+-]?[0-9]+$/.test(v.value)) return undefined;
  const n = BigInt(v.value);
  return n >= -(1n << 63n) && n < 1n << 63n ? n : undefined;
}

/** Tags (Tag{key, vType, vStr, vDouble, vBool, vLong, vBinary}) into typed attributes. */
function tagsInto(tags: ThriftStruct[] | undefined, at: string, into: Attrs): void {
  (tags ?? []).forEach((t, i) => {
    const where = `${at}[${i}]`;
    const key = text(req(field(t, 1, TType.STRING, `${where}.key`), `${where}.key`));
    const vType = req(field(t, 2, TType.I32, `${where}.vType`), `${where}.vType`) as number;
    const vStr = field(t, 3, TType.STRING, `${where}.vStr`) as Uint8Array | undefined;
    const vDouble = field(t, 4, TType.DOUBLE, `${where}.vDouble`) as number | undefined;
    const vBool = field(t, 5, TType.BOOL, `${where}.vBool`) as boolean | undefined;
    const vLong = field(t, 6, TType.I64, `${where}.vLong`) as bigint | undefined;
    const vBinary = field(t, 7, TType.STRING, `${where}.vBinary`) as Uint8Array | undefined;
    switch (vType) {
      case TAG_TYPES.STRING:
        into.set(key, { case: 'stringValue', value: vStr ? text(vStr) : '' });
        break;
      case TAG_TYPES.DOUBLE:
        into.set(key, { case: 'doubleValue', value: vDouble ?? 0 });
        break;
      case TAG_TYPES.BOOL:
        into.set(key, { case: 'boolValue', value: vBool ?? false });
        break;
      case TAG_TYPES.LONG:
        into.set(key, { case: 'intValue', value: vLong ?? 0n });
        break;
      case TAG_TYPES.BINARY:
        into.set(key, { case: 'bytesValue', value: Uint8Array.from(vBinary ?? []) });
        break;
      default:
        into.set(key, { case: 'stringValue', value: `<Unknown Jaeger TagType ${vType}>` });
    }
  });
}

function field(s: ThriftStruct, id: number, type: TTypeId, at: string): ThriftValue | undefined {
  const f = s.get(id);
  if (f === undefined) return undefined;
  if (f.type !== type) throw bad(`${at} must be ${article(typeName(type))}, not ${article(typeName(f.type))}`);
  return f.value;
}

function structField(s: ThriftStruct, id: number, at: string): ThriftStruct | undefined {
  return field(s, id, TType.STRUCT, at) as ThriftStruct | undefined;
}

function structList(s: ThriftStruct, id: number, at: string, required: boolean): ThriftStruct[] | undefined {
  const list = field(s, id, TType.LIST, at) as ThriftList | undefined;
  if (list === undefined) return required ? req(list, at) : undefined;
  if (list.elemType !== TType.STRUCT) throw bad(`${at} must be a list of structs, not of ${typeName(list.elemType)}`);
  return list.items as ThriftStruct[];
}

function req<T>(v: T | undefined, at: string): T {
  if (v === undefined) throw bad(`${at} is required`);
  return v;
}

const article = (t: string) => (/^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`);
const decoder = new TextDecoder();
const text = (v: ThriftValue): string => decoder.decode(v as Uint8Array);

function nanos(micros: bigint, at: string): bigint {
  if (micros < 0n) throw bad(`${at} must not be negative`);
  const n = micros * 1000n;
  if (n > MAX_UINT64) throw bad(`${at} is beyond the range of nanosecond timestamps`);
  return n;
}

function spanIdBytes(id: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, id));
  return b;
}

function traceIdBytes(high: bigint, low: bigint): Uint8Array {
  const b = new Uint8Array(16);
  const v = new DataView(b.buffer);
  v.setBigUint64(0, BigInt.asUintN(64, high));
  v.setBigUint64(8, BigInt.asUintN(64, low));
  return b;
}
