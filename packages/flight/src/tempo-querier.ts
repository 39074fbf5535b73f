import * as grpc from '@grpc/grpc-js';
import { create, grpcServiceDefinition, Querier, TempoTraceByIDRequestSchema } from '@floe/proto';
import type { TempoTraceByIDRequest, TempoTraceByIDResponse } from '@floe/proto';
import { FlightClientError, cachedClient, type FlightCallOptions } from './client.ts';
import { toMetadata } from './grpc-call.ts';

/**
 * Client of Tempo's internal Querier service (tempopb.Querier), which Floe's querier serves on its
 * Flight port: FindTraceByID answers a trace read straight from the files' id blocks, without a
 * SQL round (DESIGN.md: the querier "also serves Tempo's internal querier gRPC protocol").
 * Floe's own request fields travel as metadata: `x-floe-start-ns` / `x-floe-end-ns` bound the
 * hour partitions searched, as the trace API's start/end do.
 */
interface QuerierClient extends grpc.Client {
  FindTraceByID(
    request: TempoTraceByIDRequest,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: (err: grpc.ServiceError | null, res?: TempoTraceByIDResponse) => void,
  ): grpc.ClientUnaryCall;
}

const Client = grpc.makeGenericClientConstructor(grpcServiceDefinition(Querier), 'Querier');
const clientFor = (url: string): QuerierClient => cachedClient<QuerierClient>(Client, 'tempo-querier', url);

export function findTraceById(options: FlightCallOptions & { traceId: Uint8Array }): Promise<TempoTraceByIDResponse> {
  if (options.signal?.aborted) return Promise.reject(new FlightClientError(grpc.status.CANCELLED, 'cancelled before the call started'));
  const metadata = toMetadata(options.metadata);
  const callOptions: grpc.CallOptions = options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs };
  return new Promise((resolve, reject) => {
    const call = clientFor(options.url).FindTraceByID(create(TempoTraceByIDRequestSchema, { traceID: options.traceId }), metadata, callOptions, (err, res) => {
      options.signal?.removeEventListener('abort', cancel);
      if (err) reject(err);
      else resolve(res!);
    });
    const cancel = () => call.cancel();
    options.signal?.addEventListener('abort', cancel, { once: true });
  });
}
