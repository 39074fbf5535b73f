import { wholeChunks } from './buffer-pool.ts';

/**
 * Working memory kept from one use to the next: typed arrays bump-allocated from buffers that are
 * never freed, only rewound. A flush needs several copies of its data at once (joined leaves,
 * sorted leaves, dictionaries, page bodies), and allocating them fresh each time was measured to
 * cost more than the work on them: every new buffer is zeroed and page-faulted in, and the bytes
 * count as V8 external memory, whose growth starts a full mark-compact of the heap (one every
 * ~0.2 s on the encoding thread under ingest load, and most of the GC threads' CPU).
 *
 * Buffers are made in whole chunks (chunkBytes). Arrays handed out are NOT zeroed. mark() and
 * release() nest: everything taken after a mark is given back by releasing it, and must not be
 * used afterwards. The memory kept is the largest ever in use at once, except that buffers
 * beyond `keepBytes` are dropped by reset().
 */
export class Scratch {
  readonly #chunkBytes: number;
  readonly #keepBytes: number;
  readonly #shared: boolean;
  readonly #chunks: ArrayBufferLike[] = [];
  #chunk = 0;
  #offset = 0;

  /** `shared`: the buffers are SharedArrayBuffers (their arrays can be handed to another thread without a copy). */
  constructor(chunkBytes = 16 * 1024 * 1024, keepBytes = 128 * 1024 * 1024, opts: { shared?: boolean } = {}) {
    this.#chunkBytes = chunkBytes;
    this.#keepBytes = keepBytes;
    this.#shared = opts.shared === true;
  }

  /** The current position, for release(). */
  mark(): number {
    return this.#chunk * 2 ** 32 + this.#offset;
  }

  /** Gives back everything taken since `mark`. */
  release(mark: number): void {
    this.#chunk = Math.floor(mark / 2 ** 32);
    this.#offset = mark % 2 ** 32;
  }

  /** Gives back everything, and drops the buffers past the first `keepBytes` (by default the constructor's). */
  reset(keepBytes = this.#keepBytes): void {
    this.#chunk = 0;
    this.#offset = 0;
    let kept = 0;
    for (let i = 0; i < this.#chunks.length; i++) {
      kept += this.#chunks[i]!.byteLength;
      if (kept > keepBytes) {
        this.#chunks.length = i;
        break;
      }
    }
  }

  u8(n: number): Uint8Array {
    const [buffer, at] = this.#take(n);
    return new Uint8Array(buffer, at, n);
  }

  u16(n: number): Uint16Array {
    const [buffer, at] = this.#take(n * 2);
    return new Uint16Array(buffer, at, n);
  }

  i32(n: number): Int32Array {
    const [buffer, at] = this.#take(n * 4);
    return new Int32Array(buffer, at, n);
  }

  u32(n: number): Uint32Array {
    const [buffer, at] = this.#take(n * 4);
    return new Uint32Array(buffer, at, n);
  }

  /** `bytes` at an 8-byte aligned offset: in the current buffer if they fit, else at the start of the next (made, or remade larger, if it cannot hold them: buffers past the current one are free). */
  #take(bytes: number): [ArrayBufferLike, number] {
    let buffer = this.#chunks[this.#chunk];
    if (buffer && this.#offset + bytes > buffer.byteLength) {
      this.#chunk++;
      this.#offset = 0;
      buffer = this.#chunks[this.#chunk];
    }
    if (!buffer || buffer.byteLength < bytes) {
      buffer = wholeChunks(bytes, this.#chunkBytes, this.#shared);
      this.#chunks[this.#chunk] = buffer;
    }
    const at = this.#offset;
    this.#offset = Math.ceil((at + bytes) / 8) * 8;
    return [buffer, at];
  }
}
