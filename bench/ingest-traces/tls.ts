/**
 * bench/ingest-traces/tls.ts: what TLS costs ingest. The load of bench/ingest-traces (OTLP HTTP
 * protobuf, 100 spans a request) against `floe all` in cleartext and with `tls` set, alternated
 * (cleartext, TLS, cleartext, TLS) so the machine's drift weighs on both: spans/s acknowledged
 * and Floe's CPU per span of each, and the ratio TLS / cleartext.
 *
 *   node bench/ingest-traces/tls.ts [secondsPerRun=20] [concurrency=16]
 */
import { makeTestAuthority } from '@floe/testkit';
import { measuredDrive, type MeasuredDrive } from '../lib/drive.ts';
import { startFloeProcess } from '../lib/floe-process.ts';
import { MarkedTemplate, ingestTracesBody } from '../lib/otlp-gen.ts';

const SECONDS = Number(process.argv[2] ?? 20);
const CONCURRENCY = Number(process.argv[3] ?? 16);
const SPANS = 100;
const TEMPLATE = new MarkedTemplate(ingestTracesBody(SPANS), SPANS);

const ca = makeTestAuthority();
const leaf = ca.issue('server', ['localhost', '127.0.0.1']);

async function run(tls: boolean): Promise<MeasuredDrive> {
  const floe = await startFloeProcess(tls ? { tls: { cert_file: leaf.certFile, key_file: leaf.keyFile, ca_file: ca.caFile } } : {});
  const r = await measuredDrive(floe.pid, {
    url: `${floe.otlpHttpUrl}/v1/traces`,
    headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${floe.apiKey}`, 'x-tenant-id': floe.tenant },
    seconds: SECONDS,
    concurrency: CONCURRENCY,
    next: () => ({ body: TEMPLATE.next(), items: SPANS }),
  });
  await floe.stop();
  floe.remove();
  if (r.errors > 0) throw new Error(`${tls ? 'TLS' : 'cleartext'} run: ${r.errors} errors, first: ${r.firstError}`);
  return r;
}

const runs: Array<{ tls: boolean; r: MeasuredDrive }> = [];
for (const tls of [false, true, false, true]) runs.push({ tls, r: await run(tls) });
const line = (tls: boolean) => {
  const rs = runs.filter((x) => x.tls === tls).map((x) => x.r);
  const rates = rs.map((r) => r.items / r.seconds);
  const items = rs.reduce((a, r) => a + r.items, 0);
  const cpu = rs.reduce((a, r) => a + r.cpu, 0);
  const gen = rs.reduce((a, r) => a + r.genCpu, 0);
  const seconds = rs.reduce((a, r) => a + r.seconds, 0);
  return { rate: items / seconds, text: `${rates.map((x) => x.toFixed(0)).join(' / ')} spans/s; Floe ${((cpu * 1e6) / items).toFixed(1)} µs per span (${(cpu / seconds).toFixed(2)} cores), generator ${((gen * 1e6) / items).toFixed(1)} µs per span` };
};
const clear = line(false);
const secure = line(true);
console.log(`bench/ingest-traces/tls.ts: ${SECONDS}s per run, ${CONCURRENCY} concurrent requests, ${SPANS} spans/request (${TEMPLATE.body.length} bytes), alternated`);
console.log(`  cleartext: ${clear.text}`);
console.log(`  TLS:       ${secure.text}`);
console.log(`  ratio TLS / cleartext: ${(secure.rate / clear.rate).toFixed(3)}`);
