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

/** The header of a v1 data page of values (PLAIN, or RLE_DICTIONARY indices) after RLE levels. */
export function dataPageHeader(levels: number, uncompressedBytes: number, compressedBytes: number, encoding = PLAIN): Uint8Array {
  return new ThriftWriter()
    .i32(1, DATA_PAGE)
    .i32(2, uncompressedBytes)
    .i32(3, compressedBytes)
    .beginStruct(5)
    .i32(1, levels)
    .i32(2, encoding)
    .i32(3, RLE)
    .i32(4, RLE)
    .endStruct()
    .end();
}

/** The header of a dictionary page of `entries` PLAIN values. */
export function dictionaryPageHeader(entries: number, uncompressedBytes: number, compressedBytes: number): Uint8Array {
  return new ThriftWriter().i32(1, DICTIONARY_PAGE).i32(2, uncompressedBytes).i32(3, compressedBytes).beginStruct(7).i32(1, entries).i32(2, PLAIN).endStruct().end();
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
