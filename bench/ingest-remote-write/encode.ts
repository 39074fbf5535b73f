/**
 * The writer's encoding alone: CPU-µs per sample of `ParquetWriter.write` (the sort,
 * dictionaries and pages on the encoding thread, the file written) over the column batches of
 * the bench stream's first 1,600 requests (8,000 series, 500 samples a request), 200 requests a
 * flush as the writer's rounds take them, after one warm-up pass. The batches are read from WAL
 * segments of 200 requests each, as the writer reads them (their leaf checks are not counted). Five passes printed: the
 * spread is the machine's noise, so compare two versions by alternating runs.
 *
 *   node bench/ingest-remote-write/encode.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { remoteWriteV1BodyToRows } from '@floe/acceptor';
import { metricsTable } from '@floe/schema';
import { FsObjectStore, ParquetWriter, WalAppender, listSegments, newRecordId, type ColumnBatchHead } from '@floe/storage';
import { firstRequestBodies } from '../lib/remote-write-stream.ts';

const PER_FLUSH = 200;
const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
const { bodies, samples } = firstRequestBodies(1600, hour + 60_000);

const dir = mkdtempSync(join(tmpdir(), 'floe-bench-encode-'));
const writer = new ParquetWriter(join(dir, 'work'));

// The batches as the writer reads them: each flush's 200 requests appended to one WAL segment
// (samples reference their series, which the segment defines once), then read back and checked.
const store = new FsObjectStore(join(dir, 'data'));
const flushes: ColumnBatchHead[][] = [];
for (let i = 0; i < bodies.length; i += PER_FLUSH) {
  const wal = new WalAppender(store, { instanceId: `bench-${i}`, segmentMaxAgeMs: 3_600_000, maxBatchBytes: 1 << 30 });
  await Promise.all(
    bodies.slice(i, i + PER_FLUSH).map((body) => {
      const records = [...remoteWriteV1BodyToRows(body).points.byHour.values()].flatMap((b) =>
        b.columns ? [{ header: { tenant: 'bench', dataset: 'default', table: 'metrics', hour: b.hour, rows: b.columns.rows, id: newRecordId() }, payload: b.columns.finish(), series: b.columns.templates.slice() }] : [],
      );
      return wal.append(records);
    }),
  );
  await wal.close();
}
const segments = await listSegments(store);
for (const segment of segments) flushes.push((await writer.readSegment(store, segment.key)).map((r) => r.batch!));
const walBytes = segments.reduce((n, s) => n + s.size, 0);

async function pass(): Promise<number> {
  let cpu = 0;
  for (const heads of flushes) {
    const t0 = process.cpuUsage();
    const file = await writer.write(metricsTable, heads);
    const used = process.cpuUsage(t0);
    cpu += used.user + used.system;
    rmSync(file.path, { force: true });
  }
  return cpu / samples;
}

try {
  await pass();
  const passes: string[] = [];
  for (let i = 0; i < 5; i++) passes.push((await pass()).toFixed(2));
  console.log(`remote-write encoding: ${passes.join(' ')} CPU-µs per sample (${samples.toLocaleString('en-US')} samples a pass, ${PER_FLUSH} requests a flush)`);
  console.log(`WAL: ${(walBytes / samples).toFixed(1)} bytes per sample (${segments.length} segments of ${PER_FLUSH} requests, series definitions included)`);
} finally {
  writer.close();
  rmSync(dir, { recursive: true, force: true });
}
