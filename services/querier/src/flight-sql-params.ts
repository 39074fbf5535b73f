import { DataType, tableFromIPC, type Table } from 'apache-arrow';
import { FloeError } from '@floe/errors';

/**
 * Flight SQL statements with bound parameters, kept stateless: a prepared statement's handle is
 * its SQL text until a client binds values (DoPut); the handle DoPut answers carries the SQL and
 * the client's parameter batch as it came (Arrow IPC), so any querier can execute it and nothing
 * is kept between calls. Values are bound to the statement's `?` / `$n` by DuckDB, never spliced
 * into its text.
 */

export interface Statement {
  sql: string;
  /** The bound parameter batch (an Arrow IPC stream of one row), when values were bound. */
  paramsIpc?: Uint8Array;
}

/** Starts a bound handle; no SQL text starts with a NUL byte. */
const BOUND = Buffer.from('\u0000floe-bound-v1\u0000', 'latin1');

/** Most bytes a statement handle may hold (SQL and bound values): a ticket's limit too. */
export const MAX_HANDLE_BYTES = 256 * 1024;

export function encodeStatement(s: Statement): Uint8Array {
  const sql = Buffer.from(s.sql, 'utf8');
  if (!s.paramsIpc) return sql;
  const length = Buffer.alloc(4);
  length.writeUInt32LE(sql.byteLength);
  const out = Buffer.concat([BOUND, length, sql, s.paramsIpc]);
  if (out.byteLength > MAX_HANDLE_BYTES) throw new FloeError('too_large', `a statement with its bound values may be at most ${MAX_HANDLE_BYTES} bytes`);
  return out;
}

export function decodeStatement(handle: Uint8Array): Statement {
  if (handle.byteLength > MAX_HANDLE_BYTES) throw new FloeError('too_large', `a statement handle may be at most ${MAX_HANDLE_BYTES} bytes`);
  const bytes = Buffer.from(handle.buffer, handle.byteOffset, handle.byteLength);
  if (!bytes.subarray(0, BOUND.byteLength).equals(BOUND)) return { sql: bytes.toString('utf8') };
  const at = BOUND.byteLength;
  if (bytes.byteLength < at + 4) throw new FloeError('bad_data', 'the statement handle is truncated');
  const sqlLength = bytes.readUInt32LE(at);
  if (at + 4 + sqlLength > bytes.byteLength) throw new FloeError('bad_data', 'the statement handle is truncated');
  return { sql: bytes.subarray(at + 4, at + 4 + sqlLength).toString('utf8'), paramsIpc: bytes.subarray(at + 4 + sqlLength) };
}

/**
 * The values of a bound parameter batch, in column order (`$1` is the first column): one row, of
 * types DuckDB can bind. Integers of 64 bits stay bigints; timestamps and dates become instants
 * (millisecond precision, as Arrow's JavaScript reader gives them); a dense union (how JDBC and
 * ODBC drivers send values of any type) gives its member's value, by its JavaScript type.
 */
export function parameterValues(ipc: Uint8Array): unknown[] {
  let table: Table;
  try {
    table = tableFromIPC(ipc);
  } catch (err) {
    throw new FloeError('bad_data', `the bound parameters are not an Arrow IPC stream: ${(err as Error).message}`);
  }
  return rowValues(table);
}

function rowValues(table: Table): unknown[] {
  if (table.numRows !== 1) {
    throw new FloeError('bad_data', `bind exactly one row of parameter values to a query, not ${table.numRows}`);
  }
  return table.schema.fields.map((field, i) => {
    const value: unknown = table.getChildAt(i)!.get(0);
    return bindable(value, field.type as DataType, i + 1);
  });
}

function bindable(value: unknown, type: DataType, index: number): unknown {
  if (value === null || value === undefined) return null;
  if (DataType.isTimestamp(type) || DataType.isDate(type)) {
    const ms = value instanceof Date ? value.getTime() : Number(value);
    if (!Number.isFinite(ms)) throw new FloeError('bad_data', `parameter $${index} is not a valid instant`);
    return new Date(ms);
  }
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') return value;
  if (value instanceof Uint8Array) return value;
  throw new FloeError('bad_data', `parameter $${index} has Arrow type ${String(type)}, which Floe cannot bind: send integers, floats, strings, booleans, binary, timestamps or dates`);
}
