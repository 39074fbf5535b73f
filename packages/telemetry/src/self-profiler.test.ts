import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExportProfilesServiceRequestSchema, fromBinary, type ExportProfilesServiceRequest } from '@floe/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { HEAP_SAMPLING_INTERVAL_BYTES, startSelfProfiler, type SelfProfiler } from './self-profiler.ts';

/**
 * The self-profiler against a stand-in acceptor that keeps every request: with heapProfiles each
 * window's request carries a CPU and an inuse_space profile; two profilers of one process share
 * V8's single heap sampler, so one stopping leaves the other's heap profiles going.
 */

// Warnings (a heap sampler that could not start, a profile not exported) are kept to be checked.
const warnings: string[] = [];
const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
const received: Array<{ headers: Record<string, string | string[] | undefined>; body: ExportProfilesServiceRequest }> = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: fromBinary(ExportProfilesServiceRequestSchema, Buffer.concat(chunks)) });
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const start = (serviceName: string, heapProfiles: boolean) =>
  startSelfProfiler({
    serviceName,
    serviceVersion: '0.0.0-test',
    instanceId: 'test',
    sampleRateHz: 1000,
    intervalMs: 300,
    heapProfiles,
    endpoint: () => url,
    headers: { 'x-tenant-id': '_system' },
    log,
  });

/** The profile types of a request, with their totals and resource service.name. */
function summary(r: ExportProfilesServiceRequest) {
  const s = r.dictionary!.stringTable;
  const rp = r.resourceProfiles[0]!;
  return {
    service: rp.resource!.attributes.find((a) => a.key === 'service.name')?.value?.value.value,
    profiles: rp.scopeProfiles[0]!.profiles.map((p) => ({
      type: `${s[p.sampleType!.typeStrindex]}/${s[p.sampleType!.unitStrindex]}`,
      period: `${s[p.periodType!.typeStrindex]}/${s[p.periodType!.unitStrindex]}=${p.period}`,
      total: p.samples.reduce((sum, x) => sum + x.values.reduce((a, b) => a + b, 0n), 0n),
    })),
  };
}

async function until<T>(what: string, f: () => T | undefined, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    // Allocate meanwhile, so the heap sampler has something alive to report.
    keep.push(Array.from({ length: 5_000 }, (_, i) => ({ i })));
    await new Promise((r) => setTimeout(r, 50));
  }
}
const keep: unknown[] = [];

describe('startSelfProfiler', () => {
  it('sends one request per window with a CPU profile and, with heapProfiles, a live-heap profile', async () => {
    const profilers: SelfProfiler[] = [];
    try {
      profilers.push(await start('cpu-only', false), await start('heap-a', true), await start('heap-b', true));
      const withHeap = (service: string, after = 0) =>
        received.slice(after).map((r) => summary(r.body)).find((x) => x.service === service && x.profiles.some((p) => p.type === 'inuse_space/bytes' && p.total > 0n));
      const a = await until('a heap profile of heap-a', () => withHeap('heap-a'));
      expect(a.profiles.map((p) => p.type)).toEqual(['cpu/nanoseconds', 'inuse_space/bytes']);
      expect(a.profiles[1]!.period).toBe(`space/bytes=${HEAP_SAMPLING_INTERVAL_BYTES}`);
      await until('a heap profile of heap-b', () => withHeap('heap-b'));
      const cpuOnly = await until('a profile of cpu-only', () => received.map((r) => summary(r.body)).find((x) => x.service === 'cpu-only'));
      expect(cpuOnly.profiles.map((p) => p.type)).toEqual(['cpu/nanoseconds']);
      expect(received[0]!.headers['x-tenant-id']).toBe('_system');

      // heap-a stopping leaves the shared sampler running for heap-b.
      await profilers[1]!.stop();
      const mark = received.length;
      await until('a heap profile of heap-b after heap-a stopped', () => withHeap('heap-b', mark));
      // No heap profile failed to start or be taken (an export timing out on a busy machine may).
      expect(warnings.filter((w) => /heap/i.test(w))).toEqual([]);
    } finally {
      for (const p of profilers) await p.stop();
    }
  }, 30_000);
});
