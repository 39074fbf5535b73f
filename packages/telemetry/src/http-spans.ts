import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import type { SelfTelemetry } from './self-monitoring.ts';
import { parentFromTraceparent } from './traceparent.ts';

/** Paths whose requests make no span: load-balancer probes and Prometheus scrapes would outnumber every other. */
export const UNTRACED_PATHS: ReadonlySet<string> = new Set(['/ready', '/metrics']);

/**
 * Self-monitoring of an HTTP boundary (spec 2, Events), shared by the router and the acceptor:
 * a server span named `{method} {route}` that continues the caller's `traceparent`, and its end
 * with the response status and the tenant. Whether a request is traced at all (not the
 * self-monitoring tenant, not a readiness probe) is the caller's call.
 */
export function startHttpServerSpan(telemetry: SelfTelemetry, req: { method: string; route: string | undefined; url: string; traceparent: string | string[] | undefined }): Span {
  const { method, route } = req;
  return telemetry.tracer.startSpan(
    route ? `${method} ${route}` : method,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'url.path': req.url.split('?')[0]!, ...(route ? { 'http.route': route } : {}) } },
    parentFromTraceparent(Array.isArray(req.traceparent) ? req.traceparent[0] : req.traceparent),
  );
}

export function endHttpServerSpan(span: Span, statusCode: number, tenant: string | undefined): void {
  span.setAttribute('http.response.status_code', statusCode);
  if (tenant) span.setAttribute('floe.tenant.id', tenant);
  if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** The span as a W3C traceparent (Server-Timing, traceresponse, the metadata of onward calls). */
export function traceparentOf(span: Span): string {
  const ctx = span.spanContext();
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.traceFlags.toString(16).padStart(2, '0')}`;
}

/**
 * The Server-Timing value of a traced response (spec 2, Events): the span's traceparent, then a
 * `dur` per stage in milliseconds, `total` first.
 */
export function serverTiming(traceparent: string, totalMs: number, stages: Iterable<readonly [string, number]> = []): string {
  const timing = [`traceparent;desc="${traceparent}"`, `total;dur=${totalMs.toFixed(1)}`];
  for (const [stage, ms] of stages) timing.push(`${stage};dur=${ms.toFixed(1)}`);
  return timing.join(', ');
}
