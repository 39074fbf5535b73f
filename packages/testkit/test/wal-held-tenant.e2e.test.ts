import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logsLedger, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * One tenant's table cannot be committed (its metadata is damaged): the writer keeps the WAL
 * segments holding its rows until it heals. Those segments must not count against
 * acceptor.max_wal_backlog for everyone: the other tenants are accepted and their rows stored,
 * while the broken tenant alone is refused (503, Retry-After) once its held segments pass the
 * limit. Repaired, its acknowledged rows are stored exactly once and it is accepted again.
 */
describe('a tenant whose table cannot be committed (embedded)', () => {
  let floe: FloeUnderTest;
  const keys: Record<string, string> = {};
  // Well above the few segments (about 90 KB each here) not read yet by the writer: only once it
  // has read a segment does it know it is held, and until then the segment counts for everyone.
  const LIMIT = 256 * 1024;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { acceptor: { max_wal_backlog: LIMIT }, writer: { flush_interval: '100ms', poll_interval: '50ms' } } });
    for (const t of ['heldbroken', 'heldfine']) keys[t] = (await floe.bootstrap(t)).api_key;
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const headers = (tenant: string) => ({ authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant });

  const logs = logsLedger(() => floe.flightAddress, headers);
  const postLogs = (tenant: string, n: number, tag: string) => logs.post(floe.otlpHttpUrl, tenant, n, tag);
  const { stored, waitStored } = logs;

  it('refuses only the broken tenant past the limit, keeps accepting and storing the others, and stores the broken one\'s rows once when repaired', async () => {
    const acked = { heldbroken: 0, heldfine: 0 };
    for (const t of ['heldbroken', 'heldfine'] as const) {
      expect((await postLogs(t, 20, 'before')).status).toBe(200);
      acked[t] += 20;
      expect(await waitStored(t, 20)).toEqual({ rows: 20, distinct: 20 });
    }

    // The table's metadata damaged: its pointer now names a file that is not valid metadata.
    const where = `table_namespace = 'heldbroken.default' AND table_name = 'logs'`;
    const good = (await floe.metaQuery<{ metadata_location: string }>(`SELECT metadata_location FROM iceberg_tables WHERE ${where}`))[0]!.metadata_location;
    const damaged = good.replace(/\.metadata\.json$/, '-damaged.metadata.json');
    writeFileSync(fileURLToPath(damaged), '{"format-version": 2, "table-uuid": ');
    await floe.metaQuery(`UPDATE iceberg_tables SET metadata_location = $1 WHERE ${where}`, [damaged]);

    // Both keep sending; the broken tenant's held segments grow past the limit.
    let round = 0;
    const fineStatuses: number[] = [];
    const refused = await waitFor(
      'the broken tenant refused',
      async () => {
        round++;
        const fine = await postLogs('heldfine', 20, `during ${round}`);
        await fine.arrayBuffer();
        fineStatuses.push(fine.status);
        if (fine.status === 200) acked.heldfine += 20;
        const res = await postLogs('heldbroken', 50, `during ${round}`);
        if (res.status === 200) {
          await res.arrayBuffer();
          acked.heldbroken += 50;
          return undefined;
        }
        return res;
      },
      90_000,
      100,
    );
    expect(new Set(fineStatuses)).toEqual(new Set([200]));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    const envelope = (await refused.json()) as { status: string; errorType: string; error: string };
    expect(envelope).toMatchObject({ status: 'error', errorType: 'unavailable' });
    expect(envelope.error).toMatch(/^table logs of dataset default cannot be committed \(the writer retries it\): the \d+ bytes in \d+ write-ahead log segments kept for it are over acceptor\.max_wal_backlog \(262144\); retry later$/);
    // Held for it: more than the limit, which would have refused every tenant had it counted for all.
    expect(Number(/the (\d+) bytes/.exec(envelope.error)![1])).toBeGreaterThan(LIMIT);

    // Everyone else is still accepted, and their rows are stored.
    for (let i = 0; i < 5; i++) {
      const res = await postLogs('heldfine', 20, `after ${i}`);
      await res.arrayBuffer();
      expect(res.status).toBe(200);
      acked.heldfine += 20;
    }
    expect(await waitStored('heldfine', acked.heldfine)).toEqual({ rows: acked.heldfine, distinct: acked.heldfine });
    const stillRefused = await postLogs('heldbroken', 1, 'still');
    await stillRefused.arrayBuffer();
    expect(stillRefused.status).toBe(503);

    // The writer's /status names the table it cannot commit, and shows its segments apart from
    // the backlog: the writer is not behind (every other tenant's rows are committed).
    const writerStatus = (await (await fetch(`${floe.writerAdminUrl}/status`)).json()) as {
      held_for_tables: Array<{ tenant: string; dataset: string; table: string; segments: number }>;
      held: { segments: number; bytes: number };
      backlog: { segments: number };
    };
    expect(writerStatus.held_for_tables).toEqual([{ tenant: 'heldbroken', dataset: 'default', table: 'logs', segments: expect.any(Number) }]);
    expect(writerStatus.held_for_tables[0]!.segments).toBeGreaterThan(0);
    expect(writerStatus.held.segments).toBeGreaterThanOrEqual(writerStatus.held_for_tables[0]!.segments);
    expect(writerStatus.held.bytes).toBeGreaterThan(LIMIT);
    expect(writerStatus.backlog.segments).toBeLessThan(writerStatus.held.segments);

    // Repaired: the held rows are committed once, and the tenant is accepted again.
    await floe.metaQuery(`UPDATE iceberg_tables SET metadata_location = $1 WHERE ${where}`, [good]);
    expect(await waitStored('heldbroken', acked.heldbroken)).toEqual({ rows: acked.heldbroken, distinct: acked.heldbroken });
    await waitFor(
      'the repaired tenant accepted again',
      async () => {
        const res = await postLogs('heldbroken', 10, 'healed');
        await res.arrayBuffer();
        return res.status === 200 ? true : undefined;
      },
      30_000,
      500,
    );
    acked.heldbroken += 10;
    expect(await waitStored('heldbroken', acked.heldbroken)).toEqual({ rows: acked.heldbroken, distinct: acked.heldbroken });
    expect(await stored('heldfine')).toEqual({ rows: acked.heldfine, distinct: acked.heldfine });
    expect(((await (await fetch(`${floe.writerAdminUrl}/status`)).json()) as { held_for_tables: unknown[] }).held_for_tables).toEqual([]);
  }, 300_000);
});
