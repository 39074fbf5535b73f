import { describe, expect, it } from 'vitest';
import { MemoryTokenBuckets } from '@floe/limits';
import { InstallationBudget } from './budget.ts';

/** A host that answers 200 (with the rate-limit headers given) and counts what reached it. */
function fakeHost(headers: () => Record<string, string> = () => ({})) {
  const seen: string[] = [];
  const fetchFn: typeof fetch = async (input, init) => {
    seen.push(`${new Headers(init?.headers).get('authorization')} ${String(input)}`);
    return new Response('{}', { status: 200, headers: headers() });
  };
  return { seen, fetchFn };
}

const TOKENS: Record<string, number> = { 'ghs_one': 1, 'ghs_two': 2 };
const call = (f: typeof fetch, token: string, path = '/x') => f(`https://api.example${path}`, { headers: { authorization: token } });

describe('installation request budget', () => {
  it('spends one request per call per installation, refuses the rest without sending them, and refills over the hour', async () => {
    let now = 1_000_000;
    const host = fakeHost();
    const budget = new InstallationBudget(new MemoryTokenBuckets(() => now), (t) => TOKENS[t], 3, () => now);
    const f = budget.wrap(host.fetchFn);
    for (let i = 0; i < 3; i++) expect((await call(f, 'token ghs_one')).status).toBe(200);
    const refused = await call(f, 'token ghs_one');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1200');
    expect(((await refused.json()) as { message: string }).message).toContain('budget of 3 requests an hour');
    expect(host.seen).toHaveLength(3);
    // Another installation has its own budget; the app's JWT and unknown tokens are not counted.
    expect((await call(f, 'token ghs_two')).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await call(f, 'bearer eyJ.app.jwt')).status).toBe(200);
    expect((await call(f, 'token ghs_unknown')).status).toBe(200);
    // A third of an hour later one request's worth has come back.
    now += 20 * 60_000;
    expect((await call(f, 'token ghs_one')).status).toBe(200);
    expect((await call(f, 'token ghs_one')).status).toBe(429);
  });

  it('stops an installation when the host says its limit is reached, until the reset it names', async () => {
    let now = 5_000_000;
    let remaining = '10';
    const host = fakeHost(() => ({ 'x-ratelimit-remaining': remaining, 'x-ratelimit-reset': String(Math.floor(now / 1000) + 60) }));
    const budget = new InstallationBudget(new MemoryTokenBuckets(() => now), (t) => TOKENS[t], 5000, () => now);
    const f = budget.wrap(host.fetchFn);
    expect((await call(f, 'token ghs_one')).status).toBe(200);
    remaining = '0';
    expect((await call(f, 'token ghs_one')).status).toBe(200);
    const refused = await call(f, 'token ghs_one');
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { message: string }).message).toContain("host's rate limit");
    expect(host.seen).toHaveLength(2);
    expect((await call(f, 'token ghs_two')).status).toBe(200);
    now += 61_000;
    remaining = '4999';
    expect((await call(f, 'token ghs_one')).status).toBe(200);
    expect((await call(f, 'token ghs_one')).status).toBe(200);
  });
});
