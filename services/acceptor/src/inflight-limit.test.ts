import { describe, expect, it } from 'vitest';
import { toHttp } from '@floe/errors';
import { InflightLimit } from './inflight-limit.ts';

const refusalOf = (f: () => void) => {
  try {
    f();
  } catch (err) {
    return toHttp(err);
  }
  return undefined;
};

describe('InflightLimit', () => {
  it('holds at most maxRequests requests, then refuses with 503 and Retry-After until one is released', () => {
    const limit = new InflightLimit({ maxRequests: 2, maxBytes: 1_000_000 });
    const first = limit.take(10);
    limit.take(20);
    const http = refusalOf(() => limit.take(5))!;
    expect(http.status).toBe(503);
    expect(http.headers['Retry-After']).toBe('1');
    expect(http.body.error).toContain('acceptor.max_inflight_requests');
    first.release();
    first.release(); // once, however often called
    limit.take(5);
    expect([limit.requests, limit.bytes]).toEqual([2, 25]);
  });

  it('holds at most maxBytes of bodies, but always lets one request in alone', () => {
    const limit = new InflightLimit({ maxRequests: 100, maxBytes: 1000 });
    const alone = limit.take(5000); // alone: larger than the limit, still taken
    expect(() => limit.take(1)).toThrow(/max_inflight_bytes/);
    alone.release();
    limit.take(600);
    expect(() => limit.take(500)).toThrow(/max_inflight_bytes/);
    limit.take(400);
    expect([limit.requests, limit.bytes]).toEqual([2, 1000]);
  });

  it('counts what a request inflated to beside its body, refused past maxBytes unless the request is alone, and gives it back with the request', () => {
    const limit = new InflightLimit({ maxRequests: 100, maxBytes: 1000 });
    const first = limit.take(100);
    first.grow(5000); // alone
    expect(() => limit.take(10)).toThrow(/max_inflight_bytes/);
    first.release();
    expect([limit.requests, limit.bytes]).toEqual([0, 0]);
    limit.take(100);
    const second = limit.take(10);
    second.grow(800);
    expect(refusalOf(() => second.grow(200))).toMatchObject({ status: 503, headers: { 'Retry-After': '1' }, body: { error: expect.stringMatching(/inflating to 200 bytes.*max_inflight_bytes 1000/) } });
    expect([limit.requests, limit.bytes]).toEqual([2, 910]);
    second.release();
    second.grow(50); // gone: no longer counted
    expect([limit.requests, limit.bytes]).toEqual([1, 100]);
  });

  it("holds a tenant to its share of requests and bytes once its requests are its, always lets its first in, and leaves the rest to other tenants", () => {
    const limit = new InflightLimit({ maxRequests: 8, maxBytes: 2000, tenantShare: 0.25 });
    // Its first request is in whatever its size (as a request alone is).
    const a1 = limit.take(700);
    a1.ofTenant('a');
    const a2 = limit.take(10);
    expect(refusalOf(() => a2.ofTenant('a'))).toMatchObject({ status: 503, body: { error: expect.stringMatching(/tenant a already holds 700 bytes.*share of acceptor\.max_inflight_bytes \(500, acceptor\.max_inflight_tenant_share\)/) } });
    a2.release();
    // Another tenant is not held up by a's share.
    const b1 = limit.take(100);
    b1.ofTenant('b');
    const b2 = limit.take(100);
    b2.ofTenant('b');
    const b3 = limit.take(1);
    expect(refusalOf(() => b3.ofTenant('b'))).toMatchObject({ status: 503, body: { error: expect.stringMatching(/tenant b already has 2 requests in flight.*max_inflight_requests/) } });
    b3.release();
    expect(limit.ofTenant('b')).toEqual({ requests: 2, bytes: 200 });
    // What a tenant's bodies inflate to counts in its share too.
    expect(refusalOf(() => b2.grow(301))).toMatchObject({ status: 503, body: { error: expect.stringMatching(/inflating to 301 bytes.*tenant b.*\(its share of acceptor\.max_inflight_bytes, 500\)/) } });
    b2.grow(300);
    expect(limit.ofTenant('b')).toEqual({ requests: 2, bytes: 500 });
    b2.release();
    b1.release();
    a1.release();
    expect([limit.requests, limit.bytes, limit.ofTenant('a'), limit.ofTenant('b')]).toEqual([0, 0, { requests: 0, bytes: 0 }, { requests: 0, bytes: 0 }]);
  });
});
