import { FloeError, retryAfterSeconds } from '@floe/errors';
import type { BucketLimit, TokenBuckets } from './token-bucket.ts';

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
    // Each attempt takes its token before the check rather than after a failure: a look first would
    // let any number of guesses sent at once all see a full bucket and all be checked. A success
    // gives its token back, so successes still cost nothing.
    const taken = await this.#buckets.take(key, 1, this.#limit);
    if (!taken.allowed) {
      throw new FloeError('rate_limited', `too many failed sign-ins for this account; try again in ${retryAfterSeconds(taken.retryAfterMs)} s`, { code: 'FLOE_ERR_LOGIN_LOCKED', retryAfterMs: taken.retryAfterMs });
    }
    let result: T | undefined;
    try {
      result = await check();
    } catch (err) {
      // A check that could not answer (the database down) is no failed guess.
      await this.#buckets.take(key, -1, this.#limit);
      throw err;
    }
    if (result !== undefined) await this.#buckets.take(key, -1, this.#limit);
    return result;
  }
}
