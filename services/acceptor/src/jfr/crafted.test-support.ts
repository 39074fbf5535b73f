/**
 * Hand-built JFR recordings for tests of hostile input (the real recording in test/fixtures/jfr
 * covers what the JDK writes): one chunk with compressed integers, its metadata from a list of
 * classes, one constant pool event, and events written as given. Values are pre-encoded bytes:
 * `v` (varint), `str` (UTF-8 string).
 */

export function v(n: number | bigint): number[] {
  let x = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  for (let i = 0; i < 8; i++) {
    const b = Number(x & 0x7fn);
    x >>= 7n;
    if (x === 0n) return [...out, b];
    out.push(b | 0x80);
  }
  return [...out, Number(x & 0xffn)];
}

export const str = (s: string): number[] => {
  const b = [...Buffer.from(s, 'utf8')];
  return [3, ...v(b.length), ...b];
};

export interface CraftedClass {
  /** Written as the id attribute, so a test may give one that is no number. */
  id: string;
  name: string;
  fields?: Array<{ name: string; type: string; constantPool?: boolean; array?: boolean }>;
}

/** An event of `size, ...body` with the size counting itself. */
function sized(body: number[]): number[] {
  for (let len = 1; ; len++) {
    const size = v(body.length + len);
    if (size.length === len) return [...size, ...body];
  }
}

export function craftedRecording(classes: CraftedClass[], pools: Array<{ classId: number; constants: Array<{ id: number; value: number[] }> }>, events: number[][]): Buffer {
  const strings: string[] = [];
  const idx = (s: string) => {
    let i = strings.indexOf(s);
    if (i < 0) i = strings.push(s) - 1;
    return i;
  };
  const element = (name: string, attrs: Record<string, string>, children: number[][]): number[] => [
    ...v(idx(name)),
    ...v(Object.keys(attrs).length),
    ...Object.entries(attrs).flatMap(([k, val]) => [...v(idx(k)), ...v(idx(val))]),
    ...v(children.length),
    ...children.flat(),
  ];
  const classElements = classes.map((c) =>
    element('class', { id: c.id, name: c.name }, (c.fields ?? []).map((f) => element('field', { name: f.name, class: f.type, ...(f.constantPool ? { constantPool: 'true' } : {}), ...(f.array ? { dimension: '1' } : {}) }, []))),
  );
  const root = element('root', {}, [element('metadata', {}, classElements)]);
  const metadata = sized([...v(0), ...v(0), ...v(0), ...v(0), ...v(strings.length), ...strings.flatMap(str), ...root]);
  const pool = sized([...v(1), ...v(0), ...v(0), ...v(0), 1, ...v(pools.length), ...pools.flatMap((p) => [...v(p.classId), ...v(p.constants.length), ...p.constants.flatMap((c) => [...v(c.id), ...c.value])])]);
  const body = [...events.flatMap(sized)];
  const metaOffset = 68 + body.length;
  const cpOffset = metaOffset + metadata.length;
  const size = cpOffset + pool.length;
  const header = Buffer.alloc(68);
  header.write('FLR\0', 0, 'latin1');
  header.writeUInt16BE(2, 4);
  header.writeUInt16BE(1, 6);
  header.writeBigInt64BE(BigInt(size), 8);
  header.writeBigInt64BE(BigInt(cpOffset), 16);
  header.writeBigInt64BE(BigInt(metaOffset), 24);
  header.writeBigInt64BE(1_700_000_000_000_000_000n, 32);
  header.writeBigInt64BE(1_000_000_000n, 56);
  header.writeInt32BE(1, 64);
  return Buffer.concat([header, Buffer.from(body), Buffer.from(metadata), Buffer.from(pool)]);
}
