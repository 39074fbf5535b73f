import { describe, expect, it } from 'vitest';
import { LoginAttempts } from './login-attempts.ts';
import { MemoryTokenBuckets } from './token-bucket.ts';

describe('LoginAttempts', () => {
  it('locks an account after five failures for about a minute per attempt regained; successes cost nothing; accounts are apart', async () => {
    let now = 1_000_000;
    const attempts = new LoginAttempts(new MemoryTokenBuckets(() => now));
    const wrong = async () => undefined;
    const right = async () => 'ann';
    // Successes never count.
    for (let i = 0; i < 20; i++) expect(await attempts.guard('ann@example.com', right)).toBe('ann');
    for (let i = 0; i < 5; i++) expect(await attempts.guard('ann@example.com', wrong)).toBeUndefined();
    // Locked: refused before the check, the right password too; the address is compared as an address.
    let checked = false;
    await expect(
      attempts.guard(' ANN@example.com', async () => {
        checked = true;
        return 'ann';
      }),
    ).rejects.toMatchObject({ kind: 'rate_limited', code: 'FLOE_ERR_LOGIN_LOCKED', message: 'too many failed sign-ins for this account; try again in 60 s', headers: { 'Retry-After': '60' } });
    expect(checked).toBe(false);
    // Another account is not affected.
    expect(await attempts.guard('bob@example.com', right)).toBe('ann');
    // A minute later one attempt has come back.
    now += 60_000;
    expect(await attempts.guard('ann@example.com', right)).toBe('ann');
    expect(await attempts.guard('ann@example.com', wrong)).toBeUndefined();
    await expect(attempts.guard('ann@example.com', right)).rejects.toMatchObject({ kind: 'rate_limited' });
  });

  it('checks no more than five guesses of one account sent all at once; a check that throws costs nothing', async () => {
    const attempts = new LoginAttempts(new MemoryTokenBuckets(() => 1_000_000));
    let checks = 0;
    // Every check waits until all twenty have been let in or refused, as slow password hashes would.
    let release!: () => void;
    const allStarted = new Promise<void>((resolve) => (release = resolve));
    const slowWrong = async () => {
      checks++;
      await allStarted;
      return undefined;
    };
    const outcomes = Array.from({ length: 20 }, () => attempts.guard('carl@example.com', slowWrong).then(() => 'checked', (err: { kind?: string }) => err.kind));
    await new Promise((resolve) => setImmediate(resolve));
    release();
    const settled = await Promise.all(outcomes);
    expect(settled.filter((o) => o === 'checked')).toHaveLength(5);
    expect(settled.filter((o) => o === 'rate_limited')).toHaveLength(15);
    expect(checks).toBe(5);

    const broken = async (): Promise<string | undefined> => {
      throw new Error('database down');
    };
    for (let i = 0; i < 10; i++) await expect(attempts.guard('dora@example.com', broken)).rejects.toThrow('database down');
    expect(await attempts.guard('dora@example.com', async () => 'dora')).toBe('dora');
  });
});
