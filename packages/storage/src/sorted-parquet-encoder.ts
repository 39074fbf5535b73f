import { Worker } from 'node:worker_threads';
import type { TableDef } from '@floe/schema';
import type { AttributeTypeCount } from './attribute-key-counts.ts';
import type { SortedParquetResult } from './sorted-batch-parquet.ts';

/**
 * Writes sorted flush files on a thread of their own (sorted-parquet-worker.ts), so the sort,
 * the gathering and the compression of a flush never hold up the event loop that also takes
 * ingest requests and group-commits the WAL (DuckDB's COPY ran on its own threads too). The
 * batches travel copied end to end into a shared buffer that is kept for the next flush (a fresh
 * buffer per flush cost more in page faults and GC than the copy); the thread is started on
 * first use and again after a crash, and does not keep the process alive while idle.
 */

export interface EncodeRequest {
  id: number;
  path: string;
  /** The table definition as JSON (the thread keeps parsed definitions by this text). */
  tableText: string;
  /** The column batch payloads end to end, and where each starts (plus the end). */
  buffer: SharedArrayBuffer;
  offsets: number[];
  attributeTypes: boolean;
}

export type EncodeReply =
  | { id: number; result: SortedParquetResult; attributeTypes?: AttributeTypeCount[]; error?: undefined }
  | { id: number; error: string };

const tableTexts = new WeakMap<TableDef, string>();

/** Shared buffers kept for reuse: at most this many, and none larger than KEEP_BYTES. */
const KEEP_BUFFERS = 2;
const KEEP_BYTES = 256 * 1024 * 1024;
const BUFFER_STEP = 4 * 1024 * 1024;

export class SortedParquetEncoder {
  #worker: Worker | undefined;
  /** Requests awaiting their reply, with the thread each was sent to. */
  readonly #pending = new Map<number, { worker: Worker; resolve: (r: EncodeReply) => void; reject: (e: Error) => void }>();
  #nextId = 1;
  readonly #free: SharedArrayBuffer[] = [];

  /** A shared buffer of at least `bytes` (one in flight is never handed out twice). */
  #buffer(bytes: number): SharedArrayBuffer {
    const i = this.#free.findIndex((b) => b.byteLength >= bytes);
    if (i >= 0) return this.#free.splice(i, 1)[0]!;
    return new SharedArrayBuffer(Math.ceil(Math.max(bytes, 1) / BUFFER_STEP) * BUFFER_STEP);
  }

  #release(b: SharedArrayBuffer): void {
    if (b.byteLength > KEEP_BYTES) return;
    this.#free.push(b);
    // Keep the largest: a smaller one is what a bigger flush would replace anyway.
    if (this.#free.length > KEEP_BUFFERS) this.#free.sort((x, y) => y.byteLength - x.byteLength).pop();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL('./sorted-parquet-worker.ts', import.meta.url));
    const waiting = () => {
      for (const p of this.#pending.values()) if (p.worker === worker) return true;
      return false;
    };
    worker.on('message', (reply: EncodeReply) => {
      const p = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      if (!waiting()) worker.unref();
      p?.resolve(reply);
    });
    // Only this thread's requests fail: after close() a new thread may already be at work.
    const fail = (err: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const [id, p] of this.#pending) {
        if (p.worker !== worker) continue;
        this.#pending.delete(id);
        p.reject(err);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the Parquet encoding thread exited (code ${code})`)));
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  /** Writes the payloads (column batches of one schema, checked) to `path` as `table`'s sorted file. */
  async encode(path: string, table: TableDef, payloads: readonly Uint8Array[], attributeTypes: boolean): Promise<{ result: SortedParquetResult; attributeTypes?: AttributeTypeCount[] }> {
    let tableText = tableTexts.get(table);
    if (!tableText) tableTexts.set(table, (tableText = JSON.stringify(table)));
    let total = 0;
    for (const p of payloads) total += p.length;
    const shared = this.#buffer(total);
    const bytes = new Uint8Array(shared);
    const offsets = [0];
    let at = 0;
    for (const p of payloads) {
      bytes.set(p, at);
      offsets.push((at += p.length));
    }
    const worker = this.#start();
    const id = this.#nextId++;
    // When the thread dies instead of replying, the buffer is dropped, not reused.
    const reply = await new Promise<EncodeReply>((resolve, reject) => {
      this.#pending.set(id, { worker, resolve, reject });
      worker.ref();
      const request: EncodeRequest = { id, path, tableText, buffer: shared, offsets, attributeTypes };
      worker.postMessage(request);
    });
    this.#release(shared);
    if (reply.error !== undefined) throw new Error(reply.error);
    return { result: reply.result, ...(reply.attributeTypes ? { attributeTypes: reply.attributeTypes } : {}) };
  }

  close(): void {
    const w = this.#worker;
    this.#worker = undefined;
    if (w) void w.terminate();
  }
}
