import { open, rm, type FileHandle } from 'node:fs/promises';
import { fileFooter, PAR1 } from './parquet-format.ts';
import { encodeThriftStruct, readThriftStruct, thriftField, thriftInt, ThriftDecodeError, type ThriftList, type ThriftStruct } from './thrift-compact.ts';

/**
 * Parquet files of one schema → one file holding all their row groups, by copying bytes: no page
 * is decoded, decompressed or re-encoded. The compactor merges the writer's flush files of an
 * hour that is still being written this way (each a few row groups, sorted on its own), because
 * what costs queries is the number of files, not the number of row groups, and a re-sort of the
 * hour is done once when it closes. No library offers this on Node (parquet-rs has it as a tool),
 * hence this module.
 *
 * Each input's body (everything between its leading magic and its footer) is copied whole, so
 * the pages, dictionaries and any bloom filters stay where their offsets say, shifted by where
 * the body lands; the footers' row groups are concatenated with every absolute offset shifted.
 * Page indexes (column and offset index) are dropped: an offset index holds absolute page offsets
 * inside the body, and rewriting it would change its length. Readers fall back to the row groups'
 * statistics, which are kept; Floe's own encoder does not write page indexes.
 */

// FileMetaData
const FM_SCHEMA = 2;
const FM_NUM_ROWS = 3;
const FM_ROW_GROUPS = 4;
const FM_COLUMN_ORDERS = 7;
const FM_ENCRYPTION = 8;
// RowGroup
const RG_COLUMNS = 1;
const RG_FILE_OFFSET = 5;
const RG_ORDINAL = 7;
// ColumnChunk
const CC_FILE_PATH = 1;
const CC_FILE_OFFSET = 2;
const CC_META = 3;
const CC_PAGE_INDEX = new Set([4, 5, 6, 7]);
const CC_CRYPTO = new Set([8, 9]);
// ColumnMetaData
const CM_OFFSETS = [9, 10, 11, 14]; // data page, index page, dictionary page, bloom filter


/** A file that cannot be concatenated as it is (not Parquet, damaged, encrypted, external chunks). */
export class ParquetConcatError extends Error {
  override readonly name = 'ParquetConcatError';
}

/** A Parquet file's footer as parquet-concat reads it. */
export interface ParquetFooter {
  path: string;
  sizeBytes: number;
  rows: number;
  rowGroups: number;
  /** Equal for files whose schemas (and column orders) are byte-identical: only those concatenate. */
  schemaKey: string;
  /** Where the footer starts: the body is [4, bodyEnd). */
  bodyEnd: number;
  metadata: ThriftStruct;
}

export async function readParquetFooter(path: string): Promise<ParquetFooter> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    if (size < 12) throw new ParquetConcatError(`${path}: ${size} bytes is too short for Parquet`);
    const head = await readAt(fh, 0, 4);
    const tail = await readAt(fh, size - 8, 8);
    if (!same(head, PAR1) || !same(tail.subarray(4), PAR1)) throw new ParquetConcatError(`${path}: not a Parquet file (magic missing)`);
    const length = new DataView(tail.buffer, tail.byteOffset, 8).getUint32(0, true);
    const bodyEnd = size - 8 - length;
    if (bodyEnd < 4) throw new ParquetConcatError(`${path}: footer length ${length} exceeds the file`);
    const bytes = await readAt(fh, bodyEnd, length);
    let metadata: ThriftStruct;
    try {
      metadata = readThriftStruct(bytes).struct;
    } catch (err) {
      if (err instanceof ThriftDecodeError) throw new ParquetConcatError(`${path}: damaged footer (${err.message})`);
      throw err;
    }
    if (thriftField(metadata, FM_ENCRYPTION)) throw new ParquetConcatError(`${path}: encrypted footers are not concatenated`);
    const groups = listOf(metadata, FM_ROW_GROUPS);
    for (const g of groups) {
      for (const c of listOf(g, RG_COLUMNS)) {
        if (thriftField(c, CC_FILE_PATH) || c.fields.some((f) => CC_CRYPTO.has(f.id))) throw new ParquetConcatError(`${path}: column chunks in other files or encrypted are not concatenated`);
      }
    }
    const schema = thriftField(metadata, FM_SCHEMA);
    const orders = thriftField(metadata, FM_COLUMN_ORDERS);
    if (!schema) throw new ParquetConcatError(`${path}: footer without a schema`);
    const schemaKey = Buffer.from(encodeThriftStruct({ fields: orders ? [schema, orders] : [schema] })).toString('base64');
    return { path, sizeBytes: size, rows: Number(thriftInt(metadata, FM_NUM_ROWS)), rowGroups: groups.length, schemaKey, bodyEnd, metadata };
  } finally {
    await fh.close();
  }
}

export interface ConcatenatedFile {
  sizeBytes: number;
  rows: number;
  /** Where each row group starts (Iceberg's split_offsets). */
  rowGroupOffsets: number[];
}

/** Where a row group starts: its file_offset, else its first column chunk's first page. */
function rowGroupStart(g: ThriftStruct): number {
  const own = thriftInt(g, RG_FILE_OFFSET);
  if (own > 0n) return Number(own);
  const first = listOf(g, RG_COLUMNS)[0];
  const meta = first ? (thriftField(first, CC_META)?.value as ThriftStruct | undefined) : undefined;
  if (!meta) return 4;
  const dict = thriftInt(meta, 11);
  return Number(dict > 0n ? dict : thriftInt(meta, 9));
}

/** The offsets at which a Parquet file's row groups start, in order (Iceberg's split_offsets). */
export function rowGroupOffsets(footer: ParquetFooter): number[] {
  return listOf(footer.metadata, FM_ROW_GROUPS).map(rowGroupStart);
}

const COPY_CHUNK = 1 << 20;

/**
 * Writes `inputs` (footers read by readParquetFooter, all of one schemaKey) one after another
 * into a new file at `out`. The inputs' footers are edited in place (their offsets shifted);
 * read them again to use them after.
 */
export async function concatParquet(inputs: readonly ParquetFooter[], out: string): Promise<ConcatenatedFile> {
  if (inputs.length === 0) throw new ParquetConcatError('nothing to concatenate');
  const first = inputs[0]!;
  const mismatch = inputs.find((f) => f.schemaKey !== first.schemaKey);
  if (mismatch) throw new ParquetConcatError(`${mismatch.path}: schema differs from ${first.path}'s`);
  const dst = await open(out, 'wx');
  let done = false;
  try {
    await dst.write(PAR1, 0, 4, 0);
    let at = 4;
    const groups: ThriftStruct[] = [];
    let rows = 0n;
    const buf = Buffer.allocUnsafe(COPY_CHUNK);
    for (const input of inputs) {
      const shift = BigInt(at - 4);
      const src = await open(input.path, 'r');
      try {
        for (let from = 4; from < input.bodyEnd; ) {
          const want = Math.min(COPY_CHUNK, input.bodyEnd - from);
          const { bytesRead } = await src.read(buf, 0, want, from);
          if (bytesRead === 0) throw new ParquetConcatError(`${input.path}: shorter than its footer says`);
          await writeAll(dst, buf.subarray(0, bytesRead), at);
          from += bytesRead;
          at += bytesRead;
        }
      } finally {
        await src.close();
      }
      for (const g of listOf(input.metadata, FM_ROW_GROUPS)) {
        shiftOffset(g, RG_FILE_OFFSET, shift);
        for (const c of listOf(g, RG_COLUMNS)) {
          shiftOffset(c, CC_FILE_OFFSET, shift);
          c.fields = c.fields.filter((f) => !CC_PAGE_INDEX.has(f.id));
          const meta = thriftField(c, CC_META)?.value as ThriftStruct | undefined;
          if (meta) for (const id of CM_OFFSETS) shiftOffset(meta, id, shift);
        }
        const ordinal = thriftField(g, RG_ORDINAL);
        if (ordinal) ordinal.value = BigInt(groups.length);
        groups.push(g);
      }
      rows += thriftInt(input.metadata, FM_NUM_ROWS);
    }
    // The first input's footer with every input's row groups: schema, column orders and
    // key-value metadata are the same for all (the schema key says so, key-value metadata is the
    // first's), and so is created_by, which readers consult for the writer's known quirks: the
    // pages are that writer's, only moved.
    const metadata: ThriftStruct = {
      fields: first.metadata.fields.map((f) => {
        if (f.id === FM_NUM_ROWS) return { ...f, value: rows };
        if (f.id === FM_ROW_GROUPS) return { ...f, value: { ...(f.value as ThriftList), items: groups } };
        return f;
      }),
    };
    const footer = fileFooter(encodeThriftStruct(metadata));
    await writeAll(dst, footer, at);
    await dst.sync();
    done = true;
    return { sizeBytes: at + footer.length, rows: Number(rows), rowGroupOffsets: groups.map(rowGroupStart) };
  } finally {
    await dst.close();
    if (!done) await rm(out, { force: true });
  }
}

/** Moves an offset into the body by `shift`; 0 (some writers' "not set") stays 0. */
function shiftOffset(s: ThriftStruct, id: number, shift: bigint): void {
  const f = thriftField(s, id);
  if (f && typeof f.value === 'bigint' && f.value > 0n) f.value += shift;
}

function listOf(s: ThriftStruct, id: number): ThriftStruct[] {
  const v = thriftField(s, id)?.value;
  return v && typeof v === 'object' && 'items' in v ? (v.items as ThriftStruct[]) : [];
}

async function readAt(fh: FileHandle, position: number, length: number): Promise<Uint8Array> {
  const buf = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await fh.read(buf, got, length - got, position + got);
    if (bytesRead === 0) throw new ParquetConcatError(`short read at ${position + got}`);
    got += bytesRead;
  }
  return buf;
}

async function writeAll(fh: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < bytes.length; ) {
    const { bytesWritten } = await fh.write(bytes, done, bytes.length - done, position + done);
    done += bytesWritten;
  }
}

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);
