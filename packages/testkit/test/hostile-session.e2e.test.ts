import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onFreePorts, startFloe, type FloeUnderTest } from '../src/index.ts';
import { TEST_OIDC_CLIENT, deliverSsoCallback, ssoUpToCallback, startTestProvider, type TestAccount } from '../src/oidc-provider.ts';

/**
 * Hostile input to browser sign-in (/ui/session) and to the OAuth authorization server's
 * registration and token endpoints (embedded): odd usernames are refused as wrong credentials
 * rather than a 500, the per-account sign-in lock holds against address variants and against
 * guesses sent all at once, cookies of ended sessions and deleted users sign no one in, and the
 * OAuth endpoints answer malformed requests in the protocol's own error shape.
 */
describe('sessions and OAuth: hostile requests (embedded)', () => {
  let floe: FloeUnderTest;
  let base: string;
  const PASSWORD = 'correct horse battery';

  const call = async (method: string, path: string, o: { body?: unknown; raw?: string; type?: string; cookie?: string; key?: string } = {}) => {
    const headers: Record<string, string> = {};
    if (o.body !== undefined || o.raw !== undefined) headers['content-type'] = o.type ?? 'application/json';
    if (o.cookie) headers.cookie = o.cookie;
    if (o.key) headers.authorization = `Bearer ${o.key}`;
    const res = await fetch(`${base}${path}`, { method, headers, body: o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body)), redirect: 'manual' });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, setCookie: res.headers.getSetCookie() };
  };
  const signIn = (username: string, password: string) => call('POST', '/ui/session', { body: { username, password } });
  const newUser = async (email: string) => {
    const res = await call('POST', '/api/v1/users', { key: floe.adminApiKey, body: { email, password: PASSWORD } });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };

  beforeAll(async () => {
    floe = await onFreePorts(1, ([port]) => {
      base = `http://127.0.0.1:${port}`;
      return startFloe({ mode: 'embedded', config: { router: { port }, public: { api_url: base } } });
    });
    await floe.bootstrap('sessco');
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  describe('POST /ui/session', () => {
    it('refuses a username holding a NUL or another control character as wrong credentials (401), not a 500', async () => {
      await newUser('nul@acme.test');
      for (const username of ['nul\u0000@acme.test', 'nul@acme.test\u0000', 'nul\u0001@acme.test']) {
        expect(await signIn(username, PASSWORD)).toMatchObject({ status: 401, body: { errorType: 'unauthorized', error: 'invalid username or password' }, setCookie: [] });
      }
      expect((await signIn('nul@acme.test', PASSWORD)).status).toBe(200);
    });

    it('counts failures of case and space variants of an address against the one account', async () => {
      await newUser('ann@acme.test');
      for (const variant of ['ANN@acme.test', ' ann@acme.test', 'ann@ACME.TEST ', 'Ann@Acme.Test', '\tann@acme.test']) {
        expect((await signIn(variant, 'wrong password!')).status).toBe(401);
      }
      // Locked: the right password too, however the address is written.
      for (const variant of ['ann@acme.test', 'ANN@ACME.TEST', ' ann@acme.test ']) {
        const res = await signIn(variant, PASSWORD);
        expect(res).toMatchObject({ status: 429, body: { errorType: 'rate_limited', error: expect.stringMatching(/^too many failed sign-ins for this account/) }, setCookie: [] });
      }
      // A look-alike address is another (nonexistent) account: its failures are its own, and it never signs Ann in.
      expect((await signIn('ann@acme.test\u200b', PASSWORD)).status).toBe(401);
      expect((await signIn('\u0430nn@acme.test', PASSWORD)).status).toBe(401);
    });

    it('lets no more than five wrong passwords of one account through when they arrive all at once', async () => {
      await newUser('bob@acme.test');
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => signIn(i % 2 ? 'bob@acme.test' : 'BOB@acme.test', `wrong password ${i}`)));
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses.filter((s) => s === 401)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(15);
      expect((await signIn('bob@acme.test', PASSWORD)).status).toBe(429);
    });
  });

  describe('session cookies', () => {
    it('signs no one in with a forged, ended or deleted user’s cookie, or with hundreds of cookies', async () => {
      const id = await newUser('cara@acme.test');
      const login = await signIn('cara@acme.test', PASSWORD);
      expect(login.status).toBe(200);
      const cookie = login.setCookie[0]!.split(';')[0]!;
      expect((await call('GET', '/ui/session', { cookie })).body.user.id).toBe(id);

      const notSignedIn = { status: 401, body: { status: 'error', errorType: 'unauthorized', error: 'not signed in' } };
      const token = cookie.slice('floe_session='.length);
      const tampered = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
      for (const forged of [`floe_session=${tampered}`, `floe_session=${'A'.repeat(43)}`, `floe_session=${'x'.repeat(6000)}`, 'floe_session=%00', 'floe_session', 'floe_session=;floe_session=']) {
        expect(await call('GET', '/ui/session', { cookie: forged })).toMatchObject(notSignedIn);
      }
      // Hundreds of other cookies around the real one: found, nothing else read.
      const crowd = Array.from({ length: 300 }, (_, i) => `c${i}=v${i}`);
      expect((await call('GET', '/ui/session', { cookie: [...crowd, cookie].join('; ') })).status).toBe(200);
      // Signing out with a junk cookie answers 204 and ends nothing.
      expect((await call('DELETE', '/ui/session', { cookie: `floe_session=${tampered}` })).status).toBe(204);
      expect((await call('GET', '/ui/session', { cookie })).status).toBe(200);

      // A deleted user's cookie signs no one in, even once an address is reused.
      expect((await call('DELETE', `/api/v1/users/${id}`, { key: floe.adminApiKey })).status).toBe(204);
      expect(await call('GET', '/ui/session', { cookie })).toMatchObject(notSignedIn);
      const again = await newUser('cara@acme.test');
      expect(again).not.toBe(id);
      expect(await call('GET', '/ui/session', { cookie })).toMatchObject(notSignedIn);
    });

    it('a removed membership is gone from the session at once', async () => {
      const id = await newUser('dave@acme.test');
      expect((await call('POST', '/api/v1/tenants/sessco/memberships', { key: floe.adminApiKey, body: { user_id: id, role: 'admin' } })).status).toBe(201);
      const cookie = (await signIn('dave@acme.test', PASSWORD)).setCookie[0]!.split(';')[0]!;
      expect((await call('GET', '/ui/session', { cookie })).body.memberships).toEqual([{ tenant_id: 'sessco', role: 'admin' }]);
      expect((await call('DELETE', `/api/v1/tenants/sessco/memberships/${id}`, { key: floe.adminApiKey })).status).toBe(204);
      expect((await call('GET', '/ui/session', { cookie })).body.memberships).toEqual([]);
      expect((await call('GET', '/api/v1/tenants/sessco/memberships', { cookie })).status).toBe(403);
    });
  });

  describe('OAuth client endpoints answer in the protocol’s error shape', () => {
    const form = 'application/x-www-form-urlencoded';
    it.each([
      ['/oauth/token', 'a body over the limit', { raw: `grant_type=refresh_token&refresh_token=${'a'.repeat(20_000)}`, type: form }, 413, 'invalid_request', 'request body too large'],
      ['/oauth/token', 'a content type it does not take', { raw: 'grant_type=refresh_token', type: 'text/plain' }, 415, 'invalid_request', 'unsupported Content-Type (send application/x-www-form-urlencoded or application/json)'],
      ['/oauth/token', 'malformed JSON', { raw: '{"grant_type":', type: 'application/json' }, 400, 'invalid_request', 'body is not valid JSON'],
      ['/oauth/revoke', 'a content type it does not take', { raw: 'token=x', type: 'application/xml' }, 415, 'invalid_request', 'unsupported Content-Type (send application/x-www-form-urlencoded or application/json)'],
      ['/oauth/register', 'malformed JSON', { raw: '{"redirect_uris":[', type: 'application/json' }, 400, 'invalid_client_metadata', 'body is not valid JSON'],
      ['/oauth/register', 'a form body', { raw: 'redirect_uris=https://a.example/cb', type: form }, 400, 'invalid_client_metadata', 'the body must be a JSON object'],
      ['/oauth/register', 'a content type it does not take', { raw: '{}', type: 'text/plain' }, 415, 'invalid_client_metadata', 'unsupported Content-Type (send application/json)'],
    ] as const)('%s with %s answers %s %s', async (path, _what, body, status, error, description) => {
      const res = await call('POST', path, body);
      expect(res).toMatchObject({ status, body: { error, error_description: description } });
      expect(Object.keys(res.body).sort()).toEqual(['error', 'error_description']);
    });

    it.each([
      ['a NUL', 'https://app.example/cb\u0000', 'must not contain whitespace or control characters'],
      ['a tab the parser would drop', 'https://good.exa\tmple/cb', 'must not contain whitespace or control characters'],
      ['credentials', 'https://good.example@evil.example/cb', 'must not carry credentials'],
      ['a javascript: URI', 'javascript:alert(1)//', 'a private-use scheme must be a reversed domain name (com.example.app:/callback)'],
      ['a data: URI', 'data:text/html,<script>alert(1)</script>', 'a private-use scheme must be a reversed domain name (com.example.app:/callback)'],
      ['a fragment', 'https://app.example/cb#x', 'must not have a fragment'],
      ['plain http to another host', 'http://localhost.evil.example/cb', 'http is allowed only to a loopback address (127.0.0.1, [::1], localhost); use https'],
    ])('registration refuses a redirect URI with %s (invalid_redirect_uri), storing nothing', async (_what, uri, problem) => {
      const before = await floe.metaQuery<{ n: number }>('SELECT count(*)::int AS n FROM oauth_clients');
      const res = await call('POST', '/oauth/register', { body: { redirect_uris: [uri] } });
      expect(res).toMatchObject({ status: 400, body: { error: 'invalid_redirect_uri', error_description: `${JSON.stringify(uri)}: ${problem}` } });
      expect(await floe.metaQuery('SELECT count(*)::int AS n FROM oauth_clients')).toEqual(before);
    });

    it('registration refuses a client name with bidirectional overrides (the consent page shows it)', async () => {
      for (const name of ['\u202egoogle', 'Floe\u2066 CLI', 'a\u0000b']) {
        const res = await call('POST', '/oauth/register', { body: { redirect_uris: ['https://app.example/cb'], client_name: name } });
        expect(res).toMatchObject({ status: 400, body: { error: 'invalid_client_metadata', error_description: 'client_name must be 1 to 100 characters without control or bidirectional formatting characters' } });
      }
      expect((await call('POST', '/oauth/register', { body: { redirect_uris: ['https://app.example/cb'], client_name: 'Ünïcödé agent ✓' } })).status).toBe(201);
    });
  });
});

/**
 * Single sign-on against a real OpenID provider (oidc-provider) with hostile browsers and a
 * provider asserting odd identities.
 */
describe('single sign-on: hostile callbacks and identities (embedded)', () => {
  const accounts = new Map<string, TestAccount>();
  let floe: FloeUnderTest;
  let provider: { issuer: string; stop(): Promise<void> };

  const me = async (cookie: string | undefined) => {
    const res = await fetch(`${floe.routerUrl}/ui/session`, { headers: cookie ? { cookie } : {} });
    return { status: res.status, body: (await res.json()) as any };
  };
  const upToCallback = async (account: string) => {
    const flow = await ssoUpToCallback(floe.routerUrl, account);
    if (!('callbackUrl' in flow)) throw new Error(`SSO start answered ${flow.startAnswer.status}`);
    return flow;
  };
  const sessionsOf = (email: string) => floe.metaQuery<{ n: number }>('SELECT count(*)::int AS n FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = $1', [email]);
  const refused = { status: 403, body: { status: 'error', errorType: 'forbidden', error: 'single sign-on refused' }, sessionCookie: undefined };

  beforeAll(async () => {
    floe = await onFreePorts(2, async ([routerPort, providerPort]) => {
      const routerUrl = `http://127.0.0.1:${routerPort}`;
      const idp = await startTestProvider(providerPort!, [`${routerUrl}/ui/session/oidc/callback`], accounts);
      try {
        const started = await startFloe({
          mode: 'embedded',
          config: {
            router: { port: routerPort },
            public: { api_url: routerUrl },
            auth: { oidc: { issuer_url: idp.issuer, client_id: TEST_OIDC_CLIENT.id, client_secret: TEST_OIDC_CLIENT.secret, allowed_email_domains: ['example.com'] } },
          },
        });
        provider = idp;
        return started;
      } catch (err) {
        await idp.stop();
        throw err;
      }
    });
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
    await provider?.stop();
  });

  it('a callback carrying another browser’s state is refused and signs no one in; the other browser’s own flow still completes', async () => {
    accounts.set('mallory-sub', { email: 'mallory@example.com', email_verified: true, groups: [] });
    accounts.set('victor-sub', { email: 'victor@example.com', email_verified: true, groups: [] });
    // Mallory finishes her provider login but hands her callback to Victor’s browser (login CSRF).
    const mallory = await upToCallback('mallory-sub');
    const victor = await upToCallback('victor-sub');
    expect(await deliverSsoCallback(floe.routerUrl, mallory.callbackUrl, victor.jar)).toMatchObject(refused);
    expect(await floe.metaQuery('SELECT id FROM users WHERE email = $1', ['mallory@example.com'])).toEqual([]);
    const own = await deliverSsoCallback(floe.routerUrl, victor.callbackUrl, victor.jar);
    expect(own.status).toBe(302);
    expect((await me(own.sessionCookie)).body.user.email).toBe('victor@example.com');
  });

  it('a replayed callback is refused: one sign-in, one session', async () => {
    accounts.set('rita-sub', { email: 'rita@example.com', email_verified: true, groups: [] });
    const flow = await upToCallback('rita-sub');
    const cookiesBefore = flow.jar.header(flow.callbackUrl);
    const first = await deliverSsoCallback(floe.routerUrl, flow.callbackUrl, flow.jar);
    expect(first.status).toBe(302);
    // The same URL and the same flow cookie again (the browser’s back button, or a thief of both).
    const replay = await fetch(flow.callbackUrl, { redirect: 'manual', headers: { cookie: cookiesBefore } });
    expect(replay.status).toBe(403);
    expect(replay.headers.getSetCookie().some((c) => c.startsWith('floe_session='))).toBe(false);
    expect(await sessionsOf('rita@example.com')).toEqual([{ n: 1 }]);
  });

  it('a callback with repeated, missing or oversized state or code is refused with the flow’s answer, never a 500', async () => {
    accounts.set('sam-sub', { email: 'sam@example.com', email_verified: true, groups: [] });
    const flow = await upToCallback('sam-sub');
    const q = flow.callbackUrl.searchParams;
    const [code, state] = [q.get('code')!, q.get('state')!];
    const variants = [
      `code=${code}&code=${code}&state=${state}`,
      `code=${code}&state=${state}&state=${state}`,
      `state=${state}`,
      `code=${code}`,
      `code=${code}&state=${'s'.repeat(4000)}`,
      `code=${'c'.repeat(4000)}&state=${state}`,
      `code=${code}&state=${state}%00`,
      'error=access_denied&error_description=no',
      '',
    ];
    for (const query of variants) {
      const url = new URL(flow.callbackUrl);
      url.search = query;
      expect({ query: query.slice(0, 40), ...(await deliverSsoCallback(floe.routerUrl, url, flow.jar)) }).toMatchObject({ ...refused, query: query.slice(0, 40) });
    }
    expect(await floe.metaQuery('SELECT id FROM users WHERE email = $1', ['sam@example.com'])).toEqual([]);
  });

  it('an unverified email of an existing password user neither signs them in nor links the identity', async () => {
    const created = await fetch(`${floe.routerUrl}/api/v1/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'paula@example.com', password: 'paula-password-1' }),
    });
    expect(created.status).toBe(201);
    accounts.set('impostor-sub', { email: 'PAULA@example.com', email_verified: false, groups: [] });
    const flow = await upToCallback('impostor-sub');
    expect(await deliverSsoCallback(floe.routerUrl, flow.callbackUrl, flow.jar)).toMatchObject(refused);
    expect(await floe.metaQuery('SELECT oidc_subject FROM users WHERE email = $1', ['paula@example.com'])).toEqual([{ oidc_subject: null }]);
    expect(await sessionsOf('paula@example.com')).toEqual([{ n: 0 }]);
  });

  it('a provider asserting an email or subject holding a NUL, or an overlong subject, is refused like any unusable identity, not a 500', async () => {
    accounts.set('nul-mail-sub', { email: 'nul\u0000@example.com', email_verified: true, groups: [] });
    const mail = await upToCallback('nul-mail-sub');
    expect(await deliverSsoCallback(floe.routerUrl, mail.callbackUrl, mail.jar)).toMatchObject(refused);
    accounts.set('nul\u0000sub', { email: 'nulsub@example.com', email_verified: true, groups: [] });
    const sub = await upToCallback('nul\u0000sub');
    expect(await deliverSsoCallback(floe.routerUrl, sub.callbackUrl, sub.jar)).toMatchObject(refused);
    // OpenID Connect caps a subject at 255 characters.
    accounts.set('s'.repeat(300), { email: 'longsub@example.com', email_verified: true, groups: [] });
    const long = await upToCallback('s'.repeat(300));
    expect(await deliverSsoCallback(floe.routerUrl, long.callbackUrl, long.jar)).toMatchObject(refused);
    expect(await floe.metaQuery("SELECT email FROM users WHERE email LIKE 'nul%' OR email = 'longsub@example.com'")).toEqual([]);
  });
});
