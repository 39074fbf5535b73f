import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { resolvePrincipal, type ManagementAuthDeps, type Principal } from '@floe/auth';
import { readSessionCookie } from '../session/cookie.ts';
import { headerValue } from '@floe/runtime';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyContextConfig {
    /** The route answers without credentials (the OpenAPI document, the login configuration). */
    public?: boolean;
  }
}

/**
 * Resolves the caller of every management route once, before the body is read: break-glass key,
 * API key or session cookie (spec 2, Authentication). Routes then ask permissions.ts what the
 * principal may do.
 */
export const principalPlugin = fp<{ auth: ManagementAuthDeps }>(async (app, opts) => {
  app.addHook('onRequest', async (req) => {
    if (req.routeOptions.config.public) return;
    req.principal = await resolvePrincipal(
      { authorization: headerValue(req.headers, 'authorization'), tenant: headerValue(req.headers, 'x-tenant-id'), sessionToken: readSessionCookie(headerValue(req.headers, 'cookie')) },
      opts.auth,
    );
  });
});

/** The caller of a route behind principalPlugin. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new Error('principalOf: route is not behind principalPlugin');
  return req.principal;
}
