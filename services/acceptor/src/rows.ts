import { NS_PER_HOUR, tableDef, type TableName } from '@floe/schema';
import { ColumnBatchBuilder, columnBatchValues, type RowTemplate } from '@floe/storage';
import { AcceptedTimes } from './accepted-times.ts';

/**
 * What every OTLP signal's conversion produces: rows of one table grouped by the hour of each
 * row's time (the table's partition), one WAL record per hour; and the OTLP partial-success
 * counts. Rows are objects of raw column values, or, from a collector made for a table, also
 * rows its converter wrote straight into the hour's column batch (remote write's samples, from
 * cached series templates). Ingest writes each hour as one column batch (@floe/storage
 * column-batch.ts).
 */

export interface HourBatch {
  hour: number;
  rows: number;
  items: Record<string, unknown>[];
  /** Rows written as columns (RowCollector.columns), when there are any. */
  columns: ColumnBatchBuilder | undefined;
}

/** One hour's rows as a WAL record payload (a column batch). */
export interface HourPayload {
  hour: number;
  rows: number;
  payload: Uint8Array;
  /** A batch of series references: the templates they number (WalRecord.series). */
  series?: readonly RowTemplate[];
}

/**
 * Why items of a request were not stored, as the acceptor's items_refused counter tells them
 * apart: invalid (the protocol's or Floe's rules), too_old / too_new (limits.ingest_max_age,
 * ingest_max_future), series_limit (limits.max_active_series), unsupported (remote write's
 * custom-bucket histograms and exemplars without a time, dropped).
 */
export type RefusalKind = 'invalid' | 'too_old' | 'too_new' | 'series_limit' | 'unsupported';
export type RefusalCounts = Partial<Record<RefusalKind, number>>;

export interface ConvertedRows {
  byHour: Map<number, HourBatch>;
  accepted: number;
  rejected: number;
  /** The first reason an item was rejected (OTLP partial_success.error_message). */
  rejectReason: string | undefined;
  /** The rejected items (and remote write's dropped ones) by kind. */
  refusedBy: RefusalCounts;
}

/** Builders reused across requests, a few per table (conversion is synchronous). */
const BUILDERS = new Map<TableName, ColumnBatchBuilder[]>();
const KEEP_BUILDERS = 4;

/** An empty builder of the table's batches. */
export function takeBuilder(table: TableName): ColumnBatchBuilder {
  return BUILDERS.get(table)?.pop() ?? ColumnBatchBuilder.forTable(tableDef(table));
}

/** Gives a builder back (cleared); kept for the next request unless a huge one grew it. */
export function releaseBuilder(table: TableName, b: ColumnBatchBuilder): void {
  b.clear();
  if (!b.reusable) return;
  let list = BUILDERS.get(table);
  if (!list) BUILDERS.set(table, (list = []));
  if (list.length < KEEP_BUILDERS) list.push(b);
}

/** Gives back the builders of converted rows that will not be stored. */
export function discardRows(table: TableName, converted: ConvertedRows): void {
  for (const b of converted.byHour.values()) {
    if (b.columns) releaseBuilder(table, b.columns);
    b.columns = undefined;
  }
}

/** Time columns are Iceberg longs: an OTLP fixed64 beyond this cannot be stored. */
export const MAX_INT64 = 0x7fff_ffff_ffff_ffffn;

/**
 * Resource (and, for logs, scope) attribute entries one request may store, counted once per row
 * (each row holds its resource's maps; an empty map counts one). A resource of 20,000 attributes
 * over 20,000 spans (a 60 KB gzip body) was 400 million entries, compact in the WAL but expanded
 * by the flush, which grew to 10 GB; every query failed after it. Items past it are rejected.
 */
export const RESOURCE_ENTRIES_BUDGET = 2 ** 24;

export const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
export const isZero = (b: Uint8Array) => b.every((x) => x === 0);

/** Collects rows and rejections; `result()` is the ConvertedRows of everything added. */
export class RowCollector {
  readonly byHour = new Map<number, HourBatch>();
  accepted = 0;
  rejected = 0;
  rejectReason: string | undefined;
  readonly refusedBy: RefusalCounts = {};
  readonly #table: TableName | undefined;
  readonly #times: AcceptedTimes;

  /**
   * `table`: the table whose rows columns() writes directly (a converter that uses it); `times`:
   * the row times the tenant may write (admits()).
   */
  constructor(opts: { table?: TableName; times?: AcceptedTimes } = {}) {
    this.#table = opts.table;
    this.#times = opts.times ?? AcceptedTimes.ANY;
  }

  /** Whether a row whose time (of `what`) is `timeNs` is within the accepted times; if not, it is rejected. */
  admits(timeNs: bigint, what: string): boolean {
    const ns = Number(timeNs);
    if (this.#times.admits(ns)) return true;
    this.reject(this.rejectReason ?? this.#times.refusal(what, ns), this.#times.kindOf(ns));
    return false;
  }

  #batch(timeNs: bigint): HourBatch {
    const hour = Number(timeNs / NS_PER_HOUR);
    let batch = this.byHour.get(hour);
    if (!batch) this.byHour.set(hour, (batch = { hour, rows: 0, items: [], columns: undefined }));
    batch.rows++;
    this.accepted++;
    return batch;
  }

  /** A row whose partition time is `timeNs` (unix nanoseconds). */
  add(timeNs: bigint, row: Record<string, unknown>): void {
    this.#batch(timeNs).items.push(row);
  }

  /**
   * The column batch to write one row into directly, for partition time `timeNs`: the caller
   * writes every column's leaves (a template and the row's own values) and calls endRow().
   */
  columns(timeNs: bigint): ColumnBatchBuilder {
    if (this.#table === undefined) throw new TypeError('columns() on a collector made without a table');
    const batch = this.#batch(timeNs);
    return (batch.columns ??= takeBuilder(this.#table));
  }

  reject(reason: string, kind: RefusalKind = 'invalid'): void {
    this.rejected++;
    this.rejectReason ??= reason;
    this.countRefused(kind, 1);
  }

  /** Counts `n` items of `kind` not stored, without rejecting (remote write keeps its own answer). */
  countRefused(kind: RefusalKind, n: number): void {
    this.refusedBy[kind] = (this.refusedBy[kind] ?? 0) + n;
  }

  result(): ConvertedRows {
    return { byHour: this.byHour, accepted: this.accepted, rejected: this.rejected, rejectReason: this.rejectReason, refusedBy: this.refusedBy };
  }
}

/** A batch's rows as plain JSON values (objects, then the rows written as columns), in the order added: for tests. */
export const batchRows = (b: HourBatch): Record<string, unknown>[] => [
  ...b.items.map((r) => JSON.parse(JSON.stringify(r)) as Record<string, unknown>),
  ...(b.columns && b.columns.rows > 0 ? columnBatchValues(b.columns.finish(), b.columns.templates) : []),
];
