import { toBinary, FlightDataSchema, type FlightData } from '@floe/proto';

/**
 * FlightData on the wire, written by hand for the one message that carries result bodies: the
 * generic protobuf encoder copies a body twice (into its chunk list, then into the joined
 * output), which for a PromQL day of points is hundreds of megabytes; here each body is copied
 * once, into the message buffer grpc-js sends. Field numbers are Flight.proto's:
 * data_header = 2, app_metadata = 3, data_body = 1000, all length-delimited; empty fields are
 * left out, as proto3 does. A message with a flight_descriptor (field 1, never sent in DoGet
 * responses) goes through the generic encoder.
 */

const HEADER_TAG = [0x12];
const APP_METADATA_TAG = [0x1a];
/** (1000 << 3) | 2 = 8002 as a varint. */
const BODY_TAG = [0xc2, 0x3e];

const varintLength = (n: number): number => {
  let bytes = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    bytes++;
  }
  return bytes;
};

function writeVarint(out: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
  return at;
}

export function serializeFlightData(message: FlightData): Buffer {
  if (message.flightDescriptor !== undefined) {
    const bytes = toBinary(FlightDataSchema, message);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  const fields: Array<[number[], Uint8Array]> = [];
  if (message.dataHeader.byteLength > 0) fields.push([HEADER_TAG, message.dataHeader]);
  if (message.appMetadata.byteLength > 0) fields.push([APP_METADATA_TAG, message.appMetadata]);
  if (message.dataBody.byteLength > 0) fields.push([BODY_TAG, message.dataBody]);
  let size = 0;
  for (const [tag, bytes] of fields) size += tag.length + varintLength(bytes.byteLength) + bytes.byteLength;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const [tag, bytes] of fields) {
    for (const b of tag) out[at++] = b;
    at = writeVarint(out, at, bytes.byteLength);
    out.set(bytes, at);
    at += bytes.byteLength;
  }
  return out;
}
