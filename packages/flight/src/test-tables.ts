// Fixtures shared by this package's tests.
import {
  Field,
  Float64,
  Int64,
  makeData,
  makeVector,
  Map_,
  Struct,
  Table,
  TimestampNanosecond,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';

const attrsType = new Map_(
  new Field('entries', new Struct<{ key: Utf8; value: Utf8 }>([new Field('key', new Utf8(), false), new Field('value', new Utf8(), true)]), false),
);

/** int64, utf8, float64, timestamp[ns] and map<utf8,utf8> columns, each with a null. */
export function sampleTable(): Table {
  return new Table({
    id: vectorFromArray([1n, 9007199254740993n, null], new Int64()),
    name: vectorFromArray(['checkout', null, 'cart ✓'], new Utf8()),
    ratio: vectorFromArray([0.5, null, -3.25], new Float64()),
    ts: makeVector(
      makeData({
        type: new TimestampNanosecond(),
        length: 3,
        nullCount: 1,
        nullBitmap: Uint8Array.of(0b101),
        data: BigInt64Array.of(1700000000000000001n, 0n, 1700000000123456789n),
      }),
    ),
    attrs: vectorFromArray([new Map([['service.name', 'checkout'], ['k', 'v']]), null, new Map([['empty', null]])], attrsType),
  });
}

/** Rows as plain values, bigint timestamps read raw (the row getter rounds them to ms). */
export function rows(table: Table): unknown[] {
  const ts = table.getChild('ts');
  return table.toArray().map((row, i) => {
    const json = row.toJSON() as Record<string, unknown>;
    const attrs = json['attrs'] as { toJSON(): unknown } | null;
    return {
      ...json,
      ts: ts?.isValid(i) ? (ts.data[0]?.values as BigInt64Array | undefined)?.[i] : null,
      attrs: attrs === null ? null : attrs.toJSON(),
    };
  });
}
