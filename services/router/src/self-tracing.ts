import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { SYSTEM_TENANT_ID } from '@floe/meta';
import { endHttpServerSpan, serverTiming, startHttpServerSpan, traceparentOf, UNTRACED_PATHS, type SelfTelemetry, type Span } from '@floe/telemetry';
import type { QuerierClient } from './querier-client.ts';
import { headerValue } from '@floe/runtime';

/**
 * Self-monitoring of the router's HTTP boundary (spec 2, Events): one server span per request
 * named `{method} {route}`, and on the response `Server-Timing` (the span's traceparent, then
 * `dur` per stage: total and the time spent in queriers) and `traceresponse`. Requests of the
 * self-monitoring tenant get neither: reading Floe's own telemetry must not create more of it.
 */

/** Milliseconds per stage of the current request, kept across its async calls. */
export class StageTimings {
  readonly #current = new AsyncLocalStorage<{ stages: Map<string, number>; traceparent: string }>();

  run(stages: Map<string, number>, traceparent: string, next: () => void): void {
    this.#current.run({ stages, traceparent }, next);
  }

  /** The traceparent of the current request's span (undefined outside a traced request). */
  traceparent(): string | undefined {
    return this.#current.getStore()?.traceparent;
  }

  async measure<T>(stage: string, work: () => Promise<T>): Promise<T> {
    const stages = this.#current.getStore()?.stages;
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
  // The querier's span continues the request's trace.
  const traced = <C extends { traceparent?: string }>(creds: C): C => {
    const traceparent = timings.traceparent();
    return traceparent ? { ...creds, traceparent } : creds;
  };
  return {
    query: (creds, req, deadlineMs) => timings.measure('querier', () => querier.query(traced(creds), req, deadlineMs)),
    traceById: (creds, req, deadlineMs) => timings.measure('querier', () => querier.traceById(traced(creds), req, deadlineMs)),
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

export const selfTracingPlugin = fp<SelfTracingOptions>(async (app, { telemetry, timings }) => {
  const traced = new WeakMap<FastifyRequest, Traced>();

  // Callback style, so the rest of the request runs inside the stage timings' async context.
  app.addHook('onRequest', (req, _reply, done) => {
    if (headerValue(req.headers, 'x-tenant-id')?.trim() === SYSTEM_TENANT_ID || UNTRACED_PATHS.has(req.url)) return done();
    // A caller's trace continues through the router (its span becomes this one's parent).
    const span = startHttpServerSpan(telemetry, { method: req.method, route: req.routeOptions.url, url: req.url, traceparent: req.headers.traceparent });
    const stages = new Map<string, number>();
    traced.set(req, { span, start: performance.now(), stages });
    timings.run(stages, traceparentOf(span), done);
  });

  app.addHook('onSend', async (req, reply, payload) => {
    const t = traced.get(req);
    if (!t) return payload;
    // A tenant named by Basic auth is only known now: its span is dropped unended (never exported).
    if (req.tenant?.tenant === SYSTEM_TENANT_ID) {
      traced.delete(req);
      return payload;
    }
    const traceparent = traceparentOf(t.span);
    void reply.header('server-timing', serverTiming(traceparent, performance.now() - t.start, t.stages)).header('traceresponse', traceparent);
    return payload;
  });

  app.addHook('onResponse', async (req, reply) => {
    const t = traced.get(req);
    if (!t) return;
    endHttpServerSpan(t.span, reply.statusCode, req.tenant?.tenant);
  });
});
