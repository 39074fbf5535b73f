import type { FastifyError, FastifySchemaValidationError } from 'fastify';
import { FloeError, isFloeError, toHttp } from '@floe/errors';
import { isMetaError } from '@floe/meta';

/**
 * The error body of the planning API: Floe's envelope `{status, errorType, error}` plus the
 * fields spec 3 names (Errors 2): `message` on every error, and on 429 `retry_after` in whole
 * seconds, also sent as the `retry_after` header beside the standard `Retry-After`.
 */
export interface PlanningErrorReply {
  status: number;
  headers: Record<string, string>;
  body: { status: 'error'; errorType: string; error: string; message: string; retry_after?: number; retryAfterMs?: number };
  unexpected: boolean;
}

export function errorReply(err: unknown): PlanningErrorReply {
  const out = toHttp(asFloeError(err));
  const body: PlanningErrorReply['body'] = { ...out.body, message: out.body.error };
  const headers = { ...out.headers };
  if (out.body.retryAfterMs !== undefined) {
    const seconds = Math.max(1, Math.ceil(out.body.retryAfterMs / 1000));
    body.retry_after = seconds;
    headers['Retry-After'] = String(seconds);
    headers['retry_after'] = String(seconds);
  }
  return { status: out.status, headers, body, unexpected: out.unexpected };
}

/**
 * What a route, a hook or fastify itself threw, as a FloeError where the client caused it; any
 * other error stays as it is and becomes a generic 500 whose detail is only logged.
 */
function asFloeError(err: unknown): unknown {
  if (isFloeError(err)) return err;
  if (isMetaError(err)) return new FloeError(err.kind, err.message, { cause: err });
  const e = err as Partial<FastifyError>;
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new FloeError('too_large', 'request body too large', { cause: err });
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new FloeError('unsupported_media_type', 'unsupported Content-Type (send application/json)', { cause: err });
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) return new FloeError('bad_data', e.message ?? 'bad request', { cause: err });
  return err;
}

/** A failed request schema as one 400 naming the field, e.g. `body.feature.name must NOT have fewer than 1 characters`. */
export function validationError(errors: FastifySchemaValidationError[], dataVar: string): Error {
  const e = errors[0];
  if (!e) return new FloeError('bad_data', `invalid ${dataVar}`, { code: 'FLOE_ERR_VALIDATION' });
  const where = dataVar + e.instancePath.replace(/\/(\d+)(?=\/|$)/g, '[$1]').replaceAll('/', '.');
  const params = e.params as { additionalProperty?: string; allowedValues?: unknown[] };
  let detail = '';
  if (e.keyword === 'additionalProperties' && params.additionalProperty) detail = `: ${JSON.stringify(params.additionalProperty)}`;
  if (e.keyword === 'enum' && params.allowedValues) detail = `: ${params.allowedValues.join(', ')}`;
  return new FloeError('bad_data', `${where} ${e.message ?? 'is invalid'}${detail}`, { code: 'FLOE_ERR_VALIDATION' });
}
