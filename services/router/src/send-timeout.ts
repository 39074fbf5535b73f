import type { ServerResponse } from 'node:http';
import { constants as http2, type Http2ServerResponse } from 'node:http2';

/**
 * Cuts a response off when its client takes none of it for `ms`: an HTTP/1.1 connection is
 * destroyed, an HTTP/2 stream reset (CANCEL), its session and other streams left alone. The
 * timer counts inactivity of the connection or stream, which is all there is while a client
 * reads nothing; once the response has been sent Node no longer reports it here (an idle
 * keep-alive connection is the server's keepAliveTimeout's).
 */
export function cutOffWhenStalled(res: ServerResponse | Http2ServerResponse, ms: number): void {
  if ('stream' in res) {
    res.setTimeout(ms, () => {
      if (!res.stream.destroyed) res.stream.close(http2.NGHTTP2_CANCEL);
    });
    return;
  }
  res.setTimeout(ms, () => res.destroy());
}
