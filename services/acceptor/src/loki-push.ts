import { FloeError } from '@floe/errors';
import { create, ExportLogsServiceRequestSchema, LokiPushRequestSchema, type ExportLogsServiceRequest } from '@floe/proto';
import { parseLogQL } from '@floe/query';
import { Lru } from '@floe/storage';
import { stringKeyValue, type KeyValueInit } from './attributes.ts';
import { decodeMessage, parseJsonBody } from './decode.ts';

/**
 * Loki's push API (POST /loki/api/v1/push), so that Promtail, Grafana Alloy's loki.write, Fluent
 * Bit, Vector and the rest of Loki's senders can write to Floe unchanged. A request becomes an
 * OTLP logs export stored like any other:
 *
 * - a stream's labels become its resource's attributes, so `{app="api"}` selects it as it did in
 *   Loki; `service_name` names the service (service.name), else the first label Loki 3 derives
 *   it from (service, app, application, name, app_kubernetes_io_name, container, container_name,
 *   component, workload, job); `level` (or `detected_level`) is the records' severity text, since
 *   Floe's `level` label is that column;
 * - an entry's structured metadata becomes its record's attributes; `trace_id` and `span_id` with
 *   valid hex fill the record's trace and span ids instead.
 */

/** The service_name label, then the labels Loki 3 takes it from when a stream has none, in its order. */
const SERVICE_LABELS = ['service_name', 'service', 'app', 'application', 'name', 'app_kubernetes_io_name', 'container', 'container_name', 'component', 'workload', 'job'];
const LEVEL_LABELS = ['level', 'detected_level'];

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_INGEST_DECODE' });

interface PushStream {
  labels: Readonly<Record<string, string>>;
  entries: Array<{ timeNs: bigint; line: string; metadata: Array<[string, string]> }>;
}

/** A protobuf push body (already snappy-decompressed) as streams. */
export function lokiStreamsFromProtobuf(body: Uint8Array): PushStream[] {
  return decodeMessage(LokiPushRequestSchema, body, 'protobuf').streams.map((s, i) => ({
    labels: parseLabels(s.labels),
    entries: s.entries.map((e, j) => {
      const timeNs = e.timestamp ? e.timestamp.seconds * 1_000_000_000n + BigInt(e.timestamp.nanos) : 0n;
      // As JSON's digits-only timestamps: a time before 1970 is refused, not taken as "now" (which
      // would slip it past limits.ingest_max_age).
      if (timeNs < 0n) throw bad(`streams[${i}].entries[${j}]: the timestamp is before 1970-01-01`);
      return { timeNs, line: e.line, metadata: e.structuredMetadata.map((m) => [m.name, m.value] as [string, string]) };
    }),
  }));
}

/** A JSON push body: `{"streams":[{"stream":{…},"values":[["<unix ns>","<line>"(, {metadata})], …]}]}`. */
export function lokiStreamsFromJson(body: Uint8Array): PushStream[] {
  const streams = (parseJsonBody(body) as { streams?: unknown } | null)?.streams;
  if (!Array.isArray(streams)) throw bad('body must be an object with a "streams" array');
  return streams.map((s, i) => {
    const at = `streams[${i}]`;
    const labels = (s as { stream?: unknown })?.stream;
    if (!isStringMap(labels)) throw bad(`${at}.stream must be an object of string label values`);
    const values = (s as { values?: unknown }).values;
    if (!Array.isArray(values)) throw bad(`${at}.values must be an array`);
    return {
      labels: checkedLabels(labels, at),
      entries: values.map((v, j) => {
        const where = `${at}.values[${j}]`;
        if (!Array.isArray(v) || v.length < 2 || v.length > 3 || typeof v[0] !== 'string' || typeof v[1] !== 'string') {
          throw bad(`${where} must be ["<unix nanoseconds>", "<line>"] with an optional object of structured metadata`);
        }
        if (!/^\d{1,19}$/.test(v[0])) throw bad(`${where}: the timestamp must be unix nanoseconds as a string of digits`);
        if (v.length === 3 && !isStringMap(v[2])) throw bad(`${where}: structured metadata must be an object of string values`);
        return { timeNs: BigInt(v[0]), line: v[1], metadata: v.length === 3 ? Object.entries(v[2] as Record<string, string>) : [] };
      }),
    };
  });
}

/** The streams as an OTLP logs export: one resource per stream, its entries as log records. */
export function lokiStreamsToOtlp(streams: readonly PushStream[]): ExportLogsServiceRequest {
  return create(ExportLogsServiceRequestSchema, {
    resourceLogs: streams.map((s) => {
      const level = LEVEL_LABELS.map((l) => s.labels[l]).find((v) => v !== undefined && v !== '') ?? '';
      const attributes: KeyValueInit[] = [];
      const service = SERVICE_LABELS.map((l) => s.labels[l]).find((v) => v !== undefined && v !== '');
      if (service !== undefined) attributes.push(stringKeyValue('service.name', service));
      for (const [name, value] of Object.entries(s.labels)) {
        if (name === 'service_name' || LEVEL_LABELS.includes(name)) continue;
        attributes.push(stringKeyValue(name, value));
      }
      return {
        resource: { attributes },
        scopeLogs: [{ scope: { name: 'loki.push' }, logRecords: s.entries.map((e) => recordOf(e, level)) }],
      };
    }),
  });
}

function recordOf(e: PushStream['entries'][number], level: string) {
  const attributes: KeyValueInit[] = [];
  let traceId: Uint8Array | undefined;
  let spanId: Uint8Array | undefined;
  for (const [name, value] of e.metadata) {
    if (name === 'trace_id' && /^[0-9a-fA-F]{32}$/.test(value)) traceId = Buffer.from(value, 'hex');
    else if (name === 'span_id' && /^[0-9a-fA-F]{16}$/.test(value)) spanId = Buffer.from(value, 'hex');
    else attributes.push(stringKeyValue(name, value));
  }
  return {
    timeUnixNano: e.timeNs,
    severityText: level,
    body: { value: { case: 'stringValue' as const, value: e.line } },
    attributes,
    ...(traceId ? { traceId } : {}),
    ...(spanId ? { spanId } : {}),
  };
}


/**
 * A stream's label set text, `{app="api", env="prod"}`, read with the LogQL grammar (the same
 * quoting rules); every matcher must be `=`, and a label may appear once.
 */
export function parseLabels(text: string): Readonly<Record<string, string>> {
  const known = PARSED_LABELS.get(text);
  if (known) return known;
  const labels = Object.freeze(parseLabelsText(text));
  PARSED_LABELS.set(text, labels);
  return labels;
}

/**
 * Label sets parsed before, by their text: a push names the same few streams again and again, and
 * the LogQL parser takes ~16 µs a set (a body of tiny streams held the event loop for seconds).
 * Bounded by the texts' length (~8 MB of label text).
 */
const PARSED_LABELS = new Lru<string, Readonly<Record<string, string>>>(4_000_000, (labels) => Object.entries(labels).reduce((n, [k, v]) => n + k.length + v.length + 8, 64));

function parseLabelsText(text: string): Record<string, string> {
  let expr;
  try {
    expr = parseLogQL(text);
  } catch (err) {
    throw bad(`invalid stream labels ${JSON.stringify(text.slice(0, 200))}: ${(err as Error).message}`);
  }
  if (expr.kind !== 'log' || expr.pipeline.length > 0) throw bad(`invalid stream labels ${JSON.stringify(text.slice(0, 200))}: expected a label set such as {app="api"}`);
  const labels: Record<string, string> = {};
  for (const m of expr.selector.matchers) {
    if (m.op !== '=') throw bad(`invalid stream labels ${JSON.stringify(text.slice(0, 200))}: label ${m.label} must be given with =`);
    labels[m.label] = m.value;
  }
  return checkedLabels(labels, 'stream');
}

function checkedLabels(labels: Record<string, string>, at: string): Record<string, string> {
  const names = Object.keys(labels);
  if (names.length === 0) throw bad(`${at} has no labels: a stream needs at least one`);
  for (const name of names) if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name)) throw bad(`${at}: invalid label name ${JSON.stringify(name.slice(0, 64))}`);
  return labels;
}

const isStringMap = (v: unknown): v is Record<string, string> => v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');
