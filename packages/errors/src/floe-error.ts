import { ERROR_KINDS, isErrorKind, type ErrorKind } from './kinds.ts';

export interface FloeErrorOptions {
  /** Stable machine code, `FLOE_ERR_<AREA>_<WHAT>`. */
  code?: string;
  /** Where in a query the problem is (1-based line and column). */
  position?: { line: number; column: number; offset?: number };
  /** For rate limits: how long the client should wait (sent also as Retry-After, unless headers name one). */
  retryAfterMs?: number;
  /** Extra response headers (rate-limit state, a Retry-After of its own). */
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An error whose message is safe to show to the client. Anything else becomes a generic 500. */
export class FloeError extends Error {
  readonly kind: ErrorKind;
  readonly code: string;
  readonly position: FloeErrorOptions['position'];
  readonly retryAfterMs: number | undefined;
  readonly headers: Record<string, string>;

  constructor(kind: ErrorKind, message: string, opts: FloeErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'FloeError';
    this.kind = kind;
    this.code = opts.code ?? `FLOE_ERR_${kind.toUpperCase()}`;
    this.position = opts.position;
    this.retryAfterMs = opts.retryAfterMs;
    this.headers = { ...opts.headers };
    if (opts.retryAfterMs !== undefined && !Object.keys(this.headers).some((k) => k.toLowerCase() === 'retry-after')) this.headers['Retry-After'] = String(retryAfterSeconds(opts.retryAfterMs));
  }

  get httpStatus(): number {
    return ERROR_KINDS[this.kind].http;
  }
}

/** Retry-After's whole seconds for a wait in milliseconds: rounded up, at least 1 (0 would invite a retry at once). */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

export function isFloeError(err: unknown): err is FloeError {
  return err instanceof FloeError || (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'FloeError' && isErrorKind((err as { kind?: unknown }).kind));
}

export const badData = (message: string, opts?: FloeErrorOptions) => new FloeError('bad_data', message, opts);
export const notFound = (message: string, opts?: FloeErrorOptions) => new FloeError('not_found', message, opts);
export const conflict = (message: string, opts?: FloeErrorOptions) => new FloeError('conflict', message, opts);
export const unauthorized = (message: string, opts?: FloeErrorOptions) => new FloeError('unauthorized', message, opts);
export const forbidden = (message: string, opts?: FloeErrorOptions) => new FloeError('forbidden', message, opts);
export const unavailable = (message: string, opts?: FloeErrorOptions) => new FloeError('unavailable', message, opts);
export const timeout = (message: string, opts?: FloeErrorOptions) => new FloeError('timeout', message, opts);
export const notImplemented = (message: string, opts?: FloeErrorOptions) => new FloeError('not_implemented', message, opts);
export const internal = (message: string, opts?: FloeErrorOptions) => new FloeError('internal', message, opts);
