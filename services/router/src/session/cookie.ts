/**
 * The session cookie (issue 3): `floe_session`, HttpOnly (scripts cannot read it), SameSite=Lax
 * (not sent on cross-site POST, PATCH or DELETE, so a foreign page cannot act with it), Secure
 * when the configured public URL is https. Path=/ because both /ui and /api/v1 read it.
 */
export const SESSION_COOKIE = 'floe_session';

export function readSessionCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

export interface CookieOptions {
  secure: boolean;
}

const attributes = (opts: CookieOptions) => `Path=/; HttpOnly; SameSite=Lax${opts.secure ? '; Secure' : ''}`;

/** Tokens are base64url, so they need no quoting or escaping. */
export const sessionCookie = (token: string, maxAgeSeconds: number, opts: CookieOptions) =>
  `${SESSION_COOKIE}=${token}; Max-Age=${Math.floor(maxAgeSeconds)}; ${attributes(opts)}`;

export const clearedSessionCookie = (opts: CookieOptions) => `${SESSION_COOKIE}=; Max-Age=0; ${attributes(opts)}`;

/** Secure cookies only when the router is reached over https (public.api_url). */
export const isHttpsUrl = (url: string) => /^https:\/\//i.test(url.trim());
