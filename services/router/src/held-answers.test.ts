import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { TenantContext } from '@floe/auth';
import { HeldBytes } from '@floe/limits';
import { heldAnswersPlugin } from './held-answers.ts';

const MB = 1024 * 1024;

/**
 * The plugin with a route whose answer is `/size/<MB>` MB of JSON text, for the tenant the
 * request names (the router's auth plugin sets req.tenant the same way, before the handler).
 */
async function appWith(held: HeldBytes): Promise<{ app: FastifyInstance; port: number }> {
  const app = Fastify();
  app.addHook('onRequest', async (req) => {
    req.tenant = { tenant: String(req.headers['x-tenant'] ?? 'a'), dataset: 'default' } as TenantContext;
  });
  await app.register(heldAnswersPlugin, { held });
  const ran: string[] = [];
  app.decorate('ran', ran);
  app.get<{ Params: { mb: string } }>('/size/:mb', async (req, reply) => {
    ran.push(req.tenant!.tenant);
    return reply.type('application/json').send(`"${'x'.repeat(Number(req.params.mb) * MB)}"`);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, port: (app.server.address() as AddressInfo).port };
}

/** An HTTP/1.1 GET whose client reads nothing of the answer: its socket, to destroy. */
async function stalledGet(port: number, path: string, tenant: string): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((r) => socket.once('connect', () => r()));
  socket.pause();
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-Tenant: ${tenant}\r\n\r\n`);
  return socket;
}

const get = async (port: number, path: string, tenant: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { 'x-tenant': tenant } });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.text()).slice(0, 300) };
};

describe('held answers (router.max_held_answer_mb)', () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0)) await c();
  });

  it("charges an answer a stalled client has not read to its tenant: the tenant's next answers are refused, another tenant's are served, and closing the stalled client frees it", async () => {
    // 128 MB: 64 MB a tenant. 48 MB is more than the kernel's socket buffers take from a client that reads nothing.
    const held = new HeldBytes(128 * MB, { noun: 'answer', holder: 'router', setting: 'router.max_held_answer_mb' });
    const { app, port } = await appWith(held);
    cleanup.push(() => app.close());
    const stalled = await stalledGet(port, '/size/48', 'a');
    cleanup.push(() => stalled.destroy());
    for (let i = 0; i < 200 && held.held === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(held.heldByTenant()).toEqual({ a: 48 * MB + 2 });

    // Its next answer does not fit beside it: refused in its place (the query ran).
    expect(await get(port, '/size/20', 'a')).toEqual({
      status: 429,
      retryAfter: '1',
      body: JSON.stringify({ status: 'error', errorType: 'rate_limited', error: 'too many unread answers: an answer of 21 MB does not fit; tenant a already holds 49 MB of answers its clients have not read yet, and may hold at most 64 MB (half of router.max_held_answer_mb)' }),
    });
    // Another tenant has its own half.
    expect((await get(port, '/size/20', 'b')).status).toBe(200);
    // Alone more than half: never served (422).
    expect(await get(port, '/size/70', 'b')).toMatchObject({ status: 422, body: expect.stringContaining('answer too large to hold: 71 MB, and a tenant may hold at most 64 MB') });
    // A small answer of tenant a still fits.
    expect((await get(port, '/size/1', 'a')).status).toBe(200);

    stalled.destroy();
    for (let i = 0; i < 200 && held.held > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect([held.held, held.heldByTenant()]).toEqual([0, {}]);
    expect((await get(port, '/size/20', 'a')).status).toBe(200);
  });

  it('refuses a tenant holding its whole share before its query runs', async () => {
    const held = new HeldBytes(64 * MB, { noun: 'answer', holder: 'router', setting: 'router.max_held_answer_mb' });
    const { app, port } = await appWith(held);
    cleanup.push(() => app.close());
    const release = held.charge('a', 32 * MB);
    const ran = (app as unknown as { ran: string[] }).ran;
    expect(await get(port, '/size/1', 'a')).toMatchObject({ status: 429, retryAfter: '1', body: expect.stringContaining('tenant a already holds 32 MB of answers') });
    expect(ran).toEqual([]);
    release();
    expect((await get(port, '/size/1', 'a')).status).toBe(200);
    expect(ran).toEqual(['a']);
  });
});
