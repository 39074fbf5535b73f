import type { FastifyInstance, FastifyRequest } from 'fastify';
import { FloeError, badData } from '@floe/errors';
import { gunzipWithin, headerValue, parseJsonBody } from '@floe/runtime';

/** Most bytes a management body may have, sent or (gzip) inflated; the root JSON parser's limit too. */
export const MANAGEMENT_BODY_LIMIT = 64 * 1024;

/**
 * The JSON bodies of the management API, stricter than the root parser:
 * - A key given twice in one object is refused (400 naming it). JSON.parse keeps the last one, so
 *   `{"role":"viewer","role":"admin"}` means what a proxy or log reading the first one does not.
 * - Content-Encoding is honoured: gzip is inflated, with the size limit applied to the inflated
 *   bytes (a small body must not inflate into megabytes); any other encoding is 415. Ignoring it
 *   parsed compressed bytes as text (400 "not valid JSON") or took an unknown encoding as plain.
 */
export function useManagementJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: MANAGEMENT_BODY_LIMIT }, (req, body, done) => {
    try {
      done(null, parseManagementJson(decoded(req, body as Buffer).toString('utf8')));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

function decoded(req: FastifyRequest, body: Buffer): Buffer {
  const encoding = (headerValue(req.headers, 'content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return body;
  if (encoding !== 'gzip' && encoding !== 'x-gzip') {
    throw new FloeError('unsupported_media_type', `Content-Encoding ${JSON.stringify(encoding)} is not supported: send the body as is or gzip`);
  }
  return gunzipWithin(body, MANAGEMENT_BODY_LIMIT);
}

export function parseManagementJson(text: string): unknown {
  const value = parseJsonBody(text);
  if (value === undefined) return value;
  const dup = duplicateKey(text, 'body');
  if (dup) throw badData(`${dup} is given more than once`, { code: 'FLOE_ERR_DUPLICATE_KEY' });
  return value;
}

/**
 * Where valid JSON text first gives a key twice in one object (`body.a.b`, `body.c[0].d`), keys
 * compared as decoded (`"a"` and `"\u0061"` are one key). Recursive: parseJsonBody has already
 * bounded the nesting.
 */
export function duplicateKey(text: string, at: string): string | undefined {
  let i = 0;
  const skipSpace = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const readString = (): string => {
    const start = i++;
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (path: string): string | undefined => {
    skipSpace();
    const c = text[i];
    if (c === '{') {
      i++;
      skipSpace();
      if (text[i] === '}') {
        i++;
        return undefined;
      }
      const seen = new Set<string>();
      for (;;) {
        skipSpace();
        const key = readString();
        const keyPath = `${path}.${key}`;
        if (seen.has(key)) return keyPath;
        seen.add(key);
        skipSpace();
        i++; // ':'
        const found = value(keyPath);
        if (found) return found;
        skipSpace();
        if (text[i++] === '}') return undefined;
      }
    }
    if (c === '[') {
      i++;
      skipSpace();
      if (text[i] === ']') {
        i++;
        return undefined;
      }
      for (let n = 0; ; n++) {
        const found = value(`${path}[${n}]`);
        if (found) return found;
        skipSpace();
        if (text[i++] === ']') return undefined;
      }
    }
    if (c === '"') {
      readString();
      return undefined;
    }
    while (i < text.length && !',]} \t\n\r'.includes(text[i]!)) i++;
    return undefined;
  };
  return value(at);
}
