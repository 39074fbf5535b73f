import { gunzipSync } from 'node:zlib';
import { FloeError } from '@floe/errors';

/**
 * A gzip body inflated, never to more than `maxBytes`: past it `too_large` (413), and bytes that
 * are not gzip `bad_data` (400), each with the caller's error codes. Which encodings a surface takes
 * besides gzip, and what it answers for the others, stays the caller's (ingest and management 415,
 * Connect unimplemented).
 *
 * Synchronous on purpose: at most one body inflates at a time in a process, so the memory that
 * bodies about to be refused can take while inflating is one cap, not one cap per concurrent
 * request (asynchronous inflation of a hundred small bombs at once holds a hundred caps). The
 * caps bound the time too: zlib inflates some hundreds of MB/s.
 */
export function gunzipWithin(body: Uint8Array, maxBytes: number, codes: { tooLarge?: string; notGzip?: string } = {}): Buffer {
  try {
    return gunzipSync(body, { maxOutputLength: Math.max(1, maxBytes) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new FloeError('too_large', `request body inflates beyond ${maxBytes} bytes`, codes.tooLarge ? { code: codes.tooLarge } : {});
    }
    throw new FloeError('bad_data', `request body is not valid gzip: ${(err as Error).message}`, { cause: err, ...(codes.notGzip ? { code: codes.notGzip } : {}) });
  }
}
