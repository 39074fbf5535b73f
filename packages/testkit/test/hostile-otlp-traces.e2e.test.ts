import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExportTraceServiceRequestSchema, ExportTraceServiceResponseSchema, SpanSchema, create, fromBinary, toBinary } from '@floe/proto';
import { flightDoGet } from '@floe/flight';
import { plain, startFloe, tenantSql, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * OTLP traces (POST /v1/traces, protobuf and JSON) sent by a hostile or careless client: bodies
 * that inflate into far more than they weigh get a bounded answer instead of exhausting the
 * acceptor, and the spans beside them still land. (hostile-ingest.e2e.test.ts covers the other
 * protocols, ingest-bad-input.e2e.test.ts the shared checks.)
 */

type Row = Record<string, unknown>;

/** A protobuf length-delimited field. */
function field(tag: number, value: Uint8Array): Buffer {
  const len: number[] = [];
  let n = value.length;
  for (; n >= 0x80; n >>>= 7) len.push((n & 0x7f) | 0x80);
  len.push(n);
  return Buffer.concat([Buffer.from([tag, ...len]), value]);
}

describe('hostile OTLP traces', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'acme';
  const nowNs = BigInt(Date.now()) * 1_000_000n;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const auth = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
  const post = (body: Uint8Array | string, headers: Record<string, string>) => fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body, headers: { ...auth(), ...headers } });
  const { rowsOf } = tenantSql(() => floe.flightAddress, auth);
  const span = (name: string, id: number) => ({ traceId: new Uint8Array(16).fill(id), spanId: new Uint8Array(8).fill(id), name, startTimeUnixNano: nowNs, endTimeUnixNano: nowNs + 5n });

  it('protobuf: a span of millions of empty events (a few KB gzipped, gigabytes as JSON) is rejected as partial success; the span beside it is stored', async () => {
    // Each empty event is two bytes on the wire (field 11, length 0) and ~50 as events_json.
    const bomb = Buffer.concat([toBinary(SpanSchema, create(SpanSchema, span('events-bomb', 1))), Buffer.alloc(6_000_000 * 2).fill(Buffer.from([0x5a, 0x00]))]);
    const ok = toBinary(SpanSchema, create(SpanSchema, { ...span('beside-bomb', 2), events: [{ name: 'e', timeUnixNano: nowNs }] }));
    const body = field(0x0a, field(0x12, Buffer.concat([field(0x12, bomb), field(0x12, ok)])));
    const res = await post(gzipSync(body), { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' });
    expect(res.status).toBe(200);
    const answer = fromBinary(ExportTraceServiceResponseSchema, new Uint8Array(await res.arrayBuffer()));
    expect(answer.partialSuccess).toMatchObject({ rejectedSpans: 1n, errorMessage: "span's events and links pass the request's 268435456 bytes of them; send fewer per request" });
    const rows = await rowsOf('the span beside the bomb', `SELECT name, events_json FROM traces WHERE name IN ('events-bomb', 'beside-bomb')`);
    expect(rows).toEqual([{ name: 'beside-bomb', events_json: `[{"timeUnixNano":"${nowNs}","name":"e","attributes":[]}]` }]);
  });

  it('protobuf: a resource of thousands of attributes over thousands of spans (copied to each row) is cut at the budget of entries; the spans within it are stored', async () => {
    // 4,096 string attributes and three empty maps: 4,099 entries a row, 4,093 rows' worth of the budget.
    // (Unbounded, 20,000 of each in a 60 KB body was 400 million entries, which took the flush past its memory.)
    const attributes = [{ key: 'service.name', value: { value: { case: 'stringValue' as const, value: 'resource-bomb' } } }, ...Array.from({ length: 4095 }, (_, i) => ({ key: `k${i}`, value: { value: { case: 'stringValue' as const, value: 'v' } } }))];
    const spans = Array.from({ length: 4200 }, (_, i) => span(`r${i}`, 9));
    const body = toBinary(ExportTraceServiceRequestSchema, create(ExportTraceServiceRequestSchema, { resourceSpans: [{ resource: { attributes }, scopeSpans: [{ spans }] }] }));
    const res = await post(gzipSync(body), { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' });
    expect(res.status).toBe(200);
    const answer = fromBinary(ExportTraceServiceResponseSchema, new Uint8Array(await res.arrayBuffer()));
    expect(answer.partialSuccess).toMatchObject({
      rejectedSpans: 107n,
      errorMessage: "span's resource attributes, once per span, pass the request's 16777216 entries; send fewer spans per resource or fewer resource attributes",
    });
    const rows = await rowsOf('the spans within the budget', `SELECT count(*) AS n, min(cardinality(resource_attr_str)) AS attrs FROM traces WHERE service_name = 'resource-bomb' HAVING count(*) > 0`);
    expect(rows).toEqual([{ n: 4093n, attrs: 4096n }]);
  });

  it('JSON: a gzip body of millions of empty objects is 400 naming the limit (it used to abort the acceptor: out of heap)', async () => {
    const events = `${'{},'.repeat(2_200_000)}{}`;
    const text = `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01010101010101010101010101010101","spanId":"0101010101010101","name":"json-bomb","startTimeUnixNano":"${nowNs}","events":[${events}]}]}]}]}`;
    const res = await post(gzipSync(text), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect({ status: res.status, body: await res.json() }).toEqual({
      status: 400,
      body: { status: 'error', errorType: 'bad_data', error: 'OTLP JSON body holds more than 2097152 objects and arrays; send fewer items per request (or protobuf)' },
    });
    // A request after it lands.
    const after = await post(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: '03030303030303030303030303030303', spanId: '0303030303030303', name: 'after-json-bomb', startTimeUnixNano: String(nowNs) }] }] }] }), { 'content-type': 'application/json' });
    expect(after.status).toBe(200);
    expect(await rowsOf('the span after the JSON bomb', `SELECT name FROM traces WHERE name IN ('json-bomb', 'after-json-bomb')`)).toEqual([{ name: 'after-json-bomb' }]);
  });

  it("JSON: OTLP/JSON's spellings (int64 as numbers or strings, enums as names or integers, base64 ids, unknown fields) are stored alike", async () => {
    const s = (name: string, id: string, extra: Record<string, unknown>) => ({ traceId: id.repeat(16), spanId: id.repeat(8), name, ...extra });
    const body = {
      futureField: { x: 1 },
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'json-spellings' } }], unknownToo: [1] },
          scopeSpans: [
            {
              spans: [
                s('as-strings', '04', { startTimeUnixNano: String(nowNs), endTimeUnixNano: String(nowNs + 7n), kind: 2, status: { code: 2 } }),
                s('as-numbers', '05', { startTimeUnixNano: Number(nowNs), endTimeUnixNano: Number(nowNs) + 1024, kind: 'SPAN_KIND_SERVER', status: { code: 'STATUS_CODE_ERROR' }, extra: true }),
                { ...s('base64-ids', '06', { startTimeUnixNano: String(nowNs) }), traceId: Buffer.alloc(16, 6).toString('base64'), spanId: Buffer.alloc(8, 6).toString('base64') },
              ],
            },
          ],
        },
      ],
    };
    const res = await post(JSON.stringify(body), { 'content-type': 'application/json; charset=utf-8' });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 200, body: {} });
    const rows = await rowsOf('the JSON spellings', `SELECT name, trace_id, kind, status_code, duration_nano FROM traces WHERE service_name = 'json-spellings' ORDER BY name`, 3);
    expect(rows).toEqual([
      { name: 'as-numbers', trace_id: '05'.repeat(16), kind: 'server', status_code: 'error', duration_nano: 1024n },
      { name: 'as-strings', trace_id: '04'.repeat(16), kind: 'server', status_code: 'error', duration_nano: 7n },
      { name: 'base64-ids', trace_id: '06'.repeat(16), kind: 'unspecified', status_code: 'unset', duration_nano: 0n },
    ]);
  });
});

describe('hostile OTLP traces, metrics generator on', () => {
  let floe: FloeUnderTest;
  let key: string;
  const nowNs = BigInt(Date.now()) * 1_000_000n;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { metrics_generator: { enabled: true } } });
    key = (await floe.bootstrap('acme')).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  it('protobuf: 32 million empty events in a 60 KB gzip body are answered, and the acceptor takes the next request (decoding them for the generator used to abort the process)', async () => {
    const headers = { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme', 'content-type': 'application/x-protobuf' };
    const span = (name: string, id: number) => toBinary(SpanSchema, create(SpanSchema, { traceId: new Uint8Array(16).fill(id), spanId: new Uint8Array(8).fill(id), name, kind: 2, startTimeUnixNano: nowNs, endTimeUnixNano: nowNs + 5n }));
    const bomb = Buffer.concat([span('generator-bomb', 1), Buffer.alloc(32_000_000 * 2).fill(Buffer.from([0x5a, 0x00]))]);
    const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: gzipSync(field(0x0a, field(0x12, field(0x12, bomb)))), headers: { ...headers, 'content-encoding': 'gzip' } });
    expect(res.status).toBe(200);
    expect(fromBinary(ExportTraceServiceResponseSchema, new Uint8Array(await res.arrayBuffer())).partialSuccess).toMatchObject({ rejectedSpans: 1n });
    const next = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: field(0x0a, field(0x12, field(0x12, span('after-generator-bomb', 2)))), headers });
    expect(next.status).toBe(200);
    const auth = { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' };
    const rows = await waitFor('the span after the bomb', async () => {
      const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT name FROM traces`), metadata: auth, deadlineMs: 20_000 });
      const got = table.toArray().map((r) => plain(r) as Row);
      return got.length > 0 ? got : undefined;
    });
    expect(rows).toEqual([{ name: 'after-generator-bomb' }]);
  });
});
