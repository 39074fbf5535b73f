import { describe, expect, it } from 'vitest';
import { Binary, Bool, DateDay, Decimal, Float64, Int32, Int64, Table, TimeUnit, Timestamp, Utf8, tableToIPC, vectorFromArray, type Vector } from 'apache-arrow';
import { MAX_HANDLE_BYTES, decodeStatement, encodeStatement, parameterValues } from './flight-sql-params.ts';

const ipcOf = (columns: Record<string, Vector<any>>) => tableToIPC(new Table(columns), 'stream');

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
  it('takes one row of the types DuckDB binds, 64-bit integers as bigints and instants as dates', () => {
    const values = parameterValues(
      ipcOf({
        s: vectorFromArray(['svc'], new Utf8()),
        i: vectorFromArray([2n ** 62n], new Int64()),
        n: vectorFromArray([7], new Int32()),
        f: vectorFromArray([0.5], new Float64()),
        b: vectorFromArray([true], new Bool()),
        x: vectorFromArray([new Uint8Array([1, 2])], new Binary()),
        t: vectorFromArray([Date.UTC(2026, 11, 5, 12)], new Timestamp(TimeUnit.MICROSECOND, 'UTC')),
        d: vectorFromArray([Date.UTC(2026, 11, 5)], new DateDay()),
        z: vectorFromArray([null], new Utf8()),
      }),
    );
    expect(values).toEqual(['svc', 2n ** 62n, 7, 0.5, true, new Uint8Array([1, 2]), new Date(Date.UTC(2026, 11, 5, 12)), new Date(Date.UTC(2026, 11, 5)), null]);
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
