import { ERROR_RESPONSES } from '../management/schemas.ts';

/**
 * The JSON Schemas of the native Query IR endpoint (spec 2, Management: POST /api/v1/query and
 * GET /api/v1/query/sources). fastify validates bodies with them, so an invalid IR is a 400
 * naming the field (runtime's validationError), and the OpenAPI document shows the same objects.
 *
 * The body is one object per source, chosen by `source`. Each source's fields sit in an
 * if/then branch rather than a oneOf: with oneOf, Ajv's first error would be "must match exactly
 * one schema" instead of the field that is wrong.
 */

export const SOURCES = ['logs', 'metrics', 'traces', 'profiles'] as const;
export type SourceName = (typeof SOURCES)[number];

/** Rows, traces, series or functions one answer carries at most (`limit` may ask for fewer). */
export const MAX_LOG_ROWS = 5000;
export const MAX_TRACES = 1000;
export const MAX_SERIES = 1000;

export interface RangeJson {
  start: string;
  end: string;
}
export interface LabelMatcherJson {
  label: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}
export interface LogFilterJson {
  type: 'line' | 'label';
  op: string;
  value: string | number;
  label?: string;
}
export interface LogsQuery {
  source: 'logs';
  range: RangeJson;
  streams?: LabelMatcherJson[];
  filters?: LogFilterJson[];
  direction?: 'forward' | 'backward';
  limit?: number;
}
export interface TraceCondition {
  field: string;
  value: string | number | boolean;
  type?: 'int' | 'float';
}
export interface TracesQuery {
  source: 'traces';
  range: RangeJson;
  conditions?: TraceCondition[];
  min_duration?: string;
  max_duration?: string;
  limit?: number;
  spans_per_trace?: number;
}
export interface MetricsQuery {
  source: 'metrics';
  range: RangeJson;
  promql: string;
  step: string;
}
export interface ProfilesQuery {
  source: 'profiles';
  range: RangeJson;
  selector: string;
  view?: 'top' | 'flamegraph' | 'profiles';
  limit?: number;
  max_nodes?: number;
}
export type QueryIrBody = LogsQuery | TracesQuery | MetricsQuery | ProfilesQuery;

const time = {
  type: 'string',
  minLength: 1,
  maxLength: 40,
  description: 'RFC 3339 (2026-01-02T15:04:05.123Z), unix nanoseconds (more than 10 digits) or unix seconds, as a string.',
} as const;
const range = {
  type: 'object',
  additionalProperties: false,
  required: ['start', 'end'],
  properties: { start: time, end: time },
  description: 'The half-open window [start, end).',
} as const;
const labelName = { type: 'string', minLength: 1, maxLength: 256 } as const;
const text = { type: 'string', maxLength: 4096 } as const;
const duration = { type: 'string', minLength: 1, maxLength: 32, description: 'A Prometheus duration (250ms, 5m, 1h30m) or seconds.' } as const;
const common = { source: {}, range: {} } as const;

const labelMatcher = {
  type: 'object',
  additionalProperties: false,
  required: ['label', 'op', 'value'],
  properties: { label: labelName, op: { type: 'string', enum: ['=', '!=', '=~', '!~'] }, value: text },
} as const;

const logFilter = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'op', 'value'],
  properties: {
    type: { type: 'string', enum: ['line', 'label'] },
    label: labelName,
    op: { type: 'string', enum: ['contains', 'not_contains', 'match', 'not_match', '=', '!=', '=~', '!~', '>', '>=', '<', '<=', '=='] },
    // anyOf rather than a type list: Ajv's strict mode refuses union types.
    value: { anyOf: [{ type: 'string', maxLength: 4096 }, { type: 'number' }] },
  },
  allOf: [
    { if: { properties: { type: { const: 'line' } } }, then: { properties: { op: { enum: ['contains', 'not_contains', 'match', 'not_match'] }, label: false } } },
    { if: { properties: { type: { const: 'label' } } }, then: { required: ['label'], properties: { op: { enum: ['=', '!=', '=~', '!~', '>', '>=', '<', '<=', '=='] } } } },
  ],
  description:
    'Line filter: {"type":"line","op":"contains|not_contains|match|not_match","value":"text or RE2"}. Label filter: {"type":"label","label":"http.status_code","op":"=|!=|=~|!~","value":"text"}, or with a number value and >, >=, <, <=, ==, != to compare numerically.',
} as const;

const logsBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...common,
    streams: { type: 'array', maxItems: 64, items: labelMatcher, description: 'Stream selector (Prometheus matchers, RE2 anchored); every matcher must hold. Labels resolve as in LogQL: service_name, level, any attribute key.' },
    filters: { type: 'array', maxItems: 64, items: logFilter, description: 'Applied in order; every filter must hold.' },
    direction: { type: 'string', enum: ['backward', 'forward'], description: 'backward (default): newest first.' },
    limit: { type: 'integer', minimum: 1, maximum: MAX_LOG_ROWS, description: `Rows at most (default 100, at most ${MAX_LOG_ROWS}).` },
  },
} as const;

const tracesBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...common,
    conditions: {
      type: 'array',
      maxItems: 64,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['field', 'value'],
        properties: {
          field: { type: 'string', minLength: 1, maxLength: 256, description: 'As in TraceQL: name, status, kind, span.<key>, resource.<key> or .<key> (either).' },
          value: { anyOf: [{ type: 'string', maxLength: 4096 }, { type: 'number' }, { type: 'boolean' }], description: 'status: ok, error, unset; kind: server, client, …; an integral number is an int attribute.' },
          type: { type: 'string', enum: ['int', 'float'], description: 'Forces a number’s attribute type (float for 1.0).' },
        },
      },
      description: 'Span conditions (all on one span, `=` only); a trace matches when one of its spans meets them all. Empty: every trace.',
    },
    min_duration: duration,
    max_duration: duration,
    limit: { type: 'integer', minimum: 1, maximum: MAX_TRACES, description: 'Traces at most (default 20), newest first.' },
    spans_per_trace: { type: 'integer', minimum: 1, maximum: 100000, description: 'Matching spans listed per trace (default: all).' },
  },
} as const;

const metricsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['promql', 'step'],
  properties: {
    ...common,
    promql: { type: 'string', minLength: 1, maxLength: 16384, description: 'A PromQL expression evaluated over the range like /metricquery query_range (a bare selector reads the raw series).' },
    step: duration,
  },
} as const;

const profilesBody = {
  type: 'object',
  additionalProperties: false,
  required: ['selector'],
  properties: {
    ...common,
    selector: { type: 'string', minLength: 1, maxLength: 4096, description: 'Pyroscope selector with its profile type: process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="api"}.' },
    view: { type: 'string', enum: ['top', 'flamegraph', 'profiles'], description: 'top (default): functions by self value; flamegraph: a Pyroscope flamebearer document; profiles: the newest profiles as summaries (profile.id, timestamp, duration, sample.type, service.name, trace and span links, value).' },
    limit: { type: 'integer', minimum: 1, maximum: 10000, description: 'top: functions at most; profiles: profiles at most (default 100 each).' },
    max_nodes: { type: 'integer', minimum: 1, maximum: 65536, description: 'flamegraph: nodes at most (default 1024).' },
  },
} as const;

const branch = (source: SourceName, then: object) => ({ if: { properties: { source: { const: source } } }, then });

export const runQueryBody = {
  type: 'object',
  required: ['source', 'range'],
  properties: { source: { type: 'string', enum: [...SOURCES] }, range },
  allOf: [branch('logs', logsBody), branch('traces', tracesBody), branch('metrics', metricsBody), branch('profiles', profilesBody)],
  description: 'One query in Floe’s Query IR. `source` picks the table and which other fields apply (see GET /api/v1/query/sources).',
  examples: [
    { source: 'logs', range: { start: '2026-01-01T00:00:00Z', end: '2026-01-01T01:00:00Z' }, streams: [{ label: 'service_name', op: '=', value: 'checkout' }], filters: [{ type: 'line', op: 'contains', value: 'error' }], limit: 50 },
    { source: 'traces', range: { start: '2026-01-01T00:00:00Z', end: '2026-01-01T01:00:00Z' }, conditions: [{ field: 'resource.service.name', value: 'checkout' }, { field: 'status', value: 'error' }] },
  ],
} as const;

const nsText = { type: 'string', pattern: '^-?\\d+$', description: 'Unix nanoseconds.' } as const;
const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;

export const runQueryResponse = {
  type: 'object',
  required: ['source', 'truncated'],
  properties: {
    source: { type: 'string', enum: [...SOURCES] },
    truncated: { type: 'boolean', description: 'More matched than the answer carries (raise `limit` or narrow the query).' },
    rows: {
      type: 'array',
      description: 'logs: one object per log line.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['time', 'line', 'labels', 'metadata'],
        properties: { time: nsText, line: { type: 'string' }, labels: { ...stringMap, description: 'Stream labels (service_name, level).' }, metadata: { ...stringMap, description: 'trace_id, span_id and the record’s, resource’s and scope’s attributes as text.' } },
      },
    },
    traces: {
      type: 'array',
      description: 'traces: found traces, newest first.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['trace_id', 'start', 'duration_ns', 'matched', 'spans'],
        properties: {
          trace_id: { type: 'string' },
          root_service_name: { type: 'string' },
          root_name: { type: 'string' },
          start: nsText,
          duration_ns: nsText,
          matched: { type: 'integer', description: 'Spans that met the conditions.' },
          spans: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['span_id', 'start', 'duration_ns', 'attributes'],
              properties: { span_id: { type: 'string' }, name: { type: 'string' }, start: nsText, duration_ns: nsText, attributes: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } } },
            },
          },
        },
      },
    },
    series: {
      type: 'array',
      description: 'metrics: one series per label set; values as Prometheus prints them ("NaN", "+Inf").',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['labels', 'points'],
        properties: {
          labels: stringMap,
          points: { type: 'array', items: { type: 'object', additionalProperties: false, required: ['time', 'value'], properties: { time: nsText, value: { type: 'string' } } } },
        },
      },
    },
    functions: {
      type: 'array',
      description: 'profiles (top): functions by self value.',
      items: { type: 'object', additionalProperties: false, required: ['name', 'self', 'total'], properties: { name: { type: 'string' }, self: { type: 'number' }, total: { type: 'number' } } },
    },
    flamegraph: { type: 'object', additionalProperties: true, description: 'profiles (flamegraph): Pyroscope’s flamebearer document, as /profilequery/render answers.' },
    profiles: {
      type: 'array',
      description: 'profiles (profiles view): summaries, newest first.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['profile.id', 'profile.type', 'sample.type', 'sample.unit', 'service.name', 'timestamp', 'time_unix_nano', 'duration', 'trace.id', 'span.id', 'value'],
        properties: {
          'profile.id': { type: ['string', 'null'], description: '32 hex digits; null when the sender set none.' },
          'profile.type': { type: 'string' },
          'sample.type': { type: 'string' },
          'sample.unit': { type: 'string' },
          'service.name': { type: 'string' },
          timestamp: { type: 'string', description: 'RFC 3339 with nanoseconds.' },
          time_unix_nano: nsText,
          duration: { type: 'number', description: 'Nanoseconds.' },
          'trace.id': { type: ['string', 'null'], description: 'The trace the profile is linked to (the span carrying most of its samples); null when none.' },
          'span.id': { type: ['string', 'null'] },
          value: { type: 'number', description: 'Sum of every sample value, in sample.unit.' },
        },
      },
    },
    warnings: { type: 'array', items: { type: 'string' } },
  },
} as const;

export const sourcesResponse = {
  type: 'object',
  additionalProperties: false,
  required: ['tenant', 'dataset', 'sources'],
  properties: {
    tenant: { type: 'string' },
    dataset: { type: 'string' },
    sources: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'table', 'operations', 'query_fields', 'fields'],
        properties: {
          name: { type: 'string', enum: [...SOURCES] },
          table: { type: 'string' },
          description: { type: 'string' },
          operations: { type: 'array', items: { type: 'string' }, description: 'What POST /api/v1/query does with this source.' },
          query_fields: { type: 'array', items: { type: 'string' }, description: 'Body fields this source takes besides source and range.' },
          fields: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['name', 'type'],
              properties: { name: { type: 'string' }, type: { type: 'string', description: 'string, long, int, double, boolean, timestamptz, map<string,T> or list<T>.' }, description: { type: 'string' } },
            },
          },
        },
      },
    },
  },
} as const;

export const TAGS = ['query'] as const;
export { ERROR_RESPONSES };
