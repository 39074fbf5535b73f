import type * as grpc from '@grpc/grpc-js';

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
