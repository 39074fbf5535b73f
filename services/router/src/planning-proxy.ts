import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { FloeError } from '@floe/errors';
import { planningErrorReply } from '@floe/runtime';

/**
 * The product-planning API (spec 3) at the router's address: spec 3's base address is
 * {base_url}, the router, while the API runs as its own service (@floe/planning, port 3300). The
 * router forwards its paths, untouched, to that service: method, path and query, body bytes and
 * the headers that carry meaning (credentials, tenant, content type), and hands the answer back as
 * it came (status, body, pagination and rate-limit headers). Authentication, limits and errors
 * stay the planning service's own; the router adds nothing to a forwarded request but a deadline.
 * An unreachable planning service is 503, one that does not answer in time 504, in the router's
 * envelope. Without a planning URL these paths stay 404, as before.
 */

/** The top-level collections of the planning API under /api/v1 (services/planning/src/routes). */
export const PLANNING_COLLECTIONS = [
  'products',
  'releases',
  'release_phases',
  'features',
  'epics',
  'requirements',
  'goals',
  'initiatives',
  'ideas',
  'comments',
  'competitors',
  'to_dos',
] as const;

export interface PlanningProxyOptions {
  /** The planning service's base URL (http://host:3300); read per request, so `floe all planning` can fill it in after start. */
  planningUrl: () => string | undefined;
  timeoutMs: number;
  maxBodyBytes: number;
}

// Hop-by-hop headers (RFC 9110 §7.6.1), those the outgoing request sets itself, and the router's
// session cookie, which is no credential of the planning API.
const NOT_FORWARDED = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host', 'content-length', 'expect', 'cookie']);

/** A planning path as it may be forwarded: absolute-path form, one of the collections, no dot segments. */
const FORWARDABLE = new RegExp(`^/api/v1/(?:${PLANNING_COLLECTIONS.join('|')})(?:/[^?#]*)?$`);

/**
 * The planning service's URL for a request: its base's origin with the request's path and query.
 * The request target is checked, not trusted: an absolute-form target (`GET http://elsewhere/…`)
 * or dot segments would otherwise make `new URL` leave the base and the router an open proxy.
 */
function targetOf(base: string, requestTarget: string): URL {
  const q = requestTarget.indexOf('?');
  const path = q < 0 ? requestTarget : requestTarget.slice(0, q);
  const decoded = (() => {
    try {
      return decodeURIComponent(path);
    } catch {
      return '';
    }
  })();
  if (!FORWARDABLE.test(path) || decoded.split('/').some((s) => s === '.' || s === '..') || decoded.includes('\\')) {
    throw new FloeError('bad_data', 'not a path of the planning API');
  }
  const target = new URL(base);
  target.pathname = path;
  target.search = q < 0 ? '' : requestTarget.slice(q);
  return target;
}
const NOT_RETURNED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding', 'date', 'server']);

export const planningProxyPlugin: FastifyPluginAsync<PlanningProxyOptions> = async (app, opts) => {
  // What the router itself refuses on these paths answers in the planning API's body, as the
  // planning service would (`message` beside the envelope).
  app.setErrorHandler((err, req, reply) => {
    const out = planningErrorReply(err);
    if (out.unexpected) req.log.error({ err }, 'unexpected error');
    void reply.code(out.status).headers(out.headers).type('application/json').send(out.body);
  });
  // The body goes on as the bytes that came, whatever their type: the planning service judges it.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: opts.maxBodyBytes }, (_req, body, done) => done(null, body));

  const forward = async (req: FastifyRequest, reply: FastifyReply) => {
    const base = opts.planningUrl();
    if (!base) throw new FloeError('not_found', 'no such endpoint');
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      // HTTP/2's pseudo-headers (:method, :path, …) are the request line, not headers to copy.
      if (value === undefined || NOT_FORWARDED.has(name) || name.startsWith(':')) continue;
      headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const target = targetOf(base, req.url);
    const body = req.body instanceof Buffer && req.method !== 'GET' && req.method !== 'HEAD' ? req.body : undefined;
    let res: Response;
    let answer: Buffer;
    try {
      res = await fetch(target, { method: req.method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(opts.timeoutMs) });
      // Inside the deadline too: a body that stops coming is the same timeout.
      answer = Buffer.from(await res.arrayBuffer());
    } catch (err) {
      if (err instanceof Error && err.name === 'TimeoutError') throw new FloeError('timeout', 'the planning service did not answer in time');
      req.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'planning service unreachable');
      throw new FloeError('unavailable', 'the planning service is unavailable');
    }
    reply.code(res.status);
    res.headers.forEach((value, name) => {
      if (!NOT_RETURNED.has(name)) void reply.header(name, value);
    });
    return reply.send(answer);
  };

  // GET brings its HEAD twin (fastify's own).
  const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
  for (const collection of PLANNING_COLLECTIONS) {
    for (const url of [`/api/v1/${collection}`, `/api/v1/${collection}/*`]) app.route({ method: methods, url, handler: forward });
  }
};
