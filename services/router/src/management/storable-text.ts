import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { badData } from '@floe/errors';
import { whyUnstorable } from '../storable-text.ts';

/**
 * Management requests end up as metadata rows, and PostgreSQL (PGlite too) cannot hold every
 * JavaScript string: U+0000 is refused in text and jsonb alike (a driver error, so a 500), and a
 * lone UTF-16 surrogate becomes U+FFFD in text (an email or name silently changed) or is refused in
 * jsonb. A number JSON.parse could only read as Infinity (1e400) is stored as null. A `__proto__`
 * key is stored as data but turns into a prototype the moment any reader merges the object with
 * assignment. So such requests are refused up front with 400 naming the field.
 */

/** Where in a parsed JSON value (or params/querystring object) the first value the metadata DB cannot store as sent is, and why. */
export function unstorableValue(value: unknown, at: string): string | undefined {
  if (typeof value === 'string') {
    const why = whyUnstorable(value);
    return why && `${at} ${why}`;
  }
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${at} is a number beyond what a double holds`;
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorableValue(value[i], `${at}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, v] of Object.entries(value)) {
    if (key === '__proto__') return `${at} has the key "__proto__", which is not allowed`;
    const why = whyUnstorable(key);
    if (why) return `a key of ${at} ${why}`;
    const found = unstorableValue(v, `${at}.${key}`);
    if (found) return found;
  }
  return undefined;
}

/** Refuses (400) a request whose path parameters, query or JSON body carry a value the metadata DB cannot store as sent. */
export const storableTextPlugin: FastifyPluginAsync = fp(async (app) => {
  app.addHook('preValidation', async (req) => {
    if (req.routeOptions.config.public) return;
    const found = unstorableValue(req.params, 'params') ?? unstorableValue(req.query, 'querystring') ?? unstorableValue(req.body, 'body');
    if (found) throw badData(found, { code: 'FLOE_ERR_UNSTORABLE_TEXT' });
  });
});
