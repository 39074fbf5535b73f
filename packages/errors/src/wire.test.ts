import { describe, expect, it } from 'vitest';
import { FloeError, toGrpc, toHttp, kindFromGrpcCode } from './index.ts';

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
    expect(kindFromGrpcCode(4)).toBe('timeout');
    expect(kindFromGrpcCode(99)).toBe('internal');
  });
});
