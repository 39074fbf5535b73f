import type { FastifyPluginAsync } from 'fastify';
import type { ManagementAuthDeps, ResolvedSession } from '@floe/auth';
import { forbidden, unauthorized } from '@floe/errors';
import type { LoginAttempts } from '@floe/limits';
import { PASSWORD_MAX_LENGTH, checkUserPassword, createSession, revokeSession, type Db } from '@floe/meta';
import { ERROR_RESPONSES, ref } from '../management/schemas.ts';
import { rolesWire, sessionUserWire } from '../management/wire.ts';
import { clearedSessionCookie, readSessionCookie, sessionCookie, type CookieOptions } from './cookie.ts';
import { oidcRoutes, type OidcLogin } from './oidc-routes.ts';

export interface SessionOptions {
  db: Db;
  auth: ManagementAuthDeps;
  /** Lifetime of a new session (auth.session_ttl). */
  ttlMs: number;
  cookie: CookieOptions;
  /** Single sign-on (auth.oidc), when configured. */
  oidc?: OidcLogin;
  /** auth.oidc.disable_password_login: the password form is refused for every user. */
  passwordLoginDisabled?: boolean;
  /** Failed password sign-ins per account (absent: unlimited, as in tests of other things). */
  loginAttempts?: LoginAttempts;
  /** The demo account's credentials, shown on the login page while demo mode is on. */
  demo?: { username: string; password: string; tenant_id: string; dataset_id?: string };
  /** Where the browser goes after SSO sign-in (public.api_url). */
  appUrl: string;
}

const TAGS = ['session'];

const sessionBody = {
  type: 'object',
  additionalProperties: false,
  required: ['user', 'memberships', 'expires_at'],
  properties: {
    user: ref('SessionUser'),
    memberships: { type: 'array', items: ref('EffectiveRole') },
    expires_at: { type: 'string', format: 'date-time' },
  },
} as const;

const sessionWire = (s: ResolvedSession) => ({
  user: sessionUserWire(s.user),
  memberships: rolesWire(s.roles),
  expires_at: s.expiresAt.toISOString(),
});

/**
 * Browser sign-in (spec 2, Session and login): the login configuration, local password sign-in,
 * the current session (cookie only: API keys do not count here), sign-out, and SSO sign-in under
 * /oidc. The configuration tells the login page which of SSO, the password form and the demo
 * account to offer.
 */
export const sessionRoutes: FastifyPluginAsync<SessionOptions> = async (app, opts) => {
  // The same credentials are refused the same way whatever was wrong, so the answer does not tell
  // which addresses have accounts, which are disabled, or which have no password.
  const refuse = () => unauthorized('invalid username or password', { code: 'FLOE_ERR_AUTH_LOGIN' });

  app.get(
    '/config',
    {
      config: { public: true },
      schema: {
        operationId: 'get_session_config',
        summary: 'Login configuration (unauthenticated)',
        tags: TAGS,
        security: [],
        response: {
          200: {
            type: 'object',
            additionalProperties: false,
            required: ['oidc', 'password_enabled'],
            properties: {
              oidc: { anyOf: [{ type: 'object', additionalProperties: false, required: ['name'], properties: { name: { type: 'string' } } }, { type: 'null' }], description: 'The SSO provider, or null when none is available.' },
              password_enabled: { type: 'boolean' },
              demo: {
                type: 'object',
                additionalProperties: false,
                required: ['username', 'password', 'tenant_id'],
                properties: {
                  username: { type: 'string' },
                  password: { type: 'string' },
                  tenant_id: { type: 'string', description: 'The tenant the demo account views.' },
                  dataset_id: { type: 'string', description: 'The dataset the demo opens on (demo.dataset_id; absent when not configured).' },
                },
                description: 'Present only when demo mode is on.',
              },
            },
          },
          ...ERROR_RESPONSES,
        },
      },
    },
    async () => ({
      oidc: opts.oidc?.provider.current() ? { name: opts.oidc.provider.name } : null,
      password_enabled: !opts.passwordLoginDisabled,
      ...(opts.demo ? { demo: opts.demo } : {}),
    }),
  );

  app.post<{ Body: { username: string; password: string } }>(
    '/',
    {
      prefixTrailingSlash: 'no-slash',
      config: { public: true },
      schema: {
        operationId: 'create_session',
        summary: 'Sign in with a local password; sets the floe_session cookie',
        tags: TAGS,
        security: [],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['username', 'password'],
          properties: { username: { type: 'string', minLength: 1, maxLength: 254, description: 'The user’s email address.' }, password: { type: 'string', minLength: 1, maxLength: PASSWORD_MAX_LENGTH } },
        },
        response: { 200: sessionBody, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      // SSO rule 5: for every user, before any lookup (API keys and the admin key never come here).
      if (opts.passwordLoginDisabled) throw forbidden('password sign-in is disabled; use single sign-on', { code: 'FLOE_ERR_AUTH_PASSWORD_DISABLED' });
      const { username, password } = req.body;
      const check = () => checkUserPassword(opts.db, username, password);
      const user = opts.loginAttempts ? await opts.loginAttempts.guard(username, check) : await check();
      if (!user) throw refuse();
      const { token } = await createSession(opts.db, user.id, opts.ttlMs);
      const resolved = await opts.auth.session(token);
      if (!resolved) throw refuse(); // disabled between the two reads
      void reply.header('set-cookie', sessionCookie(token, opts.ttlMs / 1000, opts.cookie));
      return sessionWire(resolved);
    },
  );

  app.get(
    '/',
    {
      prefixTrailingSlash: 'no-slash',
      config: { public: true },
      schema: {
        operationId: 'get_session',
        summary: 'The signed-in user (session cookie only)',
        tags: TAGS,
        security: [{ session: [] }],
        response: { 200: sessionBody, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const token = readSessionCookie(req.headers.cookie);
      const resolved = token ? await opts.auth.session(token) : undefined;
      if (!resolved) throw unauthorized('not signed in', { code: 'FLOE_ERR_AUTH_SESSION' });
      return sessionWire(resolved);
    },
  );

  app.delete(
    '/',
    {
      prefixTrailingSlash: 'no-slash',
      config: { public: true },
      schema: {
        operationId: 'delete_session',
        summary: 'Sign out: ends the session server-side and clears the cookie',
        tags: TAGS,
        security: [{ session: [] }],
        response: { 204: { type: 'null', description: 'Signed out (also when there was no session)' }, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      await revokeSession(opts.db, readSessionCookie(req.headers.cookie));
      return reply.code(204).header('set-cookie', clearedSessionCookie(opts.cookie)).send();
    },
  );

  if (opts.oidc) await app.register(oidcRoutes, { prefix: '/oidc', db: opts.db, oidc: opts.oidc, ttlMs: opts.ttlMs, cookie: opts.cookie, appUrl: opts.appUrl });
};
