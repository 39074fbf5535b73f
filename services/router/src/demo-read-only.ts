import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ManagementAuthDeps } from '@floe/auth';
import { forbidden } from '@floe/errors';
import { readSessionCookie } from './session/cookie.ts';

/**
 * The demo account is read-only everywhere (spec 2, Demo mode): any method but GET, HEAD and
 * OPTIONS from its session is refused with 403, except signing in and out and the two POSTs that
 * only read (the native query and the stack-frame source lookup).
 */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const ALLOWED: readonly { method: string; path: RegExp }[] = [
  { method: 'POST', path: /^\/ui\/session$/ },
  { method: 'DELETE', path: /^\/ui\/session$/ },
  { method: 'POST', path: /^\/api\/v1\/query$/ },
  { method: 'POST', path: /^\/api\/v1\/tenants\/[^/]+\/source-context$/ },
];

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route acts as the session cookie's user only, whatever Authorization says (the OAuth consent decision). */
    sessionOnly?: boolean;
  }
}

export const isDemoAllowed = (method: string, url: string) => {
  if (SAFE_METHODS.has(method)) return true;
  const path = url.split('?', 1)[0]!;
  return ALLOWED.some((a) => a.method === method && a.path.test(path));
};

/**
 * Registered at the root only while demo mode is on. A request with a (non-blank, as
 * resolvePrincipal reads it) Authorization header acts as that key, not as the cookie's user, so
 * it is left alone, except on routes that act as the cookie's user only (sessionOnly): there a
 * header beside the demo cookie would otherwise get a demo decision past this check.
 */
const demoReadOnlyPlugin: FastifyPluginAsync<{ auth: ManagementAuthDeps }> = async (app, { auth }) => {
  app.addHook('onRequest', async (req) => {
    if (isDemoAllowed(req.method, req.url)) return;
    if (req.headers.authorization?.trim() && !req.routeOptions.config.sessionOnly) return;
    const token = readSessionCookie(req.headers.cookie);
    if (!token) return;
    const session = await auth.session(token);
    if (session?.user.isDemo) throw forbidden('the demo account is read-only', { code: 'FLOE_ERR_AUTH_DEMO_READ_ONLY' });
  });
};

/** Shared with the whole tree (fastify-plugin), so the hook sees every route. */
export const demoReadOnly = fp(demoReadOnlyPlugin, { name: 'floe-demo-read-only' });
