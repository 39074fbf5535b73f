import { describe, expect, it } from 'vitest';
import { DuckDBDateValue, DuckDBTimestampNanosecondsValue, DuckDBTimestampTZValue, DuckDBTimestampValue } from '@duckdb/node-api';
import { Binary, Bool, DateDay, DateMillisecond, Decimal, DenseUnion, Field, Float64, Int32, Int64, Table, TimeUnit, Timestamp, Utf8, Vector, makeData, tableToIPC, vectorFromArray, type DataType } from 'apache-arrow';
import { MAX_HANDLE_BYTES, decodeStatement, encodeStatement, parameterValues } from './flight-sql-params.ts';

const ipcOf = (columns: Record<string, Vector<any>>) => tableToIPC(new Table(columns), 'stream');
/** A one-row column of `type` whose value is written as the raw integers given. */
const column = (type: DataType, values: BigInt64Array) => new Vector([makeData({ type, length: 1, nullCount: 0, data: values } as never)]);

describe('statement handles', () => {
  it('are the SQL text until values are bound, then carry both', () => {
    expect(Buffer.from(encodeStatement({ sql: 'SELECT 1' })).toString()).toBe('SELECT 1');
    expect(decodeStatement(Buffer.from('SELECT 1'))).toEqual({ sql: 'SELECT 1' });
    const paramsIpc = ipcOf({ a: vectorFromArray(['x'], new Utf8()) });
    const decoded = decodeStatement(encodeStatement({ sql: 'SELECT ? — é', paramsIpc }));
    expect(decoded.sql).toBe('SELECT ? — é');
    expect(Buffer.from(decoded.paramsIpc!).equals(Buffer.from(paramsIpc))).toBe(true);
  });

  it('refuses truncated and oversized handles', () => {
    const bound = Buffer.from(encodeStatement({ sql: 'SELECT ?', paramsIpc: ipcOf({ a: vectorFromArray([1], new Int32()) }) }));
    expect(() => decodeStatement(bound.subarray(0, 18))).toThrow(expect.objectContaining({ kind: 'bad_data' }));
    expect(() => decodeStatement(Buffer.alloc(MAX_HANDLE_BYTES + 1, 0x20))).toThrow(expect.objectContaining({ kind: 'too_large' }));
    expect(() => encodeStatement({ sql: 'x'.repeat(MAX_HANDLE_BYTES), paramsIpc: new Uint8Array(8) })).toThrow(expect.objectContaining({ kind: 'too_large' }));
  });
});

describe('parameterValues', () => {
  it('takes one row of the types DuckDB binds, 64-bit integers as bigints and instants at their precision', () => {
    const values = parameterValues(
      ipcOf({
        s: vectorFromArray(['svc'], new Utf8()),
        i: vectorFromArray([2n ** 62n], new Int64()),
        n: vectorFromArray([7], new Int32()),
        f: vectorFromArray([0.5], new Float64()),
        b: vectorFromArray([true], new Bool()),
        x: vectorFromArray([new Uint8Array([1, 2])], new Binary()),
        t: column(new Timestamp(TimeUnit.MICROSECOND, 'UTC'), new BigInt64Array([1_796_472_000_123_456n])),
        d: vectorFromArray([Date.UTC(2026, 11, 5)], new DateDay()),
        z: vectorFromArray([null], new Utf8()),
      }),
    );
    expect(values).toEqual(['svc', 2n ** 62n, 7, 0.5, true, new Uint8Array([1, 2]), new DuckDBTimestampTZValue(1_796_472_000_123_456n), new DuckDBDateValue(20_792), null]);
  });

  it('keeps every unit of a timestamp DuckDB can hold: zoned as TIMESTAMPTZ, naive as TIMESTAMP, naive nanoseconds as TIMESTAMP_NS', () => {
    const ns = 1_796_472_000_123_456_789n;
    const values = parameterValues(
      ipcOf({
        zs: column(new Timestamp(TimeUnit.SECOND, '+01:00'), new BigInt64Array([1_796_472_000n])),
        zms: column(new Timestamp(TimeUnit.MILLISECOND, 'UTC'), new BigInt64Array([1_796_472_000_123n])),
        zns: column(new Timestamp(TimeUnit.NANOSECOND, 'UTC'), new BigInt64Array([ns])),
        before: column(new Timestamp(TimeUnit.NANOSECOND, 'UTC'), new BigInt64Array([-1n])),
        nus: column(new Timestamp(TimeUnit.MICROSECOND), new BigInt64Array([1_796_472_000_123_456n])),
        nns: column(new Timestamp(TimeUnit.NANOSECOND), new BigInt64Array([ns])),
        dms: column(new DateMillisecond(), new BigInt64Array([BigInt(Date.UTC(2026, 11, 5))])),
      }),
    );
    expect(values).toEqual([
      new DuckDBTimestampTZValue(1_796_472_000_000_000n),
      new DuckDBTimestampTZValue(1_796_472_000_123_000n),
      new DuckDBTimestampTZValue(1_796_472_000_123_456n),
      // One nanosecond before the epoch is in the µs before it.
      new DuckDBTimestampTZValue(-1n),
      new DuckDBTimestampValue(1_796_472_000_123_456n),
      new DuckDBTimestampNanosecondsValue(ns),
      new DuckDBDateValue(20_792),
    ]);
  });

  it('takes a dense union member (how JDBC sends values) as a value of the member\'s type', () => {
    // Members: 0 a string, 1 a zoned µs timestamp, 2 a 64-bit integer; the row holds the timestamp.
    const members = [new Field('s', new Utf8(), true), new Field('t', new Timestamp(TimeUnit.MICROSECOND, 'UTC'), true), new Field('i', new Int64(), true)];
    const type = new DenseUnion([0, 1, 2], members);
    const children = [
      makeData({ type: new Utf8(), length: 0, nullCount: 0, valueOffsets: new Int32Array([0]), data: new Uint8Array(0) }),
      makeData({ type: new Timestamp(TimeUnit.MICROSECOND, 'UTC'), length: 1, nullCount: 0, data: new BigInt64Array([1_796_472_000_123_456n]) } as never),
      makeData({ type: new Int64(), length: 0, nullCount: 0, data: new BigInt64Array(0) }),
    ];
    const union = makeData({ type, length: 1, nullCount: 0, typeIds: new Int8Array([1]), valueOffsets: new Int32Array([0]), children });
    expect(parameterValues(ipcOf({ u: new Vector([union]) }))).toEqual([new DuckDBTimestampTZValue(1_796_472_000_123_456n)]);
  });

  it('refuses other row counts, unbindable types and bytes that are no IPC stream', () => {
    expect(() => parameterValues(ipcOf({ a: vectorFromArray(['a', 'b'], new Utf8()) }))).toThrow(/declares more than one row/);
    expect(() => parameterValues(ipcOf({ a: vectorFromArray([], new Utf8()) }))).toThrow(/exactly one row/);
    const decimal = new Table({ d: vectorFromArray([new Uint32Array([5, 0, 0, 0])], new Decimal(2, 10, 128)) });
    expect(() => parameterValues(tableToIPC(decimal, 'stream'))).toThrow(/parameter \$1 has Arrow type Decimal/);
    expect(() => parameterValues(Buffer.from('not arrow'))).toThrow(expect.objectContaining({ kind: 'bad_data' }));
  });

  it('answers bad_data, never another error, for a parameter stream with corrupted bytes', () => {
    const valid = Buffer.from(ipcOf({ s: vectorFromArray(['value'], new Utf8()), i: vectorFromArray([5n], new Int64()) }));
    const other: unknown[] = [];
    for (let at = 0; at < valid.length; at++) {
      for (const flip of [0x01, 0x80, 0xff]) {
        const bytes = Buffer.from(valid);
        bytes[at] = bytes[at]! ^ flip;
        try {
          parameterValues(bytes);
        } catch (err) {
          if ((err as { kind?: string }).kind !== 'bad_data') other.push(err);
        }
      }
    }
    expect(other).toEqual([]);
  });
});
