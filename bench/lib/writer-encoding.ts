import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TableDef } from '@floe/schema';
import { FsObjectStore, ParquetWriter, WalAppender, listSegments, type ColumnBatchHead, type WalRecord } from '@floe/storage';

export interface WriterEncoding {
  /** CPU-µs per item of each of five passes, after one warm-up pass. */
  passes: number[];
  /** Bytes of the WAL segments (series definitions included). */
  walBytes: number;
  segments: number;
}

/**
 * The writer's encoding alone (bench/ingest-*\/encode.ts): each flush's requests appended to one
 * WAL segment and read back as the writer reads them (their leaf checks not counted), then
 * `ParquetWriter.write` of each segment's batches timed in CPU (the sort, dictionaries, pages and
 * zstd on the encoding thread, the file written), per item of `items` a pass.
 */
export async function measureWriterEncoding(table: TableDef, flushes: readonly (readonly WalRecord[])[][], items: number): Promise<WriterEncoding> {
  const dir = mkdtempSync(join(tmpdir(), 'floe-bench-encode-'));
  const writer = new ParquetWriter(join(dir, 'work'));
  try {
    const store = new FsObjectStore(join(dir, 'data'));
    for (const [f, requests] of flushes.entries()) {
      const wal = new WalAppender(store, { instanceId: `bench-${f}`, segmentMaxAgeMs: 3_600_000, maxBatchBytes: 1 << 30 });
      await Promise.all(requests.map((records) => wal.append([...records])));
      await wal.close();
    }
    const segments = await listSegments(store);
    const batches: ColumnBatchHead[][] = [];
    for (const segment of segments) batches.push((await writer.readSegment(store, segment.key)).map((r) => r.batch!));
    const pass = async () => {
      let cpu = 0;
      for (const heads of batches) {
        const t0 = process.cpuUsage();
        const file = await writer.write(table, heads);
        const used = process.cpuUsage(t0);
        cpu += used.user + used.system;
        rmSync(file.path, { force: true });
      }
      return cpu / items;
    };
    await pass();
    const passes: number[] = [];
    for (let i = 0; i < 5; i++) passes.push(await pass());
    return { passes, walBytes: segments.reduce((n, s) => n + s.size, 0), segments: segments.length };
  } finally {
    writer.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
