import {
  DuckDBBlobValue,
  DuckDBDateValue,
  DuckDBTimestampNanosecondsValue,
  DuckDBTimestampTZValue,
  DuckDBTimestampValue,
  type DuckDBConnection,
  type DuckDBPreparedStatement,
  type DuckDBValue,
} from '@duckdb/node-api';
import type { Table } from 'apache-arrow';
import { TRUNCATED_AT_ROWS } from '@floe/flight';
import { ArrowResultBuilder } from './arrow.ts';
import { SandboxError, cancelledError } from './errors.ts';

export interface SandboxResult {
  table: Table;
  rowCount: number;
  /** True when the query produced more than `maxRows` rows and only the first `maxRows` are returned. */
  truncated: boolean;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Binds `$1..$n` from plain JS values: null/undefined, boolean, number, bigint, string, Uint8Array
 * (BLOB), Date (TIMESTAMPTZ of its milliseconds), DuckDB's own instants (TIMESTAMPTZ, TIMESTAMP,
 * TIMESTAMP_NS, DATE: Flight SQL's bound values, at their precision) and arrays of the plain ones
 * (LIST). Anything else is a bad_sql error.
 */
export function bindParams(ps: DuckDBPreparedStatement, params: readonly unknown[]): void {
  const expected = ps.parameterCount;
  if (params.length !== expected) {
    throw new SandboxError('bad_sql', `the query has ${expected} parameter(s) but ${params.length} value(s) were given`);
  }
  params.forEach((value, i) => {
    const index = i + 1;
    if (value === null || value === undefined) ps.bindNull(index);
    else if (typeof value === 'boolean') ps.bindBoolean(index, value);
    else if (typeof value === 'string') ps.bindVarchar(index, value);
    else if (typeof value === 'bigint') {
      if (value >= INT64_MIN && value <= INT64_MAX) ps.bindBigInt(index, value);
      else ps.bindHugeInt(index, value);
    } else if (typeof value === 'number') {
      if (Number.isSafeInteger(value)) ps.bindBigInt(index, BigInt(value));
      else ps.bindDouble(index, value);
    } else if (value instanceof Uint8Array) ps.bindBlob(index, value);
    else if (value instanceof Date) ps.bindTimestampTZ(index, new DuckDBTimestampTZValue(BigInt(value.getTime()) * 1000n));
    else if (value instanceof DuckDBTimestampTZValue) ps.bindTimestampTZ(index, value);
    else if (value instanceof DuckDBTimestampValue) ps.bindTimestamp(index, value);
    else if (value instanceof DuckDBTimestampNanosecondsValue) ps.bindTimestampNanoseconds(index, value);
    else if (value instanceof DuckDBDateValue) ps.bindDate(index, value);
    else if (Array.isArray(value)) ps.bindList(index, value.map((v) => toDuckValue(v, index)));
    else throw new SandboxError('bad_sql', `parameter $${index} has an unsupported type`);
  });
}

function toDuckValue(v: unknown, index: number): DuckDBValue {
  if (v === null || v === undefined) return null;
  if (typeof v === 'boolean' || typeof v === 'string' || typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : v;
  if (v instanceof Uint8Array) return new DuckDBBlobValue(v);
  throw new SandboxError('bad_sql', `parameter $${index} has an unsupported element type`);
}

export interface ReadOptions {
  maxRows: number | undefined;
  /** Arrow bytes the result may hold; past them reading stops with kind 'too_large'. */
  maxBytes: number | undefined;
  /** Checked after every chunk: once the deadline has passed, reading stops with a timeout. */
  isTimedOut: () => boolean;
  /** Checked with isTimedOut: once the caller has cancelled, reading stops. */
  isCancelled?: () => boolean;
  timeoutMs: number;
}

/**
 * Runs a prepared SELECT as a stream and converts chunk by chunk, stopping at maxRows. The
 * result is held whole until it is sent, outside DuckDB's memory_limit, so its size is capped
 * too (checked per chunk: the result may pass the cap by one chunk before it is refused).
 */
export async function readAsArrow(ps: DuckDBPreparedStatement, opts: ReadOptions): Promise<SandboxResult> {
  const result = await ps.stream();
  const builder = new ArrowResultBuilder(result.deduplicatedColumnNames(), result.columnTypes());
  const limit = opts.maxRows ?? Number.POSITIVE_INFINITY;
  let truncated = false;
  for (;;) {
    const chunk = await result.fetchChunk();
    if (opts.isCancelled?.() === true) throw cancelledError();
    if (opts.isTimedOut()) throw new SandboxError('timeout', `query exceeded the time limit of ${opts.timeoutMs} ms`);
    if (chunk === null || chunk.rowCount === 0) break;
    const room = limit - builder.rowCount;
    if (room <= 0) {
      truncated = true;
      break;
    }
    const take = Math.min(room, chunk.rowCount);
    builder.addChunk(chunk, take);
    if (opts.maxBytes !== undefined && builder.byteLength > opts.maxBytes) throw resultTooLarge(opts.maxBytes);
    if (take < chunk.rowCount) {
      truncated = true;
      break;
    }
  }
  const table = builder.toTable(truncated ? new Map([[TRUNCATED_AT_ROWS, String(limit)]]) : undefined);
  return { table, rowCount: table.numRows, truncated };
}

export function resultTooLarge(maxBytes: number): SandboxError {
  return new SandboxError('too_large', `the result is larger than the ${formatBytes(maxBytes)} a query may return (querier.max_result_mb); select fewer rows or columns, or aggregate`);
}

function formatBytes(n: number): string {
  for (const [unit, size] of [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]] as const) if (n >= size) return `${+(n / size).toFixed(1)} ${unit}`;
  return `${n} bytes`;
}

const INTERRUPT_REPEAT_MS = 50;

/**
 * Calls `connection.interrupt()` when the deadline passes or `signal` aborts (the caller went
 * away), and again every INTERRUPT_REPEAT_MS until the call is cleared: DuckDB resets a
 * connection's interrupt flag when a query starts executing, so an interrupt that lands between
 * prepare and execution (which a loaded machine makes likely) would otherwise be lost and the
 * query run to its end. `timedOut` (or `cancelled`) stays true afterwards, so any error raised by
 * the interrupted work is reported as a timeout (or a cancellation).
 */
export class Deadline {
  private timer: NodeJS.Timeout | undefined;
  private fired = false;
  private aborted = false;
  private conn: DuckDBConnection | undefined;
  private readonly signal: AbortSignal | undefined;
  private readonly onAbort = () => this.stop(() => (this.aborted = true));
  readonly timeoutMs: number;

  constructor(timeoutMs: number, signal?: AbortSignal) {
    this.timeoutMs = timeoutMs;
    this.timer = setTimeout(() => this.stop(() => (this.fired = true)), Math.max(1, timeoutMs));
    this.signal = signal;
    if (signal?.aborted) this.onAbort();
    else signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private stop(mark: () => void): void {
    if (this.fired || this.aborted) return;
    mark();
    clearTimeout(this.timer);
    this.conn?.interrupt();
    this.timer = setInterval(() => this.conn?.interrupt(), INTERRUPT_REPEAT_MS);
  }

  /** The connection to interrupt; if the deadline already passed (or the caller cancelled) it is interrupted at once. */
  watch(conn: DuckDBConnection): void {
    this.conn = conn;
    if (this.fired || this.aborted) conn.interrupt();
  }

  get timedOut(): boolean {
    return this.fired;
  }

  get cancelled(): boolean {
    return this.aborted;
  }

  throwIfPassed(): void {
    if (this.fired) throw new SandboxError('timeout', `query exceeded the time limit of ${this.timeoutMs} ms`);
  }

  clear(): void {
    // clearTimeout also clears an interval (Node shares one timer type for both).
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.signal?.removeEventListener('abort', this.onAbort);
  }
}
