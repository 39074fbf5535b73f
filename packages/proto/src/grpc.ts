import { fromBinary, toBinary } from '@bufbuild/protobuf';
import type { DescMessage, DescMethod, DescService, MessageShape } from '@bufbuild/protobuf';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';

// Wraps the encoder output without copying: grpc-js wants a Buffer, protobuf-es returns a
// Uint8Array over a buffer that nothing else holds.
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function codec<Desc extends DescMessage>(schema: Desc) {
  return {
    serialize: (value: MessageShape<Desc>): Buffer => asBuffer(toBinary(schema, value)),
    deserialize: (bytes: Buffer): MessageShape<Desc> => fromBinary(schema, bytes),
  };
}

function methodDefinition(service: DescService, method: DescMethod): MethodDefinition<unknown, unknown> {
  const request = codec(method.input);
  const response = codec(method.output);
  const kind = method.methodKind;
  return {
    path: `/${service.typeName}/${method.name}`,
    // Implementations and generic clients may use either `Export` or `export`, as with
    // @grpc/proto-loader.
    originalName: method.localName,
    requestStream: kind === 'client_streaming' || kind === 'bidi_streaming',
    responseStream: kind === 'server_streaming' || kind === 'bidi_streaming',
    requestSerialize: request.serialize as (value: unknown) => Buffer,
    requestDeserialize: request.deserialize,
    responseSerialize: response.serialize as (value: unknown) => Buffer,
    responseDeserialize: response.deserialize,
  };
}

/**
 * grpc-js service definition for a protobuf-es service descriptor, keyed by the proto method
 * name. Messages cross the wire as protobuf-es message objects.
 */
export function grpcServiceDefinition(service: DescService): ServiceDefinition {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    definition[method.name] = methodDefinition(service, method);
  }
  return definition;
}
