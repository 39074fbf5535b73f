import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExportLogsServiceRequestSchema, ExportLogsServiceResponseSchema, create, fromBinary, toBinary } from '@floe/proto';
import { flightDoGet } from '@floe/flight';
import {
  grpcLogExporter,
  jsonLogExporter,
  protoLogExporter,
  sendSampleLogs,
  plain,
  startFloe,
  waitFor,
  type FloeMode,
  type FloeUnderTest,
  type SentLogs,
} from '../src/index.ts';

/**
 * OTLP logs end to end, in both modes: the OpenTelemetry JS SDK's three log exporters (HTTP
 * JSON with gzip, HTTP protobuf, gRPC) → acceptor → WAL → writer → `<tenant>.<dataset>.logs` →
 * SQL over Flight, compared value by value; then bad input on /v1/logs and LogsService/Export,
 * answered in the envelope with the documented status, never a 500.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('logs ingest end to end (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'acme';

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const meta = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
  const sql = async (text: string) => {
    const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: meta(), deadlineMs: 20_000 });
    return table.toArray().map((r) => plain(r) as Record<string, unknown>);
  };
  const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;

  /** Rows of a service once `count` of them are committed (each record is its own export). */
  const waitForRows = (service: string, count: number, columns = '*, epoch_us("timestamp") AS timestamp_us', table = 'logs') =>
    waitFor(
      `${count} log rows of ${service}`,
      async () => {
        const rows = await sql(`SELECT ${columns} FROM ${table} WHERE service_name = ${quote(service)} ORDER BY time_unix_nano`);
        return rows.length === count ? rows : undefined;
      },
      30_000,
      200,
    );

  const maps = (row: Record<string, unknown>, scope: string) => ({
    str: row[`${scope}_attr_str`],
    int: row[`${scope}_attr_int`],
    double: row[`${scope}_attr_double`],
    bool: row[`${scope}_attr_bool`],
  });

  function expectStored(rows: Array<Record<string, unknown>>, sent: SentLogs) {
    expect(rows).toHaveLength(sent.records.length);
    rows.forEach((row, i) => {
      const want = sent.records[i]!;
      expect({
        time_unix_nano: row.time_unix_nano,
        service_name: row.service_name,
        severity_number: row.severity_number,
        severity_text: row.severity_text,
        body: row.body,
        body_type: row.body_type,
        event_name: row.event_name,
        trace_id: row.trace_id,
        span_id: row.span_id,
        flags: row.flags,
        scope_name: row.scope_name,
        scope_version: row.scope_version,
      }).toEqual({
        time_unix_nano: want.timeUnixNano,
        service_name: sent.service,
        severity_number: want.severityNumber,
        severity_text: want.severityText,
        body: want.body,
        body_type: want.bodyType,
        event_name: want.eventName,
        trace_id: want.traceId,
        span_id: want.spanId,
        flags: BigInt(want.flags),
        scope_name: sent.scope.name,
        scope_version: sent.scope.version,
      });
      // The SDK stamps the observed time at emit; the partition timestamp is the record time in µs.
      expect(typeof row.observed_time_unix_nano).toBe('bigint');
      expect(row.timestamp_us).toBe(want.timeUnixNano / 1000n);
      expect(maps(row, 'log')).toEqual(want.attributes);
      expect(maps(row, 'scope')).toEqual(sent.scopeAttributes);
      expect(maps(row, 'resource')).toEqual(sent.resource);
    });
  }

  it.each([
    ['otlp-http-json', () => jsonLogExporter(floe.otlpHttpUrl, { apiKey: key, tenant })],
    ['otlp-proto', () => protoLogExporter(floe.otlpHttpUrl, { apiKey: key, tenant })],
    ['otlp-grpc', () => grpcLogExporter(floe.otlpGrpcAddress, { apiKey: key, tenant })],
  ])('logs exported with %s are stored value by value', async (name, makeExporter) => {
    const sent = await sendSampleLogs(makeExporter(), `logs-${name}`);
    const rows = await waitForRows(sent.service, sent.records.length);
    expectStored(rows, sent);

    // The same rows through the tenant-pinned and the fully qualified names.
    const pinned = await sql(`SELECT count(*) AS n FROM sql_logs WHERE service_name = ${quote(sent.service)}`);
    expect(pinned[0]!.n).toBe(BigInt(sent.records.length));
    const qualified = await sql(`SELECT body FROM acme.default.logs WHERE service_name = ${quote(sent.service)} AND body_type = 'kvlist'`);
    expect(JSON.parse(qualified[0]!.body as string)).toEqual({ user: { id: 7, name: 'ann' }, ok: true, ratio: 0.75, tags: ['x', 'y'] });
    // Log rows join the trace they were emitted in.
    const inSpan = await sql(`SELECT count(*) AS n FROM logs WHERE service_name = ${quote(sent.service)} AND trace_id = '4bf92f3577b34da6a3ce929d0e0e4736'`);
    expect(inSpan[0]!.n).toBe(2n);
  });

  describe('bad input', () => {
    const post = (body: Uint8Array | string, headers: Record<string, string>) =>
      fetch(`${floe.otlpHttpUrl}/v1/logs`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/x-protobuf', ...headers } });

    const record = (body: string, traceId = '') => ({
      timeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
      severityText: 'INFO',
      body: { stringValue: body },
      ...(traceId ? { traceId } : {}),
    });
    const jsonBody = (service: string, ...records: object[]) =>
      JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] }, scopeLogs: [{ logRecords: records }] }] });

    it.each([
      ['garbage protobuf', Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x99, 0x01]), {}, 400, 'bad_data', /not a valid .*ExportLogsServiceRequest protobuf/],
      ['invalid JSON', '{"resourceLogs": [', { 'content-type': 'application/json' }, 400, 'bad_data', /not a valid OTLP JSON/],
      ['JSON of the wrong shape', '{"resourceLogs": {"x": 1}}', { 'content-type': 'application/json' }, 400, 'bad_data', /not a valid OTLP JSON/],
      // Valid JSON, but no UTF-8 string can hold it (nor can DuckDB's JSON reader in the writer).
      ['JSON with an unpaired surrogate', String.raw`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"a\ud800"}}]}]}]}`, { 'content-type': 'application/json' }, 400, 'bad_data', /invalid UTF8/],
      ['broken gzip', Buffer.from('definitely not gzip'), { 'content-encoding': 'gzip' }, 400, 'bad_data', /not valid gzip/],
      ['wrong content type', 'hello', { 'content-type': 'text/plain' }, 415, 'unsupported_media_type', /Content-Type/],
      ['unknown content encoding', Buffer.from('x'), { 'content-encoding': 'br' }, 415, 'unsupported_media_type', /Content-Encoding/],
      ['missing key', Buffer.alloc(0), { authorization: '' }, 401, 'unauthorized', /Authorization/],
      ['invalid key', Buffer.alloc(0), { authorization: 'Bearer floe_0000000000000000_nope' }, 401, 'unauthorized', /invalid or revoked/],
      ['missing tenant', Buffer.alloc(0), { 'x-tenant-id': '' }, 401, 'unauthorized', /X-Tenant-ID/],
    ] as const)('%s → %i %s', async (_name, body, headers, status, kind, message) => {
      const res = await post(body, headers as Record<string, string>);
      expect(res.status).toBe(status);
      const json = (await res.json()) as { status: string; errorType: string; error: string };
      expect(json.status).toBe('error');
      expect(json.errorType).toBe(kind);
      expect(json.error).toMatch(message);
    });

    it('a key of another tenant is 403', async () => {
      const otherKey = (await floe.bootstrap('logs-other')).api_key;
      const res = await post(Buffer.alloc(0), { authorization: `Bearer ${otherKey}` });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { errorType: string }).errorType).toBe('forbidden');
    });

    it('invalid records are OTLP partial success (JSON and protobuf); the valid ones of the same request land', async () => {
      const json = await post(jsonBody('logs-partial', record('kept after partial'), record('bad id', 'abcd')), { 'content-type': 'application/json' });
      expect(json.status).toBe(200);
      expect(await json.json()).toEqual({ partialSuccess: { rejectedLogRecords: '1', errorMessage: 'log record has an invalid trace_id (must be empty or 16 bytes)' } });

      const proto = toBinary(
        ExportLogsServiceRequestSchema,
        create(ExportLogsServiceRequestSchema, {
          resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: BigInt(Date.now()) * 1_000_000n, spanId: new Uint8Array(3) }] }] }],
        }),
      );
      const res = await post(proto, {});
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('application/x-protobuf');
      const decoded = fromBinary(ExportLogsServiceResponseSchema, new Uint8Array(await res.arrayBuffer()));
      expect(decoded.partialSuccess).toMatchObject({ rejectedLogRecords: 1n, errorMessage: 'log record has an invalid span_id (must be empty or 8 bytes)' });

      const rows = await waitForRows('logs-partial', 1, 'body');
      expect(rows).toEqual([{ body: 'kept after partial' }]);
    });

    it('gzip JSON sent by hand lands; an empty request is acknowledged', async () => {
      const res = await post(gzipSync(jsonBody('logs-gzip', record('zipped'))), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({});
      expect(await waitForRows('logs-gzip', 1, 'body, body_type')).toEqual([{ body: 'zipped', body_type: 'string' }]);
      const empty = await post(Buffer.alloc(0), {});
      expect(empty.status).toBe(200);
    });

    it('gRPC LogsService/Export: garbage INVALID_ARGUMENT, no key UNAUTHENTICATED, another tenant PERMISSION_DENIED, partial success', async () => {
      const client = new grpc.Client(floe.otlpGrpcAddress, grpc.credentials.createInsecure());
      const call = (body: Buffer, md: Record<string, string>) =>
        new Promise<{ code: number; details: string; response?: Buffer }>((resolve) => {
          const m = new grpc.Metadata();
          for (const [k, v] of Object.entries(md)) m.set(k, v);
          client.makeUnaryRequest('/opentelemetry.proto.collector.logs.v1.LogsService/Export', (b: Buffer) => b, (b: Buffer) => b, body, m, (err, response) =>
            resolve(err ? { code: err.code, details: err.details } : { code: 0, details: '', response }),
          );
        });
      const valid = Buffer.from(
        toBinary(
          ExportLogsServiceRequestSchema,
          create(ExportLogsServiceRequestSchema, {
            resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: BigInt(Date.now()) * 1_000_000n }, { timeUnixNano: 1n, traceId: new Uint8Array(15) }] }] }],
          }),
        ),
      );
      const garbage = await call(Buffer.from([0xff, 0xff, 0xff]), meta());
      expect(garbage.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(garbage.details).toMatch(/ExportLogsServiceRequest/);
      expect((await call(valid, { 'x-tenant-id': tenant })).code).toBe(grpc.status.UNAUTHENTICATED);
      const otherKey = (await floe.bootstrap('logs-grpc-other')).api_key;
      expect((await call(valid, { authorization: `Bearer ${otherKey}`, 'x-tenant-id': tenant })).code).toBe(grpc.status.PERMISSION_DENIED);
      const ok = await call(valid, meta());
      expect(ok.code).toBe(0);
      expect(fromBinary(ExportLogsServiceResponseSchema, ok.response!).partialSuccess).toMatchObject({ rejectedLogRecords: 1n });
      client.close();
    });
  });
});
