import { describe, expect, it } from 'vitest';
import { ExportLogsServiceRequestSchema } from '@floe/proto';
import { decodeMessage } from './decode.ts';

const body = (text: string) =>
  Buffer.from(JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: '@@' } }] }] }] }).replace('@@', text));
const decodedBody = (text: string) => {
  const req = decodeMessage(ExportLogsServiceRequestSchema, body(text), 'json');
  const v = req.resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!.body!.value;
  return v.case === 'stringValue' ? v.value : undefined;
};

/**
 * JSON can spell an unpaired surrogate (`"\ud800"`), which no protobuf string (UTF-8) can hold and
 * DuckDB's JSON reader refuses: stored, it would fail the writer's commit of its WAL segment on
 * every retry. protobuf-es's fromJson rejects it, so such a body is bad_data (400) like invalid
 * UTF-8 in a protobuf body; this pins that down.
 */
describe('decodeMessage (JSON): unpaired surrogates', () => {
  it.each([
    ['a lone high surrogate', String.raw`a\ud800b`],
    ['a lone low surrogate', String.raw`a\udc00b`],
    ['a high surrogate at the end', String.raw`ab\uDBFF`],
    ['two high surrogates', String.raw`\ud800\ud800\udc00`],
  ])('%s → bad_data', (_name, text) => {
    expect(() => decodedBody(text)).toThrow(expect.objectContaining({ kind: 'bad_data', message: expect.stringMatching(/invalid UTF8/) }));
  });

  it.each([
    ['a pair written as escapes', String.raw`\ud83d\ude00`, '😀'],
    ['a pair written as UTF-8', '😀', '😀'],
    ['an escaped backslash before u-d-8', String.raw`\\ud800`, String.raw`\ud800`],
    ['plain text', 'hello', 'hello'],
  ])('%s decodes', (_name, text, want) => {
    expect(decodedBody(text)).toBe(want);
  });
});

describe('decodeMessage (JSON): nesting', () => {
  const nested = (depth: number) =>
    Buffer.from(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":${'{"arrayValue":{"values":['.repeat(depth)}{"stringValue":"x"}${']}}'.repeat(depth)}}]}]}]}`);

  it.each([
    [200, 'cannot decode message opentelemetry.proto.common.v1.AnyValue from JSON: maximum recursion depth of 100 reached'],
    [50_000, 'values nested deeper than 100 levels'],
  ])('values nested %i deep are bad_data naming the depth, not the engine running out of stack', (depth, why) => {
    expect(() => decodeMessage(ExportLogsServiceRequestSchema, nested(depth), 'json')).toThrow(
      expect.objectContaining({ kind: 'bad_data', message: `body is not a valid OTLP JSON opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest: ${why}` }),
    );
  });
});
