import type { FastifyPluginAsync } from 'fastify';
import * as client from 'openid-client';
import { FloeError, forbidden, unavailable } from '@floe/errors';
import { createSession, type Db } from '@floe/meta';
import { ERROR_RESPONSES } from '../management/schemas.ts';
import { sessionCookie, type CookieOptions } from './cookie.ts';
import { clearedPendingLoginCookie, pendingLoginCookie, readPendingLogin } from './oidc-flow-cookie.ts';
import { groupsOf, signInWithOidc, type OidcLoginRules } from './oidc-login.ts';
import type { OidcProvider } from './oidc-provider.ts';

/** Everything the SSO routes need besides the provider itself. */
export interface OidcLogin extends OidcLoginRules {
  provider: OidcProvider;
  clientSecret: string;
  /** Registered redirect URI: auth.oidc.redirect_url, else {public.api_url}/ui/session/oidc/callback. */
  redirectUri: string;
  /** Claim naming the user's groups ('' : none). */
  groupClaim: string;
}

export interface OidcRouteOptions {
  db: Db;
  oidc: OidcLogin;
  ttlMs: number;
  cookie: CookieOptions;
  /** Where the browser goes once signed in (public.api_url). */
  appUrl: string;
}

/** Spec 2, Authentication: "Requested scopes: openid, email, profile". */
const SCOPES = 'openid email profile';
const TAGS = ['session'];

/** The registered redirect URI; never derived from request headers (Host can be forged). */
export const oidcRedirectUri = (publicUrl: string, redirectUrl: string) => redirectUrl || `${publicUrl.replace(/\/+$/, '')}/ui/session/oidc/callback`;

const redirectResponse = { 302: { type: 'null', description: 'Redirect' } } as const;

/**
 * SSO sign-in (spec 2, Session and login): authorization-code flow with PKCE, state and nonce.
 * The callback signs the user in exactly as the password form does (same session, same cookie).
 */
export const oidcRoutes: FastifyPluginAsync<OidcRouteOptions> = async (app, opts) => {
  const { oidc } = opts;
  const available = () => {
    const cfg = oidc.provider.current();
    if (!cfg) throw unavailable(`single sign-on provider ${oidc.provider.issuer} is unavailable`, { code: 'FLOE_ERR_AUTH_SSO_UNAVAILABLE' });
    return cfg;
  };
  const refused = () => forbidden('single sign-on refused', { code: 'FLOE_ERR_AUTH_SSO_REFUSED' });

  app.get(
    '/start',
    {
      config: { public: true },
      schema: { operationId: 'start_oidc_login', summary: 'Begin single sign-on: redirects to the identity provider', tags: TAGS, security: [], response: { ...redirectResponse, ...ERROR_RESPONSES } },
    },
    async (_req, reply) => {
      const cfg = available();
      const pending = { state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier() };
      const url = client.buildAuthorizationUrl(cfg, {
        redirect_uri: oidc.redirectUri,
        scope: SCOPES,
        state: pending.state,
        nonce: pending.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(pending.verifier),
        code_challenge_method: 'S256',
      });
      return reply.header('set-cookie', pendingLoginCookie(pending, oidc.clientSecret, opts.cookie)).redirect(url.href, 302);
    },
  );

  app.get(
    '/callback',
    {
      config: { public: true },
      schema: {
        operationId: 'complete_oidc_login',
        summary: 'Single sign-on callback: signs the user in and redirects to the app',
        tags: TAGS,
        security: [],
        querystring: { type: 'object', additionalProperties: true, properties: {} },
        response: { ...redirectResponse, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      const pending = readPendingLogin(req.headers.cookie, oidc.clientSecret);
      if (!pending) throw new FloeError('bad_data', 'single sign-on expired or was not started here; start again', { code: 'FLOE_ERR_AUTH_SSO_STATE' });
      const cfg = available();
      // The provider's answer is checked against the registered URI, with only the query taken from
      // the request.
      const current = new URL(oidc.redirectUri);
      current.search = new URL(req.url, 'http://callback.invalid').search;
      let claims: Record<string, unknown>;
      try {
        const tokens = await client.authorizationCodeGrant(cfg, current, {
          pkceCodeVerifier: pending.verifier,
          expectedState: pending.state,
          expectedNonce: pending.nonce,
          idTokenExpected: true,
        });
        const idClaims = tokens.claims()!;
        // Providers differ in which claims ride in the ID token; userinfo fills the rest. The ID
        // token's own claims win where both speak.
        const info = cfg.serverMetadata().userinfo_endpoint ? await client.fetchUserInfo(cfg, tokens.access_token, idClaims.sub) : {};
        claims = { ...info, ...idClaims };
      } catch (err) {
        req.log.warn({ err: String(err), issuer: oidc.provider.issuer }, 'SSO callback: code exchange failed');
        throw refused();
      }
      const user = await signInWithOidc(
        opts.db,
        oidc,
        {
          issuer: cfg.serverMetadata().issuer,
          subject: String(claims.sub),
          email: typeof claims.email === 'string' ? claims.email : undefined,
          emailVerified: claims.email_verified === true,
          name: typeof claims.name === 'string' ? claims.name : undefined,
          groups: oidc.groupClaim ? groupsOf(claims[oidc.groupClaim]) : [],
        },
        req.log,
      );
      if (!user) throw refused();
      const { token } = await createSession(opts.db, user.id, opts.ttlMs);
      return reply.header('set-cookie', [sessionCookie(token, opts.ttlMs / 1000, opts.cookie), clearedPendingLoginCookie(opts.cookie)]).redirect(opts.appUrl, 302);
    },
  );
};
