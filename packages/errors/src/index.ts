/**
 * @floe/errors: the closed set of error kinds, the FloeError class that carries a client-safe
 * message, and the single mapping of errors onto HTTP (status + `{status,errorType,error}`
 * envelope) and gRPC (status code). A value that is not a FloeError is reported as a generic
 * 500 / INTERNAL and its detail stays in the log.
 */
export { ERROR_KINDS, isErrorKind } from './kinds.ts';
export type { ErrorKind } from './kinds.ts';
export {
  FloeError,
  isFloeError,
  badData,
  notFound,
  conflict,
  unauthorized,
  forbidden,
  unavailable,
  timeout,
  notImplemented,
  internal,
  retryAfterSeconds,
} from './floe-error.ts';
export type { FloeErrorOptions } from './floe-error.ts';
export { toHttp, toGrpc, kindFromGrpc, errorKindFromString, ERROR_KIND_METADATA } from './wire.ts';
export type { ErrorEnvelope, HttpError, GrpcError } from './wire.ts';
