/**
 * The acceptor's transcoding of spans alone: CPU-µs per span of `spansToPayloadsFromWire` over
 * bench/ingest-traces' bodies (100 spans each, fresh trace ids), five passes printed: the spread
 * is the machine's noise, so compare two versions by alternating runs.
 *
 *   node bench/ingest-traces/transcode.ts [bodies=2000] [passes=5]
 */
import { spansToPayloadsFromWire } from '@floe/acceptor';
import { MarkedTemplate, ingestTracesBody } from '../lib/otlp-gen.ts';

const BODIES = Number(process.argv[2] ?? 2000);
const PASSES = Number(process.argv[3] ?? 5);
const SPANS = 100;

const template = new MarkedTemplate(ingestTracesBody(SPANS), SPANS);
const bodies = Array.from({ length: BODIES }, () => template.next());
const results: string[] = [];
let payloadBytes = 0;
for (let pass = 0; pass <= PASSES; pass++) {
  let spans = 0;
  payloadBytes = 0;
  const t0 = process.cpuUsage();
  for (const body of bodies) {
    const converted = spansToPayloadsFromWire(body);
    spans += converted.accepted;
    for (const b of converted.byHour.values()) payloadBytes += b.payload.byteLength;
  }
  const used = process.cpuUsage(t0);
  // the first pass warms the compiler up and is not printed
  if (pass > 0) results.push(((used.user + used.system) / spans).toFixed(2));
}
const bodyBytes = bodies.reduce((n, b) => n + b.byteLength, 0);
console.log(`traces transcoding: ${results.join(' ')} CPU-µs per span (${(BODIES * SPANS).toLocaleString('en-US')} spans a pass; ${(bodyBytes / BODIES / SPANS).toFixed(0)} wire bytes and ${(payloadBytes / BODIES / SPANS).toFixed(0)} payload bytes per span)`);
