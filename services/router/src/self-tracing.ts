import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { SYSTEM_TENANT_ID } from '@floe/meta';
import { SpanKind, SpanStatusCode, parentFromTraceparent, type SelfTelemetry, type Span } from '@floe/telemetry';
import type { QuerierClient } from './querier-client.ts';

/**
 * Self-monitoring of the router's HTTP boundary (spec 2, Events): one server span per request
 * named `{method} {route}`, and on the response `Server-Timing` (the span's traceparent, then
 * `dur` per stage: total and the time spent in queriers) and `traceresponse`. Requests of the
 * self-monitoring tenant get neither: reading Floe's own telemetry must not create more of it.
 */

/** Milliseconds per stage of the current request, kept across its async calls. */
export class StageTimings {
  readonly #current = new AsyncLocalStorage<Map<string, number>>();

  run(stages: Map<string, number>, next: () => void): void {
    this.#current.run(stages, next);
  }

  async measure<T>(stage: string, work: () => Promise<T>): Promise<T> {
    const stages = this.#current.getStore();
    if (!stages) return work();
    const start = performance.now();
    try {
      return await work();
    } finally {
      stages.set(stage, (stages.get(stage) ?? 0) + performance.now() - start);
    }
  }
}

/** The querier calls of a request counted as its `querier` stage. */
export function timedQuerier(querier: QuerierClient, timings: StageTimings): QuerierClient {
  return {
    query: (creds, req, deadlineMs) => timings.measure('querier', () => querier.query(creds, req, deadlineMs)),
    traceById: (creds, req, deadlineMs) => timings.measure('querier', () => querier.traceById(creds, req, deadlineMs)),
  };
}

export interface SelfTracingOptions {
  telemetry: SelfTelemetry;
  timings: StageTimings;
}

interface Traced {
  span: Span;
  start: number;
  stages: Map<string, number>;
}

const tenantHeader = (req: FastifyRequest) => {
  const v = req.headers['x-tenant-id'];
  return (Array.isArray(v) ? v[0] : v)?.trim();
};

// Load-balancer probes would outnumber every other span.
const UNTRACED_URLS = new Set(['/ready']);

export const selfTracingPlugin = fp<SelfTracingOptions>(async (app, { telemetry, timings }) => {
  const traced = new WeakMap<FastifyRequest, Traced>();

  // Callback style, so the rest of the request runs inside the stage timings' async context.
  app.addHook('onRequest', (req, _reply, done) => {
    if (tenantHeader(req) === SYSTEM_TENANT_ID || UNTRACED_URLS.has(req.url)) return done();
    const route = req.routeOptions.url;
    const incoming = req.headers.traceparent;
    const span = telemetry.tracer.startSpan(
      route ? `${req.method} ${route}` : req.method,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': req.method, 'url.path': req.url.split('?')[0]!, ...(route ? { 'http.route': route } : {}) },
      },
      // A caller's trace continues through the router (its span becomes this one's parent).
      parentFromTraceparent(Array.isArray(incoming) ? incoming[0] : incoming),
    );
    const stages = new Map<string, number>();
    traced.set(req, { span, start: performance.now(), stages });
    timings.run(stages, done);
  });

  app.addHook('onSend', async (req, reply, payload) => {
    const t = traced.get(req);
    if (!t) return payload;
    // A tenant named by Basic auth is only known now: its span is dropped unended (never exported).
    if (req.tenant?.tenant === SYSTEM_TENANT_ID) {
      traced.delete(req);
      return payload;
    }
    const ctx = t.span.spanContext();
    const traceparent = `00-${ctx.traceId}-${ctx.spanId}-${ctx.traceFlags.toString(16).padStart(2, '0')}`;
    const timing = [`traceparent;desc="${traceparent}"`, `total;dur=${(performance.now() - t.start).toFixed(1)}`];
    for (const [stage, ms] of t.stages) timing.push(`${stage};dur=${ms.toFixed(1)}`);
    void reply.header('server-timing', timing.join(', ')).header('traceresponse', traceparent);
    return payload;
  });

  app.addHook('onResponse', async (req, reply) => {
    const t = traced.get(req);
    if (!t) return;
    t.span.setAttribute('http.response.status_code', reply.statusCode);
    if (req.tenant) t.span.setAttribute('floe.tenant.id', req.tenant.tenant);
    if (reply.statusCode >= 500) t.span.setStatus({ code: SpanStatusCode.ERROR });
    t.span.end();
  });
});
