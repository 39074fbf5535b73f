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
import { remoteWriteV1BodyToRows } from '@floe/acceptor';
import { metricsTable } from '@floe/schema';
import { newRecordId } from '@floe/storage';
import { firstRequestBodies } from '../lib/remote-write-stream.ts';
import { measureWriterEncoding } from '../lib/writer-encoding.ts';

const PER_FLUSH = 200;
const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
const { bodies, samples } = firstRequestBodies(1600, hour + 60_000);

// Each flush's 200 requests go to one WAL segment: samples reference their series, which the
// segment defines once.
const flushes = [];
for (let i = 0; i < bodies.length; i += PER_FLUSH) {
  flushes.push(
    bodies.slice(i, i + PER_FLUSH).map((body) =>
      [...remoteWriteV1BodyToRows(body).points.byHour.values()].flatMap((b) =>
        b.columns ? [{ header: { tenant: 'bench', dataset: 'default', table: 'metrics', hour: b.hour, rows: b.columns.rows, id: newRecordId() }, payload: b.columns.finish(), series: b.columns.templates.slice() }] : [],
      ),
    ),
  );
}
const { passes, walBytes, segments } = await measureWriterEncoding(metricsTable, flushes, samples);
console.log(`remote-write encoding: ${passes.map((p) => p.toFixed(2)).join(' ')} CPU-µs per sample (${samples.toLocaleString('en-US')} samples a pass, ${PER_FLUSH} requests a flush)`);
console.log(`WAL: ${(walBytes / samples).toFixed(1)} bytes per sample (${segments} segments of ${PER_FLUSH} requests, series definitions included)`);
