import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { WalCorruptionError } from './errors.ts';
import { decodeSegment, frameRecord, segmentHeader } from './wal-format.ts';
import type { WalRecord } from './wal-format.ts';

const enc = (s: string) => new TextEncoder().encode(s);

function record(id: string, payload: Uint8Array, extra: Partial<WalRecord['header']> = {}): WalRecord {
  return { header: { tenant: 'acme', dataset: 'default', table: 'logs', hour: 480_000, rows: 3, id, ...extra }, payload };
}

/** Parts in one array of its own (offset 0, not a pooled Buffer's slice). */
const concat = (parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));
/** A whole segment, as the appender writes it in parts, in one array. */
const segmentOfFrames = (frames: Uint8Array[]): Uint8Array => concat([segmentHeader(frames.length), ...frames]);
const segmentOf = (records: WalRecord[]): Uint8Array => segmentOfFrames(records.map((r) => concat(frameRecord(r))));

describe('WAL segment format', () => {
  const records = [
    record('r1', enc('first payload')),
    record('r2', new Uint8Array(0), { tenant: 't\u00e9nant-\u{1F600}', rows: 0 }),
    record('r3', Uint8Array.from({ length: 100_000 }, (_, i) => i % 251), { table: 'traces', hour: 0 }),
  ];

  it('round-trips headers and payloads byte for byte', () => {
    const decoded = decodeSegment(segmentOf(records), 'wal/x.wal');
    expect(decoded.map((r) => r.header)).toEqual(records.map((r) => r.header));
    decoded.forEach((r, i) => expect(r.payload).toEqual(records[i]!.payload));
  });

  it('lays out magic, version, flags, count, then framed records with a CRC of header+payload', () => {
    const bytes = segmentOf([record('only', enc('abc'))]);
    const view = new DataView(bytes.buffer);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('FWAL');
    expect(view.getUint16(4, true)).toBe(1);
    expect(view.getUint16(6, true)).toBe(0);
    expect(view.getUint32(8, true)).toBe(1);
    const headerLen = view.getUint32(12, true);
    const header = bytes.subarray(16, 16 + headerLen);
    expect(JSON.parse(new TextDecoder().decode(header))).toEqual(record('only', enc('abc')).header);
    const payloadLen = view.getUint32(16 + headerLen, true);
    expect(payloadLen).toBe(3);
    const payload = bytes.subarray(20 + headerLen, 23 + headerLen);
    expect(new TextDecoder().decode(payload)).toBe('abc');
    expect(view.getUint32(23 + headerLen, true)).toBe(crc32(payload, crc32(header)));
    expect(bytes.byteLength).toBe(27 + headerLen);
  });

  it('accepts an empty segment', () => {
    expect(decodeSegment(segmentOfFrames([]), 'empty')).toEqual([]);
  });

  it('detects truncation at every possible length', () => {
    const bytes = segmentOf(records.slice(0, 2));
    for (let len = 0; len < bytes.byteLength; len++) {
      expect(() => decodeSegment(bytes.subarray(0, len), 'wal/cut.wal'), `cut at ${len}`).toThrow(WalCorruptionError);
    }
  });

  const corruptions: Array<[string, (b: Uint8Array) => Uint8Array, RegExp]> = [
    ['a flipped payload bit', (b) => { b[b.byteLength - 6]! ^= 0x01; return b; }, /record 0: CRC mismatch/],
    ['a flipped header byte', (b) => { b[20]! ^= 0x20; return b; }, /record 0: CRC mismatch/],
    ['a flipped CRC byte', (b) => { b[b.byteLength - 1]! ^= 0xff; return b; }, /CRC mismatch/],
    ['bad magic', (b) => { b[0] = 0x00; return b; }, /bad magic/],
    ['an unknown version', (b) => { b[4] = 2; return b; }, /unsupported format version 2/],
    ['unknown flags', (b) => { b[6] = 1; return b; }, /unknown flags/],
    ['a count larger than the records', (b) => { b[8] = 2; return b; }, /truncated in record 1 of 2/],
    ['trailing garbage', (b) => Uint8Array.of(...b, 1, 2, 3), /3 unexpected bytes after the last of 1 records/],
    ['an absurd header length', (b) => { b[15] = 0x7f; return b; }, /header length \d+ exceeds/],
  ];
  it.each(corruptions)('rejects %s with a clear error naming the segment', (_, corrupt, message) => {
    const bytes = corrupt(segmentOf([record('r', enc('payload bytes'))]));
    expect(() => decodeSegment(bytes, 'wal/bad.wal')).toThrow(WalCorruptionError);
    expect(() => decodeSegment(bytes, 'wal/bad.wal')).toThrow(message);
    expect(() => decodeSegment(bytes, 'wal/bad.wal')).toThrow(/^corrupt WAL segment wal\/bad\.wal at byte \d+/);
  });

  it('rejects a record whose header JSON is valid but incomplete, even with a correct CRC', () => {
    const header = enc(JSON.stringify({ tenant: 'a', dataset: 'b', table: 'c', hour: 1, id: 'x' })); // no rows
    const payload = enc('p');
    const frame = new Uint8Array(4 + header.byteLength + 4 + payload.byteLength + 4);
    const view = new DataView(frame.buffer);
    view.setUint32(0, header.byteLength, true);
    frame.set(header, 4);
    view.setUint32(4 + header.byteLength, payload.byteLength, true);
    frame.set(payload, 8 + header.byteLength);
    view.setUint32(8 + header.byteLength + payload.byteLength, crc32(payload, crc32(header)), true);
    expect(() => decodeSegment(segmentOfFrames([frame]), 'w')).toThrow(/invalid header .*rows must be a non-negative integer/);
  });

  it.each([
    ['an empty tenant', { tenant: '' }, /tenant/],
    ['a fractional hour', { hour: 1.5 }, /hour/],
    ['negative rows', { rows: -1 }, /rows/],
    ['a missing id', { id: undefined }, /id/],
  ])('refuses to encode a header with %s', (_, patch, message) => {
    const bad = { header: { ...record('r', enc('x')).header, ...patch }, payload: enc('x') } as WalRecord;
    expect(() => frameRecord(bad)).toThrow(message);
  });

  it('writes only the known header fields', () => {
    const withExtra = { header: { ...record('r', enc('x')).header, secret: 'nope' }, payload: enc('x') } as WalRecord;
    const [decoded] = decodeSegment(segmentOf([withExtra]), 'w');
    expect(decoded!.header).toEqual(record('r', enc('x')).header);
  });
});
