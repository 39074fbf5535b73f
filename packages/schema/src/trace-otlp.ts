import {
  KeyValueSchema,
  ResourceSpansSchema,
  create,
  fromJson,
  type JsonValue,
  type KeyValue,
  type ResourceSpans,
  type Span,
} from '@floe/proto';

/**
 * Rebuilds OTLP ResourceSpans from rows of the traces table (one row per span), grouping spans by
 * their resource (service and resource attributes) and instrumentation scope, as an OTLP exporter
 * sent them. The querier answers Tempo's FindTraceByID with it; the router's JSON and protobuf
 * responses are both made from its result.
 */

export interface SpanRow {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  trace_state: string | null;
  name: string | null;
  kind: string | null;
  start_time_unix_nano: bigint;
  end_time_unix_nano: bigint | null;
  status_code: string | null;
  status_message: string | null;
  service_name: string | null;
  scope_name: string | null;
  scope_version: string | null;
  flags: bigint | number | null;
  span_attr_str: Record<string, string> | null;
  span_attr_int: Record<string, bigint | number> | null;
  span_attr_double: Record<string, number> | null;
  span_attr_bool: Record<string, boolean> | null;
  resource_attr_str: Record<string, string> | null;
  resource_attr_int: Record<string, bigint | number> | null;
  resource_attr_double: Record<string, number> | null;
  resource_attr_bool: Record<string, boolean> | null;
  events_json: string | null;
  links_json: string | null;
  dropped_counts: string | null;
}

const KIND_NUMBERS: Record<string, number> = { unspecified: 0, internal: 1, server: 2, client: 3, producer: 4, consumer: 5 };
const STATUS_NUMBERS: Record<string, number> = { unset: 0, ok: 1, error: 2 };

const fromHex = (h: string | null | undefined) => (h ? new Uint8Array(Buffer.from(h, 'hex')) : new Uint8Array(0));

export function typedAttributes(
  str: Record<string, string> | null,
  int: Record<string, bigint | number> | null,
  dbl: Record<string, number> | null,
  bool: Record<string, boolean> | null,
): KeyValue[] {
  const out: KeyValue[] = [];
  for (const [key, v] of Object.entries(str ?? {})) out.push(create(KeyValueSchema, { key, value: { value: { case: 'stringValue', value: v } } }));
  for (const [key, v] of Object.entries(int ?? {})) out.push(create(KeyValueSchema, { key, value: { value: { case: 'intValue', value: BigInt(v) } } }));
  for (const [key, v] of Object.entries(dbl ?? {})) out.push(create(KeyValueSchema, { key, value: { value: { case: 'doubleValue', value: Number(v) } } }));
  for (const [key, v] of Object.entries(bool ?? {})) out.push(create(KeyValueSchema, { key, value: { value: { case: 'boolValue', value: Boolean(v) } } }));
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

const jsonAttributes = (list: unknown): KeyValue[] =>
  Array.isArray(list) ? list.map((kv) => fromJson(KeyValueSchema, kv as JsonValue, { ignoreUnknownFields: true })) : [];

function parseJson(text: string | null): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function toSpan(r: SpanRow): Span {
  const events = (parseJson(r.events_json) as Array<{ timeUnixNano: string; name: string; attributes: unknown; droppedAttributesCount?: number }> | undefined) ?? [];
  const links = (parseJson(r.links_json) as Array<{ traceId: string; spanId: string; traceState?: string; attributes: unknown; flags?: number }> | undefined) ?? [];
  const dropped = (parseJson(r.dropped_counts) as { attributes?: number; events?: number; links?: number } | undefined) ?? {};
  return {
    $typeName: 'opentelemetry.proto.trace.v1.Span',
    traceId: fromHex(r.trace_id),
    spanId: fromHex(r.span_id),
    traceState: r.trace_state ?? '',
    parentSpanId: fromHex(r.parent_span_id),
    flags: Number(r.flags ?? 0),
    name: r.name ?? '',
    kind: KIND_NUMBERS[r.kind ?? ''] ?? 0,
    startTimeUnixNano: BigInt(r.start_time_unix_nano),
    endTimeUnixNano: BigInt(r.end_time_unix_nano ?? r.start_time_unix_nano),
    attributes: typedAttributes(r.span_attr_str, r.span_attr_int, r.span_attr_double, r.span_attr_bool),
    droppedAttributesCount: dropped.attributes ?? 0,
    events: events.map((e) => ({
      $typeName: 'opentelemetry.proto.trace.v1.Span.Event',
      timeUnixNano: BigInt(e.timeUnixNano),
      name: e.name,
      attributes: jsonAttributes(e.attributes),
      droppedAttributesCount: e.droppedAttributesCount ?? 0,
    })),
    droppedEventsCount: dropped.events ?? 0,
    links: links.map((l) => ({
      $typeName: 'opentelemetry.proto.trace.v1.Span.Link',
      traceId: fromHex(l.traceId),
      spanId: fromHex(l.spanId),
      traceState: l.traceState ?? '',
      attributes: jsonAttributes(l.attributes),
      droppedAttributesCount: 0,
      flags: l.flags ?? 0,
    })),
    droppedLinksCount: dropped.links ?? 0,
    status: { $typeName: 'opentelemetry.proto.trace.v1.Status', code: STATUS_NUMBERS[r.status_code ?? ''] ?? 0, message: r.status_message ?? '' },
  };
}

export function rebuildTrace(rows: readonly SpanRow[]): ResourceSpans[] {
  const resources = new Map<string, { rs: ResourceSpans; scopes: Map<string, Span[]> }>();
  for (const r of rows) {
    const resourceAttrs = typedAttributes(r.resource_attr_str, r.resource_attr_int, r.resource_attr_double, r.resource_attr_bool);
    // Rows of one trace may come from id blocks (ints as bigint) and from DuckDB (bigint or
    // number): one resource must get one key either way.
    const resKey = JSON.stringify([r.service_name, r.resource_attr_str, r.resource_attr_int, r.resource_attr_double, r.resource_attr_bool], (_k, v: unknown) =>
      typeof v === 'bigint' || typeof v === 'number' ? String(v) : v,
    );
    let entry = resources.get(resKey);
    if (!entry) {
      entry = { rs: create(ResourceSpansSchema, { resource: { attributes: resourceAttrs } }), scopes: new Map() };
      resources.set(resKey, entry);
    }
    const scopeKey = `${r.scope_name ?? ''}\u0000${r.scope_version ?? ''}`;
    let spans = entry.scopes.get(scopeKey);
    if (!spans) {
      spans = [];
      entry.scopes.set(scopeKey, spans);
      entry.rs.scopeSpans.push({
        $typeName: 'opentelemetry.proto.trace.v1.ScopeSpans',
        scope: { $typeName: 'opentelemetry.proto.common.v1.InstrumentationScope', name: r.scope_name ?? '', version: r.scope_version ?? '', attributes: [], droppedAttributesCount: 0 },
        spans,
        schemaUrl: '',
      });
    }
    spans.push(toSpan(r));
  }
  for (const { rs } of resources.values()) for (const ss of rs.scopeSpans) ss.spans.sort((a, b) => (a.startTimeUnixNano < b.startTimeUnixNano ? -1 : 1));
  return [...resources.values()].map((e) => e.rs);
}
