import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { ExportTraceServiceRequestSchema, create, toBinary } from '@floe/proto';
import { startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Several writers on one WAL (cluster mode): they divide its segments between them, each span is
 * stored exactly once, and when one writer is killed the other takes its share over once the
 * dead writer's lease (writer.member_ttl) has expired.
 */
describe.each(['s3', 'fs'] as const)('writers sharing the WAL (cluster, %s store)', (storage) => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'shared';
  const RUN = randomBytes(4).toString('hex');

  beforeAll(async () => {
    floe = await startFloe({ mode: 'cluster', storage, config: { writer: { flush_interval: '200ms', poll_interval: '50ms', member_ttl: '3s' } } });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  interface WriterStatusBody {
    writer_id: string;
    writers: string[];
    segments_consumed: number;
    backlog: { segments: number };
  }
  /**
   * The writer's groups_deferred counter (table groups whose segments another writer committed
   * first: work done twice), 0 before the first.
   */
  const deferredGroups = async (adminUrl: string) => {
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('groups_deferred'))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  };
  const statusOf = async (adminUrl: string) => (await (await fetch(`${adminUrl}/status`)).json()) as WriterStatusBody;

  async function send(acked: Set<string>): Promise<void> {
    const traceId = randomBytes(16);
    const now = BigInt(Date.now()) * 1_000_000n;
    const spans = Array.from({ length: 5 }, () => ({ traceId, spanId: randomBytes(8), name: 'op', startTimeUnixNano: now, endTimeUnixNano: now + 1000n }));
    const req = create(ExportTraceServiceRequestSchema, {
      resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: `share-${RUN}` } } }] }, scopeSpans: [{ spans }] }],
    });
    const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, {
      method: 'POST',
      body: Buffer.from(toBinary(ExportTraceServiceRequestSchema, req)),
      headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/x-protobuf' },
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    for (const s of spans) acked.add(Buffer.from(s.spanId).toString('hex'));
  }

  /** Sends for `ms` on 4 concurrent streams. */
  async function streamFor(ms: number, acked: Set<string>): Promise<void> {
    const until = Date.now() + ms;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (Date.now() < until) await send(acked);
      }),
    );
  }

  const sql = async (q: string) =>
    flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(q), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant }, deadlineMs: 30_000 });

  /** Waits until every acknowledged span is stored; returns the stored rows and distinct ids. */
  const storedOnce = (acked: Set<string>) =>
    waitFor(
      'every acknowledged span committed',
      async () => {
        const ids = (await sql(`SELECT span_id FROM traces WHERE service_name = 'share-${RUN}'`)).toArray().map((r) => String(r!.span_id));
        const stored = new Set(ids);
        return [...acked].every((id) => stored.has(id)) ? { total: ids.length, distinct: stored.size } : undefined;
      },
      60_000,
      500,
    );

  it('two writers divide the segments and store every span once; a killed writer’s share is taken over', async () => {
    const second = await floe.startExtraWriter();
    try {
      // Both see both (each renews and reads the members every second with a 3 s ttl).
      const both = await waitFor(
        'both writers see each other',
        async () => {
          const [a, b] = await Promise.all([statusOf(floe.writerAdminUrl), statusOf(second.adminUrl)]);
          return a.writers.length === 2 && b.writers.length === 2 ? { a, b } : undefined;
        },
        20_000,
        200,
      );
      expect(both.a.writers).toEqual(both.b.writers);
      expect(both.a.writers).toContain(both.a.writer_id);
      expect(both.a.writers).toContain(both.b.writer_id);
      expect(both.a.writer_id).not.toBe(both.b.writer_id);

      const acked = new Set<string>();
      await streamFor(6_000, acked);
      expect(acked.size).toBeGreaterThan(100);
      const first = await storedOnce(acked);
      expect(first.total).toBe(first.distinct);
      expect(first.distinct).toBe(acked.size);
      // Each writer committed its share of the segments.
      const [a, b] = await Promise.all([statusOf(floe.writerAdminUrl), statusOf(second.adminUrl)]);
      expect(a.segments_consumed).toBeGreaterThan(0);
      expect(b.segments_consumed).toBeGreaterThan(0);
      // Divided, not raced: neither read a segment that the other committed.
      expect(await deferredGroups(floe.writerAdminUrl)).toBe(0);
      expect(await deferredGroups(second.adminUrl)).toBe(0);

      // kill -9 of the second writer in the middle of a stream: its share waits for its lease to
      // expire, then the first writer commits it.
      const streaming = streamFor(4_000, acked);
      await new Promise((r) => setTimeout(r, 1_500));
      await second.kill();
      await streaming;
      await waitFor('the first writer alone again', async () => ((await statusOf(floe.writerAdminUrl)).writers.length === 1 || undefined), 20_000, 200);
      const after = await storedOnce(acked);
      expect(after.total).toBe(after.distinct);
      expect(after.distinct).toBe(acked.size);
      await waitFor('the WAL drained', async () => ((await statusOf(floe.writerAdminUrl)).backlog.segments === 0 || undefined), 30_000, 200);
      // The dead writer's share was taken over, not committed twice.
      expect(await deferredGroups(floe.writerAdminUrl)).toBe(0);
    } finally {
      await second.kill();
    }
  });
});
