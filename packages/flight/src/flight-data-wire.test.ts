import { describe, expect, it } from 'vitest';
import { create, fromBinary, toBinary, FlightDataSchema, FlightDescriptor_DescriptorType } from '@floe/proto';
import { serializeFlightData } from './flight-data-wire.ts';

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

describe('FlightData written by hand', () => {
  // Sizes around the varint boundaries (127/128, 16383/16384) and a body of several megabytes.
  const cases: Array<[string, { dataHeader?: Uint8Array; appMetadata?: Uint8Array; dataBody?: Uint8Array }]> = [
    ['empty', {}],
    ['header only', { dataHeader: bytes(127, 1) }],
    ['header and body', { dataHeader: bytes(128, 2), dataBody: bytes(16383, 3) }],
    ['all three', { dataHeader: bytes(200, 4), appMetadata: bytes(5, 5), dataBody: bytes(16384, 6) }],
    ['large body', { dataHeader: bytes(300, 7), dataBody: bytes(5_000_003, 8) }],
    ['metadata only', { appMetadata: bytes(1, 9) }],
  ];
  it.each(cases)('%s: the same bytes as the protobuf encoder, and they decode back', (_name, init) => {
    const message = create(FlightDataSchema, init);
    const mine = serializeFlightData(message);
    expect(Buffer.compare(mine, Buffer.from(toBinary(FlightDataSchema, message)))).toBe(0);
    const back = fromBinary(FlightDataSchema, mine);
    expect(Buffer.from(back.dataHeader).equals(Buffer.from(message.dataHeader))).toBe(true);
    expect(Buffer.from(back.appMetadata).equals(Buffer.from(message.appMetadata))).toBe(true);
    expect(Buffer.from(back.dataBody).equals(Buffer.from(message.dataBody))).toBe(true);
  });

  it('a message with a descriptor goes through the protobuf encoder', () => {
    const message = create(FlightDataSchema, { flightDescriptor: { type: FlightDescriptor_DescriptorType.PATH, path: ['a'] }, dataBody: bytes(10, 1) });
    const back = fromBinary(FlightDataSchema, serializeFlightData(message));
    expect(back.flightDescriptor?.path).toEqual(['a']);
    expect([...back.dataBody]).toEqual([...message.dataBody]);
  });
});
