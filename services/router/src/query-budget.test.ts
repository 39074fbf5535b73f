import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { watchCallerGone } from './auth-plugin.ts';
import { queryBudgetPlugin, type QueryBudget } from './query-budget.ts';

describe('queryBudgetPlugin', () => {
  /** A query scope whose authentication waits for `authenticated`, as a key lookup would. */
  const scope = async (budget: QueryBudget | undefined, authenticated: Promise<void> = Promise.resolve()) => {
    const app = Fastify();
    const ran: string[] = [];
    // Whichever comes first: the query ran, or the request failed.
    let settle!: (outcome: unknown) => void;
    const outcome = new Promise<unknown>((r) => (settle = r));
    app.addHook('onError', async (_req, _reply, err) => settle(err));
    app.addHook('onRequest', async (req, reply) => watchCallerGone(req, reply));
    let received!: () => void;
    const arrived = new Promise<void>((r) => (received = r));
    app.addHook('onRequest', async (req: FastifyRequest) => {
      received();
      await authenticated;
      (req as { tenant?: unknown }).tenant = { tenant: 'acme' };
    });
    await app.register(queryBudgetPlugin, { budget });
    app.get('/q', async () => {
      ran.push('query');
      settle('ran');
      return 'ran';
    });
    return { app, ran, outcome, arrived };
  };

  it('charges the tenant and runs the query of a client still there, budget or not', async () => {
    const charged: string[] = [];
    for (const budget of [undefined, { take: async (t: string) => void charged.push(t) }]) {
      const { app, ran } = await scope(budget);
      const res = await app.inject({ method: 'GET', url: '/q' });
      expect([res.statusCode, res.body, ran]).toEqual([200, 'ran', ['query']]);
    }
    expect(charged).toEqual(['acme']);
  });

  it('starts no query and spends no budget for a client that left while it was authenticated', async () => {
    const charged: string[] = [];
    let authenticate!: () => void;
    const { app, ran, outcome, arrived } = await scope({ take: async (t) => void charged.push(t) }, new Promise<void>((r) => (authenticate = r)));
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const serverSaw = new Promise<void>((r) => app.server.once('connection', (s) => s.once('close', () => r())));
      const socket = connect((app.server.address() as AddressInfo).port, '127.0.0.1');
      socket.write('GET /q HTTP/1.1\r\nHost: x\r\n\r\n');
      // The server has the request before the client goes.
      await arrived;
      socket.destroy();
      await serverSaw;
      authenticate();
      expect(await outcome).toMatchObject({ kind: 'canceled' });
      expect(ran).toEqual([]);
      expect(charged).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
