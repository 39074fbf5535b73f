import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { recordsMetrics, type SelfTelemetry } from './self-monitoring.ts';

/** Methods kept as they are; any other is `_OTHER`, as the semantic conventions bound the label. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

/**
 * Seconds: the conventions' buckets for fast routes, then the minutes a range query or a large
 * export may take (the query timeout is 2 minutes by default).
 */
const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 120];

/**
 * The metrics of a fastify server (the router's, the acceptor's): `GET /metrics` when the
 * process serves them, and `http.server.request.duration` of every request it answers, by
 * method, route template (never the raw path: trace ids and label values would each make a
 * series) and status, as the semantic conventions name it; in Prometheus' names
 * `http_server_request_duration_seconds`, the request rate, error ratio and latency of the query
 * APIs and the ingest routes. Register before the routes, on the root instance.
 */
export function httpServerMetrics<L extends FastifyBaseLogger>(app: FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, L>, telemetry: SelfTelemetry): void {
  const endpoint = telemetry.metricsEndpoint;
  if (endpoint) {
    app.get('/metrics', async (req, reply) => {
      const answer = await endpoint.respond(req.headers.authorization);
      return reply.code(answer.status).type(answer.contentType).send(answer.body);
    });
  }
  if (!recordsMetrics(telemetry)) return;
  const duration = telemetry.meter.createHistogram('http.server.request.duration', {
    description: 'Duration of HTTP server requests, by method, route and status',
    unit: 's',
    advice: { explicitBucketBoundaries: BOUNDS },
  });
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url;
    duration.record(reply.elapsedTime / 1000, {
      'http.request.method': KNOWN_METHODS.has(req.method) ? req.method : '_OTHER',
      'http.response.status_code': reply.statusCode,
      ...(route === undefined ? {} : { 'http.route': route }),
    });
    done();
  });
}
