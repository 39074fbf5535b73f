/**
 * What every OTLP signal's conversion produces: rows of one table as NDJSON lines, grouped by the
 * hour of each row's time (the table's partition), so the writer can append a WAL record's
 * payload to its per-hour batch without parsing it; and the OTLP partial-success counts.
 */

export interface HourBatch {
  hour: number;
  rows: number;
  lines: string[];
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

  /** A row whose partition time is `timeNs` (unix nanoseconds). */
  add(timeNs: bigint, row: object): void {
    this.addJson(timeNs, JSON.stringify(row));
  }

  /** A row already serialised as one line of JSON (no newline), whose partition time is `timeNs`. */
  addJson(timeNs: bigint, json: string): void {
    const hour = Number(timeNs / NS_PER_HOUR);
    let batch = this.byHour.get(hour);
    if (!batch) this.byHour.set(hour, (batch = { hour, rows: 0, lines: [] }));
    batch.lines.push(json);
    batch.rows++;
    this.accepted++;
  }

  reject(reason: string): void {
    this.rejected++;
    this.rejectReason ??= reason;
  }

  result(): ConvertedRows {
    return { byHour: this.byHour, accepted: this.accepted, rejected: this.rejected, rejectReason: this.rejectReason };
  }
}
