import { retryAfterSeconds } from '@floe/errors';
import type { TokenBuckets } from '@floe/limits';

/**
 * The request budget of each installation (spec 2, Limits: about 5000 host requests an hour per
 * installation). Every request made with an installation's token spends one (pages of a listing
 * each count), from a token bucket that refills over the hour and that every router shares
 * through the limits store. A spent budget, or the host's own rate-limit answer (remaining 0
 * until its reset), stops that installation's requests before they leave: the caller sees the
 * host's 429 and degrades as for any host failure (scm_error, a stale listing). Requests under
 * the app's own JWT (minting tokens, reading an installation) are the app's budget, not counted.
 */
export class InstallationBudget {
  readonly #buckets: TokenBuckets;
  readonly #installationOf: (token: string) => number | undefined;
  readonly #limit: { ratePerSec: number; burst: number };
  readonly #now: () => number;
  /** Installation → when the host said its requests may resume (ms). */
  readonly #hostReset = new Map<number, number>();

  constructor(buckets: TokenBuckets, installationOf: (token: string) => number | undefined, requestsPerHour: number, now: () => number = Date.now) {
    this.#buckets = buckets;
    this.#installationOf = installationOf;
    this.#limit = { ratePerSec: requestsPerHour / 3600, burst: requestsPerHour };
    this.#now = now;
  }

  /** `inner` with the budget applied to every request that carries an installation's token. */
  wrap(inner: typeof fetch): typeof fetch {
    return async (input, init) => {
      const installation = this.#installationOfRequest(input, init);
      if (installation === undefined) return inner(input, init);
      const resumeAt = this.#hostReset.get(installation);
      if (resumeAt !== undefined && resumeAt > this.#now()) return spent(resumeAt - this.#now(), 'the host\'s rate limit for the installation');
      const taken = await this.#buckets.take(`scm-installation:${installation}`, 1, this.#limit);
      if (!taken.allowed) return spent(taken.retryAfterMs, `the installation's budget of ${this.#limit.burst} requests an hour`);
      const res = await inner(input, init);
      this.#observe(installation, res.headers);
      return res;
    };
  }

  #installationOfRequest(input: Parameters<typeof fetch>[0], init: Parameters<typeof fetch>[1]): number | undefined {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    // Octokit sends an installation token as `token <t>`; the app's JWT as `bearer <jwt>`.
    const m = /^token\s+(\S+)$/i.exec(headers.get('authorization') ?? '');
    return m ? this.#installationOf(m[1]!) : undefined;
  }

  #observe(installation: number, headers: Headers): void {
    const remaining = headers.get('x-ratelimit-remaining');
    const reset = Number(headers.get('x-ratelimit-reset'));
    if (remaining === '0' && Number.isFinite(reset) && reset > 0) this.#hostReset.set(installation, reset * 1000);
    else if (remaining !== null) this.#hostReset.delete(installation);
  }
}

/** Marks Floe's own refusals, so the host error names the budget rather than a host answer. */
export const BUDGET_HEADER = 'x-floe-budget';

/** A 429 answered in the host's place: the request never left. */
function spent(retryAfterMs: number, what: string): Response {
  const seconds = retryAfterSeconds(retryAfterMs);
  return new Response(JSON.stringify({ message: `${what} is spent; the next request may go in ${seconds} s` }), {
    status: 429,
    headers: { 'content-type': 'application/json', 'retry-after': String(seconds), [BUDGET_HEADER]: 'spent' },
  });
}
