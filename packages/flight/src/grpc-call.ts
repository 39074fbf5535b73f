import { constants as http2 } from 'node:http2';
import * as grpc from '@grpc/grpc-js';

/** gRPC metadata holding these entries (names as given: gRPC wants them in lower case). */
export function toMetadata(values: Readonly<Record<string, string>> | undefined): grpc.Metadata {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(values ?? {})) metadata.set(key, value);
  return metadata;
}

/** A gRPC metadata value by name, as the string the auth helpers read. */
export const metadataGetter = (md: grpc.Metadata) => (name: string) => {
  const v = md.get(name)[0];
  return v === undefined ? undefined : typeof v === 'string' ? v : v.toString();
};

/** Milliseconds until the caller's deadline, or undefined when it set none. */
export function remainingMs(call: { getDeadline(): grpc.Deadline }): number | undefined {
  const deadline = call.getDeadline();
  return deadline instanceof Date ? deadline.getTime() - Date.now() : Number.isFinite(deadline) ? Number(deadline) - Date.now() : undefined;
}

/** Aborts when the call ends before its answer is sent: the client cancelled it, went away or let its deadline pass. */
export function callSignal(call: { readonly cancelled: boolean; once(event: 'cancelled', listener: () => void): unknown }): AbortSignal {
  const controller = new AbortController();
  if (call.cancelled) controller.abort();
  else call.once('cancelled', () => controller.abort());
  return controller.signal;
}

/**
 * Ends a server call at once with an HTTP/2 RST_STREAM of `code` (CANCEL: the client sees
 * CANCELLED; INTERNAL_ERROR: INTERNAL).
 * grpc-js has no call for it, and its status goes out only after every message written before it,
 * which a client that stopped reading never takes. Its HTTP/2 stream is reached through grpc-js
 * internals (the call's `call`, its interceptors' `nextCall`, the base call's `stream`: grpc-js
 * 1.10 to 1.14); failing that, a streaming call's own buffers are dropped. False when the stream was not found.
 */
export function resetServerCall(call: object, code: number = http2.NGHTTP2_CANCEL): boolean {
  let at: unknown = (call as { call?: unknown }).call;
  for (let depth = 0; at !== null && typeof at === 'object' && depth < 32; depth++) {
    const stream = (at as { stream?: { close?: unknown; closed?: unknown } }).stream;
    if (stream && typeof stream.close === 'function' && typeof stream.closed === 'boolean') {
      if (!stream.closed) (stream.close as (code: number) => void)(code);
      return true;
    }
    at = (at as { nextCall?: unknown }).nextCall;
  }
  // A streaming call's own buffers; a unary call has none to drop.
  (call as { destroy?: () => unknown }).destroy?.();
  return false;
}
