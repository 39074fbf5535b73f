import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, ExportLogsServiceRequestSchema, toBinary } from '@floe/proto';
import { logsLedger, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * wal-held-tenant.e2e.test.ts's story on a cluster with two acceptors: they share only the WAL's
 * store (and the database and Redis), and learn what the one writer holds for a tenant's failing
 * table from the object it publishes beside the WAL (storage's wal-held.ts), each listing on its
 * own. Both must refuse the broken tenant alone (503, FLOE_ERR_WAL_TABLE_HELD's envelope) once its
 * held segments pass acceptor.max_wal_backlog, both keep accepting the other tenants, whose rows
 * are stored, and once repaired the broken tenant's acknowledged rows, sent through either, are
 * stored exactly once.
 */
describe('a tenant whose table cannot be committed, behind two acceptors (cluster)', () => {
  let floe: FloeUnderTest;
  let extra: Awaited<ReturnType<FloeUnderTest['startExtraAcceptor']>>;
  const keys: Record<string, string> = {};
  // Well above the few segments not read yet by the writer (two acceptors write their own): only
  // once it has read a segment does it know it is held, and until then the segment counts for everyone.
  const LIMIT = 256 * 1024;
  const HELD_ERROR = /^table logs of dataset default cannot be committed \(the writer retries it\): the (\d+) bytes in \d+ write-ahead log segments kept for it are over acceptor\.max_wal_backlog \(262144\); retry later$/;

  beforeAll(async () => {
    // A local directory as the shared store: the test damages a table's metadata file in place.
    floe = await startFloe({ mode: 'cluster', storage: 'fs', config: { acceptor: { max_wal_backlog: LIMIT }, writer: { flush_interval: '100ms', poll_interval: '50ms' } } });
    extra = await floe.startExtraAcceptor();
    for (const t of ['heldbroken', 'heldfine']) keys[t] = (await floe.bootstrap(t)).api_key;
  }, 180_000);
  afterAll(async () => {
    await extra?.stop();
    await floe?.stop();
  });

  const headers = (tenant: string) => ({ authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant });
  const acceptors = () => [
    { name: 'first', url: floe.otlpHttpUrl, grpc: floe.otlpGrpcAddress },
    { name: 'second', url: extra.otlpHttpUrl, grpc: extra.otlpGrpcAddress },
  ];

  // Posts through the acceptor at `url` (the caller reads the answer: a refusal's envelope is asserted).
  const { post: postLogs, stored, waitStored } = logsLedger(() => floe.flightAddress, headers);

  /** One OTLP/gRPC logs export of a record through `address`: the status code it ends with. */
  const grpcExport = async (address: string, tenant: string, tag: string) => {
    const req = create(ExportLogsServiceRequestSchema, { resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: BigInt(Date.now()) * 1_000_000n, body: { value: { case: 'stringValue', value: `${tag} grpc` } } }] }] }] });
    const client = new grpc.Client(address, grpc.credentials.createInsecure());
    try {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(headers(tenant))) md.set(k, v);
      return await new Promise<{ code: number; details: string }>((resolve) => {
        client.makeUnaryRequest('/opentelemetry.proto.collector.logs.v1.LogsService/Export', (x: Buffer) => x, (x: Buffer) => x, Buffer.from(toBinary(ExportLogsServiceRequestSchema, req)), md, (e) =>
          resolve(e ? { code: e.code, details: e.details } : { code: grpc.status.OK, details: '' }),
        );
      });
    } finally {
      client.close();
    }
  };

  it('both acceptors refuse only the broken tenant past the limit, keep accepting and storing the others, and the broken one\'s rows are stored once when repaired', async () => {
    const acked = { heldbroken: 0, heldfine: 0 };
    for (const a of acceptors()) {
      for (const t of ['heldbroken', 'heldfine'] as const) {
        const res = await postLogs(a.url, t, 10, `before ${a.name}`);
        await res.arrayBuffer();
        expect(res.status, `${t} through the ${a.name} acceptor`).toBe(200);
        acked[t] += 10;
      }
    }
    for (const t of ['heldbroken', 'heldfine'] as const) expect(await waitStored(t, 20)).toEqual({ rows: 20, distinct: 20 });

    // The table's metadata damaged: its pointer now names a file that is not valid metadata.
    const where = `table_namespace = 'heldbroken.default' AND table_name = 'logs'`;
    const good = (await floe.metaQuery<{ metadata_location: string }>(`SELECT metadata_location FROM iceberg_tables WHERE ${where}`))[0]!.metadata_location;
    expect(good).toMatch(/^file:\/\//);
    const damaged = good.replace(/\.metadata\.json$/, '-damaged.metadata.json');
    writeFileSync(fileURLToPath(damaged), '{"format-version": 2, "table-uuid": ');
    await floe.metaQuery(`UPDATE iceberg_tables SET metadata_location = $1 WHERE ${where}`, [damaged]);

    // Both tenants keep sending through both acceptors, until each acceptor has refused the
    // broken one: each lists the WAL and the writer's held object on its own.
    const refused = new Map<string, Response>();
    const fineStatuses: number[] = [];
    let round = 0;
    await waitFor(
      'the broken tenant refused by both acceptors',
      async () => {
        round++;
        for (const a of acceptors()) {
          const fine = await postLogs(a.url, 'heldfine', 10, `during ${round} ${a.name}`);
          await fine.arrayBuffer();
          fineStatuses.push(fine.status);
          if (fine.status === 200) acked.heldfine += 10;
          if (refused.has(a.name)) continue;
          const res = await postLogs(a.url, 'heldbroken', 25, `during ${round} ${a.name}`);
          if (res.status === 200) {
            await res.arrayBuffer();
            acked.heldbroken += 25;
          } else refused.set(a.name, res);
        }
        return refused.size === 2 ? true : undefined;
      },
      120_000,
      100,
    );
    expect(new Set(fineStatuses)).toEqual(new Set([200]));
    for (const a of acceptors()) {
      const res = refused.get(a.name)!;
      expect(res.status, `the ${a.name} acceptor's refusal`).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      const envelope = (await res.json()) as { status: string; errorType: string; error: string };
      expect(envelope).toMatchObject({ status: 'error', errorType: 'unavailable' });
      expect(envelope.error).toMatch(HELD_ERROR);
      // Held for it: more than the limit, which would have refused every tenant had it counted for all.
      expect(Number(HELD_ERROR.exec(envelope.error)![1])).toBeGreaterThan(LIMIT);
    }

    // Both acceptors still accept everyone else, over HTTP and gRPC, and keep refusing the broken
    // tenant over both; the others' rows are stored.
    for (const a of acceptors()) {
      for (let i = 0; i < 3; i++) {
        const res = await postLogs(a.url, 'heldfine', 10, `after ${i} ${a.name}`);
        await res.arrayBuffer();
        expect(res.status, `heldfine through the ${a.name} acceptor`).toBe(200);
        acked.heldfine += 10;
      }
      expect(await grpcExport(a.grpc, 'heldfine', `after ${a.name}`)).toEqual({ code: grpc.status.OK, details: '' });
      acked.heldfine += 1;
      const still = await postLogs(a.url, 'heldbroken', 1, `still ${a.name}`);
      expect(still.status, `heldbroken through the ${a.name} acceptor`).toBe(503);
      expect(((await still.json()) as { error: string }).error).toMatch(HELD_ERROR);
      const viaGrpc = await grpcExport(a.grpc, 'heldbroken', `still ${a.name}`);
      expect(viaGrpc.code).toBe(grpc.status.UNAVAILABLE);
      expect(viaGrpc.details).toMatch(HELD_ERROR);
    }
    expect(await waitStored('heldfine', acked.heldfine)).toEqual({ rows: acked.heldfine, distinct: acked.heldfine });

    // The one writer holds the segments of both acceptors for the broken table alone.
    const writerStatus = (await (await fetch(`${floe.writerAdminUrl}/status`)).json()) as {
      held_for_tables: Array<{ tenant: string; dataset: string; table: string; segments: number }>;
      held: { segments: number; bytes: number };
    };
    expect(writerStatus.held_for_tables).toEqual([{ tenant: 'heldbroken', dataset: 'default', table: 'logs', segments: expect.any(Number) }]);
    expect(writerStatus.held.bytes).toBeGreaterThan(LIMIT);

    // Repaired: the held rows are committed once, and both acceptors accept the tenant again.
    await floe.metaQuery(`UPDATE iceberg_tables SET metadata_location = $1 WHERE ${where}`, [good]);
    expect(await waitStored('heldbroken', acked.heldbroken)).toEqual({ rows: acked.heldbroken, distinct: acked.heldbroken });
    for (const a of acceptors()) {
      await waitFor(
        `the repaired tenant accepted again by the ${a.name} acceptor`,
        async () => {
          const res = await postLogs(a.url, 'heldbroken', 10, `healed ${a.name}`);
          await res.arrayBuffer();
          return res.status === 200 ? true : undefined;
        },
        30_000,
        500,
      );
      acked.heldbroken += 10;
    }
    expect(await waitStored('heldbroken', acked.heldbroken)).toEqual({ rows: acked.heldbroken, distinct: acked.heldbroken });
    expect(await stored('heldfine')).toEqual({ rows: acked.heldfine, distinct: acked.heldfine });
    expect(((await (await fetch(`${floe.writerAdminUrl}/status`)).json()) as { held_for_tables: unknown[] }).held_for_tables).toEqual([]);
  }, 360_000);
});
