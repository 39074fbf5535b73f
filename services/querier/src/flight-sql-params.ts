import { DuckDBDateValue, DuckDBTimestampNanosecondsValue, DuckDBTimestampTZValue, DuckDBTimestampValue } from '@duckdb/node-api';
import { DataType, DateUnit, Message, MessageHeader, TimeUnit, UnionMode, makeVector, tableFromIPC, type Data, type Table } from 'apache-arrow';
import { Field as FbField } from 'apache-arrow/fb/field';
import { Message as FbMessage } from 'apache-arrow/fb/message';
import { RecordBatch as FbRecordBatch } from 'apache-arrow/fb/record-batch';
import { Schema as FbSchema } from 'apache-arrow/fb/schema';
import { Type as FbType } from 'apache-arrow/fb/type';
import { Union as FbUnion } from 'apache-arrow/fb/union';
import { ByteBuffer } from 'flatbuffers';
import { splitIpcStream } from '@floe/flight';
import { FloeError } from '@floe/errors';
import { floorDiv } from './bigint-division.ts';

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
 * types DuckDB can bind. Integers of 64 bits stay bigints. Instants keep their precision, read
 * from the column's own integers (Arrow's JavaScript reader gives milliseconds as a double): a
 * timestamp with a time zone binds as TIMESTAMPTZ (µs, DuckDB's precision; nanoseconds rounded
 * down), one without as TIMESTAMP, or TIMESTAMP_NS when in nanoseconds; a date as DATE. A union
 * (how JDBC and ODBC drivers send values of any type) gives its member's value, of the member's
 * type.
 */
export function parameterValues(ipc: Uint8Array): unknown[] {
  try {
    checkParameterStream(ipc);
    return rowValues(tableFromIPC(ipc));
  } catch (err) {
    if (err instanceof FloeError) throw err;
    // A stream whose buffers lie about their lengths can fail anywhere in Arrow's reader.
    throw new FloeError('bad_data', `the bound parameters are not a readable Arrow IPC stream: ${(err as Error).message}`);
  }
}

/** Most parameters one statement takes (DuckDB numbers them; this bounds what a stream may declare). */
const MAX_PARAMETERS = 1024;

/**
 * The stream checked before Arrow's reader sees it, since a client writes it (and a bound handle
 * carries it back): Arrow's reader trusts the lengths a record batch declares and allocates by
 * them, so a few corrupted bytes could claim billions of rows and exhaust the process. A
 * parameter stream is a schema of flat columns (a union's members at most one level down) and
 * record batches of at most one row whose buffers lie inside their bodies.
 */
function checkParameterStream(ipc: Uint8Array): void {
  let schemaSeen = false;
  for (const m of splitIpcStream(ipc)) {
    checkVectorSizes(m.header);
    const message = Message.decode(m.header);
    if (message.isSchema()) {
      if (schemaSeen) throw new FloeError('bad_data', 'the bound parameters hold more than one schema');
      schemaSeen = true;
      const fields = message.header().fields;
      if (fields.length > MAX_PARAMETERS) throw new FloeError('bad_data', `at most ${MAX_PARAMETERS} parameters may be bound`);
      for (const f of fields) {
        const children = (f.type as DataType).children ?? [];
        if (children.some((c) => (c.type as DataType).children?.length)) throw new FloeError('bad_data', `parameter ${JSON.stringify(f.name)} is a nested type, which Floe cannot bind`);
      }
    } else if (message.isRecordBatch()) {
      const batch = message.header();
      if (batch.compression) throw new FloeError('bad_data', 'compressed parameter batches are not taken');
      if (batch.length > 1 || batch.nodes.some((n) => n.length > 1 || n.nullCount > n.length)) {
        throw new FloeError('bad_data', 'a parameter batch declares more than one row');
      }
      if (batch.buffers.some((b) => b.offset < 0 || b.length < 0 || b.offset + b.length > m.body.byteLength)) {
        throw new FloeError('bad_data', 'a parameter batch declares buffers outside its body');
      }
    } else {
      throw new FloeError('bad_data', 'the bound parameters may hold only a schema and record batches (no dictionaries)');
    }
  }
  if (!schemaSeen) throw new FloeError('bad_data', 'the bound parameters have no schema');
}

const tooLarge = () => new FloeError('bad_data', 'the bound parameters declare more entries than their bytes hold');

/**
 * A message header's flatbuffer vectors checked against its size before Arrow decodes it: Arrow's
 * decoder reads each vector's length as written and makes that many objects (fields, union type
 * ids, buffers), so one corrupted length could ask for billions. An entry takes at least its
 * width in bytes; a vector claiming more entries than the header has bytes for is refused. A
 * field may have members (a union's) but they may not (checkParameterStream's flat columns).
 */
function checkVectorSizes(header: Uint8Array): void {
  const fits = (count: number, width: number) => count >= 0 && count * width <= header.byteLength;
  const message = FbMessage.getRootAsMessage(new ByteBuffer(header));
  if (!fits(message.customMetadataLength(), 4)) throw tooLarge();
  if (message.headerType() === MessageHeader.Schema) {
    const schema = message.header(new FbSchema()) as FbSchema | null;
    if (!schema) return;
    if (!fits(schema.fieldsLength(), 4) || !fits(schema.customMetadataLength(), 4) || !fits(schema.featuresLength(), 8)) throw tooLarge();
    const checkField = (field: FbField | null, depth: number): void => {
      if (!field) return;
      if (!fits(field.childrenLength(), 4) || !fits(field.customMetadataLength(), 4)) throw tooLarge();
      if (field.typeType() === FbType.Union && !fits((field.type(new FbUnion()) as FbUnion | null)?.typeIdsLength() ?? 0, 4)) throw tooLarge();
      if (field.dictionary()) throw new FloeError('bad_data', 'dictionary-encoded parameters are not taken');
      if (field.childrenLength() === 0) return;
      if (depth >= 2) throw new FloeError('bad_data', 'a parameter is a nested type, which Floe cannot bind');
      for (let i = 0; i < field.childrenLength(); i++) checkField(field.children(i), depth + 1);
    };
    for (let i = 0; i < schema.fieldsLength(); i++) checkField(schema.fields(i), 1);
  } else if (message.headerType() === MessageHeader.RecordBatch) {
    const batch = message.header(new FbRecordBatch()) as FbRecordBatch | null;
    if (batch && (!fits(batch.nodesLength(), 16) || !fits(batch.buffersLength(), 16) || !fits(batch.variadicBufferCountsLength(), 8))) throw tooLarge();
  }
}

function rowValues(table: Table): unknown[] {
  if (table.numRows !== 1) {
    throw new FloeError('bad_data', `bind exactly one row of parameter values to a query, not ${table.numRows}`);
  }
  return table.schema.fields.map((_, i) => {
    // The one row is in the one batch that has a row.
    const data = table.getChildAt(i)!.data.find((d) => d.length > 0)!;
    return cellOf(data, 0, i + 1);
  });
}

const US_PER: Record<TimeUnit, bigint> = { [TimeUnit.SECOND]: 1_000_000n, [TimeUnit.MILLISECOND]: 1000n, [TimeUnit.MICROSECOND]: 1n, [TimeUnit.NANOSECOND]: 1n };
const DAY_MS = 86_400_000;

/** Row `row` of `data` as a value DuckDB binds (see parameterValues). */
function cellOf(data: Data, row: number, index: number): unknown {
  if (!data.getValid(row)) return null;
  const type = data.type as DataType;
  if (DataType.isUnion(type)) {
    const typeId = data.typeIds[data.offset + row]!;
    const child = data.children[type.typeIdToChildIndex[typeId]!];
    if (!child) throw new FloeError('bad_data', `parameter $${index} names a union member that does not exist`);
    const at = type.mode === UnionMode.Dense ? data.valueOffsets[data.offset + row]! : row;
    if (at < 0 || at >= child.length) throw new FloeError('bad_data', `parameter $${index} points past its union member's values`);
    return cellOf(child, at, index);
  }
  if (DataType.isTimestamp(type)) {
    const raw = (data.values as BigInt64Array)[data.offset + row]!;
    if (type.unit === TimeUnit.NANOSECOND && !type.timezone) return new DuckDBTimestampNanosecondsValue(raw);
    // A negative instant's sub-µs part rounds down, as DuckDB's own casts do.
    const us = type.unit === TimeUnit.NANOSECOND ? floorDiv(raw, 1000n) : raw * US_PER[type.unit];
    return type.timezone ? new DuckDBTimestampTZValue(us) : new DuckDBTimestampValue(us);
  }
  if (DataType.isDate(type)) {
    const days = type.unit === DateUnit.DAY ? (data.values as Int32Array)[data.offset + row]! : Math.floor(Number((data.values as BigInt64Array)[data.offset + row]!) / DAY_MS);
    return new DuckDBDateValue(days);
  }
  const value: unknown = makeVector(data).get(row);
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') return value;
  if (value instanceof Uint8Array) return value;
  throw new FloeError('bad_data', `parameter $${index} has Arrow type ${String(type)}, which Floe cannot bind: send integers, floats, strings, booleans, binary, timestamps or dates`);
}
