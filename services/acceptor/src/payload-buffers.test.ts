import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { TenantContext } from '@floe/auth';
import { ExportTraceServiceRequestSchema, create, toBinary } from '@floe/proto';
import { ColumnBatchBuilder, FsObjectStore, WalAppender, columnBatchValues, readColumnBatch, type ObjectStore } from '@floe/storage';
import { tracesTable } from '@floe/schema';
import { silentLogger } from '@floe/telemetry';
import { AcceptedTimes } from './accepted-times.ts';
import { Ingest } from './ingest.ts';
import { PayloadBuffers, payloadBuffers } from './payload-buffers.ts';

describe('PayloadBuffers', () => {
  it('hands a given-back buffer out again, and never one still in use', () => {
    const pool = new PayloadBuffers();
    const a = pool.take(40_000);
    const b = pool.take(40_000);
    expect(a.length).toBe(40_000);
    expect(b.buffer).not.toBe(a.buffer);
    pool.give(a);
    const c = pool.take(30_000);
    expect(c.buffer).toBe(a.buffer);
    expect(c.length).toBe(30_000);
    // b was never given back: a new buffer, not b's.
    const d = pool.take(40_000);
    expect(d.buffer).not.toBe(b.buffer);
    expect(d.buffer).not.toBe(a.buffer);
  });

  it('takes back only its own buffers, each once', () => {
    const pool = new PayloadBuffers();
    pool.give(new Uint8Array(1000));
    expect(pool.free).toBe(0);
    const a = pool.take(100);
    pool.give(a);
    pool.give(a);
    expect(pool.free).toBe(1);
    expect(pool.take(100).buffer).toBe(a.buffer);
    expect(pool.take(100).buffer).not.toBe(a.buffer);
  });

  it('does not hand out a buffer far larger than asked, keeps no huge ones and at most `keep`', () => {
    const pool = new PayloadBuffers(2, 1 << 20);
    const big = pool.take(500_000);
    pool.give(big);
    expect(pool.take(1000).buffer).not.toBe(big.buffer);
    const huge = pool.take(2 << 20);
    pool.give(huge);
    expect(pool.free).toBe(1); // big only
    const xs = [pool.take(100), pool.take(100), pool.take(100)];
    for (const x of xs) pool.give(x);
    expect(pool.free).toBe(2);
  });

  it('a batch finished into reused memory reads back exactly (no bytes left from the last payload)', () => {
    const pool = new PayloadBuffers();
    const row = (i: number) => ({ trace_id: 'ab'.repeat(16), span_id: `${i}`.padStart(16, '0'), service_name: `svc-${i}`, name: 'x'.repeat(i * 50), start_time_unix_nano: 1_700_000_000_000_000_000n + BigInt(i) });
    const first = ColumnBatchBuilder.forTable(tracesTable);
    for (let i = 0; i < 20; i++) first.addRow(row(i));
    const p1 = first.finish(pool.take);
    p1.fill(0xee);
    pool.give(p1);
    const second = ColumnBatchBuilder.forTable(tracesTable);
    for (let i = 0; i < 3; i++) second.addRow(row(i));
    const p2 = second.finish(pool.take);
    expect(p2.buffer).toBe(p1.buffer);
    const fresh = second.finish();
    expect(Buffer.from(p2).equals(Buffer.from(fresh))).toBe(true);
    expect(readColumnBatch(p2).rows).toBe(3);
    expect(columnBatchValues(p2).map((r) => r.service_name)).toEqual(['svc-0', 'svc-1', 'svc-2']);
  });

  it("Ingest gives a request's payloads back once its append is durable, and keeps them after a failed append", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'floe-payload-buffers-'));
    const fs = new FsObjectStore(dir);
    let failing = false;
    // The fs store, whose put fails on demand (as an S3 PUT that timed out).
    const store = new Proxy(fs, {
      get(target, key) {
        if (key === 'put' && failing) return () => Promise.reject(new Error('PUT timed out'));
        const v = Reflect.get(target, key) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as ObjectStore;
    const wal = new WalAppender(store, { instanceId: 'payload-buffers' });
    const ingest = new Ingest(wal, silentLogger());
    const ctx: TenantContext = { tenant: 't', dataset: 'd', principal: 'k', scopes: ['ingest'], isAdmin: false };
    const body = toBinary(
      ExportTraceServiceRequestSchema,
      create(ExportTraceServiceRequestSchema, {
        resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: new Uint8Array(16).fill(1), spanId: new Uint8Array(8).fill(2), name: 'op', startTimeUnixNano: 1_700_000_000_000_000_000n, endTimeUnixNano: 1_700_000_000_000_000_001n }] }] }],
      }),
    );
    const appended = vi.spyOn(wal, 'append');
    try {
      await ingest.tracesProtobuf(ctx, body, AcceptedTimes.ANY);
      const durable = appended.mock.calls[0]![0][0]!.payload;
      // Given back: the next payload of that size is made in the same memory.
      expect(payloadBuffers.take(durable.length).buffer).toBe(durable.buffer);

      failing = true;
      await expect(ingest.tracesProtobuf(ctx, body, AcceptedTimes.ANY)).rejects.toMatchObject({ code: 'FLOE_ERR_WAL_UNAVAILABLE' });
      const failed = appended.mock.calls[1]![0][0]!.payload;
      expect(failed.buffer).not.toBe(durable.buffer);
      // Not given back: whatever is taken next, it is never the failed append's memory.
      const next = [payloadBuffers.take(failed.length), payloadBuffers.take(failed.length), payloadBuffers.take(failed.length)];
      for (const p of next) expect(p.buffer).not.toBe(failed.buffer);
    } finally {
      await wal.close();
      await fs.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
