import { retryAfterSeconds, toHttp } from '@floe/errors';
import { asFloeError } from './http-errors.ts';

/**
 * The error body of the product-planning API: Floe's envelope `{status, errorType, error}` plus
 * the fields spec 3 names (Errors 2): `message` on every error, and on 429 `retry_after` in whole
 * seconds, also sent as the `retry_after` header beside the standard `Retry-After`. Here because
 * two services answer planning paths: the planning service, and the router that forwards to it.
 */
export interface PlanningErrorReply {
  status: number;
  headers: Record<string, string>;
  body: { status: 'error'; errorType: string; error: string; message: string; retry_after?: number; retryAfterMs?: number };
  unexpected: boolean;
}

export function planningErrorReply(err: unknown): PlanningErrorReply {
  const out = toHttp(asFloeError(err));
  const body: PlanningErrorReply['body'] = { ...out.body, message: out.body.error };
  const headers = { ...out.headers };
  if (out.body.retryAfterMs !== undefined) {
    const seconds = retryAfterSeconds(out.body.retryAfterMs);
    body.retry_after = seconds;
    headers['retry_after'] = String(seconds);
  }
  return { status: out.status, headers, body, unexpected: out.unexpected };
}
