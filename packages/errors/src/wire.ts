import { ERROR_KINDS, isErrorKind, type ErrorKind } from './kinds.ts';
import { isFloeError } from './floe-error.ts';

/** The shared error body of every query and management API. */
export interface ErrorEnvelope {
  status: 'error';
  errorType: ErrorKind;
  error: string;
  retryAfterMs?: number;
}

export interface HttpError {
  status: number;
  body: ErrorEnvelope;
  headers: Record<string, string>;
  /** True when the error is not a FloeError: the detail belongs in the log, not the response. */
  unexpected: boolean;
}

const GENERIC_INTERNAL = 'internal server error';

/** One function maps any thrown value to the HTTP wire; non-Floe errors never leak their text. */
export function toHttp(err: unknown): HttpError {
  if (isFloeError(err)) {
    const body: ErrorEnvelope = { status: 'error', errorType: err.kind, error: err.message };
    if (err.retryAfterMs !== undefined) body.retryAfterMs = err.retryAfterMs;
    return { status: ERROR_KINDS[err.kind].http, body, headers: { ...err.headers }, unexpected: false };
  }
  return {
    status: 500,
    body: { status: 'error', errorType: 'internal', error: GENERIC_INTERNAL },
    headers: {},
    unexpected: true,
  };
}

export interface GrpcError {
  code: number;
  details: string;
  unexpected: boolean;
  /** gRPC metadata entries to attach (e.g. retry hints). */
  metadata: Record<string, string>;
}

export function toGrpc(err: unknown): GrpcError {
  if (isFloeError(err)) {
    return { code: ERROR_KINDS[err.kind].grpc, details: err.message, unexpected: false, metadata: { ...err.headers } };
  }
  return { code: ERROR_KINDS.internal.grpc, details: GENERIC_INTERNAL, unexpected: true, metadata: {} };
}

const GRPC_TO_KIND: Record<number, ErrorKind> = {
  1: 'canceled',
  3: 'bad_data',
  4: 'timeout',
  5: 'not_found',
  6: 'conflict',
  7: 'forbidden',
  8: 'rate_limited',
  12: 'not_implemented',
  14: 'unavailable',
  16: 'unauthorized',
};

/** Maps a gRPC status code received from a peer (e.g. a querier) back onto a kind. */
export function kindFromGrpcCode(code: number): ErrorKind {
  return GRPC_TO_KIND[code] ?? 'internal';
}

export function errorKindFromString(v: string): ErrorKind | undefined {
  return isErrorKind(v) ? v : undefined;
}
