import { open } from 'node:fs/promises';
import { columnLeaves, plainBatch, type BatchSchemaInfo, type ColumnBatchView, type LeafShape, type LeafType } from './column-batch.ts';
import {
  bitWidth,
  dataPageHeader,
  encodeLevelRuns,
  fileFooter,
  LIST,
  MAP,
  OPTIONAL,
  PAR1,
  packBooleans,
  REPEATED,
  REQUIRED,
  UNCOMPRESSED,
  UTF8,
  writeColumnChunkStart,
  writeSchemaElement,
  type SchemaElement,
} from './parquet-format.ts';
import { ThriftWriter } from './thrift-compact.ts';
import { writeParts } from './write-parts.ts';

/**
 * Column batches of one schema → one uncompressed Parquet file, for DuckDB to read and the writer
 * to sort and encode (parquet-writer.ts). Each leaf's column chunk in a row group is one data
 * page: the levels of consecutive batches encoded together, then their PLAIN values written as
 * they are (slices of the payloads, not copied). One page per chunk because DuckDB pays per page:
 * a page per record (100 rows) made its read and sort about a third dearer. Row groups hold about
 * ROW_GROUP_ROWS rows, so DuckDB reads the file in parallel.
 */

const ROW_GROUP_ROWS = 65_536;
/** Value bytes per row group at most, far below the 2 GiB a page's i32 size allows. */
const ROW_GROUP_BYTES = 256 * 1024 * 1024;


interface LeafMeta extends LeafShape {
  path: string[];
}

const layouts = new WeakMap<BatchSchemaInfo, { elements: SchemaElement[]; leaves: LeafMeta[] }>();

/** The Parquet schema of a batch schema and its leaves' paths, in payload order (from its columns). */
function layout(info: BatchSchemaInfo): { elements: SchemaElement[]; leaves: LeafMeta[] } {
  const known = layouts.get(info);
  if (known) return known;
  const elements: SchemaElement[] = [{ name: 'schema', children: info.columns.length }];
  const leaf = (name: string, type: LeafType, repetition: number): SchemaElement => ({ name, type, repetition, ...(type === 'string' ? { converted: UTF8 } : {}) });
  const paths: string[][] = [];
  for (const c of info.columns) {
    const name = c.name;
    switch (c.kind) {
      case 'primitive':
        elements.push(leaf(name, c.type, OPTIONAL));
        paths.push([name]);
        break;
      case 'map':
        elements.push({ name, repetition: OPTIONAL, children: 1, converted: MAP });
        elements.push({ name: 'key_value', repetition: REPEATED, children: 2 });
        elements.push(leaf('key', 'string', REQUIRED));
        elements.push(leaf('value', c.type, OPTIONAL));
        paths.push([name, 'key_value', 'key'], [name, 'key_value', 'value']);
        break;
      case 'list':
        elements.push({ name, repetition: OPTIONAL, children: 1, converted: LIST });
        elements.push({ name: 'list', repetition: REPEATED, children: 1 });
        elements.push(leaf('element', c.type, OPTIONAL));
        paths.push([name, 'list', 'element']);
        break;
      case 'structList':
        elements.push({ name, repetition: OPTIONAL, children: 1, converted: LIST });
        elements.push({ name: 'list', repetition: REPEATED, children: 1 });
        elements.push({ name: 'element', repetition: OPTIONAL, children: c.fields.length });
        for (const f of c.fields) {
          elements.push(leaf(f.name, f.type, OPTIONAL));
          paths.push([name, 'list', 'element', f.name]);
        }
    }
  }
  const shapes = info.columns.flatMap(columnLeaves);
  const result = { elements, leaves: shapes.map((l, i) => ({ path: paths[i]!, type: l.type, maxDef: l.maxDef, maxRep: l.maxRep })) };
  layouts.set(info, result);
  return result;
}

interface ChunkMeta {
  offset: number;
  bytes: number;
  levels: number;
}

/** Writes the batches (one schema, read by readColumnBatch) to `path`; returns the row count. */
export async function writeColumnBatchParquet(path: string, views: readonly ColumnBatchView[]): Promise<number> {
  if (views.length === 0) throw new TypeError('no column batches to write');
  // Pages hold every row's levels and values: run leaves are written out row by row.
  const batches = views.map(plainBatch);
  const info = batches[0]!.schema;
  const { elements, leaves } = layout(info);
  for (const b of batches) if (b.schema !== info) throw new TypeError('column batches of different schemas in one file');

  const file = await open(path, 'w');
  try {
    let offset = 0;
    let pending: Uint8Array[] = [];
    const flush = async () => {
      await writeParts(file, pending);
      pending = [];
    };
    const put = async (b: Uint8Array) => {
      if (b.length === 0) return;
      pending.push(b);
      offset += b.length;
      if (pending.length >= 1024) await flush();
    };
    await put(PAR1);

    const groups: { rows: number; chunks: ChunkMeta[] }[] = [];
    let totalRows = 0;
    for (let start = 0; start < batches.length; ) {
      let end = start;
      let rows = 0;
      let bytes = 0;
      while (end < batches.length && (end === start || (rows < ROW_GROUP_ROWS && bytes < ROW_GROUP_BYTES))) {
        const b = batches[end++]!;
        rows += b.rows;
        for (const l of b.leaves) bytes += l.values.length;
      }
      const chunks: ChunkMeta[] = [];
      for (let l = 0; l < leaves.length; l++) {
        const { maxDef, maxRep, type } = leaves[l]!;
        let levels = 0;
        let valueBytes = 0;
        for (let i = start; i < end; i++) {
          const leaf = batches[i]!.leaves[l]!;
          levels += leaf.levels;
          valueBytes += leaf.values.length;
        }
        const reps = maxRep > 0 ? encodeLevels(batches, start, end, l, 'reps', levels, bitWidth(maxRep), maxRep) : undefined;
        const defs = encodeLevels(batches, start, end, l, 'defs', levels, bitWidth(maxDef), maxDef);
        const values = type === 'boolean' ? packBooleans(batches.slice(start, end).map((b) => b.leaves[l]!.values)) : undefined;
        const body = (reps ? 4 + reps.length : 0) + 4 + defs.length + (values ? values.length : valueBytes);
        const header = dataPageHeader(levels, body, body);
        const chunk: ChunkMeta = { offset, bytes: header.length + body, levels };
        await put(header);
        for (const lv of [reps, defs]) {
          if (!lv) continue;
          const len = new Uint8Array(4);
          new DataView(len.buffer).setUint32(0, lv.length, true);
          await put(len);
          await put(lv);
        }
        if (values) await put(values);
        else for (let i = start; i < end; i++) await put(batches[i]!.leaves[l]!.values);
        chunks.push(chunk);
      }
      groups.push({ rows, chunks });
      totalRows += rows;
      start = end;
    }

    const w = new ThriftWriter()
      .i32(1, 1)
      .listStruct(2, elements, writeSchemaElement)
      .i64(3, totalRows)
      .listStruct(4, groups, (t, g) => {
        t.listStruct(1, g.chunks.map((chunk, i) => ({ chunk, leaf: leaves[i]! })), (c, { chunk, leaf }) => {
          writeColumnChunkStart(c, { type: leaf.type, path: leaf.path, codec: UNCOMPRESSED, levels: chunk.levels, uncompressed: chunk.bytes, compressed: chunk.bytes, offset: chunk.offset }).endStruct();
        });
        t.i64(2, g.chunks.reduce((n, c) => n + c.bytes, 0));
        t.i64(3, g.rows);
      })
      .string(6, 'floe column batches')
      .end();
    await put(fileFooter(w));
    await flush();
    return totalRows;
  } finally {
    await file.close();
  }
}

/**
 * The levels of leaf `l` over batches [start, end) in Parquet's RLE/bit-packed hybrid: runs of 8
 * or more equal levels as RLE runs, the rest in bit-packed groups of 8 (only the last group may
 * be padded). Throws on a level above `max` (a payload this reader cannot trust).
 */
function encodeLevels(batches: readonly ColumnBatchView[], start: number, end: number, l: number, which: 'defs' | 'reps', n: number, width: number, max: number): Uint8Array {
  // The levels of all batches in one array first: runs and groups cross batch boundaries.
  let levels: Uint8Array;
  if (end - start === 1) levels = batches[start]!.leaves[l]![which]!;
  else {
    levels = new Uint8Array(n);
    let p = 0;
    for (let i = start; i < end; i++) {
      const src = batches[i]!.leaves[l]![which]!;
      levels.set(src, p);
      p += src.length;
    }
  }
  return encodeLevelRuns(levels, n, width, max);
}
