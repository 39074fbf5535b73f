import { FloeError } from '@floe/errors';

/** How refusals name what is held, who holds it and the setting that bounds it. */
export interface HeldBytesWords {
  /** One of the things held, as refusals name it: 'result', 'answer'. */
  noun: string;
  /** The process holding them: 'querier', 'router'. */
  holder: string;
  /** The setting of the whole budget: 'querier.max_held_result_mb'. */
  setting: string;
}

/**
 * Bytes a process keeps alive for clients that have not read them yet (a querier's results, a
 * router's answers), within a budget of which one tenant may hold at most half. What bounds the
 * work that runs at once (schedulers, rate limits) does not bound what waits for a slow or stalled
 * reader once its work is done: without this, a few such clients held the process's memory, and
 * every tenant's queries went down with it.
 *
 * Charged once whole, released when its call ends (sent, cancelled, timed out). One that does not
 * fit is refused at once (429 / RESOURCE_EXHAUSTED with Retry-After) rather than kept waiting for
 * room: waiting would hold the very memory being bounded. One alone beyond a tenant's half is
 * never served (422, as an over-large result is): a retry cannot help it.
 */
export class HeldBytes {
  readonly maxBytes: number;
  readonly #perTenant: number;
  readonly #words: HeldBytesWords;
  #held = 0;
  readonly #byTenant = new Map<string, number>();

  constructor(maxBytes: number, words: HeldBytesWords) {
    this.maxBytes = maxBytes;
    this.#perTenant = Math.floor(maxBytes / 2);
    this.#words = words;
  }

  get held(): number {
    return this.#held;
  }

  /** Bytes held per tenant that holds any (`GET /status`). */
  heldByTenant(): Record<string, number> {
    return Object.fromEntries(this.#byTenant);
  }

  /** Refuses at once, before its work runs, a tenant that holds its whole share, or any while the budget is spent. */
  admit(tenant: string): void {
    const mine = this.#byTenant.get(tenant) ?? 0;
    if (mine >= this.#perTenant || this.#held >= this.maxBytes) throw this.#refusal(tenant, mine, 0, mine >= this.#perTenant);
  }

  /** Charges `bytes` to `tenant`; the answer releases them (once, however often called). Throws the refusal when they do not fit. */
  charge(tenant: string, bytes: number): () => void {
    const mine = this.#byTenant.get(tenant) ?? 0;
    if (mine + bytes > this.#perTenant || this.#held + bytes > this.maxBytes) throw this.#refusal(tenant, mine, bytes, mine + bytes > this.#perTenant);
    this.#held += bytes;
    this.#byTenant.set(tenant, mine + bytes);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held -= bytes;
      const left = (this.#byTenant.get(tenant) ?? 0) - bytes;
      if (left > 0) this.#byTenant.set(tenant, left);
      else this.#byTenant.delete(tenant);
    };
  }

  #refusal(tenant: string, mine: number, bytes: number, own: boolean): FloeError {
    const { noun, holder, setting } = this.#words;
    const mb = (n: number) => `${Math.ceil(n / (1024 * 1024))} MB`;
    const share = `${mb(this.#perTenant)} (half of ${setting})`;
    if (bytes > this.#perTenant) return new FloeError('execution', `${noun} too large to hold: ${mb(bytes)}, and a tenant may hold at most ${share}`);
    const detail = own
      ? `tenant ${tenant} already holds ${mb(mine)} of ${noun}s its clients have not read yet, and may hold at most ${share}`
      : `this ${holder} already holds ${mb(this.#held)} of ${noun}s their clients have not read yet (${setting}: ${mb(this.maxBytes)})`;
    const a = /^[aeiou]/.test(noun) ? 'an' : 'a';
    return new FloeError('rate_limited', `too many unread ${noun}s: ${bytes > 0 ? `${a} ${noun} of ${mb(bytes)} does not fit; ` : ''}${detail}`, { headers: { 'Retry-After': '1' } });
  }
}
