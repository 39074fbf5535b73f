import { describe, expect, it } from 'vitest';
import { spansToRows } from './traces-to-rows.ts';
import { zipkinToOtlp } from './zipkin.ts';

const body = (doc: unknown) => new TextEncoder().encode(JSON.stringify(doc));

describe('Zipkin v2 spans', () => {
  it('become OTLP spans as the Collector maps them: ids, times, kind, tags, error, annotations, endpoints', () => {
    const req = zipkinToOtlp(
      body([
        {
          traceId: '463ac35c9f6413ad',
          id: 'a2fb4a1d1a96d312',
          name: 'get /api',
          kind: 'SERVER',
          timestamp: 1_700_000_000_000_000,
          duration: 2500,
          localEndpoint: { serviceName: 'frontend', ipv4: '10.0.0.1' },
          remoteEndpoint: { serviceName: 'browser', ipv4: '192.168.1.5', port: 51234 },
          tags: { 'http.method': 'GET', error: 'timeout' },
          annotations: [{ timestamp: 1_700_000_000_001_000, value: 'retrying' }],
        },
        { traceId: '463ac35c9f6413ad463ac35c9f6413ad', id: '0000000000000abc', parentId: 'a2fb4a1d1a96d312', name: 'select', kind: 'CLIENT', timestamp: 1_700_000_000_000_500, duration: 1000, localEndpoint: { serviceName: 'db-client' } },
      ]),
    );
    expect(req.resourceSpans.map((r) => r.resource!.attributes.map((a) => [a.key, a.value?.value.value]))).toEqual([[['service.name', 'frontend']], [['service.name', 'db-client']]]);
    const rows = [...spansToRows(req).byHour.values()].flatMap((b) => b.items as Array<Record<string, unknown>>);
    expect(rows.map((r) => [r.trace_id, r.span_id, r.parent_span_id, r.name, r.kind, r.service_name, r.start_time_unix_nano, r.duration_nano, r.status_code, r.status_message])).toEqual([
      ['0000000000000000463ac35c9f6413ad', 'a2fb4a1d1a96d312', '', 'get /api', 'server', 'frontend', '1700000000000000000', '2500000', 'error', 'timeout'],
      ['463ac35c9f6413ad463ac35c9f6413ad', '0000000000000abc', 'a2fb4a1d1a96d312', 'select', 'client', 'db-client', '1700000000000500000', '1000000', 'unset', ''],
    ]);
    expect(rows[0]!.span_attr_str).toEqual({ 'http.method': 'GET', 'network.local.address': '10.0.0.1', 'peer.service': 'browser', 'network.peer.address': '192.168.1.5' });
    expect(rows[0]!.span_attr_int).toEqual({ 'network.peer.port': 51234 });
    expect(JSON.parse(String(rows[0]!.events_json))).toMatchObject([{ name: 'retrying', timeUnixNano: '1700000000001000000' }]);
  });

  it('refuses malformed spans naming the place', () => {
    for (const [doc, message] of [
      [{}, /JSON array of Zipkin v2 spans/],
      [[1], /spans\[0\] must be an object/],
      [[{ traceId: 'xyz', id: 'a2fb4a1d1a96d312' }], /spans\[0\]\.traceId must be 16 or 32 hex digits/],
      [[{ traceId: '463ac35c9f6413ad', id: '0000000000000000' }], /spans\[0\]\.id must not be all zeros/],
      [[{ traceId: '463ac35c9f6413ad', id: 'a2fb4a1d1a96d312', kind: 'PEER' }], /kind must be CLIENT, SERVER, PRODUCER or CONSUMER/],
      // One of Object's own names is no kind either (it was taken for one, a function).
      [[{ traceId: '463ac35c9f6413ad', id: 'a2fb4a1d1a96d312', kind: 'constructor' }], /kind must be CLIENT, SERVER, PRODUCER or CONSUMER/],
      [[{ traceId: '463ac35c9f6413ad', id: 'a2fb4a1d1a96d312', timestamp: -1 }], /timestamp must be a non-negative integer of microseconds/],
      [[{ traceId: '463ac35c9f6413ad', id: 'a2fb4a1d1a96d312', tags: { n: 1 } }], /tags\.n must be a string/],
      [[{ traceId: '463ac35c9f6413ad', id: 'a2fb4a1d1a96d312', annotations: [{ timestamp: 1 }] }], /annotations\[0\] must be/],
    ] as const) {
      expect(() => zipkinToOtlp(body(doc))).toThrow(message);
    }
    expect(() => zipkinToOtlp(new TextEncoder().encode('['))).toThrow(/not valid JSON/);
  });
});
