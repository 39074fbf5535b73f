import { describe, expect, it } from 'vitest';
import { redirectsErrorsAtOnce, redirectUriMatches, redirectUriProblem } from './redirect-uris.ts';

describe('redirect URIs a client may register', () => {
  it.each(['https://app.example/cb', 'https://app.example:8443/oauth/callback?x=1', 'http://127.0.0.1:33418/callback', 'http://localhost/cb', 'http://[::1]:9000/cb', 'com.example.app:/oauth'])('accepts %s', (uri) => {
    expect(redirectUriProblem(uri)).toBeUndefined();
  });
  it.each([
    ['http://app.example/cb', 'loopback'],
    ['https://app.example/cb#frag', 'fragment'],
    ['https://user:pw@app.example/cb', 'credentials'],
    ['javascript:alert(1)', 'private-use'],
    ['data:text/html,hi', 'private-use'],
    ['myapp:/cb', 'private-use'],
    ['/relative', 'absolute'],
    ['', 'absolute'],
    // The parser would drop the tab: the stored URI and the one browsers go to would differ.
    ['https://good.exa\tmple/cb', 'whitespace'],
    ['https://app.example/cb\n', 'whitespace'],
    ['https://app.example/cb\u0000', 'control'],
    [' https://app.example/cb', 'whitespace'],
  ])('refuses %s', (uri, why) => {
    expect(redirectUriProblem(uri)).toContain(why);
  });
});

describe('matching a redirect URI at authorization', () => {
  it('matches exactly, and loopback http on any port', () => {
    expect(redirectUriMatches('https://app.example/cb', 'https://app.example/cb')).toBe(true);
    expect(redirectUriMatches('https://app.example/cb', 'https://app.example/cb/')).toBe(false);
    expect(redirectUriMatches('https://app.example/cb', 'https://app.example:444/cb')).toBe(false);
    expect(redirectUriMatches('http://127.0.0.1:1000/cb', 'http://127.0.0.1:2000/cb')).toBe(true);
    expect(redirectUriMatches('http://127.0.0.1:1000/cb', 'http://127.0.0.1:2000/other')).toBe(false);
    expect(redirectUriMatches('http://127.0.0.1:1000/cb', 'http://localhost:2000/cb')).toBe(false);
    expect(redirectUriMatches('http://127.0.0.1/cb', 'http://127.0.0.1:2000/cb#x')).toBe(false);
  });
});

describe('which redirect URIs get errors at once, before consent', () => {
  it('an app on the user’s machine does; an https page anyone could register does not', () => {
    expect(redirectsErrorsAtOnce('http://127.0.0.1:33418/callback')).toBe(true);
    expect(redirectsErrorsAtOnce('http://[::1]:9000/cb')).toBe(true);
    expect(redirectsErrorsAtOnce('com.example.app:/oauth')).toBe(true);
    expect(redirectsErrorsAtOnce('https://attacker.example/cb')).toBe(false);
    expect(redirectsErrorsAtOnce('http://app.example/cb')).toBe(false);
    expect(redirectsErrorsAtOnce('not a uri')).toBe(false);
  });
});
