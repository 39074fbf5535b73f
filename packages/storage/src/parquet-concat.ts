import { open, rm, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
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
 *
 * Bytes copied unread would carry a damaged page (a flipped bit, a torn write under an intact
 * footer) into a file of up to 32 flushes, found only when its rows are read, and then the whole
 * concatenation has to be given up instead of one flush. So the copy walks every column chunk's
 * pages as it goes: each page header must read and its pages must end exactly at the chunk's end,
 * and a page that carries a crc (Floe's encoder writes one on every page; DuckDB's does not) must
 * match its bytes. The walk reads the bytes being copied, once.
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
const CM_PATH = 3;
const CM_COMPRESSED = 7; // total_compressed_size: the chunk's bytes, page headers included
const CM_DATA_PAGE = 9;
const CM_DICTIONARY_PAGE = 11;
const CM_OFFSETS = [CM_DATA_PAGE, 10, CM_DICTIONARY_PAGE, 14]; // data page, index page, dictionary page, bloom filter
// PageHeader
const PH_REQUIRED = [1, 2, 3]; // type, uncompressed_page_size, compressed_page_size
const PH_COMPRESSED = 3;
const PH_CRC = 4;


/** A file that cannot be concatenated as it is (not Parquet, damaged, encrypted, external chunks). */
export class ParquetConcatError extends Error {
  override readonly name = 'ParquetConcatError';
}

/** A page or column chunk that does not read as its footer says (PageWalk): where it is, and the message says what is wrong. */
export class ParquetPageError extends ParquetConcatError {
  readonly rowGroup: number;
  /** The column's path, its parts joined by dots. */
  readonly column: string;
  /** The byte offset in the file of the page's header (or of the chunk's start). */
  readonly offset: number;

  constructor(message: string, rowGroup: number, column: string, offset: number) {
    super(message);
    this.rowGroup = rowGroup;
    this.column = column;
    this.offset = offset;
  }
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
    if (!same(await readAt(fh, 0, 4), PAR1)) throw new ParquetConcatError(`${path}: not a Parquet file (magic missing)`);
    const bodyEnd = footerStart(path, size, await readAt(fh, size - 8, 8));
    return parseParquetFooter(path, size, bodyEnd, await readAt(fh, bodyEnd, size - 8 - bodyEnd));
  } finally {
    await fh.close();
  }
}

/**
 * Where the footer of a Parquet file of `size` bytes starts (its body is [4, that)), from the
 * file's last bytes (at least 8: the footer's length and the closing magic). The leading magic is
 * the caller's to check.
 */
export function footerStart(path: string, size: number, tail: Uint8Array): number {
  if (size < 12) throw new ParquetConcatError(`${path}: ${size} bytes is too short for Parquet`);
  const last = tail.subarray(tail.length - 8);
  if (last.length < 8 || !same(last.subarray(4), PAR1)) throw new ParquetConcatError(`${path}: not a Parquet file (magic missing)`);
  const length = new DataView(last.buffer, last.byteOffset, 8).getUint32(0, true);
  const bodyEnd = size - 8 - length;
  if (bodyEnd < 4) throw new ParquetConcatError(`${path}: footer length ${length} exceeds the file`);
  return bodyEnd;
}

/** The footer of a Parquet file from its bytes (`bytes`: the file's [bodyEnd, size - 8)). */
export function parseParquetFooter(path: string, size: number, bodyEnd: number, bytes: Uint8Array): ParquetFooter {
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
  return meta ? chunkStart(meta) : 4;
}

/** Where a column chunk's first page starts: its dictionary page when it has one, else its first data page. */
function chunkStart(meta: ThriftStruct): number {
  const dict = thriftInt(meta, CM_DICTIONARY_PAGE);
  return Number(dict > 0n ? dict : thriftInt(meta, CM_DATA_PAGE));
}

/** The offsets at which a Parquet file's row groups start, in order (Iceberg's split_offsets). */
export function rowGroupOffsets(footer: ParquetFooter): number[] {
  return listOf(footer.metadata, FM_ROW_GROUPS).map(rowGroupStart);
}

/** Bytes read at a time by the copy (and by verifyParquetPages): the walk holds no more than this of a file. */
export const COPY_CHUNK = 1 << 20;

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
      const walk = new PageWalk(input);
      const src = await open(input.path, 'r');
      try {
        for (let from = 4; from < input.bodyEnd; ) {
          const want = Math.min(COPY_CHUNK, input.bodyEnd - from);
          const { bytesRead } = await src.read(buf, 0, want, from);
          if (bytesRead === 0) throw new ParquetConcatError(`${input.path}: shorter than its footer says`);
          walk.feed(buf.subarray(0, bytesRead), from);
          await writeAll(dst, buf.subarray(0, bytesRead), at);
          from += bytesRead;
          at += bytesRead;
        }
        walk.end();
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

/** A column chunk's bytes in its file, and how an error names it. */
interface ChunkSpan {
  start: number;
  end: number;
  rowGroup: number;
  column: string;
}

/**
 * A header longer than this is damage, not a page header (real ones are tens of bytes, a few KB
 * with page statistics): it bounds what a garbled header can make the walk hold.
 */
const MAX_PAGE_HEADER = COPY_CHUNK;

/**
 * The pages of one input's column chunks, checked over the body's bytes as the copy reads them
 * (in order, in blocks of any size): a header that straddles two blocks is kept until it reads, a
 * page's crc is computed piece by piece. Throws ParquetConcatError naming the file, row group,
 * column and the byte offset of the page (or chunk) at fault (ParquetPageError). The copy here
 * and verifyParquetPages (parquet-verify.ts) walk with it; exported from the package through
 * that, not on its own.
 */
export class PageWalk {
  readonly #path: string;
  readonly #spans: ChunkSpan[];
  /** The span being walked. */
  #i = 0;
  /** The next byte to read: a page header's start, or the rest of a page. */
  #at = 0;
  #page: { at: number; remaining: number; crc: number | undefined; running: number } | undefined;
  /** The start of a header the last block ended inside, and its bytes so far. */
  #carry: { at: number; bytes: Uint8Array } | undefined;

  constructor(input: ParquetFooter) {
    this.#path = input.path;
    const spans: ChunkSpan[] = [];
    listOf(input.metadata, FM_ROW_GROUPS).forEach((g, rowGroup) => {
      for (const c of listOf(g, RG_COLUMNS)) {
        const meta = thriftField(c, CC_META)?.value as ThriftStruct | undefined;
        if (!meta) throw new ParquetConcatError(`${input.path}: row group ${rowGroup}: a column chunk without its metadata`);
        const path = ((thriftField(meta, CM_PATH)?.value as ThriftList | undefined)?.items ?? []) as Uint8Array[];
        const start = chunkStart(meta);
        spans.push({ start, end: start + Number(thriftInt(meta, CM_COMPRESSED)), rowGroup, column: path.map((p) => Buffer.from(p).toString('utf8')).join('.') });
      }
    });
    spans.sort((a, b) => a.start - b.start);
    let last = 4;
    for (const s of spans) {
      if (s.start < last || s.end <= s.start || s.end > input.bodyEnd) throw this.#damaged(s, s.start, `column chunk [${s.start}, ${s.end}) outside the body [4, ${input.bodyEnd}) or over another chunk`);
      last = s.end;
    }
    this.#spans = spans;
  }

  /** The next bytes of the body, `block`, starting at file offset `from`. */
  feed(block: Uint8Array, from: number): void {
    const to = from + block.length;
    for (;;) {
      const s = this.#spans[this.#i];
      if (!s) return;
      const page = this.#page;
      if (page) {
        const n = Math.min(page.remaining, to - this.#at);
        if (page.crc !== undefined) page.running = crc32(block.subarray(this.#at - from, this.#at - from + n), page.running);
        page.remaining -= n;
        this.#at += n;
        if (page.remaining > 0) return;
        if (page.crc !== undefined && (page.running | 0) !== page.crc) throw this.#damaged(s, page.at, `page crc ${page.crc} does not match its bytes' ${page.running | 0}`);
        this.#page = undefined;
        if (this.#at === s.end) this.#i++;
        continue;
      }
      // Bytes between chunks (bloom filters, page indexes) are copied unread.
      if (this.#at < s.start) this.#at = s.start;
      if (this.#at >= to) return;
      // A header ends inside its chunk: read no further than the chunk's end.
      const fresh = block.subarray(this.#at - from, Math.min(to, s.end) - from);
      const at = this.#carry?.at ?? this.#at;
      const bytes = this.#carry ? Buffer.concat([this.#carry.bytes, fresh]) : fresh;
      let header: ThriftStruct;
      let end: number;
      try {
        ({ struct: header, end } = readThriftStruct(bytes));
      } catch (err) {
        if (!(err instanceof ThriftDecodeError)) throw err;
        if (to >= s.end) throw this.#damaged(s, at, `unreadable page header (${err.message})`);
        if (bytes.length > MAX_PAGE_HEADER) throw this.#damaged(s, at, `no page header in ${bytes.length} bytes`);
        // Cut short by the block's end: the rest comes with the next block.
        this.#carry = { at, bytes: this.#carry ? bytes : Uint8Array.from(bytes) };
        this.#at = to;
        return;
      }
      this.#carry = undefined;
      this.#at = at + end;
      // A zero byte reads as an empty struct: without this, a run of zeros (a torn write) up to a
      // chunk's end would walk as empty pages.
      if (PH_REQUIRED.some((id) => !thriftField(header, id))) throw this.#damaged(s, at, 'page header without its type and sizes');
      const size = Number(thriftInt(header, PH_COMPRESSED));
      if (size < 0 || this.#at + size > s.end) throw this.#damaged(s, at, `page of ${size} bytes after its header runs past the chunk's end at ${s.end}`);
      const crc = thriftField(header, PH_CRC)?.value;
      this.#page = { at, remaining: size, crc: typeof crc === 'bigint' ? Number(BigInt.asIntN(32, crc)) : undefined, running: 0 };
    }
  }

  /** After the body's last block: every chunk walked to its end. */
  end(): void {
    const s = this.#spans[this.#i];
    if (s) throw this.#damaged(s, this.#page?.at ?? this.#carry?.at ?? this.#at, 'the body ends inside the column chunk');
  }

  #damaged(s: ChunkSpan, at: number, what: string): ParquetPageError {
    return new ParquetPageError(`${this.#path}: damaged page in row group ${s.rowGroup}, column ${s.column}, at byte ${at}: ${what}`, s.rowGroup, s.column, at);
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

/** Exactly `length` bytes of an open file at `position` (ParquetConcatError where it ends sooner). */
export async function readAt(fh: FileHandle, position: number, length: number): Promise<Uint8Array> {
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
