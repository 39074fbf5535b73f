import { connect as h2connect, constants, type ClientHttp2Stream } from 'node:http2';
import { connect as tcpConnect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, openDb, type Db } from '@floe/meta';
import { servePortOverHttp2 } from '@floe/runtime';
import { ADMIN, makeApp } from './management/test-support.ts';

/** The router app with the management API on `db`, listening on a free port, HTTP/2 beside HTTP/1.1 as with router.tempo_streaming. */
async function listeningRouter(db: Db, readTimeoutMs: number) {
  const app = await makeApp(db, { readTimeoutMs });
  const http2 = servePortOverHttp2(app.server, app.routing);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as { port: number }).port;
  return {
    app,
    port,
    close: async () => {
      await http2.stop(0);
      await app.close();
    },
  };
}

/** Sends a tenant creation's headers and the first half of its body, then nothing more. */
function stalledUpload(port: number, tenant: string): { socket: Socket; received: () => string; closed: Promise<void> } {
  const body = JSON.stringify({ id: tenant });
  const socket = tcpConnect(port, '127.0.0.1');
  socket.on('error', () => {});
  let received = '';
  socket.setEncoding('utf8').on('data', (c: string) => (received += c));
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  socket.write(
    `POST /api/v1/tenants HTTP/1.1\r\nHost: router\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, body.length >> 1)}`,
  );
  return { socket, received: () => received, closed };
}

const tenantIds = async (db: Db, ids: string[]) => (await db.query<{ id: string }>('SELECT id FROM tenants WHERE id = ANY($1) ORDER BY id', [ids])).rows.map((r) => r.id);

/** router.read_timeout: a request body that stops arriving is cut; everyone else is answered. */
describe('router read_timeout', () => {
  let db: Db;
  let router: Awaited<ReturnType<typeof listeningRouter>>;
  beforeAll(async () => {
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    router = await listeningRouter(db, 1000);
  });
  afterAll(async () => {
    await router?.close();
    await db?.close();
  });

  it('closes an HTTP/1.1 connection whose body stalls, unanswered; a POST on another connection is answered', async () => {
    const stalled = stalledUpload(router.port, 'stalled-h1');
    const res = await fetch(`http://127.0.0.1:${router.port}/api/v1/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'quick-h1' }),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ id: 'quick-h1' });
    await stalled.closed;
    expect(stalled.received()).toBe('');
    expect(await tenantIds(db, ['quick-h1', 'stalled-h1'])).toEqual(['quick-h1']);
  });

  it('resets an HTTP/2 stream whose body stalls (CANCEL); the session and its other streams are served', async () => {
    const session = h2connect(`http://127.0.0.1:${router.port}`);
    session.on('error', () => {});
    const post = (tenant: string, whole: boolean): ClientHttp2Stream => {
      const body = JSON.stringify({ id: tenant });
      const stream = session.request(
        { ':method': 'POST', ':path': '/api/v1/tenants', authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', 'content-length': String(body.length) },
        { endStream: false },
      );
      stream.on('error', () => {});
      if (whole) stream.end(body);
      else stream.write(body.slice(0, body.length >> 1));
      return stream;
    };
    const answer = (stream: ClientHttp2Stream) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        let status = 0;
        let body = '';
        stream.on('response', (h) => (status = Number(h[':status'])));
        stream.setEncoding('utf8').on('data', (c: string) => (body += c));
        stream.on('end', () => resolve({ status, body }));
        stream.on('close', () => reject(new Error(`stream closed unanswered (${stream.rstCode})`)));
      });
    try {
      const stalled = post('stalled-h2', false);
      let answered = false;
      stalled.on('response', () => (answered = true));
      const reset = new Promise<number>((r) => stalled.on('close', () => r(stalled.rstCode)));
      const quick = await answer(post('quick-h2', true));
      expect(quick.status).toBe(201);
      expect(JSON.parse(quick.body)).toMatchObject({ id: 'quick-h2' });
      expect(await reset).toBe(constants.NGHTTP2_CANCEL);
      expect(answered).toBe(false);
      // The same session still serves new streams after the reset.
      const after = await answer(session.request({ ':path': '/ready' }));
      expect(after).toEqual({ status: 200, body: 'ready\n' });
      expect(await tenantIds(db, ['quick-h2', 'stalled-h2'])).toEqual(['quick-h2']);
    } finally {
      session.close();
    }
  });
});

describe('router stop', () => {
  it('cuts uploads still arriving instead of waiting out read_timeout', async () => {
    const db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    try {
      await migrate(db);
      // A deadline far past the test's own timeout: only the stop can end this upload in time.
      const router = await listeningRouter(db, 10 * 60_000);
      const stalled = stalledUpload(router.port, 'stalled-at-stop');
      // The upload is in the router (its request begun) before the stop.
      await new Promise<void>((r) => router.app.server.once('request', () => setImmediate(r)));
      await router.close();
      await stalled.closed;
      expect(stalled.received()).toBe('');
      expect(await tenantIds(db, ['stalled-at-stop'])).toEqual([]);
    } finally {
      await db.close();
    }
  });
});
