import { createHash } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ManagementAuthDeps, ResolvedSession } from '@floe/auth';
import { FloeError, forbidden, toHttp, unauthorized } from '@floe/errors';
import {
  MAX_REDIRECT_URIS,
  createOAuthRequest,
  decideOAuthRequest,
  effectiveRoles,
  getOAuthClient,
  getOAuthRequest,
  issueOAuthGrant,
  listUserMemberships,
  oauthCodeId,
  redeemOAuthCode,
  refreshOAuthGrant,
  registerOAuthClient,
  revokeOAuthToken,
  type Db,
  type MembershipRole,
  type OAuthClient,
} from '@floe/meta';
import { asFloeError } from '@floe/runtime';
import { ERROR_RESPONSES } from '../management/schemas.ts';
import { acceptFormBodies } from '../request-params.ts';
import { readSessionCookie } from '../session/cookie.ts';
import { CONSENT_PAGE, CONSENT_PAGE_CSP } from './consent-page.ts';
import { redirectsErrorsAtOnce, redirectUriMatches, redirectUriProblem } from './redirect-uris.ts';

export interface OAuthOptions {
  db: Db;
  auth: ManagementAuthDeps;
  /** public.api_url: the issuer, and the base of every endpoint the metadata names. */
  publicUrl: string;
  accessTokenTtlMs: number;
  refreshTokenTtlMs: number;
  /** auth.oauth.consent_url; empty: this plugin's own page at /oauth/consent. */
  consentUrl: string;
}

/** Scopes a client may ask for: the API key scopes a grant can carry (never tenant:manage). */
export const OAUTH_SCOPES = ['query', 'ingest'] as const;
/** What each role may grant a client: viewers read, members and admins also send. */
const ROLE_SCOPES: Record<MembershipRole, readonly string[]> = { viewer: ['query'], member: ['query', 'ingest'], admin: ['query', 'ingest'] };
/** How long a request waits for the user's decision, and a code for its exchange. */
const REQUEST_TTL_MS = 10 * 60_000;
const CODE_TTL_MS = 60_000;
/** OAuth parameters are short: anything longer is refused before it is stored. */
const MAX_PARAM_CHARS = 2000;
/** RFC 7636 §4.1: the verifier is 43-128 unreserved characters; an S256 challenge is 43 base64url characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const TOKEN_BODY_LIMIT = 16 * 1024;

/** An OAuth error answered in the protocol's own shape (RFC 6749 §5.2, RFC 7591 §3.2.2), not Floe's envelope. */
class OAuthError extends Error {
  readonly error: string;
  readonly description: string;
  readonly status: number;
  constructor(error: string, description: string, status = 400) {
    super(description);
    this.error = error;
    this.description = description;
    this.status = status;
  }
}

/**
 * The endpoints only OAuth clients call, with the error code of a request they refuse. A client
 * library reads `error` from every refusal there, so one of the framework's (a body too large, a
 * content type it cannot parse, malformed JSON) is answered in that shape too.
 */
const PROTOCOL_ROUTES: Record<string, { error: string; contentTypes: string }> = {
  '/oauth/token': { error: 'invalid_request', contentTypes: 'application/x-www-form-urlencoded or application/json' },
  '/oauth/revoke': { error: 'invalid_request', contentTypes: 'application/x-www-form-urlencoded or application/json' },
  '/oauth/register': { error: 'invalid_client_metadata', contentTypes: 'application/json' },
};

function protocolRefusal(route: string | undefined, err: unknown): OAuthError | undefined {
  const endpoint = route === undefined ? undefined : PROTOCOL_ROUTES[route];
  if (!endpoint) return undefined;
  const http = toHttp(asFloeError(err));
  if (http.unexpected || http.status >= 500) return undefined;
  const description = http.body.errorType === 'unsupported_media_type' ? `unsupported Content-Type (send ${endpoint.contentTypes})` : http.body.error;
  return new OAuthError(endpoint.error, description, http.status);
}

const grantable = (role: MembershipRole, requested: readonly string[]) => requested.filter((s) => ROLE_SCOPES[role].includes(s));
const s256 = (verifier: string) => createHash('sha256').update(verifier, 'ascii').digest('base64url');

/** A single string parameter of a query or form body (a repeated parameter is an error, RFC 6749 §3.1). */
function param(source: URLSearchParams | Record<string, unknown> | undefined, name: string): string | undefined {
  if (source instanceof URLSearchParams) {
    const all = source.getAll(name);
    if (all.length > 1) throw new OAuthError('invalid_request', `parameter ${name} is repeated`);
    return checkedParam(name, all[0]);
  }
  const v = source?.[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new OAuthError('invalid_request', `parameter ${name} must be a string`);
  return checkedParam(name, v);
}

function checkedParam(name: string, v: string | undefined): string | undefined {
  if (v === undefined || v === '') return undefined;
  if (v.length > MAX_PARAM_CHARS) throw new OAuthError('invalid_request', `parameter ${name} is too long`);
  // No OAuth value holds one, and the metadata DB cannot store one (state, resource, redirect_uri).
  if (v.includes('\u0000')) throw new OAuthError('invalid_request', `parameter ${name} contains a NUL character`);
  return v;
}

/** `scope` as a list of known scopes; none asked: query. */
function parseScopes(scope: string | undefined): string[] {
  const asked = (scope ?? 'query').split(' ').filter(Boolean);
  const unknown = asked.filter((s) => !(OAUTH_SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new OAuthError('invalid_scope', `unknown scope ${JSON.stringify(unknown[0])}; Floe grants ${OAUTH_SCOPES.join(', ')}`);
  return OAUTH_SCOPES.filter((s) => asked.includes(s));
}

/**
 * Floe as the OAuth 2.1 authorization server of its own APIs (spec 2, the consent flow), so that
 * clients such as MCP agents get a tenant's access without anyone pasting an API key:
 * discovery (RFC 8414, RFC 9728), dynamic client registration (RFC 7591; public clients only),
 * the authorization code flow with PKCE S256 (required), refresh with rotation, revocation
 * (RFC 7009). The signed-in user decides at a consent page (the router's own, or
 * auth.oauth.consent_url) that reads GET /oauth/consent/context and posts
 * /oauth/authorize/decision, both with the session cookie only. An access token is an API key
 * of the chosen tenant that expires, so every API checks it as it checks any key.
 */
export const oauthPlugin: FastifyPluginAsync<OAuthOptions> = async (app, opts) => {
  acceptFormBodies(app, TOKEN_BODY_LIMIT);
  const issuer = opts.publicUrl.replace(/\/+$/, '');
  const consentUrl = opts.consentUrl || `${issuer}/oauth/consent`;

  app.setErrorHandler((err, req, reply) => {
    const oauth = err instanceof OAuthError ? err : protocolRefusal(req.routeOptions.url, err);
    if (oauth) {
      return reply.code(oauth.status).header('cache-control', 'no-store').type('application/json').send({ error: oauth.error, error_description: oauth.description });
    }
    throw err;
  });

  const metadata = {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    scopes_supported: [...OAUTH_SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    authorization_response_iss_parameter_supported: true,
  };
  const resourceMetadata = {
    resource: `${issuer}/mcp`,
    authorization_servers: [issuer],
    // The agent tools only read: clients that ask for what the resource lists ask for no more.
    scopes_supported: ['query'],
    bearer_methods_supported: ['header'],
    resource_name: 'Floe',
  };
  const discovery = { config: { public: true }, schema: { tags: ['oauth'], security: [] } } as const;
  app.get('/.well-known/oauth-authorization-server', { ...discovery, schema: { ...discovery.schema, operationId: 'get_oauth_metadata', summary: 'OAuth authorization server metadata (RFC 8414)' } }, async () => metadata);
  app.get('/.well-known/oauth-protected-resource', { ...discovery, schema: { ...discovery.schema, operationId: 'get_oauth_resource_metadata', summary: 'Protected resource metadata of /mcp (RFC 9728)' } }, async () => resourceMetadata);
  app.get('/.well-known/oauth-protected-resource/mcp', { ...discovery, schema: { ...discovery.schema, operationId: 'get_oauth_mcp_resource_metadata', summary: 'Protected resource metadata of /mcp (RFC 9728, path form)' } }, async () => resourceMetadata);

  app.post<{ Body: Record<string, unknown> | URLSearchParams | undefined }>(
    '/oauth/register',
    { config: { public: true }, schema: { operationId: 'register_oauth_client', summary: 'Dynamic client registration (RFC 7591): public clients with PKCE', tags: ['oauth'], security: [] } },
    async (req, reply) => {
      const body = req.body;
      // A form body parses (the token endpoint takes forms) but registration is JSON only (RFC 7591 §3.1).
      if (typeof body !== 'object' || body === null || Array.isArray(body) || body instanceof URLSearchParams) throw new OAuthError('invalid_client_metadata', 'the body must be a JSON object');
      const uris = body.redirect_uris;
      if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS || !uris.every((u) => typeof u === 'string' && u.length <= MAX_PARAM_CHARS)) {
        throw new OAuthError('invalid_redirect_uri', `redirect_uris must list 1 to ${MAX_REDIRECT_URIS} URIs`);
      }
      for (const uri of uris as string[]) {
        const problem = redirectUriProblem(uri);
        if (problem) throw new OAuthError('invalid_redirect_uri', `${JSON.stringify(uri)}: ${problem}`);
      }
      const method = body.token_endpoint_auth_method ?? 'none';
      if (method !== 'none') throw new OAuthError('invalid_client_metadata', 'only public clients are registered (token_endpoint_auth_method "none"; PKCE protects the code)');
      const grants = body.grant_types ?? ['authorization_code', 'refresh_token'];
      if (!Array.isArray(grants) || !grants.every((g) => g === 'authorization_code' || g === 'refresh_token')) {
        throw new OAuthError('invalid_client_metadata', 'grant_types may hold authorization_code and refresh_token only');
      }
      const responses = body.response_types ?? ['code'];
      if (!Array.isArray(responses) || !responses.every((r) => r === 'code')) throw new OAuthError('invalid_client_metadata', 'response_types may hold code only');
      const name = body.client_name ?? 'unnamed client';
      // The consent page shows the name: a bidirectional override could make it read as another's.
      if (typeof name !== 'string' || name.length === 0 || name.length > 100 || /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u.test(name)) {
        throw new OAuthError('invalid_client_metadata', 'client_name must be 1 to 100 characters without control or bidirectional formatting characters');
      }
      const client = await registerOAuthClient(opts.db, { name, redirectUris: uris as string[] });
      return reply.code(201).header('cache-control', 'no-store').send({
        client_id: client.id,
        client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000),
        client_name: client.name,
        redirect_uris: client.redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      });
    },
  );

  app.get<{ Querystring: Record<string, unknown> }>(
    '/oauth/authorize',
    { config: { public: true }, schema: { operationId: 'oauth_authorize', summary: 'Authorization endpoint: starts a request and sends the browser to the consent page', tags: ['oauth'], security: [] } },
    async (req, reply) => {
      const q = new URL(req.url, 'http://floe').searchParams;
      // Until the client and its redirect URI are known, an error goes to the browser, never to a URI.
      const client = await getOAuthClient(opts.db, param(q, 'client_id'));
      if (!client) throw new OAuthError('invalid_client', 'unknown client_id', 400);
      const given = param(q, 'redirect_uri');
      const redirectUri = given ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined);
      if (!redirectUri || !client.redirectUris.some((r) => redirectUriMatches(r, redirectUri))) {
        throw new OAuthError('invalid_request', given ? 'redirect_uri is not one the client registered' : 'redirect_uri is required (the client registered several)');
      }
      const state = param(q, 'state');
      try {
        if (param(q, 'response_type') !== 'code') throw new OAuthError('unsupported_response_type', 'response_type must be code');
        const challenge = param(q, 'code_challenge');
        if (!challenge || param(q, 'code_challenge_method') !== 'S256' || !CHALLENGE.test(challenge)) {
          throw new OAuthError('invalid_request', 'PKCE is required: code_challenge (43 base64url characters) with code_challenge_method S256');
        }
        const scopes = parseScopes(param(q, 'scope'));
        const resource = param(q, 'resource');
        if (resource !== undefined && !resource.startsWith(`${issuer}/`) && resource !== issuer) throw new OAuthError('invalid_target', `resource must be one of Floe's (${issuer}/mcp)`);
        const { handle } = await createOAuthRequest(opts.db, { clientId: client.id, redirectUri, scopes, state: state ?? null, codeChallenge: challenge, resource: resource ?? null, ttlMs: REQUEST_TTL_MS });
        const to = new URL(consentUrl);
        to.searchParams.set('request', handle);
        return reply.redirect(to.toString(), 302);
      } catch (err) {
        // Back to the client only when that cannot be a stranger's web page (redirect-uris.ts).
        if (!(err instanceof OAuthError) || !redirectsErrorsAtOnce(redirectUri)) throw err;
        return reply.redirect(withParams(redirectUri, { error: err.error, error_description: err.description, state, iss: issuer }), 302);
      }
    },
  );

  /** The signed-in user (session cookie only: a consent is a person's, never a key's). */
  const sessionOf = async (req: FastifyRequest): Promise<ResolvedSession> => {
    const token = readSessionCookie(req.headers.cookie);
    const session = token ? await opts.auth.session(token) : undefined;
    if (!session) throw unauthorized('sign in to decide on this request', { code: 'FLOE_ERR_AUTH_SESSION' });
    return session;
  };
  const notFound = () => new FloeError('not_found', 'no such authorization request: it expired, was already decided, or never existed', { code: 'FLOE_ERR_OAUTH_REQUEST' });

  app.get<{ Querystring: { request?: string } }>(
    '/oauth/consent',
    { config: { public: true }, schema: { operationId: 'oauth_consent_page', summary: 'The consent page (HTML) for auth.oauth.consent_url left empty', tags: ['oauth'], security: [] } },
    async (_req, reply) =>
      reply.header('content-security-policy', CONSENT_PAGE_CSP).header('x-frame-options', 'DENY').header('cache-control', 'no-store').type('text/html; charset=utf-8').send(CONSENT_PAGE),
  );

  app.get(
    '/oauth/consent/context',
    {
      config: { public: true },
      schema: {
        operationId: 'get_oauth_consent_context',
        summary: 'What the consent page shows: the client, the scopes asked, the tenants the signed-in user can grant them in',
        tags: ['oauth'],
        security: [{ session: [] }],
        querystring: { type: 'object', required: ['request'], properties: { request: { type: 'string', maxLength: 100 } } },
        response: { ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      const session = await sessionOf(req);
      const request = await getOAuthRequest(opts.db, (req.query as { request: string }).request);
      if (!request) throw notFound();
      const tenants = [...session.roles]
        .map(([tenant, role]) => ({ tenant_id: tenant, role, scopes: grantable(role, request.scopes) }))
        .filter((t) => t.scopes.length > 0)
        .sort((a, b) => (a.tenant_id < b.tenant_id ? -1 : 1));
      return reply.header('cache-control', 'no-store').send({
        client: { client_id: request.client.id, client_name: request.client.name, redirect_uri: request.redirectUri },
        scopes: request.scopes,
        resource: request.resource,
        expires_at: request.expiresAt.toISOString(),
        user: { email: session.user.email },
        tenants,
      });
    },
  );

  app.post<{ Body: { request: string; approve: boolean; tenant_id?: string } }>(
    '/oauth/authorize/decision',
    {
      config: { public: true, sessionOnly: true },
      schema: {
        operationId: 'decide_oauth_request',
        summary: 'The signed-in user approves (for one tenant) or denies a request; answers where to send the browser',
        tags: ['oauth'],
        security: [{ session: [] }],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['request', 'approve'],
          properties: { request: { type: 'string', maxLength: 100 }, approve: { type: 'boolean' }, tenant_id: { type: 'string', maxLength: 63 } },
        },
        response: { ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      // A decision comes from the consent page, on the router's own origin: a cross-site post
      // (which a JSON body already needs CORS for) is refused outright.
      const origin = req.headers.origin;
      if (origin !== undefined && hostOf(origin) !== req.host) throw forbidden('a decision must come from Floe\'s own origin', { code: 'FLOE_ERR_OAUTH_ORIGIN' });
      const session = await sessionOf(req);
      const { request: handle, approve, tenant_id: tenant } = req.body;
      let approval: { userId: string; tenantId: string; scopes: string[]; codeTtlMs: number } | undefined;
      if (approve) {
        if (!tenant) throw new FloeError('bad_data', 'tenant_id is required to approve', { code: 'FLOE_ERR_OAUTH_TENANT' });
        const asked = await getOAuthRequest(opts.db, handle);
        if (!asked) throw notFound();
        const role = session.roles.get(tenant);
        const scopes = role ? grantable(role, asked.scopes) : [];
        if (scopes.length === 0) throw forbidden(`you cannot grant ${asked.scopes.join(', ')} in tenant ${tenant}`, { code: 'FLOE_ERR_OAUTH_TENANT' });
        approval = { userId: session.user.id, tenantId: tenant, scopes, codeTtlMs: CODE_TTL_MS };
      }
      const decided = await decideOAuthRequest(opts.db, handle, approval);
      if (!decided) throw notFound();
      const state = decided.request.state ?? undefined;
      const redirectTo = decided.code
        ? withParams(decided.request.redirectUri, { code: decided.code, state, iss: issuer })
        : withParams(decided.request.redirectUri, { error: 'access_denied', error_description: 'the user denied the request', state, iss: issuer });
      return reply.header('cache-control', 'no-store').send({ redirect_to: redirectTo });
    },
  );

  /** The user's scopes in a tenant now (a refresh narrows a grant to them). */
  const scopesNow = async (userId: string, tenantId: string, scopes: readonly string[]): Promise<string[]> => {
    const role = effectiveRoles(await listUserMemberships(opts.db, userId)).get(tenantId);
    return role ? grantable(role, scopes) : [];
  };

  const clientOf = async (body: URLSearchParams | Record<string, unknown> | undefined): Promise<OAuthClient> => {
    const client = await getOAuthClient(opts.db, param(body, 'client_id'));
    if (!client) throw new OAuthError('invalid_client', 'unknown client_id', 401);
    return client;
  };

  app.post<{ Body: URLSearchParams | Record<string, unknown> | undefined }>(
    '/oauth/token',
    { config: { public: true }, schema: { operationId: 'oauth_token', summary: 'Token endpoint: authorization_code (with the PKCE verifier) and refresh_token grants', tags: ['oauth'], security: [] } },
    async (req, reply) => {
      const body = req.body;
      void reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      const grantType = param(body, 'grant_type');
      if (grantType === 'authorization_code') {
        const client = await clientOf(body);
        const code = param(body, 'code');
        const verifier = param(body, 'code_verifier');
        if (!code || !verifier) throw new OAuthError('invalid_request', 'code and code_verifier are required');
        const redeemed = await redeemOAuthCode(opts.db, code);
        if (redeemed.status !== 'ok') throw new OAuthError('invalid_grant', redeemed.status === 'reused' ? 'the code was already used; what it was exchanged for is revoked' : 'unknown or expired code');
        const c = redeemed.code;
        if (c.clientId !== client.id) throw new OAuthError('invalid_grant', 'the code was issued to another client');
        if (param(body, 'redirect_uri') !== c.redirectUri) throw new OAuthError('invalid_grant', 'redirect_uri differs from the authorization request');
        if (!VERIFIER.test(verifier) || s256(verifier) !== c.codeChallenge) throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
        const scopes = await scopesNow(c.userId, c.tenantId, c.scopes);
        if (scopes.length === 0) throw new OAuthError('invalid_grant', 'the user may no longer grant this access');
        const tokens = await issueOAuthGrant(opts.db, {
          clientId: client.id,
          clientName: client.name,
          userId: c.userId,
          tenantId: c.tenantId,
          scopes,
          accessTtlMs: opts.accessTokenTtlMs,
          refreshTtlMs: opts.refreshTokenTtlMs,
          codeId: oauthCodeId(code),
        });
        if (!tokens) throw new OAuthError('invalid_grant', 'the code was presented again meanwhile; nothing is issued for it');
        return tokenResponse(tokens);
      }
      if (grantType === 'refresh_token') {
        const client = await clientOf(body);
        const refreshToken = param(body, 'refresh_token');
        if (!refreshToken) throw new OAuthError('invalid_request', 'refresh_token is required');
        const tokens = await refreshOAuthGrant(opts.db, { refreshToken, clientId: client.id, accessTtlMs: opts.accessTokenTtlMs, refreshTtlMs: opts.refreshTokenTtlMs, scopesFor: scopesNow });
        if (!tokens) throw new OAuthError('invalid_grant', 'unknown, expired, revoked or already used refresh token');
        return tokenResponse(tokens);
      }
      throw new OAuthError(grantType ? 'unsupported_grant_type' : 'invalid_request', grantType ? `grant_type ${JSON.stringify(grantType)} is not supported` : 'grant_type is required');
    },
  );

  app.post<{ Body: URLSearchParams | Record<string, unknown> | undefined }>(
    '/oauth/revoke',
    { config: { public: true }, schema: { operationId: 'oauth_revoke', summary: 'Token revocation (RFC 7009): a refresh or access token ends its grant', tags: ['oauth'], security: [] } },
    async (req, reply) => {
      const client = await clientOf(req.body);
      const token = param(req.body, 'token');
      if (!token) throw new OAuthError('invalid_request', 'token is required');
      await revokeOAuthToken(opts.db, token, client.id);
      return reply.code(200).header('cache-control', 'no-store').send({});
    },
  );
};

const tokenResponse = (t: { accessToken: string; refreshToken: string; expiresIn: number; scopes: string[]; tenantId: string }) => ({
  access_token: t.accessToken,
  token_type: 'Bearer',
  expires_in: t.expiresIn,
  refresh_token: t.refreshToken,
  scope: t.scopes.join(' '),
  // Not an OAuth field: which tenant the token reaches, for clients that also send X-Tenant-ID.
  tenant_id: t.tenantId,
});

/** The host of an Origin header; undefined for one that is no URL (`null`, garbage), which never matches. */
function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}

/** A redirect URI with parameters added to its query (those it had kept, RFC 6749 §3.1.2). */
function withParams(uri: string, params: Record<string, string | undefined>): string {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return u.toString();
}

