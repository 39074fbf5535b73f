/**
 * Whole buffers kept from one use to the next, for callers that take a few large arrays at a
 * time and give them all back together (the writer's WAL segments, read for a round). A request
 * gets the smallest free buffer that holds it, whatever came before it, so a round of segments
 * of varying size is read into memory that earlier rounds made. With Scratch's bump allocation
 * the slot a segment landed in depended on the segments before it, and slots were, sooner or
 * later, asked for more than they held and remade (zeroed and page-faulted in again).
 *
 * Buffers are made in whole chunks (`chunkBytes`), SharedArrayBuffers when `shared` (their
 * arrays can be handed to another thread without a copy). Arrays handed out are NOT zeroed.
 */
export class BufferPool {
  readonly #chunkBytes: number;
  readonly #keepBytes: number;
  readonly #shared: boolean;
  /** Free buffers, smallest first. */
  #free: ArrayBufferLike[] = [];
  #taken: ArrayBufferLike[] = [];

  constructor(chunkBytes: number, keepBytes: number, opts: { shared?: boolean } = {}) {
    if (!(chunkBytes > 0)) throw new RangeError(`BufferPool: chunkBytes must be positive, got ${chunkBytes}`);
    this.#chunkBytes = chunkBytes;
    this.#keepBytes = keepBytes;
    this.#shared = opts.shared === true;
  }

  /** `n` bytes, in the smallest free buffer that holds them, or a new one. */
  u8(n: number): Uint8Array {
    const i = this.#free.findIndex((b) => b.byteLength >= n);
    let buffer: ArrayBufferLike;
    if (i >= 0) {
      buffer = this.#free[i]!;
      this.#free.splice(i, 1);
    } else {
      buffer = wholeChunks(n, this.#chunkBytes, this.#shared);
    }
    this.#taken.push(buffer);
    return new Uint8Array(buffer, 0, n);
  }

  /**
   * Takes every array back (none may be used afterwards), keeping at most `keepBytes` (by
   * default the constructor's) of buffers: the largest, which can serve any request a smaller
   * one could.
   */
  releaseAll(keepBytes = this.#keepBytes): void {
    const all = [...this.#free, ...this.#taken].sort((a, b) => b.byteLength - a.byteLength);
    this.#taken = [];
    const kept: ArrayBufferLike[] = [];
    let bytes = 0;
    for (const b of all) {
      if (bytes + b.byteLength > keepBytes) continue;
      kept.push(b);
      bytes += b.byteLength;
    }
    this.#free = kept.reverse();
  }

  /** Bytes of the buffers kept now, taken or free. */
  get keptBytes(): number {
    let n = 0;
    for (const b of this.#free) n += b.byteLength;
    for (const b of this.#taken) n += b.byteLength;
    return n;
  }
}

/**
 * A buffer of at least `bytes` made of whole chunks (at least one), shared when `shared`: sizes
 * then come in few steps, so memory kept for requests of varying size is reused instead of
 * remade (zeroed and page-faulted in again) for each slightly larger one.
 */
export function wholeChunks(bytes: number, chunkBytes: number, shared: boolean): ArrayBufferLike {
  const size = Math.max(1, Math.ceil(bytes / chunkBytes)) * chunkBytes;
  return shared ? new SharedArrayBuffer(size) : new ArrayBuffer(size);
}
