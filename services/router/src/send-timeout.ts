import type { ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import { cutExchange } from '@floe/runtime';

/**
 * Cuts a response off when its client takes none of it for `ms`: an HTTP/1.1 connection is
 * destroyed, an HTTP/2 stream reset (CANCEL), its session and other streams left alone. The
 * timer counts inactivity of the connection or stream, which is all there is while a client
 * reads nothing; once the response has been sent Node no longer reports it here (an idle
 * keep-alive connection is the server's keepAliveTimeout's).
 */
export function cutOffWhenStalled(res: ServerResponse | Http2ServerResponse, ms: number): void {
  res.setTimeout(ms, () => cutExchange(res));
}
