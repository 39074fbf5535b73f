/**
 * What every OTLP signal's conversion produces: rows of one table grouped by the hour of each
 * row's time (the table's partition), one WAL record per hour; and the OTLP partial-success
 * counts. Rows are objects of raw column values (Ingest writes them as a column batch,
 * @floe/storage column-batch.ts) or, from a collector made with `{ json: true }`, NDJSON lines
 * (the remote-write converter's cached row heads; the writer reads both).
 */

export interface HourBatch {
  hour: number;
  rows: number;
  items: Record<string, unknown>[];
  lines: string[];
}

/** One hour's rows as a WAL record payload (a column batch, or NDJSON lines). */
export interface HourPayload {
  hour: number;
  rows: number;
  payload: Uint8Array;
}

export interface ConvertedRows {
  byHour: Map<number, HourBatch>;
  accepted: number;
  rejected: number;
  /** The first reason an item was rejected (OTLP partial_success.error_message). */
  rejectReason: string | undefined;
}

export const NS_PER_HOUR = 3_600_000_000_000n;
/** Time columns are Iceberg longs: an OTLP fixed64 beyond this cannot be stored. */
export const MAX_INT64 = 0x7fff_ffff_ffff_ffffn;

export const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
export const isZero = (b: Uint8Array) => b.every((x) => x === 0);

/** Collects rows and rejections; `result()` is the ConvertedRows of everything added. */
export class RowCollector {
  readonly byHour = new Map<number, HourBatch>();
  accepted = 0;
  rejected = 0;
  rejectReason: string | undefined;
  readonly #json: boolean;

  /** `json`: keep rows as NDJSON lines (add() serialises them), for a converter that also uses addJson(). */
  constructor(opts: { json?: boolean } = {}) {
    this.#json = opts.json ?? false;
  }

  #batch(timeNs: bigint): HourBatch {
    const hour = Number(timeNs / NS_PER_HOUR);
    let batch = this.byHour.get(hour);
    if (!batch) this.byHour.set(hour, (batch = { hour, rows: 0, items: [], lines: [] }));
    batch.rows++;
    this.accepted++;
    return batch;
  }

  /** A row whose partition time is `timeNs` (unix nanoseconds). */
  add(timeNs: bigint, row: Record<string, unknown>): void {
    if (this.#json) this.#batch(timeNs).lines.push(JSON.stringify(row));
    else this.#batch(timeNs).items.push(row);
  }

  /** A row already serialised as one line of JSON (no newline); only on a `{ json: true }` collector. */
  addJson(timeNs: bigint, json: string): void {
    if (!this.#json) throw new TypeError('addJson on a collector of row objects');
    this.#batch(timeNs).lines.push(json);
  }

  reject(reason: string): void {
    this.rejected++;
    this.rejectReason ??= reason;
  }

  result(): ConvertedRows {
    return { byHour: this.byHour, accepted: this.accepted, rejected: this.rejected, rejectReason: this.rejectReason };
  }
}

/** A batch's rows as plain JSON values (objects or parsed lines), in the order added: for tests. */
export const batchRows = (b: HourBatch): Record<string, unknown>[] => [
  ...b.items.map((r) => JSON.parse(JSON.stringify(r)) as Record<string, unknown>),
  ...b.lines.map((l) => JSON.parse(l) as Record<string, unknown>),
];
