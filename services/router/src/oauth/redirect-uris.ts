/**
 * Which redirect URIs a client may register (OAuth 2.1 §2.3.1, RFC 8252 for native apps): https
 * anywhere; plain http only to this machine's loopback (a native app's local listener, any
 * port); and private-use schemes named after a domain the app owns (`com.example.app:/cb`),
 * whose dot keeps out `javascript:`, `data:` and their kind. Never a fragment, never credentials.
 * The answer is the reason a URI is refused, or undefined.
 */
export function redirectUriProblem(uri: string): string | undefined {
  // The URL parser drops tabs and newlines inside a URI, so the one stored would not be the one
  // a browser is sent to; and the database cannot store a NUL.
  if (/[\p{Cc}\s]/u.test(uri)) return 'must not contain whitespace or control characters';
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return 'not an absolute URI';
  }
  if (u.hash || uri.includes('#')) return 'must not have a fragment';
  if (u.username || u.password) return 'must not carry credentials';
  const scheme = u.protocol.slice(0, -1);
  if (scheme === 'https') return u.hostname ? undefined : 'needs a host';
  if (scheme === 'http') return LOOPBACK.has(u.hostname) ? undefined : 'http is allowed only to a loopback address (127.0.0.1, [::1], localhost); use https';
  return /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$/.test(scheme) ? undefined : 'a private-use scheme must be a reversed domain name (com.example.app:/callback)';
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Whether the authorization endpoint may send the browser to this (registered) redirect URI with
 * an error before the user has seen the consent page: only when it leads back to an app on the
 * user's own machine (loopback http, a private-use scheme). Anyone can register an https URI, so
 * redirecting there at once would make /oauth/authorize an open redirector for any page
 * (RFC 9700 §4.11.2); such an error is shown in the browser instead.
 */
export function redirectsErrorsAtOnce(uri: string): boolean {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return false;
  }
  if (u.protocol === 'http:') return LOOPBACK.has(u.hostname);
  return u.protocol !== 'https:';
}

/**
 * Whether a redirect URI given at authorization matches a registered one: exactly, except that a
 * loopback http URI may name any port (RFC 8252 §7.3: the app picks a free port each time).
 */
export function redirectUriMatches(registered: string, given: string): boolean {
  if (registered === given) return true;
  let r: URL;
  let g: URL;
  try {
    r = new URL(registered);
    g = new URL(given);
  } catch {
    return false;
  }
  if (r.protocol !== 'http:' || g.protocol !== 'http:' || !LOOPBACK.has(r.hostname)) return false;
  return r.hostname === g.hostname && r.pathname === g.pathname && r.search === g.search && !g.hash && !g.username && !g.password;
}
