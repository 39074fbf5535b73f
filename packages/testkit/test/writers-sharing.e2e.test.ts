import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { ExportTraceServiceRequestSchema, create, toBinary } from '@floe/proto';
import { startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Several writers on one WAL (cluster mode): they divide its segments between them, each span is
 * stored exactly once, and when one writer is killed the other takes its share over once the
 * dead writer's lease (writer.member_ttl) has expired. Several compactors divide the tables.
 */
describe.each(['s3', 'fs'] as const)('writers sharing the WAL, compactors sharing the tables (cluster, %s store)', (storage) => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'shared';
  const RUN = randomBytes(4).toString('hex');

  beforeAll(async () => {
    floe = await startFloe({
      mode: 'cluster',
      storage,
      config: { writer: { flush_interval: '200ms', poll_interval: '50ms', member_ttl: '3s' }, compactor: { interval: '500ms', min_file_age: '0s', member_ttl: '3s' } },
    });
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
    const second = await floe.startExtraService('writer');
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
      expect(await (await fetch(`${second.adminUrl}/metrics`)).text()).toContain('group_members{group="writer"} 2');
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

  interface CompactorStatusBody {
    compactorId: string;
    compactors: string[];
    passes: number;
    lastPass: { startedAt: string; tables?: number; failed: boolean } | null;
  }
  const compactorStatus = async (adminUrl: string) => (await (await fetch(`${adminUrl}/status`)).json()) as CompactorStatusBody;

  // The compactors' division does not depend on the store: one cluster shows it.
  if (storage === 'fs') {
    it('two compactors divide the tables: each table is visited by one of them, and all of them by the survivor', async () => {
      // Tables of several tenants, so that both compactors have a share (8 tables: the chance
      // that one compactor owns none of them is 1 in 128).
      const tenants = Array.from({ length: 8 }, (_, i) => `cshare${i}`);
      for (const t of tenants) {
        const k = (await floe.bootstrap(t)).api_key;
        const res = await fetch(`${floe.otlpHttpUrl}/v1/logs`, {
          method: 'POST',
          headers: { authorization: `Bearer ${k}`, 'x-tenant-id': t, 'content-type': 'application/json' },
          body: JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: String(Date.now() * 1e6), body: { stringValue: `line of ${t}` } }] }] }] }),
        });
        expect(res.status).toBe(200);
      }
      const extra = await floe.startExtraService('compactor');
      try {
        const both = await waitFor(
          'both compactors see each other',
          async () => {
            const [a, b] = await Promise.all([compactorStatus(floe.compactorAdminUrl), compactorStatus(extra.adminUrl)]);
            return a.compactors.length === 2 && b.compactors.length === 2 ? { a, b } : undefined;
          },
          20_000,
          200,
        );
        expect(both.a.compactors).toEqual(both.b.compactors);
        // Passes that began once both saw both, and after every logs table existed.
        const since = new Date().toISOString();
        await waitFor(
          'every logs table committed',
          async () => {
            const rows = await floe.metaQuery<{ n: number }>(`SELECT count(*)::int AS n FROM iceberg_tables WHERE table_name = 'logs' AND table_namespace LIKE 'cshare%'`);
            return rows[0]!.n === tenants.length || undefined;
          },
          30_000,
          200,
        );
        const tablesNow = (await floe.metaQuery<{ n: number }>(`SELECT count(*)::int AS n FROM iceberg_tables`))[0]!.n;
        const passed = await waitFor(
          'a pass of each compactor after that',
          async () => {
            const [a, b] = await Promise.all([compactorStatus(floe.compactorAdminUrl), compactorStatus(extra.adminUrl)]);
            const done = (s: CompactorStatusBody) => s.lastPass !== null && s.lastPass.startedAt > since && !s.lastPass.failed;
            return done(a) && done(b) ? { a, b } : undefined;
          },
          30_000,
          200,
        );
        const [ta, tb] = [passed.a.lastPass!.tables!, passed.b.lastPass!.tables!];
        expect(ta).toBeGreaterThan(0);
        expect(tb).toBeGreaterThan(0);
        // Every table once: the two shares add up to the catalog.
        expect(ta + tb).toBe(tablesNow);

        await extra.kill();
        const alone = new Date().toISOString();
        const last = await waitFor(
          'the first compactor alone, visiting every table',
          async () => {
            const a = await compactorStatus(floe.compactorAdminUrl);
            return a.compactors.length === 1 && a.lastPass && a.lastPass.startedAt > alone && a.lastPass.tables === tablesNow ? a : undefined;
          },
          30_000,
          200,
        );
        expect(last.compactors).toEqual([last.compactorId]);
      } finally {
        await extra.kill();
      }
    });
  }
});
