import { FloeError, isFloeError } from '@floe/errors';

/** Deepest nesting of arrays and objects a JSON request body may have. */
export const MAX_JSON_BODY_DEPTH = 128;

/**
 * A JSON request body of the HTTP services (router, planning): undefined when empty, a 400 when
 * it is not JSON or nests deeper than MAX_JSON_BODY_DEPTH. JSON.parse itself takes any depth,
 * but what reads the value after it (serialising settings into the metadata DB, quoting an
 * example in an error) recurses, and a body 5,000 levels deep overflowed the stack into a 500.
 */
export function parseJsonBody(text: string, reviver?: (key: string, value: unknown) => unknown): unknown {
  if (text === '') return undefined;
  if (nestingOf(text) > MAX_JSON_BODY_DEPTH) throw new FloeError('bad_data', `body nests arrays and objects deeper than ${MAX_JSON_BODY_DEPTH} levels`);
  try {
    return JSON.parse(text, reviver);
  } catch (err) {
    if (isFloeError(err)) throw err;
    throw new FloeError('bad_data', 'body is not valid JSON');
  }
}

/** Deepest bracket nesting of JSON text, brackets inside strings aside (a scan, so no recursion). */
function nestingOf(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}
