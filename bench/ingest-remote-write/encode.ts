/**
 * The writer's encoding alone: CPU-µs per sample of `ParquetWriter.write` (the leaf checks, the
 * sort, dictionaries and pages on the encoding thread, the file written) over the column batches
 * of the bench stream's first 1,600 requests (8,000 series, 500 samples a request), 200 requests
 * a flush as the writer's rounds take them, after one warm-up pass. Five passes printed: the
 * spread is the machine's noise, so compare two versions by alternating runs.
 *
 *   node bench/ingest-remote-write/encode.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { remoteWriteV1BodyToRows } from '@floe/acceptor';
import { metricsTable } from '@floe/schema';
import { ParquetWriter } from '@floe/storage';
import { firstRequestBodies } from '../lib/remote-write-stream.ts';

const PER_FLUSH = 200;
// Every sample in one hour: one table partition, one file a flush.
const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
const { bodies, samples } = firstRequestBodies(1600, hour + 60_000);
const payloads: Uint8Array[] = [];
for (const body of bodies) {
  for (const batch of remoteWriteV1BodyToRows(body).points.byHour.values()) if (batch.columns) payloads.push(batch.columns.finish());
}

const dir = mkdtempSync(join(tmpdir(), 'floe-bench-encode-'));
const writer = new ParquetWriter(dir);
async function pass(): Promise<number> {
  let cpu = 0;
  for (let i = 0; i < payloads.length; i += PER_FLUSH) {
    // process.cpuUsage counts every thread: the encoding thread's work included.
    const t0 = process.cpuUsage();
    const file = await writer.write(metricsTable, payloads.slice(i, i + PER_FLUSH));
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
} finally {
  writer.close();
  rmSync(dir, { recursive: true, force: true });
}
