import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { CookieOptions } from './cookie.ts';

/**
 * What the SSO callback must check the provider's answer against (state, nonce, PKCE verifier),
 * carried by the browser in a short-lived signed cookie rather than held in one router's memory,
 * so the callback may reach any router of a cluster. The signature key derives from the client
 * secret, which every router already shares; the cookie is HttpOnly and scoped to the SSO paths.
 */
export interface PendingLogin {
  state: string;
  nonce: string;
  verifier: string;
}

export const OIDC_FLOW_COOKIE = 'floe_oidc';
const PATH = '/ui/session/oidc';
/** Time a user has to complete the provider's login pages. */
export const OIDC_FLOW_TTL_S = 600;

const keyOf = (clientSecret: string) => createHash('sha256').update('floe oidc flow\0').update(clientSecret).digest();
const mac = (key: Buffer, payload: string) => createHmac('sha256', key).update(payload).digest('base64url');
const attributes = (opts: CookieOptions) => `Path=${PATH}; HttpOnly; SameSite=Lax${opts.secure ? '; Secure' : ''}`;

export function pendingLoginCookie(p: PendingLogin, clientSecret: string, opts: CookieOptions, now = Date.now()): string {
  const payload = Buffer.from(JSON.stringify({ ...p, exp: Math.floor(now / 1000) + OIDC_FLOW_TTL_S })).toString('base64url');
  return `${OIDC_FLOW_COOKIE}=${payload}.${mac(keyOf(clientSecret), payload)}; Max-Age=${OIDC_FLOW_TTL_S}; ${attributes(opts)}`;
}

export const clearedPendingLoginCookie = (opts: CookieOptions) => `${OIDC_FLOW_COOKIE}=; Max-Age=0; ${attributes(opts)}`;

/** The pending login of a Cookie header, or undefined when absent, forged or expired. */
export function readPendingLogin(header: string | undefined, clientSecret: string, now = Date.now()): PendingLogin | undefined {
  const raw = header
    ?.split(';')
    .map((p) => p.trim())
    .find((p) => p.startsWith(`${OIDC_FLOW_COOKIE}=`))
    ?.slice(OIDC_FLOW_COOKIE.length + 1);
  const [payload, sig] = raw?.split('.') ?? [];
  if (!payload || !sig) return undefined;
  const want = Buffer.from(mac(keyOf(clientSecret), payload));
  const got = Buffer.from(sig);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return undefined;
  try {
    const v = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Partial<PendingLogin & { exp: number }>;
    if (typeof v.exp !== 'number' || v.exp * 1000 < now) return undefined;
    if (typeof v.state !== 'string' || typeof v.nonce !== 'string' || typeof v.verifier !== 'string') return undefined;
    return { state: v.state, nonce: v.nonce, verifier: v.verifier };
  } catch {
    return undefined;
  }
}
