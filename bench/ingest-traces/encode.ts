/**
 * The writer's encoding of spans alone: CPU-µs per span of `ParquetWriter.write` (the sort,
 * dictionaries, pages and zstd on the encoding thread, the file written) over the column batches
 * that bench/ingest-traces' bodies make, `perFlush` requests (of 100 spans) a flush, after one
 * warm-up pass. The batches are read back from WAL segments as the writer reads them (their leaf
 * checks not counted). Five passes printed: the spread is the machine's noise, so compare two
 * versions by alternating runs.
 *
 *   node bench/ingest-traces/encode.ts [flushes=4] [perFlush=1000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spansToPayloadsFromWire } from '@floe/acceptor';
import { tracesTable } from '@floe/schema';
import { FsObjectStore, ParquetWriter, WalAppender, listSegments, newRecordId, type ColumnBatchHead } from '@floe/storage';
import { MarkedTemplate, ingestTracesBody } from '../lib/otlp-gen.ts';

const FLUSHES = Number(process.argv[2] ?? 4);
const PER_FLUSH = Number(process.argv[3] ?? 1000);
const SPANS = 100;

const template = new MarkedTemplate(ingestTracesBody(SPANS), SPANS);
const dir = mkdtempSync(join(tmpdir(), 'floe-bench-encode-traces-'));
const writer = new ParquetWriter(join(dir, 'work'));
const store = new FsObjectStore(join(dir, 'data'));
let spans = 0;
for (let f = 0; f < FLUSHES; f++) {
  const wal = new WalAppender(store, { instanceId: `bench-${f}`, segmentMaxAgeMs: 3_600_000, maxBatchBytes: 1 << 30 });
  const appends: Promise<unknown>[] = [];
  for (let i = 0; i < PER_FLUSH; i++) {
    const converted = spansToPayloadsFromWire(template.next());
    spans += converted.accepted;
    const records = [...converted.byHour.values()].map((b) => ({ header: { tenant: 'bench', dataset: 'default', table: 'traces', hour: b.hour, rows: b.rows, id: newRecordId() }, payload: b.payload }));
    appends.push(wal.append(records));
  }
  await Promise.all(appends);
  await wal.close();
}
const flushes: ColumnBatchHead[][] = [];
for (const segment of await listSegments(store)) flushes.push((await writer.readSegment(store, segment.key)).map((r) => r.batch!));

async function pass(): Promise<number> {
  let cpu = 0;
  for (const heads of flushes) {
    const t0 = process.cpuUsage();
    const file = await writer.write(tracesTable, heads);
    const used = process.cpuUsage(t0);
    cpu += used.user + used.system;
    rmSync(file.path, { force: true });
  }
  return cpu / spans;
}

try {
  await pass();
  const passes: string[] = [];
  for (let i = 0; i < 5; i++) passes.push((await pass()).toFixed(2));
  console.log(`traces encoding: ${passes.join(' ')} CPU-µs per span (${spans.toLocaleString('en-US')} spans a pass, ${PER_FLUSH} requests of ${SPANS} spans a flush)`);
} finally {
  writer.close();
  rmSync(dir, { recursive: true, force: true });
}
