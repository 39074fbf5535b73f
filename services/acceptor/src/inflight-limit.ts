import { FloeError } from '@floe/errors';
import type { SelfTelemetry } from '@floe/telemetry';

export interface InflightLimitOptions {
  /** acceptor.max_inflight_requests */
  maxRequests: number;
  /** acceptor.max_inflight_bytes: body bytes as received, and what compressed ones inflated to. */
  maxBytes: number;
  /** acceptor.max_inflight_tenant_share: the part of both limits one tenant may hold (1: no share). */
  tenantShare?: number;
  telemetry?: SelfTelemetry;
}

interface Counts {
  claim(tenant: string, bytes: number): void;
  grow(tenant: string | undefined, bytes: number): void;
  free(tenant: string | undefined, bytes: number): void;
}

/** What one tenant holds of the room. */
interface Tally {
  requests: number;
  bytes: number;
}

/**
 * What one acceptor holds at once, across tenants and ports, as Mimir's distributor instance
 * limits bound it: the requests being received or processed and their body bytes. Per-tenant rate
 * limits cap what a tenant sends over time, not how much arrives at the same moment; past these
 * the acceptor sheds load with 503 (UNAVAILABLE over gRPC) and Retry-After, which OTLP exporters,
 * Prometheus and agents retry, instead of running out of memory and failing everyone's requests.
 *
 * Once a request's tenant is known (its key checked, before its body is read), the tenant may hold
 * at most its share of the room, so one tenant's slow or huge uploads, within its rate limit, leave
 * the rest to the others. A request is counted from its first byte, before its tenant is known:
 * the share bounds what a tenant can take from the others, the limits what all can take together.
 */
export class InflightLimit {
  readonly #o: InflightLimitOptions;
  #requests = 0;
  #bytes = 0;
  readonly #tenants = new Map<string, Tally>();
  readonly #tenantMaxRequests: number;
  readonly #tenantMaxBytes: number;
  readonly #refused;
  /** What a request's room asks of the limit (its methods are the limit's own, not public). */
  readonly #counts: Counts = {
    claim: (tenant, bytes) => this.#claim(tenant, bytes),
    grow: (tenant, bytes) => this.#grow(tenant, bytes),
    free: (tenant, bytes) => this.#free(tenant, bytes),
  };

  constructor(o: InflightLimitOptions) {
    this.#o = o;
    const share = o.tenantShare ?? 1;
    this.#tenantMaxRequests = Math.max(1, Math.floor(o.maxRequests * share));
    this.#tenantMaxBytes = Math.floor(o.maxBytes * share);
    const m = o.telemetry?.meter;
    this.#refused = m?.createCounter('inflight_limit_refusals', { description: 'Ingest requests refused because this acceptor had too much in flight (acceptor.max_inflight_requests, max_inflight_bytes, max_inflight_tenant_share), by limit' });
    if (m) {
      const requests = m.createObservableGauge('inflight_requests', { description: 'Ingest requests this acceptor is receiving or processing' });
      const bytes = m.createObservableGauge('inflight_bytes', { description: 'Body bytes of the ingest requests in flight on this acceptor (as sent, and what compressed ones inflated to)', unit: 'By' });
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

  /** What `tenant` holds now (zeros when nothing). */
  ofTenant(tenant: string): Tally {
    const t = this.#tenants.get(tenant);
    return { requests: t?.requests ?? 0, bytes: t?.bytes ?? 0 };
  }

  /**
   * Room for one request of `bytes` (its declared or received body size), or a FloeError
   * `unavailable` saying which limit it met. The answer holds the room until `release()`.
   */
  take(bytes: number): InflightRequest {
    const { maxRequests, maxBytes } = this.#o;
    if (this.#requests >= maxRequests) throw this.#refuse('requests', `this acceptor already has ${maxRequests} requests in flight (acceptor.max_inflight_requests); retry shortly`);
    // One request alone may always be as large as a body may be (acceptor.max_body_bytes).
    if (this.#requests > 0 && this.#bytes + bytes > maxBytes) throw this.#refuse('bytes', `this acceptor already holds ${this.#bytes} bytes of requests in flight (acceptor.max_inflight_bytes ${maxBytes}); retry shortly`);
    this.#requests++;
    this.#bytes += bytes;
    return new InflightRequest(this.#counts, bytes);
  }

  #claim(tenant: string, bytes: number): void {
    const t = this.#tenants.get(tenant) ?? { requests: 0, bytes: 0 };
    // A tenant with nothing in flight always gets one request in, as one request alone does.
    if (t.requests > 0) {
      if (t.requests >= this.#tenantMaxRequests) {
        throw this.#refuse('tenant_share', `tenant ${tenant} already has ${t.requests} requests in flight on this acceptor, its share of acceptor.max_inflight_requests (acceptor.max_inflight_tenant_share); retry shortly`);
      }
      if (t.bytes + bytes > this.#tenantMaxBytes) {
        throw this.#refuse('tenant_share', `tenant ${tenant} already holds ${t.bytes} bytes of requests in flight on this acceptor; ${bytes} more pass its share of acceptor.max_inflight_bytes (${this.#tenantMaxBytes}, acceptor.max_inflight_tenant_share); retry shortly`);
      }
    }
    t.requests++;
    t.bytes += bytes;
    this.#tenants.set(tenant, t);
  }

  #grow(tenant: string | undefined, bytes: number): void {
    const { maxBytes } = this.#o;
    if (this.#requests > 1 && this.#bytes + bytes > maxBytes) {
      throw this.#refuse('bytes', `a request body inflating to ${bytes} bytes does not fit beside the ${this.#bytes} bytes this acceptor already holds in flight (acceptor.max_inflight_bytes ${maxBytes}); retry shortly`);
    }
    const t = tenant === undefined ? undefined : this.#tenants.get(tenant);
    if (t && t.requests > 1 && t.bytes + bytes > this.#tenantMaxBytes) {
      throw this.#refuse('tenant_share', `a request body inflating to ${bytes} bytes does not fit beside the ${t.bytes} bytes tenant ${tenant} already holds in flight on this acceptor (its share of acceptor.max_inflight_bytes, ${this.#tenantMaxBytes}); retry shortly`);
    }
    this.#bytes += bytes;
    if (t) t.bytes += bytes;
  }

  #free(tenant: string | undefined, bytes: number): void {
    this.#requests--;
    this.#bytes -= bytes;
    if (tenant === undefined) return;
    const t = this.#tenants.get(tenant)!;
    t.requests--;
    t.bytes -= bytes;
    if (t.requests === 0) this.#tenants.delete(tenant);
  }

  #refuse(limit: 'requests' | 'bytes' | 'tenant_share', message: string): FloeError {
    this.#refused?.add(1, { limit });
    return new FloeError('unavailable', message, { code: 'FLOE_ERR_INFLIGHT_LIMIT', headers: { 'Retry-After': '1' } });
  }
}

/** One request's room: its body, what it inflated to, and its tenant's share once known. */
export class InflightRequest {
  readonly #limit: Counts;
  #bytes: number;
  #tenant: string | undefined;
  #released = false;

  constructor(limit: Counts, bytes: number) {
    this.#limit = limit;
    this.#bytes = bytes;
  }

  /** The request is `tenant`'s: counted in its share from now on, or refused past it (503). */
  ofTenant(tenant: string): void {
    if (this.#released || this.#tenant !== undefined) return;
    this.#limit.claim(tenant, this.#bytes);
    this.#tenant = tenant;
  }

  /**
   * More room for the request: what its body inflated to (gzip, snappy), which it holds beside the
   * body as sent. Counting only bodies as sent let many small compressed bodies that inflate far
   * hold many times max_inflight_bytes at once. Refused like `take` (503, retried by senders),
   * except for a request alone. Nothing once released (its connection is gone).
   */
  grow(bytes: number): void {
    if (this.#released) return;
    this.#limit.grow(this.#tenant, bytes);
    this.#bytes += bytes;
  }

  /** Gives the room back (once, however often called). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#limit.free(this.#tenant, this.#bytes);
  }
}
