// Group-committing WAL appender.
//
// append() resolves only after the segment holding its records is durable in the object store
// (one put: temp file + fsync + rename + directory fsync on fs, one acknowledged PUT on S3). The
// acceptor acks a client only after that, so an acknowledged request survives a crash.
//
// Group commit: while a segment write is in flight, further append() calls queue. When it
// finishes, everything queued is written as the next segment(s) — split at call boundaries so no
// segment exceeds maxBatchBytes unless a single call does. The first append after an idle period is
// written after `lingerMs` (default 0: on the next microtask, which still gathers all appends made
// in the same tick). Under load the number of segments therefore follows the store's write
// latency, not the request rate. (Overlapping segment writes were measured on 2026-11-24: 15%
// more requests acknowledged, but ten times the segments, more than the writer consumed; see
// bench/RESULTS.md, ingest-traces.)
//
// A failed segment write rejects every append() waiting on that segment with WalAppendError
// (callers answer 503) and nothing of it is acknowledged; later appends start a fresh segment.

import { WalAppendError, WalClosedError } from './errors.ts';
import { validatePrefix } from './keys.ts';
import type { ObjectStore } from './object-store.ts';
import { frameRecord, segmentHeader } from './wal-format.ts';
import type { WalRecord } from './wal-format.ts';
import { DEFAULT_WAL_PREFIX, formatSegmentKey, validateInstanceId } from './wal-segments.ts';

export interface WalAppenderOptions {
  /** Key prefix of the segments (default 'wal/'). */
  prefix?: string;
  /** Unique among live appenders on the same prefix; part of every segment key. */
  instanceId: string;
  /** Target upper bound of one segment (default 8 MiB). */
  maxBatchBytes?: number;
  /** How long the first append after idle waits for company (default 0). */
  lingerMs?: number;
}

export interface WalAppendResult {
  /** Key of the segment that holds the records. */
  segment: string;
}

interface PendingAppend {
  /** Each record's frame parts (frameRecord). */
  frames: Uint8Array[][];
  bytes: number;
  resolve: (result: WalAppendResult) => void;
  reject: (err: unknown) => void;
}

export class WalAppender {
  readonly prefix: string;
  readonly instanceId: string;
  readonly #store: ObjectStore;
  readonly #maxBatchBytes: number;
  readonly #lingerMs: number;
  #queue: PendingAppend[] = [];
  #writing: Promise<void> | undefined;
  #scheduled = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #idleWaiters: Array<() => void> = [];
  #seq = 0;
  #lastTimestamp = 0;
  #segmentsWritten = 0;

  constructor(store: ObjectStore, opts: WalAppenderOptions) {
    this.#store = store;
    this.prefix = validatePrefix(opts.prefix ?? DEFAULT_WAL_PREFIX);
    this.instanceId = validateInstanceId(opts.instanceId);
    this.#maxBatchBytes = opts.maxBatchBytes ?? 8 * 1024 * 1024;
    this.#lingerMs = opts.lingerMs ?? 0;
    if (!Number.isSafeInteger(this.#maxBatchBytes) || this.#maxBatchBytes <= 0) {
      throw new RangeError(`WalAppender: maxBatchBytes must be a positive integer, got ${opts.maxBatchBytes}`);
    }
    if (!Number.isFinite(this.#lingerMs) || this.#lingerMs < 0) {
      throw new RangeError(`WalAppender: lingerMs must be >= 0, got ${opts.lingerMs}`);
    }
  }

  /** Number of segments this appender has written successfully. */
  get segmentsWritten(): number {
    return this.#segmentsWritten;
  }

  /** Resolves with the segment key once the records are durable; all records land in that one segment. */
  append(records: WalRecord[]): Promise<WalAppendResult> {
    if (this.#closed) return Promise.reject(new WalClosedError());
    let frames: Uint8Array[][];
    try {
      if (!Array.isArray(records) || records.length === 0) {
        throw new TypeError('WalAppender.append: at least one record is required');
      }
      frames = records.map(frameRecord);
    } catch (err) {
      return Promise.reject(err);
    }
    let bytes = 0;
    for (const f of frames) for (const p of f) bytes += p.byteLength;
    return new Promise<WalAppendResult>((resolve, reject) => {
      this.#queue.push({ frames, bytes, resolve, reject });
      this.#schedule();
    });
  }

  /** Writes everything already appended, then rejects further appends with WalClosedError. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#scheduled = false;
      this.#flush();
    }
    if (this.#queue.length === 0 && this.#writing === undefined && !this.#scheduled) return;
    await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
  }

  #schedule(): void {
    if (this.#writing !== undefined || this.#scheduled) return; // the running write drains the queue
    this.#scheduled = true;
    if (this.#lingerMs > 0 && !this.#closed) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#scheduled = false;
        this.#flush();
      }, this.#lingerMs);
    } else {
      queueMicrotask(() => {
        this.#scheduled = false;
        this.#flush();
      });
    }
  }

  #flush(): void {
    if (this.#writing !== undefined) return;
    if (this.#queue.length === 0) {
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
      return;
    }
    const batches = this.#takeBatches();
    this.#writing = Promise.all(batches.map((batch) => this.#writeSegment(batch))).then(() => {
      this.#writing = undefined;
      // Whatever queued during the write goes next, without lingering: it has already waited.
      this.#flush();
    });
  }

  /** Splits the whole queue into segments of at most maxBatchBytes, at append-call boundaries. */
  #takeBatches(): PendingAppend[][] {
    const batches: PendingAppend[][] = [];
    let current: PendingAppend[] = [];
    let size = 0;
    for (const pending of this.#queue) {
      if (current.length > 0 && size + pending.bytes > this.#maxBatchBytes) {
        batches.push(current);
        current = [];
        size = 0;
      }
      current.push(pending);
      size += pending.bytes;
    }
    if (current.length > 0) batches.push(current);
    this.#queue = [];
    return batches;
  }

  #nextKey(): string {
    // Never let the timestamp go backwards within this appender, so key order = write order.
    this.#lastTimestamp = Math.max(Date.now(), this.#lastTimestamp);
    return formatSegmentKey(this.prefix, {
      timestampMs: this.#lastTimestamp,
      instanceId: this.instanceId,
      seq: this.#seq++,
    });
  }

  async #writeSegment(batch: PendingAppend[]): Promise<void> {
    const key = this.#nextKey();
    try {
      // The parts are written as they are: the payloads are not copied into one segment buffer.
      const parts: Uint8Array[] = [];
      let records = 0;
      for (const pending of batch) {
        for (const frame of pending.frames) parts.push(...frame);
        records += pending.frames.length;
      }
      await this.#store.put(key, [segmentHeader(records), ...parts]);
    } catch (err) {
      // Nothing in this segment is acknowledged. The object may still exist (a PUT that timed out
      // after S3 stored it); it is then complete and valid, since puts are atomic, and its records
      // may reappear next to the clients' resends. Record ids make such duplicates recognisable.
      const failure = new WalAppendError(key, err);
      for (const pending of batch) pending.reject(failure);
      return;
    }
    this.#segmentsWritten++;
    const result = { segment: key };
    for (const pending of batch) pending.resolve(result);
  }
}
