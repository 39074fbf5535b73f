import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { ERROR_KINDS, FloeError, toHttp } from '@floe/errors';
import { create, fromBinary, fromJsonString, toBinary, toJsonString, type DescMessage, type MessageInitShape, type MessageShape } from '@floe/proto';
import { gunzipWithin } from './gzip-within.ts';
import { asFloeError } from './http-errors.ts';

/**
 * The Connect protocol's unary calls, as far as Floe serves them (reference/api-contracts.md
 * §4.5): a POST whose body is the bare request message in the codec its Content-Type names
 * (`application/proto` or `application/json`, no gRPC framing), optionally gzip-compressed;
 * success is 200 with the bare response in the same codec; an error is a non-200 JSON
 * `{"code":"<snake_case>","message":"…"}`. Errors are the router's FloeErrors: a kind's gRPC code
 * (@floe/errors kinds.ts) names the Connect code, and Connect's own table gives its HTTP status, so
 * Connect and gRPC clients see the same code for the same failure.
 */

export type ConnectCodec = 'proto' | 'json';

export const CONNECT_CONTENT_TYPES: Readonly<Record<ConnectCodec, string>> = { proto: 'application/proto', json: 'application/json' };

/** Connect codes by gRPC status number (they are gRPC's codes in snake_case). */
const CONNECT_CODES = [
  'ok',
  'canceled',
  'unknown',
  'invalid_argument',
  'deadline_exceeded',
  'not_found',
  'already_exists',
  'permission_denied',
  'resource_exhausted',
  'failed_precondition',
  'aborted',
  'out_of_range',
  'unimplemented',
  'internal',
  'unavailable',
  'data_loss',
  'unauthenticated',
] as const;
export type ConnectCode = Exclude<(typeof CONNECT_CODES)[number], 'ok'>;

/** HTTP status of each Connect code (connectrpc.com/docs/protocol, "Error Codes"). */
const CONNECT_HTTP: Readonly<Record<ConnectCode, number>> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

/** Connect's error body, for the OpenAPI document. */
export const CONNECT_ERROR_SCHEMA = {
  description: 'Connect’s error: a snake_case gRPC code and a message.',
  type: 'object',
  required: ['code', 'message'],
  properties: { code: { type: 'string', enum: Object.keys(CONNECT_HTTP) }, message: { type: 'string' } },
};

export interface ConnectErrorReply {
  status: number;
  body: { code: ConnectCode; message: string };
  headers: Record<string, string>;
  /** Not a FloeError: log the detail, send the generic message. */
  unexpected: boolean;
}

/** Anything a Connect route, its hooks or fastify threw, as the Connect error reply. */
export function connectError(err: unknown): ConnectErrorReply {
  const http = toHttp(asFloeError(err));
  const kind = http.body.errorType;
  const code = CONNECT_CODES[ERROR_KINDS[kind].grpc] as ConnectCode;
  const headers = { ...http.headers };
  // The protocol answers an unknown codec with 415 whatever the code, and says which ones it takes.
  if (kind === 'unsupported_media_type') headers['accept-post'] = Object.values(CONNECT_CONTENT_TYPES).join(', ');
  return { status: kind === 'unsupported_media_type' ? 415 : CONNECT_HTTP[code], body: { code, message: http.body.error }, headers, unexpected: http.unexpected };
}

/** The codec a request's Content-Type names; parameters such as charset are ignored. */
export function codecOf(contentType: string | undefined): ConnectCodec {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === CONNECT_CONTENT_TYPES.proto) return 'proto';
  if (type === CONNECT_CONTENT_TYPES.json) return 'json';
  throw new FloeError('unsupported_media_type', `unsupported Content-Type ${JSON.stringify(type.slice(0, 64))}: send application/proto or application/json`, { code: 'FLOE_ERR_CONNECT_CODEC' });
}

/** Refuses a Connect-Protocol-Version other than 1 (absent is fine: not every client sends it). */
export function checkProtocolVersion(header: string | undefined): void {
  if (header !== undefined && header.trim() !== '1') throw new FloeError('bad_data', `unsupported Connect-Protocol-Version ${JSON.stringify(header.slice(0, 16))}: expected 1`, { code: 'FLOE_ERR_CONNECT_PROTOCOL' });
}

/** Connect-Timeout-Ms (at most 10 digits) caps the router's own query deadline. */
export function deadlineMsOf(header: string | undefined, queryTimeoutMs: number): number {
  if (header === undefined) return queryTimeoutMs;
  if (!/^\d{1,10}$/.test(header.trim())) throw new FloeError('bad_data', `invalid Connect-Timeout-Ms ${JSON.stringify(header.slice(0, 16))}: expected up to 10 digits`, { code: 'FLOE_ERR_CONNECT_PROTOCOL' });
  return Math.max(1, Math.min(queryTimeoutMs, Number(header)));
}

const gzipAsync = promisify(gzip);

/** The request body as sent (identity) or gunzipped, never more than maxBytes once decompressed. */
export function decodedBody(raw: Buffer, contentEncoding: string | undefined, maxBytes: number): Buffer {
  const encoding = (contentEncoding ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return raw;
  if (encoding !== 'gzip') throw new FloeError('not_implemented', `unsupported Content-Encoding ${JSON.stringify(encoding.slice(0, 32))}: send gzip or identity`, { code: 'FLOE_ERR_CONNECT_ENCODING' });
  return gunzipWithin(raw, maxBytes, { tooLarge: 'FLOE_ERR_CONNECT_BODY', notGzip: 'FLOE_ERR_CONNECT_BODY' });
}

/** Responses larger than this are gzipped for a client that accepts it (flamegraphs compress well). */
const GZIP_RESPONSES_FROM = 1024;

/** A response body, gzipped when the client accepts gzip and it is worth it. */
export async function encodedBody(body: Buffer, acceptEncoding: string | undefined): Promise<{ body: Buffer; encoding: 'gzip' | undefined }> {
  const acceptsGzip = (acceptEncoding ?? '').split(',').some((e) => e.split(';')[0]!.trim().toLowerCase() === 'gzip');
  if (!acceptsGzip || body.length < GZIP_RESPONSES_FROM) return { body, encoding: undefined };
  return { body: await gzipAsync(body), encoding: 'gzip' };
}

/** The request message; a body that does not decode is invalid_argument. JSON ignores unknown fields, as connect-go does. */
export function decodeMessage<Desc extends DescMessage>(schema: Desc, codec: ConnectCodec, body: Buffer): MessageShape<Desc> {
  try {
    return codec === 'proto' ? fromBinary(schema, body) : fromJsonString(schema, body.length === 0 ? '{}' : body.toString('utf8'), { ignoreUnknownFields: true });
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    throw new FloeError('bad_data', `cannot decode ${schema.typeName} from ${CONNECT_CONTENT_TYPES[codec]}: ${detail}`, { code: 'FLOE_ERR_CONNECT_BODY', cause: err });
  }
}

export function encodeMessage<Desc extends DescMessage>(schema: Desc, codec: ConnectCodec, init: MessageInitShape<Desc>): Buffer {
  const message = create(schema, init);
  return codec === 'proto' ? Buffer.from(toBinary(schema, message)) : Buffer.from(toJsonString(schema, message));
}
