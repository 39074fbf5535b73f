import type { Metadata } from '@grpc/grpc-js';
import type { TempoTraceByIDResponse } from '@floe/proto';
import type { Table } from 'apache-arrow';
import { toMetadata } from './grpc-call.ts';

/**
 * A querier's DoGet and Tempo FindTraceByID as calls: over Flight, or without the wire for a
 * router in the same process (`floe all`), where the answer's Arrow table is handed over as it
 * is (the wire copied it five times: DuckDB's vectors, IPC encoding, gRPC framing, decoding,
 * concatenation, on the one event loop that also evaluates the query). Both ways authenticate,
 * check tickets and fail alike.
 *
 * `metadata` holds what the gRPC metadata does (authorization, x-tenant-id, x-dataset-id,
 * x-floe-start-ns, x-floe-end-ns); `deadlineMs` is the caller's time left; `signal` aborts when
 * the caller went away (a query still waiting for its turn never runs, a running one stops).
 * Failures reject as a gRPC call does: an Error with the status `code` and its `details`.
 */
export interface QuerierCalls {
  doGet(metadata: Readonly<Record<string, string>>, ticket: Uint8Array, deadlineMs: number, signal?: AbortSignal): Promise<Table>;
  findTraceById(metadata: Readonly<Record<string, string>>, traceId: Uint8Array, deadlineMs: number, signal?: AbortSignal): Promise<TempoTraceByIDResponse>;
}

/**
 * The rejection of a querier call that failed with gRPC status `code`; `metadata` becomes its
 * trailers (over Flight) or is read from the error as a client reads them (in process).
 */
export function querierCallError(code: number, details: string, metadata: Readonly<Record<string, string>> = {}): Error & { code: number; details: string; metadata: Metadata } {
  return Object.assign(new Error(details), { code, details, metadata: toMetadata(metadata) });
}
