import type * as grpc from '@grpc/grpc-js';
import { toBinary, type DescMessage, type MessageShape } from '@floe/proto';
import { remainingMs, resetServerCall } from '@floe/flight';
import type { Logger } from '@floe/telemetry';
import { callError } from './call-error.ts';
import type { HeldResults } from './held-results.ts';

/** An answer and the tenant it was computed for (whose share of the held results it is charged to). */
export interface TenantAnswer<T> {
  tenant: string;
  answer: T;
}

/**
 * A unary gRPC method whose answer comes already encoded (serveHeld): grpc-js frames the bytes as
 * they are instead of encoding the message a second time.
 */
export function encodedAnswers(definition: grpc.ServiceDefinition, methods: readonly string[]): grpc.ServiceDefinition {
  // A view of the bytes, not a copy (grpc-js copies them into its frame).
  const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = { ...definition };
  for (const name of methods) {
    const method = definition[name];
    if (!method) throw new Error(`no method ${name} to answer encoded`);
    out[name] = { ...method, responseSerialize: asBuffer as (value: unknown) => Buffer };
  }
  return out;
}

/**
 * Serves a unary answer charged to the held results (querier.max_held_result_mb), as a DoGet's
 * result is: once encoded, grpc-js hands the whole answer to HTTP/2, which keeps it until the client
 * has taken it, long after the query's slot is free; a stalled reader of a big trace would hold it
 * uncounted. The encoded bytes are charged to the answer's tenant (refused with RESOURCE_EXHAUSTED
 * when they do not fit) and released when the call ends: the answer sent (grpc-js reports every
 * call's end as 'cancelled', after its trailers went out), or the client gone (cancelled, its
 * deadline passed, its connection closed), and at most `timeoutMs` (querier.query_timeout) or the
 * client's deadline, if sooner, after it was ready: a client that stops reading is cut off then
 * (CANCELLED), as a DoGet's is. `answered` rejects with a callError already.
 */
export function serveHeld<Desc extends DescMessage>(
  o: { held: HeldResults; schema: Desc; timeoutMs: number; log: Logger; what: string },
  call: grpc.ServerUnaryCall<unknown, Uint8Array>,
  callback: grpc.sendUnaryData<Uint8Array>,
  answered: Promise<TenantAnswer<MessageShape<Desc>>>,
): void {
  answered.then(
    ({ tenant, answer }) => {
      let bytes: Uint8Array;
      let release: () => void;
      try {
        bytes = toBinary(o.schema, answer);
        release = o.held.charge(tenant, bytes.byteLength);
      } catch (err) {
        callback(callError(err, o.log, o.what));
        return;
      }
      // Already over (the client went away while it ran): nothing will be sent or held.
      if (call.cancelled) return release();
      const cutOff = setTimeout(() => resetServerCall(call), Math.min(remainingMs(call) ?? Infinity, o.timeoutMs));
      call.once('cancelled', () => {
        clearTimeout(cutOff);
        release();
      });
      callback(null, bytes);
    },
    (err: Error & { code: number; details: string }) => callback(err),
  );
}
