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
