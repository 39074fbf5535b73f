import { constants as http2 } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import type { RecordBatch, Schema, Table } from 'apache-arrow';
import { create, FlightHandshakeResponseSchema, FlightInfoSchema, FlightPutResultSchema, FlightResultSchema, FlightService, FlightSchemaResultSchema, grpcServiceDefinition } from '@floe/proto';
import type { FlightAction, FlightData, FlightDescriptor, FlightHandshakeRequest, FlightHandshakeResponse, FlightInfo, FlightPutResult, FlightResult, FlightSchemaResult, FlightTicket, MessageInitShape } from '@floe/proto';
import { deliberateGrpcCode, grpcStatusFromError } from './errors.ts';
import { serializeFlightData } from './flight-data-wire.ts';
import { encodeFlightData, ipcSchemaBytes } from './ipc-messages.ts';
import { callSignal, resetServerCall } from './grpc-call.ts';
import { guardRequestDecoding, isUndecodable, undecodableStatus } from './request-decoding.ts';

export interface DoGetStream {
  schema: Schema;
  batches: AsyncIterable<RecordBatch> | Iterable<RecordBatch>;
  /** Called once when the call ends, however it ends (sent, failed, cancelled, reset at `sendBy`). */
  release?: () => void;
  /**
   * Epoch ms by which the client must have taken the whole result; a call still sending then is
   * reset (the client sees CANCELLED). A client that stops reading cannot hold the result longer.
   */
  sendBy?: number;
}

export type DoGetCall = grpc.ServerWritableStream<FlightTicket, FlightData>;

export interface FlightHandlers {
  /** `signal` aborts when the client cancels or its deadline passes; stop work then. */
  doGet(ticket: Uint8Array, metadata: grpc.Metadata, call: DoGetCall, signal: AbortSignal): Promise<DoGetStream | Table>;
  /** `signal` aborts when the client cancels or its deadline passes, as for doGet. */
  getFlightInfo?(
    descriptor: FlightDescriptor,
    metadata: grpc.Metadata,
    signal: AbortSignal,
  ): Promise<FlightInfo | MessageInitShape<typeof FlightInfoSchema>>;
  /** Answered as SchemaResult with the schema in its encapsulated IPC form. */
  getSchema?(descriptor: FlightDescriptor, metadata: grpc.Metadata, signal: AbortSignal): Promise<Schema>;
  /**
   * Flight's Handshake, the log-in of Flight SQL clients (JDBC, ADBC): the credentials come in
   * the call's metadata; the answer is the bearer token they send on every later call, returned
   * in the `authorization` response header as those clients read it.
   */
  handshake?(metadata: grpc.Metadata): Promise<string>;
  /** Flight's DoAction: the bodies of the Result messages to stream back, in order. */
  doAction?(type: string, body: Uint8Array, metadata: grpc.Metadata): Promise<Uint8Array[]>;
  /**
   * Flight's DoPut, for small uploads only (Flight SQL's parameter bindings): the descriptor of
   * the first message and every message, at most `maxPutBytes` of them in all, gathered before
   * the call; the answer is the app_metadata of the PutResult messages to stream back.
   */
  doPut?(descriptor: FlightDescriptor, messages: FlightData[], metadata: grpc.Metadata): Promise<Uint8Array[]>;
}

export interface ExtraService {
  definition: grpc.ServiceDefinition;
  implementation: grpc.UntypedServiceImplementation;
}

export interface FlightServerOptions {
  /** Defaults to 127.0.0.1: listening on all interfaces is an explicit choice. */
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  handlers: FlightHandlers;
  /** More services on the same port (e.g. Tempo's Querier). */
  extraServices?: ExtraService[];
  /** Told about every unexpected handler error (those answered as a generic INTERNAL). */
  onError?: (err: unknown, method: string) => void;
  serverOptions?: grpc.ServerOptions;
  /** TLS (config `tls`); absent: cleartext. */
  credentials?: grpc.ServerCredentials;
  /** Most bytes one DoPut may upload (header and body of every message); default 1 MiB. */
  maxPutBytes?: number;
  /** Wraps each service's implementation before it is added (self-monitoring spans). */
  instrument?: (definition: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation) => grpc.UntypedServiceImplementation;
}

export interface FlightServerHandle {
  port: number;
  server: grpc.Server;
  /** Graceful shutdown, forced after `graceMs` (default 5 s). */
  stop(graceMs?: number): Promise<void>;
  /** Graceful shutdown only: waits for running calls to finish. */
  tryShutdown(): Promise<void>;
}

/**
 * Messages handed to grpc-js that HTTP/2 has not taken yet. grpc-js buffers 16 messages (its
 * object-mode highWaterMark) whatever their size before write() says to wait: for record batches
 * of megabytes, a copy of much of the result sat in its buffers for a client that stopped reading.
 */
const MAX_UNSENT = 2;

/**
 * Writes every message, at most MAX_UNSENT ahead of what HTTP/2 took; true once all were taken,
 * false when `signal` stopped it. `written.unsent`: those HTTP/2 has not taken yet (also when
 * `messages` threw).
 */
async function writeAll(call: DoGetCall, messages: AsyncIterable<FlightData>, signal: AbortSignal, written: { unsent: number }): Promise<boolean> {
  let wake: (() => void) | undefined;
  const taken = () => {
    written.unsent--;
    wake?.();
  };
  const untilUnsent = (most: number) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (written.unsent > most && !signal.aborted) return;
        wake = undefined;
        signal.removeEventListener('abort', check);
        resolve();
      };
      wake = check;
      signal.addEventListener('abort', check);
      check();
    });
  for await (const message of messages) {
    if (signal.aborted) return false;
    written.unsent++;
    call.write(message, taken);
    await untilUnsent(MAX_UNSENT - 1);
  }
  await untilUnsent(0);
  return !signal.aborted;
}

function bindAddress(host: string, port: number): string {
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `${bracketed}:${port}`;
}

/** Starts a grpc-js server exposing FlightService (DoGet, GetFlightInfo, GetSchema, Handshake, DoAction, DoPut); other Flight methods answer UNIMPLEMENTED. */
export async function startFlightServer(options: FlightServerOptions): Promise<FlightServerHandle> {
  const { handlers, onError } = options;
  const report = (err: unknown, method: string, signal?: AbortSignal) => {
    if (signal?.aborted !== true && deliberateGrpcCode(err) === undefined) onError?.(err, method);
  };

  const server = new grpc.Server(options.serverOptions);
  const definition = grpcServiceDefinition(FlightService);

  const implementation: grpc.UntypedServiceImplementation = {
    DoGet: (call: DoGetCall) => {
      const signal = callSignal(call);
      void (async () => {
        let release: (() => void) | undefined;
        const late = new AbortController();
        let timer: NodeJS.Timeout | undefined;
        const written = { unsent: 0 };
        try {
          const result: Partial<DoGetStream> & Pick<DoGetStream, 'schema' | 'batches'> = await handlers.doGet(call.request.ticket, call.metadata, call, signal);
          release = result.release;
          if (result.sendBy !== undefined) timer = setTimeout(() => late.abort(), Math.max(0, result.sendBy - Date.now()));
          // A Table has the same two properties, so both result shapes encode alike.
          const sent = await writeAll(call, encodeFlightData(result.batches, result.schema), AbortSignal.any([signal, late.signal]), written);
          if (sent) call.end();
          else if (!signal.aborted) resetServerCall(call);
        } catch (err) {
          report(err, 'DoGet', signal);
          // Failed half-way (its batches or their encoding): a status goes out only after the
          // messages written before it, which a client that stopped reading never takes, so the
          // call, and those messages, would stay until its connection closed. Reset it then.
          if (written.unsent > 0 && !signal.aborted) resetServerCall(call, http2.NGHTTP2_INTERNAL_ERROR);
          else call.emit('error', grpcStatusFromError(err));
        } finally {
          clearTimeout(timer);
          release?.();
        }
      })();
    },
  };

  if (handlers.getFlightInfo) {
    const getFlightInfo = handlers.getFlightInfo.bind(handlers);
    implementation.GetFlightInfo = (
      call: grpc.ServerUnaryCall<FlightDescriptor, FlightInfo>,
      callback: grpc.sendUnaryData<FlightInfo>,
    ) => {
      const signal = callSignal(call);
      getFlightInfo(call.request, call.metadata, signal).then(
        (info) => callback(null, create(FlightInfoSchema, info)),
        (err: unknown) => {
          report(err, 'GetFlightInfo', signal);
          callback(grpcStatusFromError(err));
        },
      );
    };
  }

  if (handlers.getSchema) {
    const getSchema = handlers.getSchema.bind(handlers);
    implementation.GetSchema = (
      call: grpc.ServerUnaryCall<FlightDescriptor, FlightSchemaResult>,
      callback: grpc.sendUnaryData<FlightSchemaResult>,
    ) => {
      const signal = callSignal(call);
      getSchema(call.request, call.metadata, signal).then(
        (schema) => callback(null, create(FlightSchemaResultSchema, { schema: ipcSchemaBytes(schema) })),
        (err: unknown) => {
          report(err, 'GetSchema', signal);
          callback(grpcStatusFromError(err));
        },
      );
    };
  }

  if (handlers.handshake) {
    const handshake = handlers.handshake.bind(handlers);
    implementation.Handshake = (call: grpc.ServerDuplexStream<FlightHandshakeRequest, FlightHandshakeResponse>) => {
      let answered = false;
      // The client's request messages carry nothing Floe reads (the credentials are its headers), but they must decode.
      call.on('data', (message: unknown) => {
        if (answered || !isUndecodable(message)) return;
        answered = true;
        call.emit('error', undecodableStatus(definition.Handshake!.path));
      });
      handshake(call.metadata).then(
        (token) => {
          if (answered) return;
          answered = true;
          const headers = new grpc.Metadata();
          headers.set('authorization', `Bearer ${token}`);
          call.sendMetadata(headers);
          call.write(create(FlightHandshakeResponseSchema, { protocolVersion: 0n }));
          call.end();
        },
        (err: unknown) => {
          report(err, 'Handshake');
          if (answered) return;
          answered = true;
          call.emit('error', grpcStatusFromError(err));
        },
      );
    };
  }

  if (handlers.doAction) {
    const doAction = handlers.doAction.bind(handlers);
    implementation.DoAction = (call: grpc.ServerWritableStream<FlightAction, FlightResult>) => {
      doAction(call.request.type, call.request.body, call.metadata).then(
        (bodies) => {
          for (const body of bodies) call.write(create(FlightResultSchema, { body }));
          call.end();
        },
        (err: unknown) => {
          report(err, 'DoAction');
          call.emit('error', grpcStatusFromError(err));
        },
      );
    };
  }

  if (handlers.doPut) {
    const doPut = handlers.doPut.bind(handlers);
    const maxBytes = options.maxPutBytes ?? 1024 * 1024;
    implementation.DoPut = (call: grpc.ServerDuplexStream<FlightData, FlightPutResult>) => {
      const messages: FlightData[] = [];
      let bytes = 0;
      let failed = false;
      const fail = (err: unknown) => {
        if (failed) return;
        failed = true;
        report(err, 'DoPut');
        call.emit('error', grpcStatusFromError(err));
      };
      call.on('data', (message: FlightData) => {
        if (failed) return;
        if (isUndecodable(message)) {
          failed = true;
          call.emit('error', undecodableStatus(definition.DoPut!.path));
          return;
        }
        bytes += message.dataHeader.byteLength + message.dataBody.byteLength + message.appMetadata.byteLength;
        if (bytes > maxBytes) fail(Object.assign(new Error(`DoPut uploads at most ${maxBytes} bytes`), { grpcCode: grpc.status.RESOURCE_EXHAUSTED }));
        else messages.push(message);
      });
      call.on('error', () => undefined);
      call.on('end', () => {
        if (failed) return;
        const descriptor = messages[0]?.flightDescriptor;
        if (!descriptor) return fail(Object.assign(new Error('DoPut needs a flight descriptor on its first message'), { grpcCode: grpc.status.INVALID_ARGUMENT }));
        doPut(descriptor, messages, call.metadata).then(
          (results) => {
            for (const appMetadata of results) call.write(create(FlightPutResultSchema, { appMetadata }));
            call.end();
          },
          fail,
        );
      });
    };
  }

  const instrument = options.instrument ?? ((_d, i) => i);
  const add = (service: grpc.ServiceDefinition, handlers: grpc.UntypedServiceImplementation, streamsCheckedByHandler: readonly string[] = []) => {
    const guarded = guardRequestDecoding(service, handlers, streamsCheckedByHandler);
    server.addService(guarded.definition, instrument(guarded.definition, guarded.implementation));
  };
  add({ ...definition, DoGet: { ...definition.DoGet!, responseSerialize: serializeFlightData as (value: unknown) => Buffer } }, implementation, ['Handshake', 'DoPut']);
  for (const extra of options.extraServices ?? []) add(extra.definition, extra.implementation);

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      bindAddress(options.host ?? '127.0.0.1', options.port ?? 0),
      options.credentials ?? grpc.ServerCredentials.createInsecure(),
      (err, boundPort) => (err ? reject(err) : resolve(boundPort)),
    );
  });

  const tryShutdown = () =>
    new Promise<void>((resolve, reject) => server.tryShutdown((err) => (err ? reject(err) : resolve())));

  const stop = async (graceMs = 5_000) => {
    let timer: NodeJS.Timeout | undefined;
    const forced = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, graceMs);
    });
    try {
      await Promise.race([tryShutdown(), forced]);
    } finally {
      clearTimeout(timer);
    }
  };

  return { port, server, stop, tryShutdown };
}
