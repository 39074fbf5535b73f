import { describe, expect, it } from 'vitest';
import { create, LokiPushRequestSchema, toBinary, type KeyValue } from '@floe/proto';
import { lokiStreamsFromJson, lokiStreamsFromProtobuf, lokiStreamsToOtlp, parseLabels } from './loki-push.ts';
import { logsToRows } from './logs-to-rows.ts';

const json = (doc: unknown) => new TextEncoder().encode(JSON.stringify(doc));
const stringAttrs = (kvs: readonly KeyValue[]) =>
  Object.fromEntries(kvs.map((kv) => [kv.key, kv.value?.value.case === 'stringValue' ? kv.value.value.value : undefined]));

describe('Loki push bodies', () => {
  it('reads a label set with the LogQL quoting rules', () => {
    expect(parseLabels('{app="api", env="prod", msg="say \\"hi\\"\\n"}')).toEqual({ app: 'api', env: 'prod', msg: 'say "hi"\n' });
    for (const [text, message] of [
      ['app="api"', /invalid stream labels/],
      ['{app=~"api"}', /label app must be given with =/],
      ['{app="api"} |= "x"', /expected a label set/],
      ['{}', /invalid stream labels/],
    ] as const) {
      expect(() => parseLabels(text)).toThrow(message);
      // A refused label set is refused again, not remembered as a good one.
      expect(() => parseLabels(text)).toThrow(message);
    }
  });

  it('parses a label set text once: the same text again is the same (frozen) labels', () => {
    const text = '{app="cached", env="prod"}';
    const first = parseLabels(text);
    expect(parseLabels(text)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(first).toEqual({ app: 'cached', env: 'prod' });
  });

  it('decodes protobuf (as Promtail sends it) and JSON alike', () => {
    const pb = toBinary(
      LokiPushRequestSchema,
      create(LokiPushRequestSchema, {
        streams: [{ labels: '{app="api", level="error"}', entries: [{ timestamp: { seconds: 1_700_000_000n, nanos: 5 }, line: 'boom', structuredMetadata: [{ name: 'trace_id', value: 'ab'.repeat(16) }] }] }],
      }),
    );
    const fromPb = lokiStreamsFromProtobuf(pb);
    const fromJson = lokiStreamsFromJson(json({ streams: [{ stream: { app: 'api', level: 'error' }, values: [['1700000000000000005', 'boom', { trace_id: 'ab'.repeat(16) }]] }] }));
    expect(fromPb).toEqual(fromJson);
    expect(fromPb).toEqual([{ labels: { app: 'api', level: 'error' }, entries: [{ timeNs: 1_700_000_000_000_000_005n, line: 'boom', metadata: [['trace_id', 'ab'.repeat(16)]] }] }]);
  });

  it('refuses malformed bodies with a message naming the place', () => {
    for (const [doc, message] of [
      [{}, /"streams" array/],
      [{ streams: [{ stream: { app: 1 }, values: [] }] }, /streams\[0\]\.stream must be an object of string label values/],
      [{ streams: [{ stream: {}, values: [] }] }, /has no labels/],
      [{ streams: [{ stream: { 'bad-name': 'x' }, values: [] }] }, /invalid label name/],
      [{ streams: [{ stream: { app: 'a' }, values: [[1700000000, 'x']] }] }, /streams\[0\]\.values\[0\] must be/],
      [{ streams: [{ stream: { app: 'a' }, values: [['17e9', 'x']] }] }, /unix nanoseconds as a string of digits/],
      [{ streams: [{ stream: { app: 'a' }, values: [['1', 'x', { n: 1 }]] }] }, /structured metadata must be an object of string values/],
    ] as const) {
      expect(() => lokiStreamsFromJson(json(doc))).toThrow(message);
    }
    expect(() => lokiStreamsFromJson(new TextEncoder().encode('{'))).toThrow(/not valid JSON/);
    expect(() => lokiStreamsFromProtobuf(new Uint8Array([0x0a, 0xff]))).toThrow(/not a valid logproto.PushRequest/);
    const before1970 = toBinary(LokiPushRequestSchema, create(LokiPushRequestSchema, { streams: [{ labels: '{app="api"}', entries: [{ timestamp: { seconds: -31_536_000n, nanos: 0 }, line: 'x' }] }] }));
    expect(() => lokiStreamsFromProtobuf(before1970)).toThrow(expect.objectContaining({ kind: 'bad_data', message: 'streams[0].entries[0]: the timestamp is before 1970-01-01' }));
  });

  it('stores labels as resource attributes, service_name as Loki 3 derives it, level as severity, trace ids as ids', () => {
    const req = lokiStreamsToOtlp([
      { labels: { app: 'api', env: 'prod', level: 'warn' }, entries: [{ timeNs: 1_700_000_000_000_000_000n, line: 'slow', metadata: [['trace_id', 'AB'.repeat(16)], ['span_id', 'cd'.repeat(8)], ['user', 'ann']] }] },
      { labels: { service_name: 'billing', job: 'ignored-for-service' }, entries: [{ timeNs: 1_700_000_000_000_000_001n, line: 'ok', metadata: [['trace_id', 'not-hex']] }] },
      { labels: { pod: 'p-1' }, entries: [{ timeNs: 1_700_000_000_000_000_002n, line: 'who', metadata: [] }] },
    ]);
    expect(req.resourceLogs.map((r) => stringAttrs(r.resource!.attributes))).toEqual([
      { 'service.name': 'api', app: 'api', env: 'prod' },
      { 'service.name': 'billing', job: 'ignored-for-service' },
      { pod: 'p-1' },
    ]);
    const rows = [...logsToRows(req).byHour.values()].flatMap((b) => b.items as Array<Record<string, unknown>>);
    expect(rows.map((r) => [r.service_name, r.severity_text, r.body, r.trace_id, r.span_id, r.log_attr_str])).toEqual([
      ['api', 'warn', 'slow', 'ab'.repeat(16), 'cd'.repeat(8), { user: 'ann' }],
      ['billing', '', 'ok', null, null, { trace_id: 'not-hex' }],
      ['unknown_service', '', 'who', null, null, {}],
    ]);
  });
});
