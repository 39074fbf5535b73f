// Group-committing WAL appender.
//
// append() resolves only after the records are durable, and the acceptor acks a client only
// after that, so an acknowledged request survives a crash. Two ways to a durable segment:
//
// - One segment per group commit (S3, or segmentMaxAgeMs 0): one put, an acknowledged PUT on S3.
// - Appended segments (a store with appendable objects, the fs store): a segment is a file that
//   takes group commits as appends, each one write and an fdatasync, and is sealed (renamed to its
//   key, where the writer sees it) segmentMaxAgeMs after it was started or when the next group
//   would take it past maxBatchBytes. On fs a put was a new file, a rename and two fsyncs, and
//   every segment cost the writer a listing entry, a read and an unlink. A segment left open by an
//   acceptor that died is published by the writer's recovery (recoverOpenSegments).
//
// Group commit: while a write is in flight, further append() calls queue. When it finishes,
// everything queued is written next, split at call boundaries so no segment exceeds maxBatchBytes
// unless a single call does. The first append after an idle period is written after `lingerMs`
// (default 0: on the next microtask, which still gathers all appends made in the same tick). Under
// load the number of group commits therefore follows the store's write latency, not the request
// rate. (Overlapping segment writes were measured on 2026-11-24: 15% more requests acknowledged,
// but ten times the segments, more than the writer consumed; see bench/RESULTS.md, ingest-traces.)
//
// A failed write rejects every append() waiting on it with WalAppendError (callers answer 503)
// and nothing of it is acknowledged; later appends start a fresh segment.
//
// Series definitions: a record of series references (WalRecord.series, column-batch.ts "FCB3")
// needs its templates defined in its own segment, so that the writer, which takes a segment as a
// unit, resolves it alone. When a group is placed in a segment, the templates the segment does
// not define yet are written as one definitions record per tenant, dataset, table and schema
// ahead of the group's records, and each record's references are renumbered to the segment's
// numbering. A segment written by one put defines what its group uses; an appended segment
// defines each series once for all the group commits it takes (Prometheus's WAL, too, writes a
// series record once and samples that reference it).

import { WalAppendError, WalClosedError } from './errors.ts';
import { validatePrefix } from './keys.ts';
import type { AppendableObject, AppendableObjects, ObjectStore } from './object-store.ts';
import { ColumnBatchBuilder, renumberRefs, type RowTemplate } from './column-batch.ts';
import { newRecordId } from './record-id.ts';
import { frameRecord, OPEN_ENDED_COUNT, refreshCrc, segmentHeader, unsealedFrame } from './wal-format.ts';
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
  /**
   * On a store with appendable objects: how long a segment takes appends before it is sealed
   * and visible to the writer. 0 (default): a segment per group commit, as on S3.
   */
  segmentMaxAgeMs?: number;
  /** Told when sealing a segment failed (it stays open until the writer's recovery publishes it). */
  onSealError?: (err: unknown, segment: string) => void;
}

/** The appended segment taking group commits now. */
interface OpenSegment {
  object: AppendableObject;
  /** Set when its age is up: sealed before the next group, or at once when idle. */
  due: boolean;
  timer: ReturnType<typeof setTimeout>;
  series: SegmentSeries;
}

/** The series a segment defines, per tenant, dataset, table and schema: each template's number there. */
type SegmentSeries = Map<string, Map<RowTemplate, number>>;

export interface WalAppendResult {
  /** Key of the segment that holds the records. */
  segment: string;
}

interface PendingAppend {
  records: WalRecord[];
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
  readonly #appendables: AppendableObjects | undefined;
  readonly #segmentMaxAgeMs: number;
  readonly #onSealError: (err: unknown, segment: string) => void;
  #open: OpenSegment | undefined;

  constructor(store: ObjectStore, opts: WalAppenderOptions) {
    this.#store = store;
    this.#segmentMaxAgeMs = opts.segmentMaxAgeMs ?? 0;
    if (!Number.isFinite(this.#segmentMaxAgeMs) || this.#segmentMaxAgeMs < 0) {
      throw new RangeError(`WalAppender: segmentMaxAgeMs must be >= 0, got ${opts.segmentMaxAgeMs}`);
    }
    this.#appendables = this.#segmentMaxAgeMs > 0 ? store.appendables : undefined;
    this.#onSealError = opts.onSealError ?? (() => {});
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

  /** Number of segments this appender has written (appended ones: sealed) successfully. */
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
      // A series record's references are renumbered when it is placed: its CRC is made then.
      frames = records.map((r) => (r.series === undefined || r.series.length === 0 ? frameRecord(r) : unsealedFrame(r)));
    } catch (err) {
      return Promise.reject(err);
    }
    let bytes = 0;
    for (const f of frames) for (const p of f) bytes += p.byteLength;
    return new Promise<WalAppendResult>((resolve, reject) => {
      this.#queue.push({ records, frames, bytes, resolve, reject });
      this.#schedule();
    });
  }

  /** Writes everything already appended and seals its segment, then rejects further appends with WalClosedError. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#scheduled = false;
    }
    if (this.#queue.length === 0 && this.#writing === undefined && !this.#scheduled && this.#open === undefined) return;
    const idle = new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    if (!this.#scheduled) this.#flush();
    await idle;
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
    let work: Promise<unknown> | undefined;
    if (this.#queue.length > 0) {
      const batches = this.#takeBatches();
      work = this.#appendables ? this.#appendBatches(this.#appendables, batches) : Promise.all(batches.map((batch) => this.#writeSegment(batch)));
    } else if (this.#open && (this.#open.due || this.#closed)) {
      work = this.#seal();
    }
    if (work === undefined) {
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
      return;
    }
    this.#writing = work.then(() => {
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

  /** Each group in turn as an append to the open segment (sealed first when due or full), or a new one. Never rejects. */
  async #appendBatches(appendables: AppendableObjects, batches: PendingAppend[][]): Promise<void> {
    for (const batch of batches) {
      const open = this.#open;
      if (open && (open.due || open.object.size + batchBytes(batch) > this.#maxBatchBytes)) await this.#seal();
      let key = this.#open?.object.key;
      try {
        if (this.#open) {
          await this.#open.object.append(partsOf(batch, this.#open.series).parts);
        } else {
          key = this.#nextKey();
          const series: SegmentSeries = new Map();
          const { parts } = partsOf(batch, series);
          const object = await appendables.open(key, [segmentHeader(OPEN_ENDED_COUNT), ...parts]);
          const entry: OpenSegment = { object, due: false, series, timer: setTimeout(() => this.#ageUp(entry), this.#segmentMaxAgeMs) };
          entry.timer.unref?.();
          this.#open = entry;
        }
      } catch (err) {
        const failure = new WalAppendError(key!, err);
        for (const pending of batch) pending.reject(failure);
        // Published as far as it was durable (or left to recovery); the next group starts anew.
        await this.#seal();
        continue;
      }
      const result = { segment: key! };
      for (const pending of batch) pending.resolve(result);
    }
  }

  #ageUp(entry: OpenSegment): void {
    if (this.#open !== entry) return;
    entry.due = true;
    this.#schedule();
  }

  /** Seals the open segment, if any. Never rejects: a segment that could not be sealed stays for recovery. */
  async #seal(): Promise<void> {
    const open = this.#open;
    if (!open) return;
    this.#open = undefined;
    clearTimeout(open.timer);
    try {
      await open.object.seal();
      this.#segmentsWritten++;
    } catch (err) {
      this.#onSealError(err, open.object.key);
    }
  }

  async #writeSegment(batch: PendingAppend[]): Promise<void> {
    const key = this.#nextKey();
    try {
      // The parts are written as they are: the payloads are not copied into one segment buffer.
      const { parts, records } = partsOf(batch, new Map());
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

const batchBytes = (batch: PendingAppend[]) => batch.reduce((n, p) => n + p.bytes, 0);

/**
 * A group's frame parts in order and how many records they hold, for a segment that defines
 * `series` so far (updated): the series definitions its records need first, then the records,
 * their references renumbered to the segment's.
 */
function partsOf(batch: PendingAppend[], series: SegmentSeries): { parts: Uint8Array[]; records: number } {
  const parts: Uint8Array[] = [];
  let records = 0;
  // New definitions per group key: the templates, and the header of a record of the group.
  const fresh = new Map<string, { templates: RowTemplate[]; header: WalRecord['header'] }>();
  for (const pending of batch) {
    pending.records.forEach((record, j) => {
      const templates = record.series;
      if (templates === undefined || templates.length === 0) return;
      const h = record.header;
      const key = `${h.tenant}\u0000${h.dataset}\u0000${h.table}\u0000${templates[0]!.schemaKey}`;
      let numbers = series.get(key);
      if (!numbers) series.set(key, (numbers = new Map()));
      const to = new Uint32Array(templates.length);
      for (let i = 0; i < templates.length; i++) {
        const t = templates[i]!;
        // Most series belong to one numbering at a time: the template remembers its last.
        let n = t.segmentSeries === numbers ? t.segmentNo : numbers.get(t);
        if (n === undefined) {
          numbers.set(t, (n = numbers.size));
          let f = fresh.get(key);
          if (!f) fresh.set(key, (f = { templates: [], header: h }));
          f.templates.push(t);
        }
        t.segmentSeries = numbers;
        t.segmentNo = n;
        to[i] = n;
      }
      renumberRefs(record.payload, to);
      refreshCrc(pending.frames[j]!);
    });
  }
  for (const { templates, header } of fresh.values()) {
    const payload = ColumnBatchBuilder.seriesDefinitions(templates);
    parts.push(...frameRecord({ header: { ...header, rows: templates.length, id: newRecordId() }, payload }));
    records++;
  }
  for (const pending of batch) {
    for (const frame of pending.frames) parts.push(...frame);
    records += pending.frames.length;
  }
  return { parts, records };
}
