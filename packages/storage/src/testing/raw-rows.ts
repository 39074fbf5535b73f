// Test helper: seeded rows of any table's raw columns, with the values that trip encoders
// (NULLs, empty maps and lists, NaN and infinities, 64-bit extremes, multi-byte text, ties on
// the sort keys). Not exported from the package.

import { isListType, isMapType, isStructType, rawColumns, timeColumn, type ColumnType, type TableDef } from '@floe/schema';

/** mulberry32: a small seeded generator, so a failing case can be replayed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = ['', 'a', 'svc-1', 'svc-2', 'Svc-1', 'ünïcødé', '\u{1F600} grin', 'z'.repeat(70), 'GET /x', 'a\u0000b'];
const LONGS = ['0', '1', '-1', String(2 ** 40), String(-(2 ** 40)), '9007199254740993', '-9223372036854775808', '9223372036854775807', '-1500', '-999'];
const INTS = [0, 1, -1, 2147483647, -2147483648, 65536, -65537];
const DOUBLES = [0, -0, 1.5, Number.NaN, Infinity, -Infinity, 1e-300, -2.5e10];
const KEYS = ['k', 'http.method', 'ü', '', 'service.name'];

export function randomRawRows(table: TableDef, n: number, seed: number): Record<string, unknown>[] {
  const rnd = seeded(seed);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
  const time = timeColumn(table);
  const sortKeys = new Set(table.sortOrder);
  const primitive = (t: string, name: string): unknown => {
    if (name === time) {
      // Ties and neighbours in a narrow window, an occasional pre-1970 instant.
      if (rnd() < 0.05) return pick(['-1500', '-999', '0']);
      return String(1_700_000_000_000_000_000n + BigInt(Math.floor(rnd() * 50)) * 1_000_001n);
    }
    if (rnd() < 0.1) return null;
    switch (t) {
      case 'string':
        // Sort keys from a small pool (ties), other text from the whole pool plus unique values.
        return sortKeys.has(name) || rnd() < 0.7 ? pick(STRINGS) : `v-${Math.floor(rnd() * 1e6)}`;
      case 'long':
        return rnd() < 0.5 ? pick(LONGS) : String(Math.floor((rnd() - 0.5) * 2 ** 52));
      case 'int':
        return pick(INTS);
      case 'double':
        return rnd() < 0.5 ? pick(DOUBLES) : (rnd() - 0.5) * 1e6;
      case 'boolean':
        return rnd() < 0.5;
      default:
        throw new TypeError(`no generator for ${t}`);
    }
  };
  const value = (t: ColumnType, name: string): unknown => {
    if (typeof t === 'string') return primitive(t, name);
    const r = rnd();
    if (r < 0.1) return null;
    const count = r < 0.3 ? 0 : 1 + Math.floor(rnd() * 3);
    if (isMapType(t)) {
      const m: Record<string, unknown> = {};
      for (let i = 0; i < count; i++) m[pick(KEYS)] = rnd() < 0.1 ? null : primitive(t.map, '');
      return m;
    }
    if (isListType(t)) {
      const el = t.list;
      return Array.from({ length: count }, () => {
        if (rnd() < 0.1) return null;
        if (!isStructType(el)) return primitive(el, '');
        return Object.fromEntries(el.struct.map((f) => [f.name, primitive(f.type, '')]));
      });
    }
    throw new TypeError('unknown column type');
  };
  return Array.from({ length: n }, () => Object.fromEntries(rawColumns(table).map((c) => [c.name, value(c.type, c.name)])));
}
