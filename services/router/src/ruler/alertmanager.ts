import type { Logger } from '@floe/telemetry';

/**
 * Sends the ruler's firing and resolved alerts to Alertmanager the way Prometheus's notifier
 * does: a bounded queue that drops its oldest alerts when full, batches POSTed to
 * `<url>/api/v2/alerts` of every configured Alertmanager (all members of an HA cluster get every
 * alert; they deduplicate among themselves), a batch sent once any of them accepted it, and no
 * retry: the ruler re-sends firing alerts every resend delay, so a lost batch heals itself.
 *
 * Batches never mix tenants: each carries its tenant in X-Scope-OrgID, which multi-tenant
 * Alertmanagers (Mimir's, Cortex's) route by.
 */

export interface NotifiedAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: Date;
  /** In the past for a resolved alert; absent lets Alertmanager apply its resolve_timeout. */
  endsAt?: Date;
  generatorURL: string;
}

export interface AlertmanagerOptions {
  /** Base URLs of the Alertmanagers; each may carry a path prefix (http://am:9093/alertmanager). */
  urls: string[];
  /** Per request (default 10 s). */
  timeoutMs?: number;
  /** Alerts waiting to be sent (default 10000); beyond it the oldest are dropped. */
  maxQueue?: number;
  /** Alerts per request (default 64). */
  maxBatch?: number;
  log: Logger;
  /** Extra headers per tenant (e.g. Authorization); may override X-Scope-OrgID. */
  headers?: (tenant: string) => Record<string, string>;
}

export interface NotifierStats {
  /** Alerts in batches at least one Alertmanager accepted. */
  sent: number;
  /** Alerts lost: pushed out of a full queue, in a batch no Alertmanager accepted, or left at stop(). */
  dropped: number;
  /** Failed requests, one per Alertmanager per batch. */
  errors: number;
  /** Alerts waiting (not counting a batch in flight). */
  queued: number;
}

/** Alertmanager's API v2 postable alert: times in RFC 3339, endsAt omitted when unknown. */
interface WireAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt?: string;
  generatorURL: string;
}

interface Target {
  /** Without credentials: fetch refuses URLs that carry them. */
  url: string;
  authorization?: string;
}

/** How long stop() lets the queue drain before it aborts what is in flight. */
const STOP_DEADLINE_MS = 1000;

export class AlertmanagerNotifier {
  private readonly targets: Target[];
  private readonly timeoutMs: number;
  private readonly maxQueue: number;
  private readonly maxBatch: number;
  private readonly log: Logger;
  private readonly headers?: (tenant: string) => Record<string, string>;
  private queue: { tenant: string; alert: WireAlert }[] = [];
  private readonly counts = { sent: 0, dropped: 0, errors: 0 };
  private draining: Promise<void> | undefined;
  private stopped = false;
  /** Aborts requests in flight once stop()'s deadline has passed. */
  private readonly halt = new AbortController();

  constructor(opts: AlertmanagerOptions) {
    if (opts.urls.length === 0) throw new Error('AlertmanagerNotifier: no Alertmanager URLs');
    this.targets = opts.urls.map(toTarget);
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.maxQueue = Math.max(1, opts.maxQueue ?? 10_000);
    this.maxBatch = Math.max(1, opts.maxBatch ?? 64);
    this.log = opts.log;
    this.headers = opts.headers;
  }

  /** Queues the alerts and returns at once; sending happens in the background. */
  send(tenant: string, alerts: NotifiedAlert[]): void {
    if (this.stopped) {
      this.counts.dropped += alerts.length;
      return;
    }
    for (const a of alerts) {
      const wire = toWire(a);
      if (wire) this.queue.push({ tenant, alert: wire });
      else {
        this.counts.dropped++;
        this.log.warn({ tenant, alertname: a.labels.alertname }, 'alertmanager notifier: alert with an invalid time dropped');
      }
    }
    const over = this.queue.length - this.maxQueue;
    if (over > 0) {
      this.queue.splice(0, over);
      this.counts.dropped += over;
      this.log.warn({ dropped: over, maxQueue: this.maxQueue }, 'alertmanager notifier: queue full, oldest alerts dropped');
    }
    this.draining ??= this.drain();
  }

  stats(): NotifierStats {
    return { ...this.counts, queued: this.queue.length };
  }

  /** Sends what it can within a short deadline, then aborts the rest (counted as dropped). */
  async stop(): Promise<void> {
    this.stopped = true;
    const deadline = setTimeout(() => this.halt.abort(), STOP_DEADLINE_MS);
    await this.draining;
    clearTimeout(deadline);
    this.halt.abort();
    this.counts.dropped += this.queue.length;
    this.queue = [];
  }

  private async drain(): Promise<void> {
    // Let alerts sent in the same tick (a whole rule group's evaluation) share a batch.
    await new Promise<void>((r) => setImmediate(r));
    try {
      while (this.queue.length > 0 && !this.halt.signal.aborted) {
        const { tenant, alerts } = this.nextBatch();
        if (await this.sendBatch(tenant, alerts)) this.counts.sent += alerts.length;
        else this.counts.dropped += alerts.length;
      }
    } catch (err) {
      this.log.error({ err }, 'alertmanager notifier: send loop failed');
    } finally {
      // Synchronously after the last look at the queue, so a send() from now on starts a new loop.
      this.draining = undefined;
    }
  }

  /** Up to maxBatch alerts of the oldest queued alert's tenant, in queue order. */
  private nextBatch(): { tenant: string; alerts: WireAlert[] } {
    const tenant = this.queue[0]!.tenant;
    const alerts: WireAlert[] = [];
    const rest: typeof this.queue = [];
    for (const q of this.queue) {
      if (q.tenant === tenant && alerts.length < this.maxBatch) alerts.push(q.alert);
      else rest.push(q);
    }
    this.queue = rest;
    return { tenant, alerts };
  }

  private async sendBatch(tenant: string, alerts: WireAlert[]): Promise<boolean> {
    const body = JSON.stringify(alerts);
    const accepted = await Promise.all(this.targets.map((t) => this.post(t, tenant, body, alerts.length)));
    return accepted.includes(true);
  }

  /** Never rejects: a failure is logged, counted and answered with false. */
  private async post(target: Target, tenant: string, body: string, count: number): Promise<boolean> {
    const headers = new Headers({ 'Content-Type': 'application/json', 'X-Scope-OrgID': tenant });
    if (target.authorization) headers.set('Authorization', target.authorization);
    try {
      for (const [k, v] of Object.entries(this.headers?.(tenant) ?? {})) headers.set(k, v);
      const res = await fetch(target.url, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.any([this.halt.signal, AbortSignal.timeout(this.timeoutMs)]),
      });
      // Read to the end so undici can reuse the connection; on an error it is Alertmanager's reason.
      const answer = await res.text();
      if (res.ok) return true;
      this.counts.errors++;
      this.log.warn({ url: target.url, status: res.status, tenant, alerts: count, answer: answer.slice(0, 512) }, 'alertmanager notifier: alerts rejected');
    } catch (err) {
      // Cut off by stop(): the caller counts the batch as dropped; not Alertmanager's error.
      if (this.halt.signal.aborted) return false;
      this.counts.errors++;
      this.log.warn({ url: target.url, tenant, alerts: count, err: (err as Error).cause ?? err }, 'alertmanager notifier: request failed');
    }
    return false;
  }
}

function toTarget(base: string): Target {
  const u = new URL(base);
  const authorization = u.username || u.password ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}` : undefined;
  u.username = '';
  u.password = '';
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/api/v2/alerts`;
  return { url: u.toString(), authorization };
}

/** Undefined for an invalid Date, which toISOString would throw on in the send loop. */
function toWire(a: NotifiedAlert): WireAlert | undefined {
  if (!validDate(a.startsAt) || (a.endsAt && !validDate(a.endsAt))) return undefined;
  const w: WireAlert = { labels: { ...a.labels }, annotations: { ...a.annotations }, startsAt: a.startsAt.toISOString(), generatorURL: a.generatorURL };
  if (a.endsAt) w.endsAt = a.endsAt.toISOString();
  return w;
}

function validDate(d: Date): boolean {
  return Number.isFinite(d.getTime());
}
