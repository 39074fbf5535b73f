import { Metadata, status } from '@grpc/grpc-js';
import type { StatusObject } from '@grpc/grpc-js';

/** The `grpcCode` of an error thrown on purpose for the client to see, if it carries a valid one. */
export function deliberateGrpcCode(err: unknown): number | undefined {
  const code = (err as { grpcCode?: unknown } | null | undefined)?.grpcCode;
  return typeof code === 'number' && Number.isInteger(code) && code > status.OK && code <= status.UNAUTHENTICATED ? code : undefined;
}

/**
 * The status a handler error is answered with: its `grpcCode`, message and `metadata` (as
 * trailers) when it carries a code, otherwise INTERNAL with a fixed text, so that messages and
 * stacks of unexpected faults never reach the client.
 */
export function grpcStatusFromError(err: unknown): Pick<StatusObject, 'code' | 'details'> & { metadata?: Metadata } {
  const code = deliberateGrpcCode(err);
  if (code === undefined) return { code: status.INTERNAL, details: 'internal error' };
  const { message, metadata } = err as { message?: unknown; metadata?: unknown };
  const answer = { code, details: typeof message === 'string' ? message : '' };
  return metadata instanceof Metadata ? { ...answer, metadata } : answer;
}
