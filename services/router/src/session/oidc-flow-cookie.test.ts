import { describe, expect, it } from 'vitest';
import { pendingLoginCookie, readPendingLogin } from './oidc-flow-cookie.ts';
import { OIDC_RETRY, nextRetryDelay } from './oidc-provider.ts';
import { isDemoAllowed } from '../demo-read-only.ts';

const pending = { state: 's1', nonce: 'n1', verifier: 'v1' };
const header = (setCookie: string) => setCookie.split(';')[0]!;

describe('SSO pending-login cookie', () => {
  const now = 1_800_000_000_000;
  const cookie = header(pendingLoginCookie(pending, 'secret', { secure: true }, now));

  it.each([
    ['round-trips within its lifetime', cookie, 'secret', now + 599_000, pending],
    ['is refused after ten minutes', cookie, 'secret', now + 601_000, undefined],
    ['is refused under another client secret', cookie, 'other', now, undefined],
    ['is refused when the payload is altered', cookie.replace('floe_oidc=', 'floe_oidc=x'), 'secret', now, undefined],
    ['is absent without the cookie', 'floe_session=abc', 'secret', now, undefined],
  ])('%s', (_n, h, secret, at, want) => {
    expect(readPendingLogin(h, secret, at)).toEqual(want);
  });
});

describe('SSO discovery retry (spec 2, Limits: 1 s doubling, capped at 5 minutes)', () => {
  it('doubles from the first delay up to the cap', () => {
    const seen: number[] = [];
    let d: number | undefined;
    for (let i = 0; i < 11; i++) seen.push((d = nextRetryDelay(d, OIDC_RETRY)));
    expect(seen).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 300000, 300000]);
  });
});

describe('demo read-only allowlist', () => {
  it.each([
    ['GET', '/api/v1/tenants/demo', true],
    ['HEAD', '/api/v1/tenants', true],
    ['OPTIONS', '/api/v1/users', true],
    ['POST', '/ui/session', true],
    ['DELETE', '/ui/session', true],
    ['POST', '/api/v1/query', true],
    ['POST', '/api/v1/query?x=1', true],
    ['POST', '/api/v1/tenants/demo/source-context', true],
    ['POST', '/api/v1/tenants/demo/datasets', false],
    ['POST', '/api/v1/query/sources', false],
    ['PUT', '/ui/session', false],
    ['PATCH', '/api/v1/tenants/demo', false],
    ['DELETE', '/api/v1/tenants/demo/source-context', false],
  ])('%s %s → %s', (method, url, allowed) => {
    expect(isDemoAllowed(method, url)).toBe(allowed);
  });
});
