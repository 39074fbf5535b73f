import fp from 'fastify-plugin';
import { toHttp } from '@floe/errors';
import { HeldBytes } from '@floe/limits';
import { observeBytesAndLimit, type SelfTelemetry } from '@floe/telemetry';

/** The router's held answers from router.max_held_answer_mb, with their gauges. */
export function heldAnswersFromConfig(maxMb: number, telemetry?: SelfTelemetry): HeldBytes {
  const held = new HeldBytes(maxMb * 1024 * 1024, { noun: 'answer', holder: 'router', setting: 'router.max_held_answer_mb' });
  if (telemetry) {
    observeBytesAndLimit(telemetry.meter, { bytes: 'query_answers_held_bytes', limit: 'query_answers_held_max_bytes' }, {
      description: 'Bytes of query answers this router holds until their clients have read them',
      setting: 'router.max_held_answer_mb',
      read: () => ({ bytes: held.held, max: held.maxBytes }),
    });
  }
  return held;
}

/**
 * Charges every query answer of the scope to its tenant's share of the router's held answers
 * (router.max_held_answer_mb) from the moment it is serialized until its client has it (or is
 * cut off by router.send_timeout): the querier bounds the results it holds, but once a result is
 * the router's (in `floe all`, handed over in the process) its JSON or protobuf waited for a slow
 * or stalled reader uncounted, and one tenant's stalled clients, each within its rate limit,
 * could hold the process's memory. A tenant holding its share is refused before its query runs
 * (429, Retry-After); an answer that does not fit is refused in its place (429, or 422 when it
 * alone is more than half). Sizes are the serialized body's length (one byte a character of
 * JSON); a streamed body is not counted.
 */
export const heldAnswersPlugin = fp<{ held: HeldBytes | undefined }>(async (app, opts) => {
  const held = opts.held;
  if (!held) return;
  app.addHook('preHandler', async (req) => {
    if (req.tenant) held.admit(req.tenant.tenant);
  });
  app.addHook('onSend', async (req, reply, payload) => {
    const tenant = req.tenant?.tenant;
    const size = typeof payload === 'string' || Buffer.isBuffer(payload) ? payload.length : 0;
    if (tenant === undefined || size === 0) return payload;
    try {
      reply.raw.once('close', held.charge(tenant, size));
      return payload;
    } catch (err) {
      const out = toHttp(err);
      void reply.code(out.status).headers(out.headers).type('application/json');
      return JSON.stringify(out.body);
    }
  });
});
