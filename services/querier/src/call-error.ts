import { toGrpc } from '@floe/errors';
import { querierCallError } from '@floe/flight';
import type { Logger } from '@floe/telemetry';

/**
 * A failed querier call as every caller sees it: a FloeError keeps its kind (gRPC code and
 * message), anything else is INTERNAL with a fixed text and is logged as `what`. The error
 * carries the status as the Flight server answers it (`grpcCode`) and as a gRPC client reads it
 * (`code`, `details`: the in-process router, the Tempo service's callback).
 */
export function callError(err: unknown, log: Logger, what: string): Error & { grpcCode: number; code: number; details: string } {
  const g = toGrpc(err);
  if (g.unexpected) log.error({ err }, what);
  return Object.assign(querierCallError(g.code, g.details), { grpcCode: g.code });
}
