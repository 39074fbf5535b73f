/**
 * The writer's encoding of spans alone: CPU-µs per span of `ParquetWriter.write` over the column
 * batches that bench/ingest-traces' bodies make, `perFlush` requests (of 100 spans) a flush
 * (bench/lib/writer-encoding.ts). Five passes printed: the spread is the machine's noise, so
 * compare two versions by alternating runs.
 *
 *   node bench/ingest-traces/encode.ts [flushes=4] [perFlush=1000]
 */
import { spansToPayloadsFromWire } from '@floe/acceptor';
import { tracesTable } from '@floe/schema';
import { newRecordId } from '@floe/storage';
import { MarkedTemplate, ingestTracesBody } from '../lib/otlp-gen.ts';
import { measureWriterEncoding } from '../lib/writer-encoding.ts';

const FLUSHES = Number(process.argv[2] ?? 4);
const PER_FLUSH = Number(process.argv[3] ?? 1000);
const SPANS = 100;

const template = new MarkedTemplate(ingestTracesBody(SPANS), SPANS);
let spans = 0;
const flushes = Array.from({ length: FLUSHES }, () =>
  Array.from({ length: PER_FLUSH }, () => {
    const converted = spansToPayloadsFromWire(template.next());
    spans += converted.accepted;
    return [...converted.byHour.values()].map((b) => ({ header: { tenant: 'bench', dataset: 'default', table: 'traces', hour: b.hour, rows: b.rows, id: newRecordId() }, payload: b.payload }));
  }),
);
const { passes } = await measureWriterEncoding(tracesTable, flushes, spans);
console.log(`traces encoding: ${passes.map((p) => p.toFixed(2)).join(' ')} CPU-µs per span (${spans.toLocaleString('en-US')} spans a pass, ${PER_FLUSH} requests of ${SPANS} spans a flush)`);
