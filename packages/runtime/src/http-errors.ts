import type { Duplex } from 'node:stream';
import { FloeError, isFloeError, toHttp } from '@floe/errors';
import { isMetaError } from '@floe/meta';

/**
 * The HTTP services' (router, planning) error mapping for fastify: whatever a route, a hook or
 * fastify itself threw becomes a FloeError, so every response goes out through toHttp in the one
 * envelope. Anything unrecognised stays as it is and becomes a generic 500 whose detail is
 * logged, never sent. The shapes are fastify's, written out so this package needs no fastify.
 */
interface FastifyErrorShape {
  code?: string;
  statusCode?: number;
  message?: string;
}

/** One failure of fastify's (Ajv's) request-schema validation. */
export interface SchemaValidationFailure {
  instancePath: string;
  keyword: string;
  params: unknown;
  message?: string;
}

export function asFloeError(err: unknown): unknown {
  if (isFloeError(err)) return err;
  if (isMetaError(err)) return new FloeError(err.kind, err.message, { cause: err });
  const e = err as FastifyErrorShape;
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new FloeError('too_large', 'request body too large', { cause: err });
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new FloeError('unsupported_media_type', 'unsupported Content-Type (send application/json)', { cause: err });
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) return new FloeError('bad_data', e.message ?? 'bad request', { cause: err });
  // An answer whose JSON passes what one V8 string holds (~512 MiB) fails as it is serialized:
  // the query asked for too much, which the caller can narrow, not a fault of Floe's.
  if (err instanceof RangeError && /Invalid string length|Cannot create a string longer/.test(err.message)) {
    return new FloeError('execution', 'the answer is too large to send (its JSON would pass 512 MiB); narrow the query or lower its limit', { code: 'FLOE_ERR_ANSWER_TOO_LARGE', cause: err });
  }
  return err;
}

/**
 * Request validation failures as one bad_data message naming the field, e.g.
 * `body.scopes[0] must be equal to one of the allowed values: ingest, query, tenant:manage`.
 */
export function validationError(errors: SchemaValidationFailure[], dataVar: string): Error {
  const e = errors[0];
  if (!e) return new FloeError('bad_data', `invalid ${dataVar}`, { code: 'FLOE_ERR_VALIDATION' });
  const where = dataVar + e.instancePath.replace(/\/(\d+)(?=\/|$)/g, '[$1]').replaceAll('/', '.');
  const params = e.params as { additionalProperty?: string; allowedValues?: unknown[] };
  let detail = '';
  if (e.keyword === 'additionalProperties' && params.additionalProperty) detail = `: ${JSON.stringify(params.additionalProperty)}`;
  if (e.keyword === 'enum' && params.allowedValues) detail = `: ${params.allowedValues.join(', ')}`;
  return new FloeError('bad_data', `${where} ${e.message ?? 'is invalid'}${detail}`, { code: 'FLOE_ERR_VALIDATION' });
}

const CLIENT_ERRORS: Record<string, { status: number; reason: string; kind: 'bad_data' | 'timeout'; error: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'Request Timeout', kind: 'timeout', error: 'the request did not arrive in time' },
  HPE_HEADER_OVERFLOW: { status: 431, reason: 'Request Header Fields Too Large', kind: 'bad_data', error: 'request headers too large' },
};

/**
 * fastify's `clientErrorHandler` for every HTTP service: a request Node's parser refuses before
 * fastify sees it (a malformed request line or header, headers too large, a request that timed
 * out) is answered in the error envelope like every other error, then the connection is closed.
 */
export const clientErrorHandler = clientErrorHandlerWith((err) => toHttp(err).body);

/** The same, with the error body a service answers with (the planning API adds `message`). */
export function clientErrorHandlerWith(bodyOf: (err: FloeError) => object): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  return (err, socket) => answerClientError(err, socket, bodyOf);
}

function answerClientError(err: NodeJS.ErrnoException, socket: Duplex, bodyOf: (err: FloeError) => object): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const c = CLIENT_ERRORS[err.code ?? ''] ?? { status: 400, reason: 'Bad Request', kind: 'bad_data', error: 'malformed HTTP request' };
  const body = JSON.stringify(bodyOf(new FloeError(c.kind, c.error)));
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // Ended, not destroyed at once: the answer goes out before the connection closes.
  socket.end(`HTTP/1.1 ${c.status} ${c.reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`, () => socket.destroy());
}
