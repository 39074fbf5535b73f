/**
 * A trace as a flat span list. The trace API answers OTLP JSON (resource → scope → spans, typed
 * attribute values, base64 ids) for Grafana; an agent reads a list of spans with the spec's span
 * fields (spec 1, "Trace span fields") and plain attribute maps far more easily, and the payload
 * cap can then trim spans one by one.
 */
import { optional, type Shape } from '@floe/client';

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  bytesValue?: string;
  arrayValue?: { values?: AnyValue[] };
  kvlistValue?: { values?: KeyValue[] };
};
type KeyValue = { key: string; value?: AnyValue };

interface OtlpSpan {
  spanID?: string;
  parentSpanID?: string;
  serviceName?: string;
  name?: string;
  kind?: string;
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
  durationNanos?: string;
  attributes?: KeyValue[];
  status?: { code?: string | number; message?: string };
  events?: Array<{ name?: string; timeUnixNano?: string; attributes?: KeyValue[] }>;
}

export interface ResourceSpansJson {
  resource?: { attributes?: KeyValue[] };
  scopeSpans?: Array<{ scope?: { name?: string }; spans?: OtlpSpan[] }>;
}

const ATTRIBUTES: Shape = optional([{ key: 'string', value: optional({}) }]);
const TEXT = optional('string');

/** What flattenTrace reads of a trace answer (nested attribute values are read defensively instead). */
export const TRACE_BATCHES: Shape = {
  batches: optional([
    {
      resource: optional({ attributes: ATTRIBUTES }),
      scopeSpans: optional([
        {
          spans: optional([
            {
              spanID: TEXT,
              parentSpanID: TEXT,
              serviceName: TEXT,
              name: TEXT,
              kind: TEXT,
              startTimeUnixNano: TEXT,
              endTimeUnixNano: TEXT,
              durationNanos: TEXT,
              attributes: ATTRIBUTES,
              status: optional({ message: TEXT }),
              events: optional([{ name: TEXT, timeUnixNano: TEXT, attributes: ATTRIBUTES }]),
            },
          ]),
        },
      ]),
    },
  ]),
};

export interface FlatSpan {
  spanID: string;
  parentSpanID?: string;
  name?: string;
  serviceName?: string;
  kind?: string;
  status?: 'ok' | 'error' | 'unset';
  statusMessage?: string;
  startTimeUnixNano: string;
  durationNanos: string;
  attributes: Record<string, unknown>;
  /** Index into the trace's `resources` (a resource's attributes are shared by many spans). */
  resourceIndex: number;
  events?: Array<{ name: string; timeUnixNano: string; attributes: Record<string, unknown> }>;
}

function plain(v: AnyValue | undefined): unknown {
  if (!v) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  // int64 stays a string beyond 2^53, as protobuf JSON writes it.
  if (v.intValue !== undefined) return typeof v.intValue === 'string' && !Number.isSafeInteger(Number(v.intValue)) ? v.intValue : Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.bytesValue !== undefined) return v.bytesValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(plain);
  if (v.kvlistValue) return attributeMap(v.kvlistValue.values);
  return null;
}

const attributeMap = (kvs: KeyValue[] | undefined): Record<string, unknown> => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, plain(kv.value)]));

/** OTLP's STATUS_CODE_ERROR (or its number) as the spec's ok / error / unset. */
function statusOf(code: string | number | undefined): FlatSpan['status'] {
  if (code === 'STATUS_CODE_OK' || code === 1) return 'ok';
  if (code === 'STATUS_CODE_ERROR' || code === 2) return 'error';
  return 'unset';
}

/** Every span of the trace's batches in start-time order, and the resources they point to. */
export function flattenTrace(batches: readonly ResourceSpansJson[]): { resources: Array<Record<string, unknown>>; spans: FlatSpan[] } {
  const spans: FlatSpan[] = [];
  const resources: Array<Record<string, unknown>> = [];
  for (const rs of batches) {
    const resourceIndex = resources.push(attributeMap(rs.resource?.attributes)) - 1;
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        const start = BigInt(s.startTimeUnixNano ?? '0');
        const duration = s.durationNanos ?? (BigInt(s.endTimeUnixNano ?? '0') - start).toString();
        spans.push({
          spanID: s.spanID ?? '',
          ...(s.parentSpanID ? { parentSpanID: s.parentSpanID } : {}),
          ...(s.name ? { name: s.name } : {}),
          ...(s.serviceName ? { serviceName: s.serviceName } : {}),
          ...(s.kind ? { kind: s.kind.replace(/^SPAN_KIND_/, '').toLowerCase() } : {}),
          status: statusOf(s.status?.code),
          ...(s.status?.message ? { statusMessage: s.status.message } : {}),
          startTimeUnixNano: start.toString(),
          durationNanos: duration,
          attributes: attributeMap(s.attributes),
          resourceIndex,
          ...(s.events?.length ? { events: s.events.map((e) => ({ name: e.name ?? '', timeUnixNano: e.timeUnixNano ?? '', attributes: attributeMap(e.attributes) })) } : {}),
        });
      }
    }
  }
  spans.sort((a, b) => (BigInt(a.startTimeUnixNano) < BigInt(b.startTimeUnixNano) ? -1 : BigInt(a.startTimeUnixNano) > BigInt(b.startTimeUnixNano) ? 1 : 0));
  return { resources, spans };
}
