import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { toHttp } from '@floe/errors';
import { asFloeError } from '@floe/runtime';

/** The router's errors go through asFloeError (@floe/runtime): an answer's serialization failing past V8's longest string included. */
describe('asFloeError', () => {
  it('an answer too large to serialize is 422 naming the remedy, not a 500', async () => {
    const app = Fastify();
    app.setErrorHandler((err, _req, reply) => {
      const out = toHttp(asFloeError(err));
      void reply.code(out.status).type('application/json').send(out.body);
    });
    // What JSON.stringify throws past V8's longest string, without building one.
    app.get('/huge', async () => ({ toJSON: () => { throw new RangeError('Invalid string length'); } }));
    app.get('/bug', async () => ({ toJSON: () => { throw new RangeError('Maximum call stack size exceeded'); } }));
    const huge = await app.inject({ url: '/huge' });
    expect([huge.statusCode, huge.json()]).toEqual([422, { status: 'error', errorType: 'execution', error: 'the answer is too large to send (its JSON would pass 512 MiB); narrow the query or lower its limit' }]);
    // Other range errors stay what they are: Floe's own fault.
    expect((await app.inject({ url: '/bug' })).statusCode).toBe(500);
    await app.close();
  });
});
