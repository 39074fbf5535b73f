import { open } from 'node:fs/promises';
import { COPY_CHUNK, footerStart, PageWalk, ParquetConcatError, ParquetPageError, parseParquetFooter, readAt } from './parquet-concat.ts';
import { PAR1 } from './parquet-format.ts';
import { ObjectNotFoundError } from './errors.ts';
import type { ObjectStore } from './object-store.ts';

/**
 * Whether a Parquet object's pages read as its footer says, from the store, in bounded memory: the
 * footer must read, and every column chunk's pages are walked (PageWalk, as the open-hour
 * concatenation walks the files it copies): headers must read, pages must end at their chunk's
 * end, and a page that carries a crc (Floe's encoder writes one on every page; DuckDB's does not)
 * must match its bytes. A flipped bit inside a page keeps the file's size, so a listing cannot
 * find it and DuckDB reads such a page as wrong values without an error; this is the operator's
 * way to find it (`floe ops check-tables --check-pages`, `drop-damaged-files --check-pages`).
 *
 * The object is read in ranged GETs of a block (1 MiB) at a time, the next one asked for while the
 * walk reads the last: at most two blocks and the footer are held, whatever the file's size.
 */

/** What is wrong with a Parquet object's pages or footer. */
export interface PageDamage {
  key: string;
  /** The walk's message: the key, the row group, column and byte offset, and what is wrong. */
  message: string;
  /** Where: null when the footer itself does not read (or the file is not Parquet). */
  rowGroup: number | null;
  column: string | null;
  offset: number | null;
}

export interface VerifyPagesOptions {
  /** The object's size, when the caller has it from a listing: saves a HEAD. */
  sizeBytes?: number;
  /** Bytes per ranged GET; COPY_CHUNK (1 MiB) by default. */
  blockBytes?: number;
}

/** The footer is asked for with the last bytes read: Floe's footers are a few KB, so one GET usually holds it. */
const TAIL_BYTES = 64 * 1024;

/** Bytes of a file: `length` at `offset`, fewer where it ends (or a ParquetConcatError). */
type ReadAt = (offset: number, length: number) => Promise<Uint8Array>;

/**
 * Resolves undefined when the object at `key` is a Parquet file whose footer and pages read
 * whole, else the damage found first. Rejects on the store's own failures (ObjectNotFoundError
 * when there is no such object): those say nothing of the file's bytes.
 */
export async function verifyParquetPages(store: ObjectStore, key: string, options: VerifyPagesOptions = {}): Promise<PageDamage | undefined> {
  const size = options.sizeBytes ?? (await store.head(key))?.size;
  if (size === undefined) throw new ObjectNotFoundError(key);
  return verifyPages(key, size, (offset, length) => store.getRange(key, offset, length), options.blockBytes);
}

/**
 * verifyParquetPages for a file on local disk: what the compactor checks before DuckDB reads a
 * file to rewrite it, since DuckDB would read a damaged page as wrong values and the rewrite
 * would give them fresh, matching crcs.
 */
export async function verifyLocalParquetPages(path: string): Promise<PageDamage | undefined> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    return await verifyPages(path, size, (offset, length) => readAt(fh, offset, length));
  } finally {
    await fh.close();
  }
}

async function verifyPages(key: string, size: number, readBytes: ReadAt, blockBytes?: number): Promise<PageDamage | undefined> {
  const block = Math.max(1, blockBytes ?? COPY_CHUNK);
  /** Exactly `length` bytes at `offset`, or a ParquetConcatError: the object is shorter than its size said. */
  const read = async (offset: number, length: number): Promise<Uint8Array> => {
    const got = await readBytes(offset, length);
    if (got.length < length) throw new ParquetConcatError(`${key}: ends at byte ${offset + got.length}, before the ${size} bytes it was listed with`);
    return got;
  };
  try {
    if (size < 12) throw new ParquetConcatError(`${key}: ${size} bytes is too short for Parquet`);
    const tailAt = Math.max(0, size - TAIL_BYTES);
    const tail = await read(tailAt, size - tailAt);
    const bodyEnd = footerStart(key, size, tail);
    const footerBytes = bodyEnd >= tailAt ? tail.subarray(bodyEnd - tailAt, tail.length - 8) : await read(bodyEnd, size - 8 - bodyEnd);
    const walk = new PageWalk(parseParquetFooter(key, size, bodyEnd, footerBytes));
    // The leading magic comes with the body's first block.
    const range = (from: number) => {
      const bytes = read(from, Math.min(from === 0 ? Math.max(block, 4) : block, bodyEnd - from));
      // Asked for ahead: a walk that stops at damage never awaits it.
      bytes.catch(() => undefined);
      return bytes;
    };
    let next = range(0);
    for (let from = 0; from < bodyEnd; ) {
      const bytes = await next;
      const to = from + bytes.length;
      if (to < bodyEnd) next = range(to);
      if (from === 0) {
        if (bytes.length < 4 || !PAR1.every((b, i) => bytes[i] === b)) throw new ParquetConcatError(`${key}: not a Parquet file (magic missing)`);
        walk.feed(bytes.subarray(4), 4);
      } else {
        walk.feed(bytes, from);
      }
      from = to;
    }
    walk.end();
    return undefined;
  } catch (err) {
    if (err instanceof ParquetPageError) return { key, message: err.message, rowGroup: err.rowGroup, column: err.column, offset: err.offset };
    if (err instanceof ParquetConcatError) return { key, message: err.message, rowGroup: null, column: null, offset: null };
    throw err;
  }
}
