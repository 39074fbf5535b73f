import type { TempoTraceByIDResponse } from '@floe/proto';
import type { Table } from 'apache-arrow';

/**
 * A querier's DoGet and Tempo FindTraceByID without the wire, for a router in the same process
 * (`floe all`): the same authentication, ticket checks and errors as the gRPC calls, but the
 * answer's Arrow table is handed over as it is, where the wire copied it five times (DuckDB's
 * vectors, IPC encoding, gRPC framing, decoding, concatenation) on the one event loop that also
 * evaluates the query.
 *
 * `metadata` holds what the gRPC metadata would (authorization, x-tenant-id, x-dataset-id,
 * x-floe-start-ns, x-floe-end-ns); `deadlineMs` is the caller's time left. Failures reject as a
 * gRPC call does: an Error with the status `code` and its `details`.
 */
export interface InProcessQuerier {
  doGet(metadata: Readonly<Record<string, string>>, ticket: Uint8Array, deadlineMs: number): Promise<Table>;
  findTraceById(metadata: Readonly<Record<string, string>>, traceId: Uint8Array, deadlineMs: number): Promise<TempoTraceByIDResponse>;
}

/** The rejection of an in-process call that failed with gRPC status `code`. */
export function inProcessCallError(code: number, details: string): Error & { code: number; details: string } {
  return Object.assign(new Error(details), { code, details });
}
