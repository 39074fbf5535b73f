// Test helpers of the table repair suites (table-repair.test.ts, table-register.test.ts), over
// test-support.ts's fixture: traces tables written a file at a time with every version kept, a
// version damaged in place, and the catalog row read back as stored.

import { expect } from 'vitest';
import { FloeError } from '@floe/errors';
import { floeTableDef, type TableHandle } from '@floe/iceberg';
import { ColumnBatchBuilder } from '@floe/storage';
import { appendRowsFile, appendSpanFile, createTracesTable, spanRows, sqlList, withDuck, type Fixture } from './test-support.ts';

export const HOUR_MS = 3_600_000;
/** The hour the tables' spans fall in: a closed hour, as the data a repair finds. */
export const DATA_HOUR = Math.floor(Date.now() / HOUR_MS) - 5;

/** A table as written: the handle of every version (index 0: the empty table) and the data file keys, in the order appended. */
export interface WrittenTable {
  versions: TableHandle[];
  data: string[];
}

/** The FloeError a call throws, as kind and message. */
export async function refusal(p: Promise<unknown>): Promise<{ kind: string; message: string }> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(FloeError);
  return { kind: (err as FloeError).kind, message: (err as FloeError).message };
}

/** The helpers over the fixture a suite opens in its beforeAll (so it is read at each call, not now). */
export function tableHelpers(fixture: () => Fixture) {
  const key = (h: TableHandle) => fixture().store.keyFromUri(h.metadataLocation);
  return {
    /** A traces table of `tenant` with `files` appends of 10 spans each. */
    async table(tenant: string, files: number, dataset = 'default'): Promise<WrittenTable> {
      const f = fixture();
      const versions = [await createTracesTable(f.catalog, tenant, dataset)];
      const data: string[] = [];
      for (let i = 0; i < files; i++) {
        const r = await appendSpanFile(f, versions.at(-1)!, DATA_HOUR, 10, 100 * (i + 1));
        versions.push(r.handle);
        data.push(r.key);
      }
      return { versions, data };
    },
    /**
     * Appends a file of `rows` spans written as the writer writes its usual flush: column batches
     * through Floe's own encoder, whose pages carry crcs (appendSpanFile's NDJSON goes through
     * DuckDB, whose pages do not).
     */
    async appendBatchFile(handle: TableHandle, rows: number, seed: number): Promise<{ handle: TableHandle; key: string }> {
      const b = ColumnBatchBuilder.forTable(floeTableDef(handle));
      for (const line of new TextDecoder().decode(spanRows(DATA_HOUR, rows, seed)).trim().split('\n')) b.addRow(JSON.parse(line) as Record<string, unknown>);
      return appendRowsFile(fixture(), handle, 'traces', DATA_HOUR, b.finish());
    },
    /**
     * Flips a bit 20 bytes before the end of the data file's largest column chunk, in place: inside
     * its last page's bytes (Floe's encoder writes one data page a chunk), the size unchanged, as a
     * bit rotting on a disk. Returns the chunk, as DuckDB's parquet_metadata places it.
     */
    async flipInPage(dataKey: string): Promise<{ rowGroup: number; column: string; start: number; end: number }> {
      const f = fixture();
      const [chunk] = await withDuck(async (q) =>
        (await q(`SELECT row_group_id, path_in_schema, coalesce(dictionary_page_offset, data_page_offset), total_compressed_size FROM parquet_metadata(${sqlList([f.store.localPath(dataKey)!])}) ORDER BY total_compressed_size DESC LIMIT 1`)).map((r) => ({
          rowGroup: Number(r[0]),
          column: String(r[1]).split(', ').join('.'),
          start: Number(r[2]),
          end: Number(r[2]) + Number(r[3]),
        })),
      );
      const bytes = Buffer.from((await f.store.get(dataKey))!);
      bytes[chunk!.end - 20]! ^= 0x10;
      await f.store.put(dataKey, bytes);
      return chunk!;
    },
    /** The object key of a version's metadata file. */
    key,
    /** Overwrites a version's metadata file with JSON cut short, as an upload that stopped midway. */
    damage: (h: TableHandle) => fixture().store.put(key(h), new TextEncoder().encode('{"format-version": 2, "table-uuid": ')),
    /** The metadata location the table's catalog row holds, read from the row itself rather than through the catalog under test; undefined without a row. */
    async pointer(tenant: string, dataset = 'default'): Promise<string | undefined> {
      const res = await fixture().db.query<{ metadata_location: string }>(`SELECT metadata_location FROM iceberg_tables WHERE table_namespace = $1 AND table_name = 'traces'`, [`${tenant}.${dataset}`]);
      return res.rows[0]?.metadata_location;
    },
  };
}
