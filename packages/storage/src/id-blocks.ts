import { closeSync, openSync, readSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';
import { zstdCompress, zstdDecompress, zstdDecompressSync } from 'node:zlib';
import type { ObjectStore } from './object-store.ts';

/**
 * Id blocks: a data file's rows again, grouped by the table's id column (trace_id) and sorted by
 * it, in zstd blocks of about 64 KiB with an index of each block's first id. A point lookup reads
 * one block (one range read), where DuckDB would decode every row group holding one of the id's
 * rows, whole, in every column: a trace's spans sit in as many row groups as it has services,
 * because the Parquet file is kept in (service, time) order for scans. This is the same split
 * Tempo-style and ClickHouse-based trace stores make: one layout for search, one for by-id reads.
 * No library writes such a file, hence this module.
 *
 * Layout:
 *   block*  — each a zstd frame of lines `<id>\t<payload>\n`, ids ascending, one line per id
 *   index   — per block: u64 offset, u32 length, u16 first-id byte length, first id (UTF-8)
 *   meta    — the writer's description of the payloads, UTF-8 JSON (e.g. the row columns)
 *   trailer — u64 index offset, u32 block count, u32 meta byte length, u32 magic "FIDB"
 *
 * An id lives in exactly one block: the last whose first id is ≤ it. Payloads are the writer's
 * (a JSON array of rows); they must not contain a newline, which JSON text never does.
 */

const MAGIC = 0x42444946; // "FIDB" little-endian
const TRAILER_BYTES = 20;
const DEFAULT_BLOCK_BYTES = 64 * 1024;

const compress = promisify(zstdCompress);
const decompress = promisify(zstdDecompress);

export const idBlocksKey = (dataFileKey: string) => `${dataFileKey}.blk`;

interface BlockRef {
  firstId: string;
  offset: number;
  length: number;
}

/** Streams blocks to a local file as ids arrive; `finish()` appends the index. */
export class IdBlocksWriter {
  readonly #file: FileHandle;
  readonly #blockBytes: number;
  readonly #blocks: BlockRef[] = [];
  #pending: string[] = [];
  #pendingBytes = 0;
  #pendingFirst = '';
  #lastId: string | undefined;
  #offset = 0;

  private constructor(file: FileHandle, blockBytes: number) {
    this.#file = file;
    this.#blockBytes = blockBytes;
  }

  static async create(path: string, blockBytes = DEFAULT_BLOCK_BYTES): Promise<IdBlocksWriter> {
    return new IdBlocksWriter(await open(path, 'w'), blockBytes);
  }

  /** Ids must come in ascending order (JavaScript string order), each once. */
  async add(id: string, payload: string): Promise<void> {
    if (this.#lastId !== undefined && id <= this.#lastId) throw new Error(`id blocks: ids out of order (${this.#lastId} then ${id})`);
    if (id.includes('\t') || id.includes('\n') || payload.includes('\n')) throw new Error('id blocks: ids and payloads must not contain tabs or newlines');
    this.#lastId = id;
    if (this.#pending.length === 0) this.#pendingFirst = id;
    const line = `${id}\t${payload}\n`;
    this.#pending.push(line);
    this.#pendingBytes += line.length;
    if (this.#pendingBytes >= this.#blockBytes) await this.#seal();
  }

  async #seal(): Promise<void> {
    if (this.#pending.length === 0) return;
    const frame = await compress(Buffer.from(this.#pending.join(''), 'utf8'));
    await this.#file.write(frame);
    this.#blocks.push({ firstId: this.#pendingFirst, offset: this.#offset, length: frame.length });
    this.#offset += frame.length;
    this.#pending = [];
    this.#pendingBytes = 0;
  }

  /** Seals the last block, writes index, meta and trailer, closes the file; returns its size. */
  async finish(meta: unknown = {}): Promise<number> {
    try {
      await this.#seal();
      const ids = this.#blocks.map((b) => Buffer.from(b.firstId, 'utf8'));
      const metaBytes = Buffer.from(JSON.stringify(meta), 'utf8');
      const indexBytes = ids.reduce((n, id) => n + 14 + id.length, 0);
      const index = Buffer.alloc(indexBytes + metaBytes.length + TRAILER_BYTES);
      let at = 0;
      this.#blocks.forEach((b, i) => {
        index.writeBigUInt64LE(BigInt(b.offset), at);
        index.writeUInt32LE(b.length, at + 8);
        index.writeUInt16LE(ids[i]!.length, at + 12);
        ids[i]!.copy(index, at + 14);
        at += 14 + ids[i]!.length;
      });
      metaBytes.copy(index, at);
      at += metaBytes.length;
      index.writeBigUInt64LE(BigInt(this.#offset), at);
      index.writeUInt32LE(this.#blocks.length, at + 8);
      index.writeUInt32LE(metaBytes.length, at + 12);
      index.writeUInt32LE(MAGIC, at + 16);
      await this.#file.write(index);
      await this.#file.sync();
      return this.#offset + index.length;
    } finally {
      await this.#file.close();
    }
  }

  /** Closes the file without completing it (the caller deletes it). */
  async abort(): Promise<void> {
    await this.#file.close().catch(() => undefined);
  }
}

/** The block index of one id-blocks object; immutable, so callers cache it per object. */
export class IdBlocksIndex {
  readonly #blocks: BlockRef[];
  /** What the writer passed to finish(). */
  readonly meta: unknown;

  private constructor(blocks: BlockRef[], meta: unknown) {
    this.#blocks = blocks;
    this.meta = meta;
  }

  get blockCount(): number {
    return this.#blocks.length;
  }

  /** Reads the trailer and index of `key` (two range reads after a head). Undefined when absent. */
  static async load(store: ObjectStore, key: string): Promise<IdBlocksIndex | undefined> {
    const info = await store.head(key);
    if (!info) return undefined;
    if (info.size < TRAILER_BYTES) throw new Error(`id blocks ${key}: truncated`);
    const trailer = Buffer.from(await store.getRange(key, info.size - TRAILER_BYTES, TRAILER_BYTES));
    if (trailer.readUInt32LE(16) !== MAGIC) throw new Error(`id blocks ${key}: bad magic`);
    const indexOffset = Number(trailer.readBigUInt64LE(0));
    const count = trailer.readUInt32LE(8);
    const metaLength = trailer.readUInt32LE(12);
    const indexLength = info.size - TRAILER_BYTES - indexOffset;
    if (indexOffset < 0 || indexLength < metaLength) throw new Error(`id blocks ${key}: bad index offset`);
    const tail = Buffer.from(await store.getRange(key, indexOffset, indexLength));
    const meta: unknown = JSON.parse(tail.toString('utf8', indexLength - metaLength));
    return IdBlocksIndex.decode(tail.subarray(0, indexLength - metaLength), count, indexOffset, meta);
  }

  static decode(index: Buffer, count: number, dataEnd: number, meta: unknown = {}): IdBlocksIndex {
    const blocks: BlockRef[] = [];
    let at = 0;
    for (let i = 0; i < count; i++) {
      if (at + 14 > index.length) throw new Error('id blocks: truncated index');
      const offset = Number(index.readBigUInt64LE(at));
      const length = index.readUInt32LE(at + 8);
      const idLength = index.readUInt16LE(at + 12);
      if (at + 14 + idLength > index.length || offset + length > dataEnd) throw new Error('id blocks: bad index entry');
      blocks.push({ firstId: index.toString('utf8', at + 14, at + 14 + idLength), offset, length });
      at += 14 + idLength;
    }
    return new IdBlocksIndex(blocks, meta);
  }

  /** The only block that can hold `id`, or undefined when the id sorts before every block. */
  locate(id: string): { offset: number; length: number } | undefined {
    let lo = 0;
    let hi = this.#blocks.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#blocks[mid]!.firstId <= id) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (found < 0) return undefined;
    const b = this.#blocks[found]!;
    return { offset: b.offset, length: b.length };
  }
}

/** Decompressed block text → the payload stored for `id`, or undefined. */
export function findIdPayload(block: string, id: string): string | undefined {
  const head = `${id}\t`;
  let at = block.startsWith(head) ? 0 : block.indexOf(`\n${head}`);
  if (at < 0) return undefined;
  if (at > 0) at += 1;
  const start = at + head.length;
  const end = block.indexOf('\n', start);
  return block.slice(start, end < 0 ? block.length : end);
}

export interface IdPayloadRead {
  payload: string | undefined;
  /** Compressed bytes read from the store for the block (0 when no block can hold the id). */
  bytesRead: number;
}

/**
 * Blocks up to this size are read and decompressed on the calling thread: a point lookup's whole
 * work is then a few tens of microseconds, where each trip through libuv's thread pool (open,
 * read, close, inflate) costs more than that under load.
 */
const INLINE_BLOCK_BYTES = 1024 * 1024;

function readLocal(path: string, offset: number, length: number): Uint8Array {
  const fd = openSync(path, 'r');
  try {
    const out = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const n = readSync(fd, out, got, length - got, offset + got);
      if (n === 0) break;
      got += n;
    }
    return out.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** One range read and one decompression: the payload stored for `id` in the object `key`. */
export async function readIdPayload(store: ObjectStore, key: string, index: IdBlocksIndex, id: string): Promise<IdPayloadRead> {
  const where = index.locate(id);
  if (!where) return { payload: undefined, bytesRead: 0 };
  const inline = where.length <= INLINE_BLOCK_BYTES;
  const local = inline ? store.localPath(key) : undefined;
  const frame = local ? readLocal(local, where.offset, where.length) : await store.getRange(key, where.offset, where.length);
  const text = (inline ? zstdDecompressSync(frame) : await decompress(frame)).toString('utf8');
  return { payload: findIdPayload(text, id), bytesRead: frame.length };
}
