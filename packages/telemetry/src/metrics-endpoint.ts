import { createHash, timingSafeEqual } from 'node:crypto';
import { FloeError, toHttp } from '@floe/errors';
import type { MetricReader } from '@opentelemetry/sdk-metrics';

/**
 * `GET /metrics` of every Floe service (router, acceptor and the admin ports of writer, querier
 * and compactor): the process's instruments in the Prometheus text exposition format, as Loki,
 * Tempo and Mimir serve theirs, so a Prometheus outside Floe can watch Floe even when Floe
 * itself is what failed (self-monitoring into tenant _system cannot).
 *
 * Names follow the OpenTelemetry → Prometheus translation (unit suffixes, `_total` on
 * counters), the same as Floe's own PromQL applies to OTLP metrics, so one dashboard or alert
 * reads both a scrape of these endpoints and the self-monitoring tenant.
 */
export interface MetricsEndpoint {
  /** The answer to `GET /metrics` carrying this Authorization header. */
  respond(authorization: string | undefined): Promise<MetricsAnswer>;
}

export interface MetricsAnswer {
  status: number;
  contentType: string;
  body: string;
}

/** Version 0.0.4 of the text format (prometheus-text.ts). */
const TEXT_FORMAT = 'text/plain; version=0.0.4; charset=utf-8';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The endpoint over a pull reader of the process's meter provider, which a scrape collects.
 * `bearerToken` non-empty: only `Authorization: Bearer <token>` is answered (401 otherwise, in
 * the shared error envelope); compared in constant time.
 */
export async function prometheusMetricsEndpoint(bearerToken: string): Promise<{ reader: MetricReader; endpoint: MetricsEndpoint }> {
  const [{ MetricReader }, { prometheusText }] = await Promise.all([import('@opentelemetry/sdk-metrics'), import('./prometheus-text.ts')]);
  // Read on demand only: nothing to flush or stop.
  class PullReader extends MetricReader {
    protected override async onForceFlush(): Promise<void> {}
    protected override async onShutdown(): Promise<void> {}
  }
  const reader = new PullReader();
  const expected = bearerToken ? digest(bearerToken) : undefined;
  const refuse = (err: FloeError): MetricsAnswer => {
    const out = toHttp(err);
    return { status: out.status, contentType: 'application/json', body: JSON.stringify(out.body) };
  };
  const endpoint: MetricsEndpoint = {
    async respond(authorization) {
      if (expected) {
        const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
        if (!m || !timingSafeEqual(digest(m[1]!), expected)) return refuse(new FloeError('unauthorized', 'GET /metrics needs Authorization: Bearer <self_monitoring.metrics_bearer_token>'));
      }
      let text: string;
      try {
        text = prometheusText((await reader.collect()).resourceMetrics);
      } catch {
        // The provider was shut down: the process is stopping.
        return refuse(new FloeError('unavailable', 'metrics are no longer collected: the process is stopping'));
      }
      return { status: 200, contentType: TEXT_FORMAT, body: text };
    },
  };
  return { reader, endpoint };
}
