import { toGrpc } from '@floe/errors';
import { querierCallError } from '@floe/flight';
import type { Logger } from '@floe/telemetry';

/**
 * A failed querier call as every caller sees it: a FloeError keeps its kind (gRPC code and
 * message), anything else is INTERNAL with a fixed text and is logged as `what`. The error
 * carries the status as the Flight server answers it (`grpcCode`) and as a gRPC client reads it
 * (`code`, `details`, `metadata`: the in-process router, the Tempo service's callback); the
 * metadata names the error's kind, which the router answers with.
 */
export function callError(err: unknown, log: Logger, what: string): ReturnType<typeof querierCallError> & { grpcCode: number } {
  const g = toGrpc(err);
  if (g.unexpected) log.error({ err }, what);
  return Object.assign(querierCallError(g.code, g.details, g.metadata), { grpcCode: g.code });
}
