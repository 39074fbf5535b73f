/**
 * The closed set of error kinds Floe reports, and how each maps onto HTTP and gRPC.
 * Every API surface answers with the same envelope: `{status:"error", errorType, error}`
 * (plus `retryAfterMs` on 429). 500 means a genuine fault; timeouts are always 504.
 */
export const ERROR_KINDS = {
  bad_data: { http: 400, grpc: 3 /* INVALID_ARGUMENT */ },
  unauthorized: { http: 401, grpc: 16 /* UNAUTHENTICATED */ },
  forbidden: { http: 403, grpc: 7 /* PERMISSION_DENIED */ },
  not_found: { http: 404, grpc: 5 /* NOT_FOUND */ },
  conflict: { http: 409, grpc: 6 /* ALREADY_EXISTS */ },
  too_large: { http: 413, grpc: 8 /* RESOURCE_EXHAUSTED */ },
  unsupported_media_type: { http: 415, grpc: 3 /* INVALID_ARGUMENT */ },
  execution: { http: 422, grpc: 3 /* INVALID_ARGUMENT */ },
  rate_limited: { http: 429, grpc: 8 /* RESOURCE_EXHAUSTED */ },
  canceled: { http: 499, grpc: 1 /* CANCELLED */ },
  internal: { http: 500, grpc: 13 /* INTERNAL */ },
  not_implemented: { http: 501, grpc: 12 /* UNIMPLEMENTED */ },
  unavailable: { http: 503, grpc: 14 /* UNAVAILABLE */ },
  timeout: { http: 504, grpc: 4 /* DEADLINE_EXCEEDED */ },
} as const;

export type ErrorKind = keyof typeof ERROR_KINDS;

export function isErrorKind(v: unknown): v is ErrorKind {
  return typeof v === 'string' && Object.hasOwn(ERROR_KINDS, v);
}
