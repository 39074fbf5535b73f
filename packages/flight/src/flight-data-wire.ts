import { BinaryWriter, FlightDataSchema, WireType, toBinary, type FlightData } from '@floe/proto';

/**
 * FlightData on the wire, written by hand for the one message that carries result bodies. The
 * generic protobuf encoder copies a body twice (into its growing buffer, then out of it in
 * finish()), which for a PromQL day of points is hundreds of megabytes; this serializer copies
 * each field once, into the message it returns. That is not the only copy on the way out: the
 * Arrow IPC writer has already concatenated the batch's buffers into the body
 * (ipc-messages.ts), and grpc-js copies the whole message once more into its length-prefixed
 * frame (serializeMessage in its server-interceptors). Field numbers are Flight.proto's:
 * data_header = 2, app_metadata = 3, data_body = 1000, all length-delimited; empty fields are
 * left out, as proto3 does. A message with a flight_descriptor (field 1, never sent in DoGet
 * responses) goes through the generic encoder.
 */
export function serializeFlightData(message: FlightData): Buffer {
  if (message.flightDescriptor !== undefined) {
    const bytes = toBinary(FlightDataSchema, message);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  const fields: Array<[number, Uint8Array]> = [
    [2, message.dataHeader],
    [3, message.appMetadata],
    [1000, message.dataBody],
  ];
  // Only the tags and lengths go through BinaryWriter; the bytes themselves are copied below.
  const parts: Array<[Uint8Array, Uint8Array]> = [];
  let size = 0;
  for (const [field, bytes] of fields) {
    if (bytes.byteLength === 0) continue;
    const prefix = new BinaryWriter().tag(field, WireType.LengthDelimited).uint32(bytes.byteLength).finish();
    parts.push([prefix, bytes]);
    size += prefix.byteLength + bytes.byteLength;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const [prefix, bytes] of parts) {
    out.set(prefix, at);
    at += prefix.byteLength;
    out.set(bytes, at);
    at += bytes.byteLength;
  }
  return out;
}
