import * as grpc from '@grpc/grpc-js';

/**
 * What a request message that does not decode becomes. grpc-js answers a request its deserializer
 * throws on with INTERNAL, a server fault, though the bytes are the client's: with this stand-in
 * the call reaches its handler, which answers INVALID_ARGUMENT.
 */
const UNDECODABLE = Object.freeze({ undecodable: true });

export const isUndecodable = (message: unknown): boolean => message === UNDECODABLE;

/** The status a request that does not decode is answered with. */
export function undecodableStatus(path: string): grpc.StatusObject {
  return { code: grpc.status.INVALID_ARGUMENT, details: `the ${path.replace(/^\/.*\//, '')} request is not a valid protobuf message`, metadata: new grpc.Metadata() };
}

type Handler = (call: { request?: unknown; emit(event: 'error', status: grpc.StatusObject): boolean }, callback?: (err: grpc.StatusObject) => void) => void;

/**
 * A service whose single-request methods (unary and server streaming) answer INVALID_ARGUMENT
 * for a request that does not decode, before their implementation sees it. Request-streaming
 * methods keep grpc-js's own decoding unless named in `streamsCheckedByHandler`, whose handlers
 * test each message with isUndecodable themselves.
 */
export function guardRequestDecoding(
  definition: grpc.ServiceDefinition,
  implementation: grpc.UntypedServiceImplementation,
  streamsCheckedByHandler: readonly string[] = [],
): { definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation } {
  const guardedDefinition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  const guarded: grpc.UntypedServiceImplementation = { ...implementation };
  for (const [name, method] of Object.entries(definition) as Array<[string, grpc.MethodDefinition<unknown, unknown>]>) {
    if (method.requestStream && !streamsCheckedByHandler.includes(name)) {
      guardedDefinition[name] = method;
      continue;
    }
    const decode = method.requestDeserialize;
    guardedDefinition[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return decode(bytes);
        } catch {
          return UNDECODABLE;
        }
      },
    };
    const handler = implementation[name] as Handler | undefined;
    if (typeof handler !== 'function' || method.requestStream) continue;
    guarded[name] = ((call, callback) => {
      if (!isUndecodable(call.request)) return handler(call, callback);
      const status = undecodableStatus(method.path);
      if (method.responseStream) call.emit('error', status);
      else callback?.(status);
    }) as Handler as grpc.UntypedHandleCall;
  }
  return { definition: guardedDefinition as grpc.ServiceDefinition, implementation: guarded };
}
