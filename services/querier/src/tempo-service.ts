import type * as grpc from '@grpc/grpc-js';
import { FloeError } from '@floe/errors';
import { grpcServiceDefinition, Querier, type TempoTraceByIDRequest, type TempoTraceByIDResponse } from '@floe/proto';
import type { ExtraService } from '@floe/flight';
import type { Logger } from '@floe/telemetry';
import { metadataGetter, remainingMs } from './grpc-call.ts';
import type { QueryHandler } from './query-handler.ts';
import type { TraceLookup } from './trace-lookup.ts';
import { callError } from './call-error.ts';

export interface TempoServiceDeps {
  handler: QueryHandler;
  traces: TraceLookup;
  /** querier.query_timeout: the longest a lookup may run, whatever the caller's deadline. */
  timeoutMs: number;
  log: Logger;
}

const NS = /^\d{1,20}$/;

function boundNs(name: string, raw: string | undefined): bigint | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!NS.test(raw)) throw new FloeError('bad_data', `invalid ${name}: expected unix nanoseconds`);
  return BigInt(raw);
}

/** FindTraceByID's work: the caller's metadata (by name), the requested id, the caller's time left; rejects with a callError. */
export type TraceFinder = (get: (name: string) => string | undefined, id: Uint8Array, callerMs: number | undefined) => Promise<TempoTraceByIDResponse>;

export function traceByIdFinder(deps: TempoServiceDeps): TraceFinder {
  const find = async (get: (name: string) => string | undefined, id: Uint8Array, callerMs: number | undefined): Promise<TempoTraceByIDResponse> => {
    const ctx = await deps.handler.authenticate(get);
    if (id.length === 0 || id.length > 16) throw new FloeError('bad_data', 'invalid trace id: expected 1 to 16 bytes');
    const traceId = Buffer.from(id).toString('hex').padStart(32, '0');
    const startNs = boundNs('x-floe-start-ns', get('x-floe-start-ns'));
    const endNs = boundNs('x-floe-end-ns', get('x-floe-end-ns'));
    const timeoutMs = Math.max(1, Math.min(deps.timeoutMs, callerMs ?? Infinity));
    return deps.traces.find({ tenant: ctx.tenant, dataset: ctx.dataset, traceId, startNs, endNs, timeoutMs });
  };
  return (get, id, callerMs) =>
    find(get, id, callerMs).catch((err: unknown) => {
      throw callError(err, deps.log, 'FindTraceByID failed');
    });
}

/**
 * Tempo's Querier service on the querier's Flight port. FindTraceByID authenticates like every
 * Flight call (bearer key and tenant in the metadata) and reads the trace of the caller's tenant
 * and dataset only; `x-floe-start-ns` / `x-floe-end-ns` metadata bound the hours searched. The
 * other Querier methods answer UNIMPLEMENTED (grpc-js's default for a missing handler).
 */
export function tempoQuerierService(find: TraceFinder): ExtraService {
  return {
    definition: grpcServiceDefinition(Querier),
    implementation: {
      FindTraceByID: (call: grpc.ServerUnaryCall<TempoTraceByIDRequest, TempoTraceByIDResponse>, callback: grpc.sendUnaryData<TempoTraceByIDResponse>) => {
        find(metadataGetter(call.metadata), call.request.traceID, remainingMs(call)).then(
          (res) => callback(null, res),
          (err: Error & { code: number; details: string }) => callback(err),
        );
      },
    },
  };
}
