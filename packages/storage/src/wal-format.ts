// WAL segment format, version 1. A segment is one object holding the records of one group commit.
// All integers are unsigned 32-bit little-endian unless noted.
//
//   offset 0   magic        4 bytes  ASCII "FWAL" (46 57 41 4C)
//   offset 4   version      u16      1
//   offset 6   flags        u16      0 (reserved; readers reject anything else)
//   offset 8   count        u32      number of records that follow, or 0xFFFFFFFF (OPEN_ENDED_COUNT)
//                                    in a segment written by appends: its records run to the end
//   offset 12  records, each:
//                headerLen  u32
//                header     headerLen bytes: UTF-8 JSON of WalRecordHeader
//                               {"tenant","dataset","table","hour","rows","id"}
//                payloadLen u32
//                payload    payloadLen bytes, opaque to the WAL
//                crc        u32      CRC-32 (zlib/IEEE polynomial) of header bytes then payload bytes
//   end of object: nothing may follow the last record.
//
// The count in the segment header makes truncation at a record boundary detectable; the per-record
// CRC catches bit rot and torn writes inside a record. An open-ended segment (the fs WAL's appended
// files) cannot count its records ahead; it is published only after every append to it was made
// durable, or after recovery cut it back to its longest valid prefix (segmentPrefixLength), so a
// reader still sees whole records only. The payload is opaque: the acceptor decides
// what rows look like, the writer decodes them.

import { crc32 } from 'node:zlib';
import type { RowTemplate } from './column-batch.ts';
import { WalCorruptionError } from './errors.ts';

export interface WalRecordHeader {
  tenant: string;
  dataset: string;
  table: string;
  /** Hours since the Unix epoch of the rows' timestamps (the Iceberg hour partition). */
  hour: number;
  rows: number;
  /** Unique record id chosen by the appender (see newRecordId). */
  id: string;
}

export interface WalRecord {
  header: WalRecordHeader;
  payload: Uint8Array;
  /**
   * A batch of series references (column-batch.ts, "FCB3"): the templates its references number
   * from 0. The appender defines them in the record's segment and renumbers the references.
   */
  series?: readonly RowTemplate[];
}

export const WAL_MAGIC = Uint8Array.of(0x46, 0x57, 0x41, 0x4c);
export const WAL_VERSION = 1;
export const SEGMENT_HEADER_BYTES = 12;
/** The count of a segment whose records run to its end (written by appends). */
export const OPEN_ENDED_COUNT = 0xffffffff;
const MAX_HEADER_BYTES = 64 * 1024;
const MAX_NAME_LENGTH = 256;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** Throws a TypeError naming the first invalid field; returns a header with only the known fields. */
export function validateRecordHeader(value: unknown): WalRecordHeader {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError('WAL record header must be an object');
  }
  const h = value as Record<string, unknown>;
  for (const field of ['tenant', 'dataset', 'table', 'id'] as const) {
    const v = h[field];
    if (typeof v !== 'string' || v.length === 0 || v.length > MAX_NAME_LENGTH) {
      throw new TypeError(`WAL record header: ${field} must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
    }
  }
  for (const field of ['hour', 'rows'] as const) {
    const v = h[field];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      throw new TypeError(`WAL record header: ${field} must be a non-negative integer`);
    }
  }
  return {
    tenant: h.tenant as string,
    dataset: h.dataset as string,
    table: h.table as string,
    hour: h.hour as number,
    rows: h.rows as number,
    id: h.id as string,
  };
}

/**
 * One record's frame as three parts: header length, header and payload length; the payload itself
 * (not copied: the caller must not change it until the segment is written); the CRC.
 */
export function frameRecord(record: WalRecord): Uint8Array[] {
  const frame = unsealedFrame(record);
  refreshCrc(frame);
  return frame;
}

/** frameRecord's parts with the CRC not yet made (refreshCrc): for a payload the appender still changes in place. */
export function unsealedFrame(record: WalRecord): Uint8Array[] {
  const header = validateRecordHeader(record.header);
  if (!(record.payload instanceof Uint8Array)) throw new TypeError('WAL record payload must be a Uint8Array');
  const headerBytes = encoder.encode(JSON.stringify(header));
  const payload = record.payload;
  const head = new Uint8Array(4 + headerBytes.byteLength + 4);
  const view = new DataView(head.buffer);
  view.setUint32(0, headerBytes.byteLength, true);
  head.set(headerBytes, 4);
  view.setUint32(4 + headerBytes.byteLength, payload.byteLength, true);
  return [head, payload, new Uint8Array(4)];
}

/** Sets a frame's CRC (frameRecord), from its header and its payload as they are now. */
export function refreshCrc(frame: Uint8Array[]): void {
  const [head, payload, crc] = frame as [Uint8Array, Uint8Array, Uint8Array];
  const headerBytes = head.subarray(4, head.length - 4);
  new DataView(crc.buffer, crc.byteOffset, 4).setUint32(0, crc32(payload, crc32(headerBytes)), true);
}

/** The segment header of a segment of `count` records (OPEN_ENDED_COUNT: as many as follow). */
export function segmentHeader(count: number): Uint8Array {
  const out = new Uint8Array(SEGMENT_HEADER_BYTES);
  const view = new DataView(out.buffer);
  out.set(WAL_MAGIC, 0);
  view.setUint16(4, WAL_VERSION, true);
  view.setUint16(6, 0, true);
  view.setUint32(8, count, true);
  return out;
}

/**
 * Parses and verifies a segment. Payloads are views into `bytes` (no copy). Throws
 * WalCorruptionError, naming `segment` and the byte offset, on any framing, CRC or length problem.
 */
export function decodeSegment(bytes: Uint8Array, segment: string): WalRecord[] {
  const fail = (offset: number, reason: string): never => {
    throw new WalCorruptionError(segment, offset, reason);
  };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bad = headerFault(bytes, view);
  if (bad) fail(bad.at, bad.fault);
  const count = view.getUint32(8, true);
  const openEnded = count === OPEN_ENDED_COUNT;
  const of = openEnded ? 'an open-ended segment' : String(count);

  const records: WalRecord[] = [];
  let o = SEGMENT_HEADER_BYTES;
  for (let index = 0; openEnded ? o < bytes.byteLength : index < count; index++) {
    const f = frameAt(bytes, view, o);
    if ('fault' in f) return fail(f.at, f.truncated ? `truncated in record ${index} of ${of}: ${f.fault}` : `record ${index}: ${f.fault}`);
    const { headerBytes, payload, end } = f;
    let header: WalRecordHeader;
    try {
      header = validateRecordHeader(JSON.parse(decoder.decode(headerBytes)));
    } catch (err) {
      return fail(o, `record ${index}: invalid header (${err instanceof Error ? err.message : String(err)})`);
    }
    records.push({ header, payload });
    o = end;
  }
  if (o !== bytes.byteLength) fail(o, `${bytes.byteLength - o} unexpected bytes after the last of ${count} records`);
  return records;
}

/**
 * The byte length of the longest prefix of an open-ended segment that holds only whole, verified
 * records (0 when even its header is not one): what recovery keeps of an appended file whose
 * writer died, possibly in the middle of an append.
 */
export function segmentPrefixLength(bytes: Uint8Array): { bytes: number; records: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (headerFault(bytes, view) || view.getUint32(8, true) !== OPEN_ENDED_COUNT) return { bytes: 0, records: 0 };
  let o = SEGMENT_HEADER_BYTES;
  let records = 0;
  for (;;) {
    const f = frameAt(bytes, view, o);
    if ('fault' in f) return { bytes: o, records };
    o = f.end;
    records++;
  }
}

/** Why `bytes` does not start with a segment header this reader knows (its magic, version, flags), or undefined. */
function headerFault(bytes: Uint8Array, view: DataView): { fault: string; at: number } | undefined {
  if (bytes.byteLength < SEGMENT_HEADER_BYTES) {
    return { fault: `truncated: ${bytes.byteLength} bytes is shorter than the ${SEGMENT_HEADER_BYTES}-byte segment header`, at: 0 };
  }
  for (let i = 0; i < WAL_MAGIC.length; i++) if (bytes[i] !== WAL_MAGIC[i]) return { fault: 'bad magic (not a Floe WAL segment)', at: 0 };
  const version = view.getUint16(4, true);
  if (version !== WAL_VERSION) return { fault: `unsupported format version ${version} (this reader knows ${WAL_VERSION})`, at: 4 };
  const flags = view.getUint16(6, true);
  if (flags !== 0) return { fault: `unknown flags 0x${flags.toString(16)}`, at: 6 };
  return undefined;
}

interface Frame {
  headerBytes: Uint8Array;
  payload: Uint8Array;
  /** Offset just after the frame's CRC. */
  end: number;
}

/** Why the bytes at an offset are no whole, verified frame; `truncated` when they stop short. */
interface FrameFault {
  fault: string;
  at: number;
  truncated: boolean;
}

/** The record frame at `o` (views into `bytes`), its CRC verified, or why it is not one. */
function frameAt(bytes: Uint8Array, view: DataView, o: number): Frame | FrameFault {
  const start = o;
  const short = (n: number, what: string): FrameFault | undefined =>
    o + n > bytes.byteLength ? { fault: `${what} needs ${n} bytes, ${bytes.byteLength - o} left`, at: o, truncated: true } : undefined;
  let cut = short(4, 'header length');
  if (cut) return cut;
  const headerLen = view.getUint32(o, true);
  if (headerLen > MAX_HEADER_BYTES) return { fault: `header length ${headerLen} exceeds ${MAX_HEADER_BYTES}`, at: o, truncated: false };
  o += 4;
  if ((cut = short(headerLen, 'header'))) return cut;
  const headerBytes = bytes.subarray(o, o + headerLen);
  o += headerLen;
  if ((cut = short(4, 'payload length'))) return cut;
  const payloadLen = view.getUint32(o, true);
  o += 4;
  if ((cut = short(payloadLen, 'payload'))) return cut;
  const payload = bytes.subarray(o, o + payloadLen);
  o += payloadLen;
  if ((cut = short(4, 'crc'))) return cut;
  const stored = view.getUint32(o, true);
  const computed = crc32(payload, crc32(headerBytes));
  if (stored !== computed) return { fault: `CRC mismatch (stored 0x${hex(stored)}, computed 0x${hex(computed)})`, at: start, truncated: false };
  return { headerBytes, payload, end: o + 4 };
}

function hex(n: number): string {
  return n.toString(16).padStart(8, '0');
}
