import { getCACertificates } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { Table } from 'apache-arrow';
import { create, FlightDescriptorSchema, FlightService, FlightTicketSchema, grpcServiceDefinition } from '@floe/proto';
import type { FlightData, FlightDescriptor, FlightInfo, FlightTicket, MessageInitShape } from '@floe/proto';
import { toMetadata } from './grpc-call.ts';
import { decodeFlightData } from './ipc-messages.ts';

interface FlightClient extends grpc.Client {
  DoGet(request: FlightTicket, metadata: grpc.Metadata, options: grpc.CallOptions): grpc.ClientReadableStream<FlightData>;
  GetFlightInfo(
    request: FlightDescriptor,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: (err: grpc.ServiceError | null, info?: FlightInfo) => void,
  ): grpc.ClientUnaryCall;
}

export interface FlightCallOptions {
  /** `host:port`, or a Flight location URI (`grpc://`, `grpc+tcp://`, `grpc+tls://`). */
  url: string;
  /** Sent as gRPC metadata (header names are lower-cased by gRPC). */
  metadata?: Record<string, string>;
  /** Relative deadline; the call fails with DEADLINE_EXCEEDED (4) when it passes. */
  deadlineMs?: number;
  /** Cancels the call (CANCELLED, 1), e.g. when the HTTP request that needed it went away. */
  signal?: AbortSignal;
}

/** Thrown for local failures (bad stream content, aborted before start) with the same shape as a grpc-js ServiceError. */
export class FlightClientError extends Error {
  readonly code: number;
  readonly details: string;
  constructor(code: number, details: string) {
    super(`${code} ${grpc.status[code] ?? 'UNKNOWN'}: ${details}`);
    this.name = 'FlightClientError';
    this.code = code;
    this.details = details;
  }
}

const Client = grpc.makeGenericClientConstructor(grpcServiceDefinition(FlightService), 'FlightService');

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  // Record batches routinely exceed grpc-js's 4 MiB default; the querier is a trusted peer.
  'grpc.max_receive_message_length': -1,
  // Calls fail fast while a peer is down; grpc-js's reconnect backoff (1 s, growing to 120 s) then
  // kept answering 503 for up to two minutes after a restarted querier was back. Peers are near:
  // look again within a second.
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 1000,
};

// The router calls per request: one client (channel) per service and target, reused; a TLS
// channel is made again when the certificate it presents has been renewed.
const clients = new Map<string, { client: grpc.Client; cert?: Buffer }>();

let clientCertificate: (() => { cert: Buffer; key: Buffer }) | undefined;

/**
 * The certificate `grpc+tls://` channels present when the server asks for one (mutual TLS):
 * the process's own (tls.cert_file), read through `current` whenever a channel is made.
 */
export function presentClientCertificate(current: (() => { cert: Buffer; key: Buffer }) | undefined): void {
  clientCertificate = current;
}

/**
 * The cached client of `Ctor` for a Flight location (`host:port`, `grpc://`, `grpc+tcp://` or
 * `grpc+tls://`); shared by the Flight service and Tempo's Querier service on the same port.
 */
export function cachedClient<C extends grpc.Client>(Ctor: grpc.ServiceClientConstructor, name: string, url: string): C {
  const cacheKey = `${name} ${url}`;
  const match = /^([a-z+]+):\/\/(.*)$/.exec(url);
  const scheme = match?.[1];
  const identity = scheme === 'grpc+tls' ? clientCertificate?.() : undefined;
  const cached = clients.get(cacheKey);
  if (cached !== undefined && cached.cert === identity?.cert) return cached.client as C;
  cached?.client.close();
  const target = match?.[2] ?? url;
  if (scheme !== undefined && !['grpc', 'grpc+tcp', 'grpc+tls'].includes(scheme)) {
    throw new FlightClientError(grpc.status.INVALID_ARGUMENT, `unsupported Flight location scheme: ${scheme}`);
  }
  // The roots Node's own clients trust (bundled, NODE_EXTRA_CA_CERTS, tls.ca_file): grpc-js
  // reads only its built-in store unless it is handed them.
  const credentials =
    scheme === 'grpc+tls' ? grpc.credentials.createSsl(Buffer.from(getCACertificates('default').join('\n')), identity?.key ?? null, identity?.cert ?? null) : grpc.credentials.createInsecure();
  const client = new Ctor(target, credentials, CHANNEL_OPTIONS);
  clients.set(cacheKey, { client, ...(identity ? { cert: identity.cert } : {}) });
  return client as grpc.Client as C;
}

const clientFor = (url: string): FlightClient => cachedClient<FlightClient>(Client, 'flight', url);

/** Closes every cached channel (for process shutdown and tests). */
export function closeFlightClients(): void {
  for (const { client } of clients.values()) client.close();
  clients.clear();
}

function callOptions(options: FlightCallOptions): grpc.CallOptions {
  return options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs };
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new FlightClientError(grpc.status.CANCELLED, 'cancelled before the call started');
}

/**
 * Redeems a ticket and returns the whole result as one table. Failures reject with an error
 * carrying the gRPC status as `code` and `details` (grpc-js ServiceError or FlightClientError).
 */
export async function flightDoGet(options: FlightCallOptions & { ticket: Uint8Array }): Promise<Table> {
  throwIfAborted(options.signal);
  const call = clientFor(options.url).DoGet(
    create(FlightTicketSchema, { ticket: options.ticket }),
    toMetadata(options.metadata),
    callOptions(options),
  );
  const cancel = () => call.cancel();
  options.signal?.addEventListener('abort', cancel, { once: true });
  const messages: FlightData[] = [];
  try {
    for await (const message of call as AsyncIterable<FlightData>) messages.push(message);
  } finally {
    options.signal?.removeEventListener('abort', cancel);
  }
  try {
    return decodeFlightData(messages);
  } catch (err) {
    throw new FlightClientError(grpc.status.INTERNAL, `undecodable Flight stream: ${(err as Error).message}`);
  }
}

/** GetFlightInfo for a descriptor (CMD or PATH). */
export async function flightGetFlightInfo(
  options: FlightCallOptions & { descriptor: MessageInitShape<typeof FlightDescriptorSchema> },
): Promise<FlightInfo> {
  throwIfAborted(options.signal);
  const client = clientFor(options.url);
  return new Promise<FlightInfo>((resolve, reject) => {
    const call = client.GetFlightInfo(
      create(FlightDescriptorSchema, options.descriptor),
      toMetadata(options.metadata),
      callOptions(options),
      (err, info) => {
        options.signal?.removeEventListener('abort', cancel);
        if (err) reject(err);
        else if (info) resolve(info);
        else reject(new FlightClientError(grpc.status.INTERNAL, 'empty GetFlightInfo response'));
      },
    );
    const cancel = () => call.cancel();
    options.signal?.addEventListener('abort', cancel, { once: true });
  });
}
