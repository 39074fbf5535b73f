import type { Server } from 'node:http';
import Provider from 'oidc-provider';

/**
 * A real OpenID provider (oidc-provider, the certified Node implementation) on loopback for the
 * SSO tests, with its development login and consent pages, and a browser driven by fetch. Not in
 * the package index: only the SSO tests load the provider (a development dependency).
 */
export interface TestAccount {
  email: string;
  email_verified: boolean;
  name?: string;
  groups: string[];
}

export const TEST_OIDC_CLIENT = { id: 'floe-test', secret: 'test-client-secret-0123456789abcdef' };

export async function startTestProvider(port: number, redirectUris: string[], accounts: Map<string, TestAccount>): Promise<{ issuer: string; stop(): Promise<void> }> {
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [{ client_id: TEST_OIDC_CLIENT.id, client_secret: TEST_OIDC_CLIENT.secret, redirect_uris: redirectUris, grant_types: ['authorization_code'], response_types: ['code'] }],
    // groups rides with the profile scope: Floe asks only for openid, email and profile.
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
    findAccount: async (_ctx, id) => {
      const a = accounts.get(id);
      return a ? { accountId: id, claims: async () => ({ sub: id, ...a }) } : undefined;
    },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ['test-cookie-key'] },
  });
  const server: Server = provider.listen(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject); // a taken port fails the start instead of waiting forever
  });
  return { issuer, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A cookie jar per origin, as much of one as these flows need. */
export class CookieJar {
  private readonly byOrigin = new Map<string, Map<string, string>>();
  header(url: URL) {
    const c = this.byOrigin.get(url.origin);
    return c ? [...c].map(([k, v]) => `${k}=${v}`).join('; ') : '';
  }
  store(url: URL, res: Response) {
    const c = this.byOrigin.get(url.origin) ?? new Map<string, string>();
    this.byOrigin.set(url.origin, c);
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const [k, v] = [pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim()];
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || v === '') c.delete(k);
      else c.set(k, v);
    }
  }
}

export interface SsoResult {
  /** Floe's answer to the callback. */
  status: number;
  location: string | null;
  body: any;
  /** `floe_session=<token>` when Floe signed the user in. */
  sessionCookie: string | undefined;
}

/**
 * Drives a browser through Floe's SSO start and the provider's login and consent forms, following
 * every redirect by hand and carrying cookies, up to the provider's redirect back to Floe's
 * callback: that URL (with code and state), and the browser's cookies. `undefined` when Floe's
 * start did not redirect (SSO unavailable): `startAnswer` then holds Floe's response.
 */
export async function ssoUpToCallback(routerUrl: string, accountId: string, jar = new CookieJar()): Promise<{ callbackUrl: URL; jar: CookieJar } | { startAnswer: Response; jar: CookieJar }> {
  let url = new URL(`${routerUrl}/ui/session/oidc/start`);
  let init: RequestInit = {};
  for (let hop = 0; hop < 20; hop++) {
    if (url.pathname === '/ui/session/oidc/callback') return { callbackUrl: url, jar };
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie: jar.header(url) } });
    jar.store(url, res);
    if (url.pathname === '/ui/session/oidc/start' && res.status !== 302) return { startAnswer: res, jar };
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url);
      init = {};
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (res.status !== 200 || !action || !prompt) throw new Error(`unexpected provider page ${res.status} at ${url.href}: ${html.slice(0, 300)}`);
    const form = new URLSearchParams({ prompt });
    if (prompt === 'login') {
      form.set('login', accountId);
      form.set('password', 'any');
    }
    url = new URL(action, url);
    init = { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
  }
  throw new Error('too many redirects');
}

/** Floe's answer to a callback URL delivered by the browser whose cookies are `jar`'s. */
export async function deliverSsoCallback(routerUrl: string, callbackUrl: URL, jar: CookieJar): Promise<SsoResult> {
  const res = await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: jar.header(callbackUrl) } });
  jar.store(callbackUrl, res);
  const text = await res.text();
  const session = jar.header(new URL(routerUrl)).split('; ').find((c) => c.startsWith('floe_session='));
  return { status: res.status, location: res.headers.get('location'), body: text ? JSON.parse(text) : undefined, sessionCookie: session };
}

/** Signs `accountId` in through Floe's SSO start, the provider's login and consent forms and Floe's callback, as a browser would. */
export async function ssoSignIn(routerUrl: string, accountId: string): Promise<SsoResult> {
  const flow = await ssoUpToCallback(routerUrl, accountId);
  if ('callbackUrl' in flow) return deliverSsoCallback(routerUrl, flow.callbackUrl, flow.jar);
  const text = await flow.startAnswer.text();
  return { status: flow.startAnswer.status, location: flow.startAnswer.headers.get('location'), body: text ? JSON.parse(text) : undefined, sessionCookie: undefined };
}
