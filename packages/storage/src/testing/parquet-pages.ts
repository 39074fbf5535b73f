// Test helper: every page of a Parquet file as its column chunks lay them out, read without the
// code under test's page walk (parquet-concat.ts), so tests can check crcs and aim damage at a
// page. Not exported from the package.

import { readFile } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { readParquetFooter } from '../parquet-concat.ts';
import { readThriftStruct, thriftField, thriftInt, type ThriftList, type ThriftStruct } from '../thrift-compact.ts';

export interface PageAt {
  rowGroup: number;
  column: string;
  /** The page header's offset in the file. */
  at: number;
  /** Where the page's bytes start, after the header, and how many there are. */
  bodyAt: number;
  size: number;
  /** PageType: 0 data, 2 dictionary. */
  type: number;
  /** PageHeader.crc as written (a signed i32), if any. */
  crc: number | undefined;
  /** CRC-32 of the page's bytes, as a signed i32. */
  bytesCrc: number;
}

const items = (s: ThriftStruct, id: number) => (thriftField(s, id)?.value as ThriftList | undefined)?.items ?? [];

export async function pagesOf(path: string): Promise<PageAt[]> {
  const bytes = await readFile(path);
  const footer = await readParquetFooter(path);
  const pages: PageAt[] = [];
  items(footer.metadata, 4).forEach((g, rowGroup) => {
    for (const c of items(g as ThriftStruct, 1)) {
      const meta = thriftField(c as ThriftStruct, 3)!.value as ThriftStruct;
      const column = items(meta, 3).map((p) => Buffer.from(p as Uint8Array).toString()).join('.');
      // The chunk's first page: its dictionary page (offset 11) if any, else its data page (9); 7 is its size.
      const start = Number(thriftInt(meta, 11) || thriftInt(meta, 9));
      const end = start + Number(thriftInt(meta, 7));
      for (let at = start; at < end; ) {
        const { struct, end: bodyAt } = readThriftStruct(bytes, at);
        const size = Number(thriftInt(struct, 3));
        const crc = thriftField(struct, 4)?.value as bigint | undefined;
        pages.push({ rowGroup, column, at, bodyAt, size, type: Number(thriftInt(struct, 1)), crc: crc === undefined ? undefined : Number(crc), bytesCrc: crc32(bytes.subarray(bodyAt, bodyAt + size)) | 0 });
        at = bodyAt + size;
      }
    }
  });
  return pages;
}
