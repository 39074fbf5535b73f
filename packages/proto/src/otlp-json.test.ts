import { describe, expect, it } from 'vitest';
import {
  decodeOtlpJson,
  ExportLogsServiceRequestSchema,
  ExportMetricsServiceRequestSchema,
  ExportProfilesServiceRequestSchema,
  ExportTraceServiceRequestSchema,
  SeverityNumber,
  Span_SpanKind,
  Status_StatusCode,
} from './index.ts';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

// Shaped like the body an OTel HTTP/JSON exporter posts to /v1/traces.
const traceBody = JSON.stringify({
  resourceSpans: [
    {
      resource: {
        attributes: [
          { key: 'service.name', value: { stringValue: 'checkout' } },
          { key: 'process.pid', value: { intValue: 4242 } },
        ],
        droppedAttributesCount: 0,
      },
      scopeSpans: [
        {
          scope: { name: '@opentelemetry/instrumentation-http', version: '0.57.0' },
          spans: [
            {
              traceId: '5B8EFFF798038103D269B633813FC60C',
              spanId: 'eee19b7ec3c1b174',
              parentSpanId: 'eee19b7ec3c1b173',
              traceState: 'vendor=x',
              name: 'GET /api/cart',
              kind: 2,
              startTimeUnixNano: '1544712660000000000',
              endTimeUnixNano: '1544712661000000000',
              attributes: [
                { key: 'http.response.status_code', value: { intValue: '200' } },
                { key: 'ratio', value: { doubleValue: 0.5 } },
                { key: 'cached', value: { boolValue: false } },
                { key: 'tags', value: { arrayValue: { values: [{ stringValue: 'a' }, { intValue: '2' }] } } },
                { key: 'raw', value: { bytesValue: 'AQID' } },
              ],
              droppedAttributesCount: 0,
              events: [
                {
                  timeUnixNano: '1544712660500000000',
                  name: 'exception',
                  attributes: [{ key: 'exception.message', value: { stringValue: 'boom' } }],
                },
              ],
              links: [
                {
                  traceId: '00000000000000000000000000000001',
                  spanId: '0000000000000002',
                  attributes: [],
                  droppedAttributesCount: 0,
                  flags: 257,
                },
              ],
              status: { code: 2, message: 'boom' },
              flags: 769,
              someFutureField: { nested: true },
            },
          ],
        },
      ],
      schemaUrl: 'https://opentelemetry.io/schemas/1.26.0',
    },
  ],
});

describe('decodeOtlpJson', () => {
  it('decodes an OTLP/JSON trace body with hex ids, string int64s and enum numbers', () => {
    const request = decodeOtlpJson(ExportTraceServiceRequestSchema, traceBody);
    const rs = request.resourceSpans[0]!;
    expect(rs.schemaUrl).toBe('https://opentelemetry.io/schemas/1.26.0');
    expect(rs.resource?.attributes[1]?.value?.value).toEqual({ case: 'intValue', value: 4242n });

    const span = rs.scopeSpans[0]!.spans[0]!;
    expect(hex(span.traceId)).toBe('5b8efff798038103d269b633813fc60c');
    expect(hex(span.spanId)).toBe('eee19b7ec3c1b174');
    expect(hex(span.parentSpanId)).toBe('eee19b7ec3c1b173');
    expect(span.kind).toBe(Span_SpanKind.SERVER);
    expect(span.startTimeUnixNano).toBe(1544712660000000000n);
    expect(span.endTimeUnixNano - span.startTimeUnixNano).toBe(1_000_000_000n);
    expect(span.flags).toBe(769);
    expect(span.status).toMatchObject({ code: Status_StatusCode.ERROR, message: 'boom' });
    expect(span.events[0]?.timeUnixNano).toBe(1544712660500000000n);

    const attrs = Object.fromEntries(span.attributes.map((a) => [a.key, a.value?.value]));
    expect(attrs['http.response.status_code']).toEqual({ case: 'intValue', value: 200n });
    expect(attrs['ratio']).toEqual({ case: 'doubleValue', value: 0.5 });
    expect(attrs['cached']).toEqual({ case: 'boolValue', value: false });
    expect(attrs['raw']?.case).toBe('bytesValue');
    expect(Array.from(attrs['raw']?.value as Uint8Array)).toEqual([1, 2, 3]);

    const link = span.links[0]!;
    expect(hex(link.traceId)).toBe('00000000000000000000000000000001');
    expect(hex(link.spanId)).toBe('0000000000000002');
    expect(link.flags).toBe(257);
  });

  it('accepts a Uint8Array body and snake_case keys', () => {
    const body = new TextEncoder().encode(
      JSON.stringify({ resource_spans: [{ scope_spans: [{ spans: [{ trace_id: 'ab'.repeat(16), span_id: 'cd'.repeat(8), name: 'x' }] }] }] }),
    );
    const span = decodeOtlpJson(ExportTraceServiceRequestSchema, body).resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect(hex(span.traceId)).toBe('ab'.repeat(16));
    expect(hex(span.spanId)).toBe('cd'.repeat(8));
  });

  it('decodes hex cut short (an odd count of digits) as an id of no valid length, for the item to be rejected rather than the request', () => {
    const body = JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'a'.repeat(33), spanId: 'b'.repeat(15), name: 'x' }] }] }] });
    const span = decodeOtlpJson(ExportTraceServiceRequestSchema, body).resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect([span.traceId.length, span.spanId.length]).toEqual([1, 1]);
  });

  it('leaves base64 ids from non-conforming senders to the proto3 JSON decoder', () => {
    const traceId = Buffer.from('0102030405060708090a0b0c0d0e0f10', 'hex');
    const body = JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: traceId.toString('base64') }] }] }] });
    const span = decodeOtlpJson(ExportTraceServiceRequestSchema, body).resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect(hex(span.traceId)).toBe('0102030405060708090a0b0c0d0e0f10');
  });

  it('converts ids in log records', () => {
    const body = JSON.stringify({
      resourceLogs: [
        {
          scopeLogs: [
            {
              logRecords: [
                {
                  timeUnixNano: '1700000000000000001',
                  observedTimeUnixNano: '1700000000000000002',
                  severityNumber: 17,
                  severityText: 'ERROR',
                  eventName: 'app.failure',
                  body: { kvlistValue: { values: [{ key: 'msg', value: { stringValue: 'disk full' } }] } },
                  traceId: '5b8efff798038103d269b633813fc60c',
                  spanId: 'eee19b7ec3c1b174',
                  flags: 1,
                },
              ],
            },
          ],
        },
      ],
    });
    const record = decodeOtlpJson(ExportLogsServiceRequestSchema, body).resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!;
    expect(record.severityNumber).toBe(SeverityNumber.ERROR);
    expect(record.observedTimeUnixNano).toBe(1700000000000000002n);
    expect(record.eventName).toBe('app.failure');
    expect(record.body?.value.case).toBe('kvlistValue');
    expect(hex(record.traceId)).toBe('5b8efff798038103d269b633813fc60c');
    expect(hex(record.spanId)).toBe('eee19b7ec3c1b174');
  });

  it('converts ids in metric exemplars', () => {
    const body = JSON.stringify({
      resourceMetrics: [
        {
          scopeMetrics: [
            {
              metrics: [
                {
                  name: 'http.server.duration',
                  unit: 'ms',
                  histogram: {
                    aggregationTemporality: 2,
                    dataPoints: [
                      {
                        startTimeUnixNano: '1',
                        timeUnixNano: '2',
                        count: '3',
                        sum: 12.5,
                        bucketCounts: ['1', '2', '0'],
                        explicitBounds: [5, 10],
                        exemplars: [
                          { timeUnixNano: '2', asDouble: 7, traceId: '5b8efff798038103d269b633813fc60c', spanId: 'eee19b7ec3c1b174' },
                        ],
                      },
                    ],
                  },
                },
              ],
            },
          ],
        },
      ],
    });
    const metric = decodeOtlpJson(ExportMetricsServiceRequestSchema, body).resourceMetrics[0]!.scopeMetrics[0]!.metrics[0]!;
    expect(metric.data.case).toBe('histogram');
    const point = metric.data.case === 'histogram' ? metric.data.value.dataPoints[0]! : undefined;
    expect(point?.bucketCounts).toEqual([1n, 2n, 0n]);
    expect(point?.sum).toBe(12.5);
    expect(hex(point!.exemplars[0]!.traceId)).toBe('5b8efff798038103d269b633813fc60c');
    expect(hex(point!.exemplars[0]!.spanId)).toBe('eee19b7ec3c1b174');
  });

  it('converts ids in the profiles dictionary link table and profile ids', () => {
    const body = JSON.stringify({
      dictionary: { linkTable: [{}, { traceId: '5b8efff798038103d269b633813fc60c', spanId: 'eee19b7ec3c1b174' }], stringTable: [''] },
      resourceProfiles: [{ scopeProfiles: [{ profiles: [{ profileId: '0102030405060708090a0b0c0d0e0f10', samples: [{ values: ['5'], linkIndex: 1 }] }] }] }],
    });
    const request = decodeOtlpJson(ExportProfilesServiceRequestSchema, body);
    expect(hex(request.dictionary!.linkTable[1]!.traceId)).toBe('5b8efff798038103d269b633813fc60c');
    const profile = request.resourceProfiles[0]!.scopeProfiles[0]!.profiles[0]!;
    expect(hex(profile.profileId)).toBe('0102030405060708090a0b0c0d0e0f10');
    expect(profile.samples[0]).toMatchObject({ values: [5n], linkIndex: 1 });
  });

  it('rejects malformed JSON and wrongly typed values', () => {
    expect(() => decodeOtlpJson(ExportTraceServiceRequestSchema, '{"resourceSpans":')).toThrow();
    expect(() => decodeOtlpJson(ExportTraceServiceRequestSchema, '{"resourceSpans":[{"scopeSpans":"nope"}]}')).toThrow();
  });
});
