import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { Table, tableFromIPC } from 'apache-arrow';
import type { RecordBatch } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  create,
  fromBinary,
  toBinary,
  FlightDataSchema,
  FlightDescriptor_DescriptorType,
  FlightPutResultSchema,
  FlightEmptySchema,
  FlightService,
  grpcServiceDefinition,
  Querier,
  TempoTraceByIDRequestSchema,
  TempoTraceByIDResponseSchema,
} from '@floe/proto';
import type { FlightEmpty, MessageInitShape, TempoTraceByIDRequest, TempoTraceByIDResponse } from '@floe/proto';
import { closeFlightClients, flightDoGet, flightGetFlightInfo, ipcSchemaBytes, startFlightServer } from './index.ts';
import type { FlightServerHandle } from './index.ts';
import { rows, sampleTable } from './test-tables.ts';

class PermissionDenied extends Error {
  readonly grpcCode = 7;
}

describe('Flight server and client over a real grpc-js connection', () => {
  let server: FlightServerHandle;
  let url: string;
  const seen: { ticket: string; tenant: string | undefined }[] = [];
  const unexpected: unknown[] = [];
  let slowAborted = false;

  beforeAll(async () => {
    server = await startFlightServer({
      host: '127.0.0.1',
      port: 0,
      onError: (err) => unexpected.push(err),
      handlers: {
        async doGet(ticket, metadata, _call, signal) {
          const name = new TextDecoder().decode(ticket);
          seen.push({ ticket: name, tenant: metadata.get('x-tenant-id')[0]?.toString() });
          const table = sampleTable();
          switch (name) {
            case 'rows':
              return table;
            case 'empty':
              return { schema: table.schema, batches: [] };
            case 'stream': {
              async function* batches(): AsyncGenerator<RecordBatch> {
                for (let i = 0; i < 3; i++) yield* table.batches;
              }
              return { schema: table.schema, batches: batches() };
            }
            case 'denied':
              throw new PermissionDenied('tenant t2 may not read t1.default.logs');
            case 'bug':
              throw new Error('secret /var/lib/floe path in a stack');
            case 'slow':
              await sleep(2_000, undefined, { signal }).catch(() => {
                slowAborted = true;
              });
              return table;
            default:
              throw Object.assign(new Error(`unknown ticket ${name}`), { grpcCode: grpc.status.NOT_FOUND });
          }
        },
        // Echoes what it gathered: the descriptor's command and the number and sizes of the messages.
        async doPut(descriptor, messages) {
          return [new TextEncoder().encode(`${new TextDecoder().decode(descriptor.cmd)}:${messages.length}:${messages.map((m) => m.dataBody.byteLength).join(',')}`)];
        },
        async getFlightInfo(descriptor) {
          return {
            schema: ipcSchemaBytes(sampleTable().schema),
            flightDescriptor: descriptor,
            endpoint: [{ ticket: { ticket: new TextEncoder().encode('rows') } }],
            totalRecords: 3n,
            totalBytes: -1n,
          };
        },
      },
      extraServices: [
        {
          definition: grpcServiceDefinition(Querier),
          implementation: {
            FindTraceByID(
              call: grpc.ServerUnaryCall<TempoTraceByIDRequest, TempoTraceByIDResponse>,
              callback: grpc.sendUnaryData<TempoTraceByIDResponse>,
            ) {
              callback(null, create(TempoTraceByIDResponseSchema, { message: `id bytes ${call.request.traceID.length}` }));
            },
          },
        },
      ],
      maxPutBytes: 64 * 1024,
    });
    url = `127.0.0.1:${server.port}`;
  });

  afterAll(async () => {
    closeFlightClients();
    await server?.stop(1_000);
  });

  const ticket = (name: string) => new TextEncoder().encode(name);

  it('streams a table with int64, utf8, float64, timestamp and map columns and nulls', async () => {
    const table = await flightDoGet({ url, ticket: ticket('rows'), metadata: { 'X-Tenant-ID': 't1' }, deadlineMs: 5_000 });
    expect(table.numRows).toBe(3);
    expect(table.schema.fields.map((f) => `${f.name}:${f.type}`)).toEqual(sampleTable().schema.fields.map((f) => `${f.name}:${f.type}`));
    expect(rows(table)).toEqual(rows(sampleTable()));
    expect(seen.at(-1)).toEqual({ ticket: 'rows', tenant: 't1' });
  });

  it('gathers a DoPut stream for its handler, and refuses one over the size limit or without a descriptor', async () => {
    const put = (messages: Array<MessageInitShape<typeof FlightDataSchema>>) =>
      new Promise<{ answers: string[]; code?: number; details?: string }>((resolve) => {
        const client = new grpc.Client(url, grpc.credentials.createInsecure());
        const call = client.makeBidiStreamRequest('/arrow.flight.protocol.FlightService/DoPut', (x: Buffer) => x, (b: Buffer) => b, new grpc.Metadata());
        const answers: string[] = [];
        let done = false;
        const finish = (r: { code?: number; details?: string }) => {
          if (done) return;
          done = true;
          client.close();
          resolve({ answers, ...r });
        };
        call.on('data', (b: Buffer) => answers.push(new TextDecoder().decode(fromBinary(FlightPutResultSchema, b).appMetadata)));
        call.on('error', (err: grpc.ServiceError) => finish({ code: err.code, details: err.details }));
        call.on('end', () => finish({}));
        for (const m of messages) call.write(Buffer.from(toBinary(FlightDataSchema, create(FlightDataSchema, m))));
        call.end();
      });
    const descriptor = { type: FlightDescriptor_DescriptorType.CMD, cmd: new TextEncoder().encode('bind') };
    expect(await put([{ flightDescriptor: descriptor, dataBody: new Uint8Array(10) }, { dataBody: new Uint8Array(20) }])).toEqual({ answers: ['bind:2:10,20'] });
    const big = Array.from({ length: 5 }, () => ({ dataBody: new Uint8Array(16 * 1024) }));
    expect(await put([{ flightDescriptor: descriptor }, ...big])).toMatchObject({ answers: [], code: grpc.status.RESOURCE_EXHAUSTED, details: 'DoPut uploads at most 65536 bytes' });
    expect(await put([{ dataBody: new Uint8Array(1) }])).toMatchObject({ answers: [], code: grpc.status.INVALID_ARGUMENT });
    expect(unexpected).toEqual([]);
  });

  it('streams batches from an async iterator', async () => {
    const table = await flightDoGet({ url, ticket: ticket('stream'), deadlineMs: 5_000 });
    expect(table.numRows).toBe(9);
    expect(table.batches).toHaveLength(3);
  });

  it('returns an empty result with its schema', async () => {
    const table = await flightDoGet({ url, ticket: ticket('empty'), deadlineMs: 5_000 });
    expect(table).toBeInstanceOf(Table);
    expect(table.numRows).toBe(0);
    expect(table.schema.fields.map((f) => f.name)).toEqual(['id', 'name', 'ratio', 'ts', 'attrs']);
  });

  it('passes a handler grpcCode and message through to the client', async () => {
    const err = await flightDoGet({ url, ticket: ticket('denied'), deadlineMs: 5_000 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: 'tenant t2 may not read t1.default.logs' });
    const missing = await flightDoGet({ url, ticket: ticket('nope'), deadlineMs: 5_000 }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: grpc.status.NOT_FOUND });
  });

  it('answers unexpected errors with a generic INTERNAL and reports them to onError', async () => {
    const err = await flightDoGet({ url, ticket: ticket('bug'), deadlineMs: 5_000 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: grpc.status.INTERNAL, details: 'internal error' });
    expect(JSON.stringify(err)).not.toContain('secret');
    expect(String((err as Error).message)).not.toContain('secret');
    expect(unexpected.some((e) => (e as Error).message.includes('secret'))).toBe(true);
  });

  it('fails with DEADLINE_EXCEEDED when the handler is slower than the deadline, and aborts the handler', async () => {
    const started = Date.now();
    const err = await flightDoGet({ url, ticket: ticket('slow'), deadlineMs: 200 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    expect(Date.now() - started).toBeLessThan(1_500);
    await expect.poll(() => slowAborted, { timeout: 1_500 }).toBe(true);
  });

  it('cancels on an AbortSignal', async () => {
    const controller = new AbortController();
    const pending = flightDoGet({ url, ticket: ticket('slow'), deadlineMs: 5_000, signal: controller.signal }).catch((e: unknown) => e);
    setTimeout(() => controller.abort(), 50);
    expect(await pending).toMatchObject({ code: grpc.status.CANCELLED });
  });

  it('serves GetFlightInfo with an encapsulated schema', async () => {
    const info = await flightGetFlightInfo({ url, descriptor: { type: 2, cmd: ticket('SELECT 1') }, deadlineMs: 5_000 });
    expect(info.totalRecords).toBe(3n);
    expect(new TextDecoder().decode(info.endpoint[0]?.ticket?.ticket)).toBe('rows');
    expect(new TextDecoder().decode(info.flightDescriptor?.cmd)).toBe('SELECT 1');
    expect(tableFromIPC(info.schema).schema.fields).toHaveLength(5);
  });

  it('answers UNIMPLEMENTED for Flight methods without a handler', async () => {
    const Client = grpc.makeGenericClientConstructor(grpcServiceDefinition(FlightService), 'FlightService');
    const client = new Client(url, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      ListActions(request: FlightEmpty): grpc.ClientReadableStream<unknown>;
    };
    const call = client.ListActions(create(FlightEmptySchema));
    call.on('data', () => undefined);
    const [err] = await once(call, 'error');
    expect(err).toMatchObject({ code: grpc.status.UNIMPLEMENTED });
    client.close();
  });

  it('answers a request that is no protobuf message with INVALID_ARGUMENT (grpc-js would say INTERNAL), on every kind of method', async () => {
    const garbage = Buffer.from([0xff, 0xff, 0xff]);
    const reported = unexpected.length;
    const raw = (x: Buffer) => x;
    const client = new grpc.Client(url, grpc.credentials.createInsecure());
    const unary = (path: string) =>
      new Promise<{ code: number; details: string }>((resolve) => client.makeUnaryRequest(path, raw, raw, garbage, (err) => resolve({ code: err?.code ?? 0, details: err?.details ?? '' })));
    const serverStream = (path: string) =>
      new Promise<{ code: number; details: string }>((resolve) => {
        const call = client.makeServerStreamRequest(path, raw, raw, garbage);
        call.on('data', () => undefined);
        call.on('error', (err: grpc.ServiceError) => resolve({ code: err.code, details: err.details }));
        call.on('end', () => resolve({ code: 0, details: '' }));
      });
    const put = () =>
      new Promise<{ code: number; details: string }>((resolve) => {
        const call = client.makeBidiStreamRequest('/arrow.flight.protocol.FlightService/DoPut', raw, raw);
        call.on('data', () => undefined);
        call.on('error', (err: grpc.ServiceError) => resolve({ code: err.code, details: err.details }));
        call.on('end', () => resolve({ code: 0, details: '' }));
        call.write(garbage);
        call.end();
      });
    expect(await serverStream('/arrow.flight.protocol.FlightService/DoGet')).toEqual({ code: grpc.status.INVALID_ARGUMENT, details: 'the DoGet request is not a valid protobuf message' });
    expect(await unary('/arrow.flight.protocol.FlightService/GetFlightInfo')).toEqual({ code: grpc.status.INVALID_ARGUMENT, details: 'the GetFlightInfo request is not a valid protobuf message' });
    expect(await put()).toEqual({ code: grpc.status.INVALID_ARGUMENT, details: 'the DoPut request is not a valid protobuf message' });
    expect(await unary('/tempopb.Querier/FindTraceByID')).toEqual({ code: grpc.status.INVALID_ARGUMENT, details: 'the FindTraceByID request is not a valid protobuf message' });
    // A method without a handler stays UNIMPLEMENTED whatever it is sent.
    expect((await serverStream('/arrow.flight.protocol.FlightService/ListFlights')).code).toBe(grpc.status.UNIMPLEMENTED);
    expect(unexpected.length).toBe(reported);
    // The server still answers.
    expect((await flightDoGet({ url, ticket: ticket('rows'), deadlineMs: 5_000 })).numRows).toBe(3);
    client.close();
  });

  it('serves extra services on the same port', async () => {
    const Client = grpc.makeGenericClientConstructor(grpcServiceDefinition(Querier), 'Querier');
    const client = new Client(url, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      FindTraceByID(request: TempoTraceByIDRequest, callback: (err: grpc.ServiceError | null, res?: TempoTraceByIDResponse) => void): void;
    };
    const response = await new Promise<TempoTraceByIDResponse | undefined>((resolve, reject) =>
      client.FindTraceByID(create(TempoTraceByIDRequestSchema, { traceID: new Uint8Array(16) }), (err, res) => (err ? reject(err) : resolve(res))),
    );
    expect(response?.message).toBe('id bytes 16');
    client.close();
  });
});
