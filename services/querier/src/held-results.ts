import type { FloeConfig } from '@floe/config';
import { FloeError } from '@floe/errors';
import type { SelfTelemetry } from '@floe/telemetry';
import type { Table } from 'apache-arrow';

/** The Arrow buffers of a result (values, offsets, validity; children included), as the sandbox counts them against querier.max_result_mb. */
export function tableBytes(table: Table): number {
  let bytes = 0;
  for (const batch of table.batches) bytes += batch.data.byteLength;
  return bytes;
}

/**
 * The query results a querier holds until their callers have read them (querier.max_held_result_mb).
 * The scheduler bounds the queries that run at once, not the results that wait for a slow or
 * stalled client once their slot is free: without this, every such client kept up to
 * max_result_mb alive and a few of them took the process, and every tenant's queries, down.
 *
 * A result is charged once it is whole, released when the call ends (sent, cancelled, its
 * deadline passed). One that does not fit is refused at once (429 / RESOURCE_EXHAUSTED, with
 * Retry-After) rather than kept waiting for room: waiting would hold the very memory being bounded,
 * and the querier slot with it, so other tenants' queries would stop too. One tenant may hold at
 * most half of the budget, so one tenant's stalled readers leave the other half to the rest.
 */
export class HeldResults {
  readonly maxBytes: number;
  readonly #perTenant: number;
  #held = 0;
  readonly #byTenant = new Map<string, number>();

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
    this.#perTenant = Math.floor(maxBytes / 2);
  }

  get held(): number {
    return this.#held;
  }

  /** Bytes held per tenant that holds any (`GET /status`). */
  heldByTenant(): Record<string, number> {
    return Object.fromEntries(this.#byTenant);
  }

  /** Refuses at once, before its query runs, a tenant that holds its whole share or a querier whose budget is spent. */
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
    const mb = (n: number) => `${Math.ceil(n / (1024 * 1024))} MB`;
    const share = `${mb(this.#perTenant)} (half of querier.max_held_result_mb)`;
    // A result beyond a tenant's share alone is never served: refused as a result over max_result_mb is (422), since a retry cannot help it.
    if (bytes > this.#perTenant) return new FloeError('execution', `result too large to hold: ${mb(bytes)}, and a tenant may hold at most ${share}`);
    const detail = own
      ? `tenant ${tenant} already holds ${mb(mine)} of results its clients have not read yet, and may hold at most ${share}`
      : `this querier already holds ${mb(this.#held)} of results their clients have not read yet (querier.max_held_result_mb: ${mb(this.maxBytes)})`;
    return new FloeError('rate_limited', `too many unread results: ${bytes > 0 ? `a result of ${mb(bytes)} does not fit; ` : ''}${detail}`, { headers: { 'Retry-After': '1' } });
  }
}

/** The querier's held results from querier.max_held_result_mb, with their gauges. */
export function heldResultsFromConfig(config: Readonly<FloeConfig>, telemetry: SelfTelemetry): HeldResults {
  const held = new HeldResults(config.querier.max_held_result_mb * 1024 * 1024);
  const m = telemetry.meter;
  const bytes = m.createObservableGauge('query_results_held_bytes', { description: 'Bytes of query results this querier holds until their clients have read them', unit: 'By' });
  const limit = m.createObservableGauge('query_results_held_max_bytes', { description: 'querier.max_held_result_mb in bytes', unit: 'By' });
  m.addBatchObservableCallback(
    (r) => {
      r.observe(bytes, held.held);
      r.observe(limit, held.maxBytes);
    },
    [bytes, limit],
  );
  return held;
}
