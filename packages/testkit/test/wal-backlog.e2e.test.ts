import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { ExportTraceServiceRequestSchema, PromMetricMetadata_MetricType, create, toBinary } from '@floe/proto';
import { REMOTE_WRITE_HEADERS, remoteWriteMetadataBody, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * acceptor.max_wal_backlog: while the writer is down the WAL grows; past the limit ingest is
 * refused with 503 / UNAVAILABLE and Retry-After (retryable, so exporters and Prometheus hold
 * the data and send it again) instead of filling the disk. Once the writer is back and has
 * consumed the backlog, ingest is accepted again, and every acknowledged span is stored once.
 */
describe('WAL backlog limit (cluster)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'backlog';
  const RUN = randomBytes(4).toString('hex');
  const LIMIT = 16 * 1024;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'cluster', config: { acceptor: { max_wal_backlog: LIMIT }, writer: { flush_interval: '200ms', poll_interval: '50ms' } } });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const auth = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });

  /** One request of 20 spans of a fresh trace; its span ids. */
  function body(): { bytes: Buffer; spanIds: string[] } {
    const traceId = randomBytes(16);
    const now = BigInt(Date.now()) * 1_000_000n;
    const spans = Array.from({ length: 20 }, () => ({ traceId, spanId: randomBytes(8), name: 'backlogged', startTimeUnixNano: now, endTimeUnixNano: now + 1000n }));
    const req = create(ExportTraceServiceRequestSchema, {
      resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: `backlog-${RUN}` } } }] }, scopeSpans: [{ spans }] }],
    });
    return { bytes: Buffer.from(toBinary(ExportTraceServiceRequestSchema, req)), spanIds: spans.map((s) => Buffer.from(s.spanId).toString('hex')) };
  }

  const post = (bytes: Buffer) => fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: bytes, headers: { ...auth(), 'content-type': 'application/x-protobuf' } });

  it('refuses ingest with 503 while the writer is behind, and accepts it again once the writer has caught up', async () => {
    await floe.kill('writer');
    const acked = new Set<string>();
    const refusedIds: string[] = [];
    const refused = await waitFor(
      'ingest refused over the backlog limit',
      async () => {
        const b = body();
        const res = await post(b.bytes);
        if (res.status === 200) {
          await res.arrayBuffer();
          for (const id of b.spanIds) acked.add(id);
          return undefined;
        }
        refusedIds.push(...b.spanIds);
        return res;
      },
      30_000,
      100,
    );
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    const envelope = (await refused.json()) as { status: string; errorType: string; error: string };
    expect(envelope).toMatchObject({ status: 'error', errorType: 'unavailable' });
    expect(envelope.error).toMatch(/backlog of \d+ bytes in \d+ segments is over acceptor\.max_wal_backlog \(16384\)/);
    // Enough was acknowledged to pass the limit, and all of it stays durable.
    expect(acked.size).toBeGreaterThan(0);

    // gRPC: UNAVAILABLE, which OTLP exporters retry.
    const client = new grpc.Client(floe.otlpGrpcAddress, grpc.credentials.createInsecure());
    try {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(auth())) md.set(k, v);
      const b = body();
      refusedIds.push(...b.spanIds);
      const err = await new Promise<grpc.ServiceError | null>((resolve) => {
        client.makeUnaryRequest('/opentelemetry.proto.collector.trace.v1.TraceService/Export', (x: Buffer) => x, (x: Buffer) => x, b.bytes, md, (e) => resolve(e));
      });
      expect(err?.code).toBe(grpc.status.UNAVAILABLE);
      expect(err?.details).toMatch(/max_wal_backlog/);
    } finally {
      client.close();
    }

    // Prometheus remote write: 503, which its queue retries (spec 1, Errors 7).
    const rw = await fetch(`${floe.otlpHttpUrl}/api/v1/write`, {
      method: 'POST',
      body: remoteWriteMetadataBody([['backlog_requests_total', PromMetricMetadata_MetricType.COUNTER, 'Requests.']]),
      headers: { ...REMOTE_WRITE_HEADERS, ...auth() },
    });
    expect(rw.status).toBe(503);
    expect(((await rw.json()) as { errorType: string }).errorType).toBe('unavailable');

    // The writer comes back, consumes the backlog, and ingest is accepted again.
    await floe.restart('writer');
    await waitFor(
      'ingest accepted again',
      async () => {
        const b = body();
        const res = await post(b.bytes);
        await res.arrayBuffer();
        if (res.status !== 200) {
          refusedIds.push(...b.spanIds);
          return undefined;
        }
        for (const id of b.spanIds) acked.add(id);
        return true;
      },
      60_000,
      250,
    );

    // Every acknowledged span stored exactly once; nothing of a refused request.
    const stored = await waitFor(
      'acknowledged spans committed',
      async () => {
        const t = await flightDoGet({
          url: floe.flightAddress,
          ticket: Buffer.from(`SELECT span_id FROM traces WHERE service_name = 'backlog-${RUN}'`),
          metadata: auth(),
          deadlineMs: 30_000,
        });
        const ids = t.toArray().map((r) => String(r!.span_id));
        return [...acked].every((id) => ids.includes(id)) ? ids : undefined;
      },
      60_000,
      500,
    );
    expect(stored.length).toBe(acked.size);
    expect(new Set(stored).size).toBe(acked.size);
    expect(refusedIds.filter((id) => stored.includes(id))).toEqual([]);
  });

  it("the writer's admin /status shows the backlog it consumed and its rounds", async () => {
    interface Status {
      backlog: { segments: number; bytes: number; oldest_segment_age_ms: number | null; listed_at: string | null };
      rounds: number;
      failures_in_a_row: number;
      last_round: { started_at: string; duration_ms: number; segments: number; records: number; rows: number; files: number; commits: number; skipped_records: number } | null;
      last_error: unknown;
    }
    const status = async () => (await (await fetch(`${floe.writerAdminUrl}/status`)).json()) as Status;
    // The restarted writer's first round took the whole backlog the acceptors refused over.
    const drained = await waitFor('the backlog drained', async () => {
      const s = await status();
      return s.backlog.segments === 0 && s.rounds > 0 ? s : undefined;
    }, 30_000, 200);
    expect(drained.backlog).toMatchObject({ segments: 0, bytes: 0, oldest_segment_age_ms: null });
    expect(Date.parse(drained.backlog.listed_at!)).toBeGreaterThan(Date.now() - 30_000);
    expect(drained.failures_in_a_row).toBe(0);
    expect(drained.last_error).toBeNull();
    expect(drained.last_round).toMatchObject({ skipped_records: 0 });
    expect(drained.last_round!.segments).toBeGreaterThan(0);
    expect(drained.last_round!.rows).toBeGreaterThan(0);
    expect(drained.last_round!.commits).toBeGreaterThan(0);
  });
});
