import { crc32 } from 'node:zlib';
import type { LeafType } from './column-batch.ts';
import { ThriftWriter } from './thrift-compact.ts';

/**
 * The Parquet format's numbers that Floe's own Parquet files use (parquet.thrift): physical
 * types, repetitions, converted types, encodings, codecs and the file's framing.
 */

export const PHYSICAL: Record<LeafType, number> = { boolean: 0, int: 1, long: 2, double: 5, string: 6 };

export const REQUIRED = 0;
export const OPTIONAL = 1;
export const REPEATED = 2;

/** ConvertedType. */
export const UTF8 = 0;
export const MAP = 1;
export const LIST = 3;
export const TIMESTAMP_MICROS = 10;
export const INT_32 = 17;
export const INT_64 = 18;

/** Encoding. */
export const PLAIN = 0;
export const RLE = 3;
export const RLE_DICTIONARY = 8;

/** CompressionCodec. */
export const UNCOMPRESSED = 0;
export const ZSTD = 6;

/** PageType. */
export const DATA_PAGE = 0;
export const DICTIONARY_PAGE = 2;

export const PAR1 = Uint8Array.of(0x50, 0x41, 0x52, 0x31);

/** The end of a Parquet file: the Thrift file metadata, its length and the magic. */
export function fileFooter(metadata: Uint8Array): Uint8Array {
  const footer = new Uint8Array(metadata.length + 8);
  footer.set(metadata, 0);
  new DataView(footer.buffer).setUint32(metadata.length, metadata.length, true);
  footer.set(PAR1, metadata.length + 4);
  return footer;
}

/** A node of a file's schema (SchemaElement). */
export interface SchemaElement {
  name: string;
  type?: LeafType;
  repetition?: number;
  children?: number;
  converted?: number;
  fieldId?: number;
  /** LogicalType TIMESTAMP(isAdjustedToUTC, MICROS): what DuckDB reads as TIMESTAMP WITH TIME ZONE. */
  timestampMicros?: boolean;
}

/** One SchemaElement's fields (inside the file metadata's schema list). */
export function writeSchemaElement(t: ThriftWriter, e: SchemaElement): void {
  if (e.type !== undefined) t.i32(1, PHYSICAL[e.type]);
  if (e.repetition !== undefined) t.i32(3, e.repetition);
  t.string(4, e.name);
  if (e.children !== undefined) t.i32(5, e.children);
  if (e.converted !== undefined) t.i32(6, e.converted);
  if (e.fieldId !== undefined) t.i32(9, e.fieldId);
  // LogicalType.TIMESTAMP { isAdjustedToUTC: true, unit: TimeUnit.MICROS {} }
  if (e.timestampMicros) t.beginStruct(10).beginStruct(8).bool(1, true).beginStruct(2).beginStruct(2).endStruct().endStruct().endStruct().endStruct();
}

/**
 * PageHeader.crc: the CRC-32 (zlib's polynomial) of a page's bytes as stored after its header
 * (compressed), as Thrift's signed i32 (parquet.thrift, PageHeader field 4). Lets a reader that
 * copies pages without decoding them (parquet-concat.ts) tell a damaged page from a good one.
 */
export const pageCrc = (page: Uint8Array): number => crc32(page) | 0;

/** PageHeader's first fields: type, sizes and, when given, the page's crc (pageCrc). */
function pageHeaderStart(type: number, uncompressedBytes: number, compressedBytes: number, crc: number | undefined): ThriftWriter {
  const t = new ThriftWriter().i32(1, type).i32(2, uncompressedBytes).i32(3, compressedBytes);
  return crc === undefined ? t : t.i32(4, crc);
}

/** The header of a v1 data page of values (PLAIN, or RLE_DICTIONARY indices) after RLE levels. */
export function dataPageHeader(levels: number, uncompressedBytes: number, compressedBytes: number, encoding = PLAIN, crc?: number): Uint8Array {
  return pageHeaderStart(DATA_PAGE, uncompressedBytes, compressedBytes, crc)
    .beginStruct(5)
    .i32(1, levels)
    .i32(2, encoding)
    .i32(3, RLE)
    .i32(4, RLE)
    .endStruct()
    .end();
}

/** The header of a dictionary page of `entries` PLAIN values. */
export function dictionaryPageHeader(entries: number, uncompressedBytes: number, compressedBytes: number, crc?: number): Uint8Array {
  return pageHeaderStart(DICTIONARY_PAGE, uncompressedBytes, compressedBytes, crc).beginStruct(7).i32(1, entries).i32(2, PLAIN).endStruct().end();
}

/** A column chunk of one data page: ColumnChunk.file_offset and its ColumnMetaData, statistics left open to the caller. */
export function writeColumnChunkStart(
  c: ThriftWriter,
  m: {
    type: LeafType;
    path: readonly string[];
    codec: number;
    levels: number;
    uncompressed: number;
    compressed: number;
    /** Where the chunk starts: its dictionary page when it has one, else its data page. */
    offset: number;
    /** Where its data page starts, after a dictionary page (absent: no dictionary). */
    dataOffset?: number;
  },
): ThriftWriter {
  c.i64(2, m.offset)
    .beginStruct(3)
    .i32(1, PHYSICAL[m.type])
    .listI32(2, m.dataOffset === undefined ? [PLAIN, RLE] : [PLAIN, RLE, RLE_DICTIONARY])
    .listString(3, m.path)
    .i32(4, m.codec)
    .i64(5, m.levels)
    .i64(6, m.uncompressed)
    .i64(7, m.compressed)
    .i64(9, m.dataOffset ?? m.offset);
  if (m.dataOffset !== undefined) c.i64(11, m.offset);
  return c;
}

/** Bits needed for values up to `max`. */
export const bitWidth = (max: number): number => 32 - Math.clz32(max);

/**
 * Values of `width` bits (levels, or dictionary indices up to 32 bits) in Parquet's
 * RLE/bit-packed hybrid: runs of 8 or more equal values as RLE runs (the value in whole bytes),
 * the rest in bit-packed groups of 8 (only the last group may be padded). Throws on a value above
 * `max` (a payload this reader cannot trust). The result is a view of what `alloc` gave (every
 * byte of it written: the buffer need not be zeroed).
 */
export function encodeLevelRuns(levels: Uint8Array | Uint32Array, n: number, width: number, max: number, alloc: (bytes: number) => Uint8Array = (b) => new Uint8Array(b)): Uint8Array {
  const valueBytes = (width + 7) >> 3;
  // Worst case per 8 values: a bit-packed group (`width` bytes) or an RLE run, plus a header.
  const out = alloc(Math.ceil(n / 8) * (Math.max(width, valueBytes + 1) + 5) + 16);
  let o = 0;
  /** Whether levels[p, p + 8) are all equal. */
  const run8 = (p: number) => {
    if (p + 8 > n) return false;
    const v = levels[p];
    for (let k = 1; k < 8; k++) if (levels[p + k] !== v) return false;
    return true;
  };
  let i = 0;
  while (i < n) {
    const v = levels[i]!;
    if (v > max) throw new TypeError(`column batch level ${v} above its maximum ${max}`);
    let j = i + 1;
    while (j < n && levels[j] === v) j++;
    if (j - i >= 8) {
      o = putRleRun(out, o, j - i, v, valueBytes);
      i = j;
      continue;
    }
    let stop = i + 8;
    while (stop < n && !run8(stop)) stop += 8;
    const groups = Math.ceil((Math.min(stop, n) - i) / 8);
    o = putVarint(out, o, groups * 2 + 1);
    // Levels (width ≤ 4) pack into one 32-bit int per group; wider values go through an
    // accumulator of under 8 pending bits and the value: a 32-bit int up to width 25, beyond
    // that a double that stays below 2^40.
    let acc = 0;
    let pending = 0;
    for (let g = 0; g < groups; g++) {
      let bits = 0;
      for (let k = 0; k < 8; k++) {
        const at = i + g * 8 + k;
        const x = at < n ? levels[at]! : 0;
        if (x > max) throw new TypeError(`column batch level ${x} above its maximum ${max}`);
        if (width <= 4) bits |= x << (k * width);
        else if (width <= 25) {
          acc = (acc | (x << pending)) >>> 0;
          pending += width;
          while (pending >= 8) {
            out[o++] = acc & 0xff;
            acc >>>= 8;
            pending -= 8;
          }
        } else {
          acc += x * 2 ** pending;
          pending += width;
          while (pending >= 8) {
            out[o++] = acc % 256;
            acc = Math.floor(acc / 256);
            pending -= 8;
          }
        }
      }
      if (width <= 4) for (let b = 0; b < width; b++) out[o++] = (bits >>> (8 * b)) & 0xff;
    }
    i = Math.min(stop, n);
  }
  return out.subarray(0, o);
}

/**
 * `n` equal values `v` of `width` bits as the RLE/bit-packed hybrid holds them: one RLE run (what
 * encodeLevelRuns makes of such values, without reading them).
 */
export function encodeRepeatedRun(n: number, v: number, width: number, alloc: (bytes: number) => Uint8Array = (b) => new Uint8Array(b)): Uint8Array {
  const valueBytes = (width + 7) >> 3;
  const out = alloc(10 + valueBytes);
  return n === 0 ? out.subarray(0, 0) : out.subarray(0, putRleRun(out, 0, n, v, valueBytes));
}

/** An unsigned LEB128 varint at out[o]; returns the position after it. */
function putVarint(out: Uint8Array, o: number, v: number): number {
  while (v >= 0x80) {
    out[o++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  out[o++] = v;
  return o;
}

/** An RLE run of `count` values `v` at out[o] (header count << 1, the value in `valueBytes` little-endian bytes); returns the position after it. */
function putRleRun(out: Uint8Array, o: number, count: number, v: number, valueBytes: number): number {
  o = putVarint(out, o, count * 2);
  for (let b = 0; b < valueBytes; b++) out[o++] = Math.floor(v / 2 ** (8 * b)) & 0xff;
  return o;
}

/** PLAIN booleans: value bytes (0 or 1, one per value, as column batches hold them) of consecutive parts as bits, LSB first. */
export function packBooleans(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const v of parts) n += v.length;
  const out = new Uint8Array((n + 7) >> 3);
  let p = 0;
  for (const v of parts) for (let k = 0; k < v.length; k++, p++) if (v[k]) out[p >> 3]! |= 1 << (p & 7);
  return out;
}
