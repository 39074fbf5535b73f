import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authDepsFromDb } from '@floe/auth';
import { tableRows } from '@floe/flight';
import { silentLogger } from '@floe/telemetry';
import type { FileResolver } from './file-resolver.ts';
import { QueryHandler } from './query-handler.ts';
import { openTracesFixture, type TracesFixture } from './test-support.ts';
import { parseTicket } from './ticket.ts';

/**
 * The planner's file_order hint: a log page newest first lists the newest file first, so DuckDB's
 * top-N fills from it and skips the older files' row groups. It orders files, never drops one.
 */
const NS_HOUR = 3_600_000_000_000n;
const FIRST_HOUR = 480_000;

/** One span starting `minutes` into `hour`, in the writer's NDJSON form. */
const span = (hour: number, minutes: number) =>
  JSON.stringify({
    trace_id: 'ab'.repeat(16),
    span_id: `${hour}${minutes}`.padStart(16, '0'),
    parent_span_id: '',
    name: 'op',
    kind: 'server',
    start_time_unix_nano: (BigInt(hour) * NS_HOUR + BigInt(minutes) * 60_000_000_000n).toString(),
    end_time_unix_nano: (BigInt(hour) * NS_HOUR + BigInt(minutes) * 60_000_000_000n + 1000n).toString(),
    duration_nano: '1000',
    status_code: 'ok',
    service_name: 'svc',
  });

let fixture: TracesFixture;
const hourOfKey = new Map<string, number>();

beforeAll(async () => {
  fixture = await openTracesFixture('file-order');
  // Committed out of time order: hour +1, then +3, then +0, then +2 (one span each, at minute 5).
  for (const offset of [1, 3, 0, 2]) hourOfKey.set(await fixture.append('acme', [span(FIRST_HOUR + offset, 5)], FIRST_HOUR + offset), offset);
});

afterAll(async () => {
  await fixture?.close();
});

const hoursListed = async (hints: Parameters<FileResolver['candidates']>[3]) =>
  (await fixture.resolver.candidates('acme', 'default', 'traces', hints)).files.map((f) => hourOfKey.get(f.key));

describe('file order', () => {
  it('lists the files newest first or oldest first by their rows\' time, all of them', async () => {
    expect(await hoursListed({ fileOrder: 'newest_first' })).toEqual([3, 2, 1, 0]);
    expect(await hoursListed({ fileOrder: 'oldest_first' })).toEqual([0, 1, 2, 3]);
    expect((await hoursListed({})).sort()).toEqual([0, 1, 2, 3]);
    // With a time hint, the order applies to the files the hint keeps.
    expect(await hoursListed({ fileOrder: 'newest_first', startNs: BigInt(FIRST_HOUR + 1) * NS_HOUR, endNs: BigInt(FIRST_HOUR + 2) * NS_HOUR + 1n })).toEqual([2, 1]);
  });

  it('the ticket carries it as file_order; any other value is ignored', () => {
    const hints = (h: unknown) => parseTicket(new TextEncoder().encode(JSON.stringify({ sql: 'SELECT 1', hints: h }))).hints;
    expect(hints({ file_order: 'newest_first' }).fileOrder).toBe('newest_first');
    expect(hints({ file_order: 'oldest_first' }).fileOrder).toBe('oldest_first');
    expect(hints({ file_order: 'sideways' }).fileOrder).toBeUndefined();
    expect(hints({ file_order: 1 }).fileOrder).toBeUndefined();
  });

  it('reaches DuckDB in that order, from the ticket\'s hint or from the SQL\'s ORDER BY time … LIMIT', async () => {
    const handler = new QueryHandler(authDepsFromDb(fixture.db, { adminApiKey: '', ttlMs: 0 }), fixture.resolver, { timeoutMs: 20_000, memoryLimit: '256MB', threads: 1, maxRows: 1000, maxBytes: 64 * 1024 * 1024, tempDir: fixture.dir }, silentLogger());
    const ctx = { tenant: 'acme', dataset: 'default', principal: 'test', scopes: [], isAdmin: false };
    // row_number() OVER () numbers the rows as the scan reads them: in the order of the view's files.
    const scanned = async (ticket: string) => {
      const rows = tableRows<{ hour: bigint; read: bigint }>(await handler.run(ctx, new TextEncoder().encode(ticket)));
      return rows.sort((a, b) => Number(a.read - b.read)).map((r) => Number(r.hour));
    };
    const columns = `start_time_unix_nano // ${NS_HOUR} - ${FIRST_HOUR} AS hour, row_number() OVER () AS read`;
    try {
      expect(await scanned(JSON.stringify({ sql: `SELECT ${columns} FROM traces`, hints: { file_order: 'newest_first' } }))).toEqual([3, 2, 1, 0]);
      expect(await scanned(JSON.stringify({ sql: `SELECT ${columns} FROM traces`, hints: { file_order: 'oldest_first' } }))).toEqual([0, 1, 2, 3]);
      expect(await scanned(`SELECT ${columns} FROM traces ORDER BY start_time_unix_nano DESC LIMIT 4`)).toEqual([3, 2, 1, 0]);
      expect(await scanned(`SELECT ${columns} FROM traces ORDER BY "timestamp" LIMIT 4`)).toEqual([0, 1, 2, 3]);
    } finally {
      handler.close();
    }
  });
});
