import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { cutExchange } from './http2-port.ts';

/** A request as Node's HTTP/1.1 server or HTTP/2 compatibility API hands it over (fastify's `req.raw`). */
export type ArrivingRequest = IncomingMessage | Http2ServerRequest;

/**
 * The deadline by which each request must have arrived, body included (a service's read_timeout).
 * `expect` arms it at the request's first byte; `arrived` (once the body is in) or the response
 * closing clears it; a request still arriving then is cut (cutExchange: its HTTP/1.1 connection
 * closed, or its HTTP/2 stream reset), so a client that dribbles its body cannot hold its
 * connection and whatever the service gave the request for ever. `cutArriving` cuts every
 * request still arriving at once (stop: nothing of them was answered, the client sends them again).
 *
 * A timer per request rather than Node's requestTimeout: that one is checked only every 30 s
 * (connectionsCheckingInterval), is HTTP/1.1 only, and leaves no list of uploads to cut at stop.
 */
export interface ArrivalDeadlines {
  /** Arms `req`'s deadline; it ends when `res` closes, whatever came of the request. */
  expect(req: ArrivingRequest, res: ServerResponse | Http2ServerResponse): void;
  /** The body is in: the request is processed however long that takes. */
  arrived(req: ArrivingRequest): void;
  /** Cuts every request whose deadline is still armed. */
  cutArriving(): void;
}

export function arrivalDeadlines(ms: number): ArrivalDeadlines {
  const arriving = new Map<ArrivingRequest, NodeJS.Timeout>();
  const arrived = (req: ArrivingRequest) => {
    clearTimeout(arriving.get(req));
    arriving.delete(req);
  };
  return {
    expect(req, res) {
      if (arriving.has(req)) return;
      arriving.set(req, setTimeout(() => cutExchange(req), ms));
      res.once('close', () => arrived(req));
    },
    arrived,
    cutArriving() {
      for (const req of arriving.keys()) cutExchange(req);
    },
  };
}

/**
 * Whether a request has a body still to come, as its headers tell: over HTTP/1.1 a
 * Content-Length above 0 or a Transfer-Encoding (chunked; RFC 9112 §6.3), over HTTP/2 a HEADERS
 * frame that did not end the stream (RFC 9113 §8.1), whatever its method.
 */
export function carriesBody(req: ArrivingRequest): boolean {
  if ('stream' in req) return !req.stream.endAfterHeaders;
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = Number(req.headers['content-length'] ?? 0);
  return !(Number.isFinite(length) && length <= 0);
}
