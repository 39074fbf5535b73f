import { FloeError } from '@floe/errors';
import { create, ExportTraceServiceRequestSchema, Span_SpanKind, Status_StatusCode, type ExportTraceServiceRequest } from '@floe/proto';
import { intKeyValue, stringKeyValue, type KeyValueInit } from './attributes.ts';
import { parseJsonBody } from './decode.ts';

/**
 * Zipkin's v2 span API (POST /api/v2/spans, a JSON array), which Envoy, Istio, Brave and Spring
 * Cloud Sleuth send and which Tempo accepts: spans become an OTLP trace export stored like any
 * other. Mapped as the OpenTelemetry Collector's Zipkin receiver maps them:
 *
 * - a span's localEndpoint.serviceName is its resource's service.name (spans grouped by it);
 * - ids are hex (a 64-bit trace id is left-padded to 128 bits); timestamp and duration are
 *   microseconds; kind CLIENT/SERVER/PRODUCER/CONSUMER keeps its name;
 * - tags become string attributes; an `error` tag makes the status ERROR with the tag's value as
 *   its message; annotations become events; remoteEndpoint becomes peer.service and
 *   network.peer.address / network.peer.port; localEndpoint's address becomes
 *   network.local.address.
 */

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_INGEST_DECODE' });

const KINDS: Record<string, Span_SpanKind> = {
  CLIENT: Span_SpanKind.CLIENT,
  SERVER: Span_SpanKind.SERVER,
  PRODUCER: Span_SpanKind.PRODUCER,
  CONSUMER: Span_SpanKind.CONSUMER,
};

type Endpoint = { serviceName?: unknown; ipv4?: unknown; ipv6?: unknown; port?: unknown };

/** A JSON body of Zipkin v2 spans as an OTLP trace export; a malformed span is 400 naming it. */
export function zipkinToOtlp(body: Uint8Array): ExportTraceServiceRequest {
  const doc = parseJsonBody(body);
  if (!Array.isArray(doc)) throw bad('body must be a JSON array of Zipkin v2 spans');
  const byService = new Map<string, ReturnType<typeof spanOf>['span'][]>();
  doc.forEach((raw, i) => {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw bad(`spans[${i}] must be an object`);
    const { service, span } = spanOf(raw as Record<string, unknown>, `spans[${i}]`);
    let list = byService.get(service);
    if (!list) byService.set(service, (list = []));
    list.push(span);
  });
  return create(ExportTraceServiceRequestSchema, {
    resourceSpans: [...byService].map(([service, spans]) => ({
      resource: { attributes: service === '' ? [] : [stringKeyValue('service.name', service)] },
      scopeSpans: [{ scope: { name: 'zipkin' }, spans }],
    })),
  });
}

function spanOf(s: Record<string, unknown>, at: string) {
  const traceId = hexId(s.traceId, [16, 32], `${at}.traceId`, 32);
  const spanId = hexId(s.id, [16], `${at}.id`, 16);
  const parentSpanId = s.parentId === undefined || s.parentId === null || s.parentId === '' ? new Uint8Array(0) : hexId(s.parentId, [16], `${at}.parentId`, 16);
  const timestamp = micros(s.timestamp, `${at}.timestamp`) ?? 0;
  const duration = micros(s.duration, `${at}.duration`) ?? 0;
  // Own keys only: `constructor` is no kind.
  const kind = s.kind === undefined ? Span_SpanKind.UNSPECIFIED : Object.hasOwn(KINDS, String(s.kind)) ? KINDS[String(s.kind)] : undefined;
  if (kind === undefined) throw bad(`${at}.kind must be CLIENT, SERVER, PRODUCER or CONSUMER`);
  const attributes: KeyValueInit[] = [];
  let status: { code: Status_StatusCode; message: string } | undefined;
  const tags = s.tags;
  if (tags !== undefined) {
    if (tags === null || typeof tags !== 'object' || Array.isArray(tags)) throw bad(`${at}.tags must be an object of strings`);
    for (const [key, value] of Object.entries(tags)) {
      if (typeof value !== 'string') throw bad(`${at}.tags.${key} must be a string`);
      if (key === 'error') status = { code: Status_StatusCode.ERROR, message: value };
      else attributes.push(stringKeyValue(key, value));
    }
  }
  const local = endpointOf(s.localEndpoint, `${at}.localEndpoint`);
  const localAddress = local && (typeof local.ipv4 === 'string' ? local.ipv4 : typeof local.ipv6 === 'string' ? local.ipv6 : undefined);
  if (localAddress) attributes.push(stringKeyValue('network.local.address', localAddress));
  const remote = endpointOf(s.remoteEndpoint, `${at}.remoteEndpoint`);
  if (remote) {
    if (typeof remote.serviceName === 'string' && remote.serviceName !== '') attributes.push(stringKeyValue('peer.service', remote.serviceName));
    const address = typeof remote.ipv4 === 'string' ? remote.ipv4 : typeof remote.ipv6 === 'string' ? remote.ipv6 : undefined;
    if (address) attributes.push(stringKeyValue('network.peer.address', address));
    if (typeof remote.port === 'number' && Number.isInteger(remote.port) && remote.port > 0) attributes.push(intKeyValue('network.peer.port', BigInt(remote.port)));
  }
  const annotations = s.annotations;
  if (annotations !== undefined && !Array.isArray(annotations)) throw bad(`${at}.annotations must be an array`);
  const events = ((annotations as unknown[] | undefined) ?? []).map((a, j) => {
    const where = `${at}.annotations[${j}]`;
    if (a === null || typeof a !== 'object' || typeof (a as { value?: unknown }).value !== 'string') throw bad(`${where} must be {timestamp, value}`);
    return { timeUnixNano: BigInt(micros((a as { timestamp?: unknown }).timestamp, `${where}.timestamp`) ?? timestamp) * 1000n, name: (a as { value: string }).value };
  });
  const start = BigInt(timestamp) * 1000n;
  const service = typeof local?.serviceName === 'string' ? local.serviceName : '';
  const span = {
    traceId,
    spanId,
    parentSpanId,
    name: typeof s.name === 'string' ? s.name : '',
    kind,
    startTimeUnixNano: start,
    endTimeUnixNano: start + BigInt(duration) * 1000n,
    attributes,
    events,
    ...(status ? { status } : {}),
  };
  return { service, span };
}

function endpointOf(v: unknown, at: string): Endpoint | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw bad(`${at} must be an object`);
  return v as Endpoint;
}

/** A hex id of one of `lengths` digits as bytes, left-padded to `width` digits. */
function hexId(v: unknown, lengths: number[], at: string, width: number): Uint8Array {
  if (typeof v !== 'string' || !lengths.includes(v.length) || !/^[0-9a-fA-F]+$/.test(v)) throw bad(`${at} must be ${lengths.join(' or ')} hex digits`);
  if (/^0+$/.test(v)) throw bad(`${at} must not be all zeros`);
  return Buffer.from(v.padStart(width, '0'), 'hex');
}

/** A non-negative integer of microseconds, or undefined when absent. */
function micros(v: unknown, at: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw bad(`${at} must be a non-negative integer of microseconds`);
  return v;
}
