import { FloeError, retryAfterSeconds } from '@floe/errors';
import { msUntilTokens, type BucketLimit, type TokenBuckets } from './token-bucket.ts';

/** Five failed sign-ins of one account within five minutes, as Grafana's brute-force protection allows. */
export const FAILED_LOGINS: BucketLimit = { burst: 5, ratePerSec: 5 / 300 };

/**
 * Password sign-ins guarded per account: each failure takes a token of the account's bucket
 * (shared by every router and planning service when the buckets live in Redis), and an account
 * whose bucket is empty is refused with 429 before its password is checked, the right one too,
 * until a token has come back. Guessing a password therefore costs minutes per handful of tries
 * instead of a scrypt's milliseconds; the price, as with Grafana's, is that someone who knows an
 * address can hold its owner off password sign-in for that long (single sign-on still works).
 */
export class LoginAttempts {
  readonly #buckets: TokenBuckets;
  readonly #limit: BucketLimit;

  constructor(buckets: TokenBuckets, limit: BucketLimit = FAILED_LOGINS) {
    this.#buckets = buckets;
    this.#limit = limit;
  }

  /** `check` (the password check) for `account`, unless it is locked; an undefined answer counts as a failure. */
  async guard<T>(account: string, check: () => Promise<T | undefined>): Promise<T | undefined> {
    const key = `login:${account.trim().toLowerCase()}`;
    // A take of nothing is a look: the tokens there now, refilled to this moment.
    const now = await this.#buckets.take(key, 0, this.#limit);
    if (now.remaining < 1) {
      const retryAfterMs = msUntilTokens(1 - now.remaining, this.#limit);
      throw new FloeError('rate_limited', `too many failed sign-ins for this account; try again in ${retryAfterSeconds(retryAfterMs)} s`, { code: 'FLOE_ERR_LOGIN_LOCKED', retryAfterMs });
    }
    const result = await check();
    if (result === undefined) await this.#buckets.take(key, 1, this.#limit);
    return result;
  }
}
