import { FloeError } from '@floe/errors';
import { gunzipWithin } from '@floe/runtime';
import { decodeOtlpJson, fromBinary, type DescMessage, type MessageShape } from '@floe/proto';
import { MAX_DEPTH } from './otlp-wire.ts';

/**
 * Body decoding shared by every OTLP/HTTP endpoint: content encoding (identity or gzip, inflated
 * under a hard cap), then content type (protobuf or JSON). Every failure is a client error with a
 * message that says what to fix; nothing here can throw an unexpected error.
 */

export type BodyFormat = 'protobuf' | 'json';

export function formatOf(contentType: string | undefined): BodyFormat {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
  if (type === 'application/json') return 'json';
  throw new FloeError('unsupported_media_type', `unsupported Content-Type ${JSON.stringify(contentType ?? '')}: use application/x-protobuf or application/json`, {
    code: 'FLOE_ERR_INGEST_CONTENT_TYPE',
  });
}

/** Whether bytes start with gzip's magic (profiles and recordings sent gzipped inside a form or a field). */
export const isGzip = (bytes: Uint8Array): boolean => bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;

export function inflate(body: Buffer, contentEncoding: string | undefined, maxBytes: number): Buffer {
  const enc = (contentEncoding ?? 'identity').trim().toLowerCase();
  if (enc === '' || enc === 'identity') return body;
  if (enc !== 'gzip') {
    throw new FloeError('unsupported_media_type', `unsupported Content-Encoding ${JSON.stringify(contentEncoding)}: use gzip or none`, { code: 'FLOE_ERR_INGEST_ENCODING' });
  }
  return gunzipWithin(body, maxBytes, { tooLarge: 'FLOE_ERR_INGEST_TOO_LARGE', notGzip: 'FLOE_ERR_INGEST_GZIP' });
}

/** A JSON body of another protocol than OTLP (Loki push, Zipkin): UTF-8 text parsed, or bad_data. */
export function parseJsonBody(body: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    throw new FloeError('bad_data', 'body is not valid JSON', { code: 'FLOE_ERR_INGEST_DECODE' });
  }
}

export function decodeMessage<D extends DescMessage>(schema: D, body: Uint8Array, format: BodyFormat): MessageShape<D> {
  if (format === 'protobuf') {
    try {
      return fromBinary(schema, body);
    } catch (err) {
      throw new FloeError('bad_data', `body is not a valid ${schema.typeName} protobuf message: ${(err as Error).message}`, { code: 'FLOE_ERR_INGEST_DECODE' });
    }
  }
  if (tooManyJsonValues(body)) {
    throw new FloeError('bad_data', `OTLP JSON body holds more than ${MAX_JSON_VALUES} objects and arrays; send fewer items per request (or protobuf)`, { code: 'FLOE_ERR_INGEST_DECODE' });
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new FloeError('bad_data', 'JSON body is not valid UTF-8', { code: 'FLOE_ERR_INGEST_DECODE' });
  }
  try {
    return decodeOtlpJson(schema, text);
  } catch (err) {
    // protobuf-es stops values nested past its depth limit, but the hex-id rewrite before it
    // recurses too: nesting thousands deep ran out of stack first and said so in the engine's words.
    const why = err instanceof RangeError && /call stack/i.test(err.message) ? `values nested deeper than ${MAX_DEPTH} levels` : (err as Error).message;
    throw new FloeError('bad_data', `body is not a valid OTLP JSON ${schema.typeName}: ${why}`, { code: 'FLOE_ERR_INGEST_DECODE' });
  }
}

/**
 * Objects and arrays an OTLP/JSON body may hold. Each becomes a parsed object, then a message
 * (some 300 bytes together), whatever its size in the body: a 60 KB gzip body of 21 million `{}`
 * events took the acceptor past its heap and aborted the process. The densest values exporters
 * write (`{"intValue":"1"}`) take 17 bytes, so no body of up to 32 MB is refused for it.
 */
export const MAX_JSON_VALUES = 2 ** 21;

/** Whether the JSON text holds more than MAX_JSON_VALUES objects and arrays (brackets outside strings). */
function tooManyJsonValues(body: Uint8Array): boolean {
  let n = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if ((c === 0x7b || c === 0x5b) && ++n > MAX_JSON_VALUES) return true;
  }
  return false;
}
