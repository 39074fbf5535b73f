import { describe, expect, it } from 'vitest';
import { ERROR_KIND_METADATA, FloeError, kindFromGrpc, toGrpc, toHttp } from './index.ts';

describe('toHttp', () => {
  it.each([
    ['bad_data', 400],
    ['unauthorized', 401],
    ['forbidden', 403],
    ['not_found', 404],
    ['too_large', 413],
    ['unsupported_media_type', 415],
    ['rate_limited', 429],
    ['not_implemented', 501],
    ['unavailable', 503],
    ['timeout', 504],
  ] as const)('%s → %i with the envelope', (kind, status) => {
    const out = toHttp(new FloeError(kind, 'why'));
    expect(out.status).toBe(status);
    expect(out.body).toEqual({ status: 'error', errorType: kind, error: 'why' });
    expect(out.unexpected).toBe(false);
  });

  it('hides the text of unexpected errors behind a generic 500', () => {
    const out = toHttp(new Error('ECONNREFUSED 10.0.0.7:5432 password=hunter2'));
    expect(out.status).toBe(500);
    expect(out.body.error).toBe('internal server error');
    expect(out.unexpected).toBe(true);
  });

  it('challenges every 401 for a bearer key, unless the error names its own challenge', () => {
    expect(toHttp(new FloeError('unauthorized', 'missing API key')).headers).toEqual({ 'WWW-Authenticate': 'Bearer realm="floe"' });
    const own = toHttp(new FloeError('unauthorized', 'x', { headers: { 'www-authenticate': 'Bearer resource_metadata="m"' } }));
    expect(own.headers).toEqual({ 'www-authenticate': 'Bearer resource_metadata="m"' });
    expect(toHttp(new FloeError('forbidden', 'x')).headers).toEqual({});
  });

  it('sends a wait as Retry-After in whole seconds, rounded up, at least 1, unless the error names its own', () => {
    expect(toHttp(new FloeError('rate_limited', 'x', { retryAfterMs: 1001 })).headers).toEqual({ 'Retry-After': '2' });
    expect(toHttp(new FloeError('rate_limited', 'x', { retryAfterMs: 0 })).headers).toEqual({ 'Retry-After': '1' });
    expect(toHttp(new FloeError('rate_limited', 'x', { retryAfterMs: 5000, headers: { 'retry-after': '9' } })).headers).toEqual({ 'retry-after': '9' });
    expect(toGrpc(new FloeError('rate_limited', 'x', { retryAfterMs: 2500 })).metadata['retry-after']).toBe('3');
  });

  it('carries retryAfterMs and headers on rate limits', () => {
    const out = toHttp(new FloeError('rate_limited', 'slow down', { retryAfterMs: 1500, headers: { 'Retry-After': '2' } }));
    expect(out.body.retryAfterMs).toBe(1500);
    expect(out.headers['Retry-After']).toBe('2');
  });
});

describe('toGrpc', () => {
  it('maps kinds to gRPC codes and back', () => {
    expect(toGrpc(new FloeError('unauthorized', 'x')).code).toBe(16);
    expect(toGrpc(new FloeError('forbidden', 'x')).code).toBe(7);
    expect(toGrpc(new FloeError('timeout', 'x')).code).toBe(4);
    expect(toGrpc(new Error('boom'))).toMatchObject({ code: 13, details: 'internal server error' });
    expect(kindFromGrpc(4)).toBe('timeout');
    expect(kindFromGrpc(99)).toBe('internal');
  });

  it('names the kind in a trailer, so kinds sharing a code come back as themselves', () => {
    for (const kind of ['too_large', 'rate_limited', 'execution', 'bad_data', 'unsupported_media_type'] as const) {
      const g = toGrpc(new FloeError(kind, 'x'));
      expect(g.metadata[ERROR_KIND_METADATA]).toBe(kind);
      expect(kindFromGrpc(g.code, g.metadata[ERROR_KIND_METADATA])).toBe(kind);
    }
    // Without the trailer (any other gRPC peer) the code's usual kind.
    expect(kindFromGrpc(8)).toBe('rate_limited');
    expect(kindFromGrpc(3)).toBe('bad_data');
  });

  it('trusts a kind trailer only when it agrees with the code', () => {
    expect(kindFromGrpc(8, 'timeout')).toBe('rate_limited');
    expect(kindFromGrpc(13, 'bad_data')).toBe('internal');
    expect(kindFromGrpc(3, 'no-such-kind')).toBe('bad_data');
  });

  it('sends header hints as lower-case metadata names', () => {
    const g = toGrpc(new FloeError('rate_limited', 'slow down', { headers: { 'Retry-After': '2', 'X-RateLimit-Limit': '100' } }));
    expect(g.metadata).toEqual({ [ERROR_KIND_METADATA]: 'rate_limited', 'retry-after': '2', 'x-ratelimit-limit': '100' });
  });
});
