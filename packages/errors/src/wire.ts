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

/**
 * The challenge of every 401 (RFC 9110 §11.6.1 requires one): the APIs take a bearer key. Bearer,
 * not Basic, even where Basic is also accepted, so a browser never opens its password dialog.
 */
export const AUTH_CHALLENGE = 'Bearer realm="floe"';

/** One function maps any thrown value to the HTTP wire; non-Floe errors never leak their text. */
export function toHttp(err: unknown): HttpError {
  if (isFloeError(err)) {
    const body: ErrorEnvelope = { status: 'error', errorType: err.kind, error: err.message };
    if (err.retryAfterMs !== undefined) body.retryAfterMs = err.retryAfterMs;
    const headers = { ...err.headers };
    if (err.kind === 'unauthorized' && !Object.keys(headers).some((k) => k.toLowerCase() === 'www-authenticate')) headers['WWW-Authenticate'] = AUTH_CHALLENGE;
    return { status: ERROR_KINDS[err.kind].http, body, headers, unexpected: false };
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
  /**
   * gRPC metadata entries to attach, names in lower case as gRPC requires: the retry hints of
   * the error's headers, and the error's kind under ERROR_KIND_METADATA.
   */
  metadata: Record<string, string>;
}

/**
 * The trailer naming a Floe error's kind. Several kinds share one gRPC code (too_large and
 * rate_limited are both RESOURCE_EXHAUSTED; execution and bad_data both INVALID_ARGUMENT), so a
 * Floe peer reads the kind from here to answer with the right HTTP status.
 */
export const ERROR_KIND_METADATA = 'x-floe-error-kind';

export function toGrpc(err: unknown): GrpcError {
  if (isFloeError(err)) {
    const metadata: Record<string, string> = { [ERROR_KIND_METADATA]: err.kind };
    for (const [name, value] of Object.entries(err.headers)) metadata[name.toLowerCase()] = value;
    return { code: ERROR_KINDS[err.kind].grpc, details: err.message, unexpected: false, metadata };
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

/**
 * The kind of a gRPC status received from a peer (e.g. a querier): the kind its
 * ERROR_KIND_METADATA trailer names when it is one, else the usual kind of the code.
 */
export function kindFromGrpc(code: number, kindTrailer?: string): ErrorKind {
  const named = kindTrailer === undefined ? undefined : errorKindFromString(kindTrailer);
  if (named !== undefined && named !== 'internal' && ERROR_KINDS[named].grpc === code) return named;
  return GRPC_TO_KIND[code] ?? 'internal';
}

export function errorKindFromString(v: string): ErrorKind | undefined {
  return isErrorKind(v) ? v : undefined;
}
