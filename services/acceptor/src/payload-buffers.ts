/**
 * Memory for WAL record payloads, reused once a request's append is durable. A payload is about
 * twice the request body, made and dropped on every request; fresh buffers of that size count
 * as V8 external memory, whose growth is what started most full mark-compacts of the acceptor's
 * heap under ingest load (bench/RESULTS.md, ingest-traces). Only buffers handed out here are
 * taken back, each once; a payload whose append failed is never taken back (an S3 PUT that timed
 * out may still be reading it).
 */
export class PayloadBuffers {
  readonly #free: ArrayBuffer[] = [];
  /** Buffers handed out and not yet given back (weakly: a payload never given back is just garbage). */
  readonly #out = new WeakSet<ArrayBuffer>();
  readonly #keep: number;
  readonly #largest: number;

  /** Keeps at most `keep` free buffers, none larger than `largest` bytes. */
  constructor(keep = 64, largest = 4 * 1024 * 1024) {
    this.#keep = keep;
    this.#largest = largest;
  }

  /** `bytes` of memory (not zeroed), in a free buffer that fits without being more than 4 times too large, else a new one. */
  take = (bytes: number): Uint8Array => {
    const free = this.#free;
    let buffer: ArrayBuffer | undefined;
    for (let i = free.length - 1; i >= 0; i--) {
      const b = free[i]!;
      if (b.byteLength >= bytes && b.byteLength <= 4 * Math.max(bytes, STEP)) {
        buffer = b;
        free[i] = free[free.length - 1]!;
        free.pop();
        break;
      }
    }
    buffer ??= new ArrayBuffer(Math.ceil(Math.max(bytes, 1) / STEP) * STEP);
    this.#out.add(buffer);
    return new Uint8Array(buffer, 0, bytes);
  };

  /** Takes back a payload made by take() once nothing reads it any more; anything else is ignored. */
  give(payload: Uint8Array): void {
    const buffer = payload.buffer as ArrayBuffer;
    if (!this.#out.delete(buffer)) return;
    if (buffer.byteLength > this.#largest) return;
    if (this.#free.length >= this.#keep) this.#free.shift();
    this.#free.push(buffer);
  }

  /** Free buffers kept (for tests). */
  get free(): number {
    return this.#free.length;
  }
}

/** Buffers are sized in steps of 16 KiB, so payloads of similar size share them. */
const STEP = 16 * 1024;

/** The acceptor's payload memory (one event loop: requests of every signal share it). */
export const payloadBuffers = new PayloadBuffers();
