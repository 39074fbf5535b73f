import { FloeError } from '@floe/errors';
import type { SelfTelemetry } from '@floe/telemetry';

export interface InflightLimitOptions {
  /** acceptor.max_inflight_requests */
  maxRequests: number;
  /** acceptor.max_inflight_bytes: body bytes as received, and what compressed ones inflated to. */
  maxBytes: number;
  telemetry?: SelfTelemetry;
}

/**
 * What one acceptor holds at once, across tenants and ports, as Mimir's distributor instance
 * limits bound it: the requests being received or processed and their body bytes. Per-tenant rate
 * limits cap what a tenant sends over time, not how much arrives at the same moment; past these
 * the acceptor sheds load with 503 (UNAVAILABLE over gRPC) and Retry-After, which OTLP exporters,
 * Prometheus and agents retry, instead of running out of memory and failing everyone's requests.
 */
export class InflightLimit {
  readonly #o: InflightLimitOptions;
  #requests = 0;
  #bytes = 0;
  readonly #refused;

  constructor(o: InflightLimitOptions) {
    this.#o = o;
    const m = o.telemetry?.meter;
    this.#refused = m?.createCounter('inflight_limit_refusals', { description: 'Ingest requests refused because this acceptor had too much in flight (acceptor.max_inflight_requests, max_inflight_bytes), by limit' });
    if (m) {
      const requests = m.createObservableGauge('inflight_requests', { description: 'Ingest requests this acceptor is receiving or processing' });
      const bytes = m.createObservableGauge('inflight_bytes', { description: 'Body bytes of the ingest requests in flight on this acceptor', unit: 'By' });
      m.addBatchObservableCallback(
        (r) => {
          r.observe(requests, this.#requests);
          r.observe(bytes, this.#bytes);
        },
        [requests, bytes],
      );
    }
  }

  get requests(): number {
    return this.#requests;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Room for one request of `bytes` (its declared or received body size), or a FloeError
   * `unavailable` saying which limit it met. Give the room back with `release(bytes)`.
   */
  take(bytes: number): void {
    const { maxRequests, maxBytes } = this.#o;
    if (this.#requests >= maxRequests) throw this.#refuse('requests', `this acceptor already has ${maxRequests} requests in flight (acceptor.max_inflight_requests); retry shortly`);
    // One request alone may always be as large as a body may be (acceptor.max_body_bytes).
    if (this.#requests > 0 && this.#bytes + bytes > maxBytes) throw this.#refuse('bytes', `this acceptor already holds ${this.#bytes} bytes of requests in flight (acceptor.max_inflight_bytes ${maxBytes}); retry shortly`);
    this.#requests++;
    this.#bytes += bytes;
  }

  release(bytes: number): void {
    this.#requests--;
    this.#bytes -= bytes;
  }

  /**
   * More room for a request already in: what its body inflated to (gzip, snappy), which it holds
   * beside the body as sent. Counting only bodies as sent let many small compressed bodies that
   * inflate far hold many times max_inflight_bytes at once. Refused like `take` (503, retried by
   * senders), except for a request alone. Give it back with `shrink(bytes)`.
   */
  grow(bytes: number): void {
    const { maxBytes } = this.#o;
    if (this.#requests > 1 && this.#bytes + bytes > maxBytes) {
      throw this.#refuse('bytes', `a request body inflating to ${bytes} bytes does not fit beside the ${this.#bytes} bytes this acceptor already holds in flight (acceptor.max_inflight_bytes ${maxBytes}); retry shortly`);
    }
    this.#bytes += bytes;
  }

  shrink(bytes: number): void {
    this.#bytes -= bytes;
  }

  #refuse(limit: 'requests' | 'bytes', message: string): FloeError {
    this.#refused?.add(1, { limit });
    return new FloeError('unavailable', message, { code: 'FLOE_ERR_INFLIGHT_LIMIT', headers: { 'Retry-After': '1' } });
  }
}
