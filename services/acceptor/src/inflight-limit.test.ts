import { describe, expect, it } from 'vitest';
import { toHttp } from '@floe/errors';
import { InflightLimit } from './inflight-limit.ts';

describe('InflightLimit', () => {
  it('holds at most maxRequests requests, then refuses with 503 and Retry-After until one is released', () => {
    const limit = new InflightLimit({ maxRequests: 2, maxBytes: 1_000_000 });
    limit.take(10);
    limit.take(20);
    let refusal: unknown;
    try {
      limit.take(5);
    } catch (err) {
      refusal = err;
    }
    const http = toHttp(refusal);
    expect(http.status).toBe(503);
    expect(http.headers['Retry-After']).toBe('1');
    expect(http.body.error).toContain('acceptor.max_inflight_requests');
    limit.release(10);
    limit.take(5);
    expect([limit.requests, limit.bytes]).toEqual([2, 25]);
  });

  it('holds at most maxBytes of bodies, but always lets one request in alone', () => {
    const limit = new InflightLimit({ maxRequests: 100, maxBytes: 1000 });
    limit.take(5000); // alone: larger than the limit, still taken
    expect(() => limit.take(1)).toThrow(/max_inflight_bytes/);
    limit.release(5000);
    limit.take(600);
    expect(() => limit.take(500)).toThrow(/max_inflight_bytes/);
    limit.take(400);
    expect([limit.requests, limit.bytes]).toEqual([2, 1000]);
  });

  it('counts what a request inflated to beside its body, refused past maxBytes unless the request is alone', () => {
    const limit = new InflightLimit({ maxRequests: 100, maxBytes: 1000 });
    limit.take(100);
    limit.grow(5000); // alone
    expect(() => limit.take(10)).toThrow(/max_inflight_bytes/);
    limit.shrink(5000);
    limit.take(10);
    limit.grow(800);
    const refusal = (() => {
      try {
        limit.grow(200);
      } catch (err) {
        return toHttp(err);
      }
    })();
    expect(refusal).toMatchObject({ status: 503, headers: { 'Retry-After': '1' }, body: { error: expect.stringMatching(/inflating to 200 bytes.*max_inflight_bytes 1000/) } });
    expect([limit.requests, limit.bytes]).toEqual([2, 910]);
  });
});
