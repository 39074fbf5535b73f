import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { constants as http2Constants, createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { Server as TlsServer, type TLSSocket } from 'node:tls';

/** The first bytes of every HTTP/2 connection (RFC 9113 §3.4); no HTTP/1 request starts so. */
const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/** ALPN protocols of a TLS router port that also speaks HTTP/2. */
export const SHARED_PORT_ALPN = ['h2', 'http/1.1'];

/** An HTTP/2 connection idle this long is closed (HTTP/1.1's are by the server's keep-alive timeout). */
const HTTP2_IDLE_MS = 5 * 60_000;

/**
 * Lets the HTTP/1.1 server's port also speak HTTP/2, every request of either going to `route`
 * (fastify's router). Cleartext: each new connection's first bytes decide; one that opens with
 * HTTP/2's preface is handed to an HTTP/2 session, any other to the HTTP/1.1 server as usual, the
 * bytes read to decide put back first. TLS (the server offers SHARED_PORT_ALPN): the protocol the
 * client chose in the handshake decides. Returns what closes the HTTP/2 sessions (stop).
 */
export function servePortOverHttp2(http: HttpServer | HttpsServer, route: (req: IncomingMessage, res: ServerResponse) => void): { stop(graceMs?: number): Promise<void> } {
  // Requests whose body is still arriving: cut at stop, as both services cut their HTTP/1.1 uploads.
  // (How long one may take to arrive is the services' read_timeout, arrival-deadline.ts, which
  // their routes apply to HTTP/2 requests too.)
  const arriving = new Set<Http2ServerRequest>();
  // The TLS is the HTTP/1.1 server's; the HTTP/2 one only ever sees plaintext sockets handed to it.
  // Streams per connection bounded as HTTP/2 servers commonly do (Node's own default is 2^32-1).
  const h2 = createHttp2Server({ settings: { maxConcurrentStreams: 128 } }, (req, res) => {
    if (!req.stream.endAfterHeaders) {
      arriving.add(req);
      const arrived = () => arriving.delete(req);
      req.once('end', arrived);
      req.stream.once('close', arrived);
    }
    route(req as unknown as IncomingMessage, res as unknown as ServerResponse);
  });
  const sessions = new Set<Http2Session>();
  h2.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    session.setTimeout(HTTP2_IDLE_MS, () => session.close());
  });
  let closing = false;
  // The connections handed to HTTP/2, still open: its sessions ending do not always end them (a
  // client that never reads its last response keeps its side open), and the HTTP/1.1 server,
  // whose connections they also are, waits for every one of them before its close completes.
  const handed = new Set<Socket>();
  const handOver = (socket: Socket) => {
    if (closing) return void socket.destroy();
    handed.add(socket);
    socket.once('close', () => handed.delete(socket));
    h2.emit('connection', socket);
  };
  const handle = {
    /**
     * Graceful, as the HTTP/1.1 server's close: each session is told GOAWAY (no new streams) and
     * its requests in progress finish, for at most `graceMs`; what is left then is cut. Until
     * then the HTTP/1.1 server's close would wait for these connections, which are its own too.
     * A request whose body is still arriving is not in progress: its stream is reset at once
     * (nothing of it was answered; the client sends it again elsewhere) rather than awaited.
     */
    stop: async (graceMs = 10_000) => {
      closing = true;
      for (const req of arriving) cutExchange(req);
      const ended = [...sessions].map((session) => new Promise((r) => session.once('close', r)));
      for (const session of sessions) session.close();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(ended),
        new Promise((r) => (timer = setTimeout(r, graceMs))),
      ]);
      clearTimeout(timer);
      for (const session of sessions) session.destroy();
      for (const socket of handed) socket.destroy();
      h2.close();
    },
  };
  if (http instanceof TlsServer) {
    const httpListeners = http.listeners('secureConnection') as Array<(socket: TLSSocket) => void>;
    http.removeAllListeners('secureConnection');
    http.on('secureConnection', (socket: TLSSocket) => {
      if (socket.alpnProtocol === 'h2') handOver(socket);
      else for (const listener of httpListeners) listener.call(http, socket);
    });
    return handle;
  }
  const httpListeners = http.listeners('connection') as Array<(socket: Socket) => void>;
  http.removeAllListeners('connection');
  http.on('connection', (socket: Socket) => {
    let seen = Buffer.alloc(0);
    // Until it has decided, a connection is neither server's: one that sends too little for too
    // long is closed here, as the HTTP server would close one that never finishes its headers.
    socket.setTimeout(http.headersTimeout || 60_000, () => socket.destroy());
    const decide = (chunk: Buffer) => {
      seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, H2_PREFACE.length);
      const isH2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      // Undecided while every byte so far is a prefix of the preface and the preface is not complete.
      if (isH2 && n < H2_PREFACE.length) return;
      socket.off('data', decide);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(seen);
      if (isH2) {
        // The HTTP/2 session takes the bytes put back before reading the socket itself.
        handOver(socket);
        return;
      }
      for (const listener of httpListeners) listener.call(http, socket);
      socket.resume();
    };
    socket.on('data', decide);
  });
  return handle;
}

/**
 * Ends one exchange (a request or its response) unanswered or unfinished: over HTTP/1.1 its
 * connection is destroyed; over HTTP/2 its stream is reset (CANCEL), its session and other
 * streams left alone. Destroying an HTTP/2 compat request or response object is not that: it ends
 * only the object's own readable or writable side, and the stream stays open until its session
 * ends.
 */
export function cutExchange(x: { destroy(): unknown } | Http2ServerRequest | Http2ServerResponse): void {
  const stream = 'stream' in x ? x.stream : undefined;
  if (stream) {
    if (!stream.destroyed) stream.close(http2Constants.NGHTTP2_CANCEL);
  } else x.destroy();
}
