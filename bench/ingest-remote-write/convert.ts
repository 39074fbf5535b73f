/**
 * The acceptor's remote-write conversion alone: CPU-µs per sample of `remoteWriteV1BodyToRows`
 * (wire read, series cache, column batches) and finishing the batches into WAL payloads (builders
 * given back for reuse, as ingest does), over
 * the first 2,000 uncompressed request bodies of the bench stream (8,000 series, 500 samples a
 * request), after one warm-up pass. Five passes printed: the spread is the machine's noise, so
 * compare two versions by alternating runs.
 *
 *   node bench/ingest-remote-write/convert.ts
 */
import { releaseBuilder, remoteWriteV1BodyToRows } from '@floe/acceptor';
import { firstRequestBodies } from '../lib/remote-write-stream.ts';

const { bodies, samples } = firstRequestBodies(2000, Math.floor(Date.now() / 1000) * 1000 - 30 * 60_000);

function pass(): number {
  const t0 = process.cpuUsage();
  for (const body of bodies) {
    const out = remoteWriteV1BodyToRows(body);
    for (const batch of out.points.byHour.values()) {
      if (!batch.columns) continue;
      batch.columns.finish();
      // As ingest does: the builder (its leaves grown to a request's size) serves the next request.
      releaseBuilder('metrics', batch.columns);
    }
  }
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / samples;
}

pass();
const passes = Array.from({ length: 5 }, () => pass().toFixed(2));
console.log(`remote-write conversion: ${passes.join(' ')} CPU-µs per sample (${samples.toLocaleString('en-US')} samples a pass)`);
