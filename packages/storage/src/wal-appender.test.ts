// The WAL on both stores: group commit, splitting, ordering, failure and close behaviour, checked by
// reading the segments back from the store.

import { readdir, rm, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ObjectNotFoundError, WalAppendError, WalClosedError, WalCorruptionError } from './errors.ts';
import { FsObjectStore } from './fs-store.ts';
import type { ObjectInfo, ObjectStore } from './object-store.ts';
import { newRecordId } from './record-id.ts';
import { startS3Server } from './testing/s3-server.ts';
import type { TestS3Server } from './testing/s3-server.ts';
import { backends, tempDir } from './testing/stores.ts';
import type { OpenedStore } from './testing/stores.ts';
import { WalAppender } from './wal-appender.ts';
import type { WalRecord } from './wal-format.ts';
import { deleteSegments, listSegments, parseSegmentKey, readSegment } from './wal-segments.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

function rec(id: string, payload: Uint8Array = enc(`payload of ${id}`)): WalRecord {
  return { header: { tenant: 'acme', dataset: 'default', table: 'logs', hour: 481_234, rows: 1, id }, payload };
}

/** Every record in the store's WAL, segment by segment, oldest first. */
async function readAll(store: ObjectStore, prefix = 'wal/'): Promise<Array<{ segment: ObjectInfo; records: WalRecord[] }>> {
  const out = [];
  for (const segment of await listSegments(store, prefix)) out.push({ segment, records: await readSegment(store, segment.key) });
  return out;
}

/**
 * A real store whose puts can be held at a gate and made to fail: the deterministic way to have a
 * write in flight while more appends arrive, and to see a segment write fail.
 */
class ControlledStore implements ObjectStore {
  readonly kind: 'fs' | 's3';
  readonly inner: ObjectStore;
  failPuts = false;
  puts = 0;
  #gate: Promise<void> | undefined;
  #open: (() => void) | undefined;
  constructor(inner: ObjectStore) {
    this.inner = inner;
    this.kind = inner.kind;
  }
  hold(): void {
    this.#gate = new Promise((resolve) => (this.#open = resolve));
  }
  release(): void {
    this.#open?.();
    this.#gate = undefined;
  }
  async put(key: string, body: Uint8Array): Promise<void> {
    this.puts++;
    const fail = this.failPuts; // decided when the write starts
    await this.#gate;
    if (fail) throw new Error('simulated store outage');
    await this.inner.put(key, body);
  }
  putIfAbsent(key: string, body: Uint8Array) { return this.inner.putIfAbsent(key, body); }
  get(key: string) { return this.inner.get(key); }
  getRange(key: string, offset: number, length: number) { return this.inner.getRange(key, offset, length); }
  head(key: string) { return this.inner.head(key); }
  list(prefix: string) { return this.inner.list(prefix); }
  listPrefixes(prefix: string) { return this.inner.listPrefixes(prefix); }
  delete(key: string) { return this.inner.delete(key); }
  deleteMany(keys: string[]) { return this.inner.deleteMany(keys); }
  localPath(key: string) { return this.inner.localPath(key); }
  uri(key: string) { return this.inner.uri(key); }
  keyFromUri(uri: string) { return this.inner.keyFromUri(uri); }
  putFile(key: string, file: string) { return this.inner.putFile(key, file); }
  close() { return this.inner.close(); }
}

let s3: TestS3Server;
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  await s3?.stop();
});

// fs and S3 (ListObjectsV2 with small pages, under a prefix).
describe.each(backends.slice(0, 2))('WAL on $name', (backend) => {
  let opened: OpenedStore;
  let store: ObjectStore;
  beforeEach(async () => {
    opened = await backend.open(s3);
    store = opened.store;
  });
  afterEach(async () => {
    await opened.cleanup();
  });

  it('group-commits 200 concurrent appends into a handful of segments, each record stored exactly once', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-1' });
    const ids = Array.from({ length: 200 }, () => newRecordId());
    const results = await Promise.all(ids.map((id) => wal.append([rec(id)])));
    const segments = await readAll(store);
    expect(segments.length).toBeLessThanOrEqual(5);
    expect(wal.segmentsWritten).toBe(segments.length);
    const stored = segments.flatMap((s) => s.records.map((r) => r.header.id));
    expect(stored.sort()).toEqual([...ids].sort());
    // Each append was told the segment that really holds its record.
    const holder = new Map(segments.flatMap((s) => s.records.map((r) => [r.header.id, s.segment.key] as const)));
    ids.forEach((id, i) => expect(results[i]!.segment).toBe(holder.get(id)));
    for (const s of segments) for (const r of s.records) expect(dec(r.payload)).toBe(`payload of ${r.header.id}`);
    await wal.close();
  });

  it('batches appends that trickle in over many event-loop turns', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-2' });
    const ids = Array.from({ length: 200 }, () => newRecordId());
    await Promise.all(
      ids.map(async (id, i) => {
        await sleep(i % 20); // 20 waves, 10 appends each, while earlier segments are being written
        return wal.append([rec(id)]);
      }),
    );
    const segments = await readAll(store);
    expect(segments.length).toBeLessThanOrEqual(25);
    expect(segments.flatMap((s) => s.records.map((r) => r.header.id)).sort()).toEqual([...ids].sort());
    await wal.close();
  });

  it('queues appends behind an in-flight write and commits them all as the next segment', async () => {
    const controlled = new ControlledStore(store);
    const wal = new WalAppender(controlled, { instanceId: 'acc-gated' });
    controlled.hold();
    const first = wal.append([rec('first')]);
    await sleep(20); // the first segment write is now in flight, held at the gate
    const rest = Array.from({ length: 199 }, (_, i) => wal.append([rec(`queued-${i}`)]));
    await sleep(20);
    expect(controlled.puts).toBe(1);
    controlled.release();
    const [r0, ...others] = await Promise.all([first, ...rest]);
    expect(new Set(others.map((r) => r.segment)).size).toBe(1);
    expect(others[0]!.segment > r0!.segment).toBe(true);
    expect(controlled.puts).toBe(2);
    const segments = await readAll(store);
    expect(segments.map((s) => s.records.length)).toEqual([1, 199]);
    await wal.close();
  });

  it('writes one segment per append when appends are sequential, in key order = time order', async () => {
    const wal = new WalAppender(store, { instanceId: 'node-a' });
    const keys = [];
    for (let i = 0; i < 5; i++) keys.push((await wal.append([rec(`seq-${i}`)])).segment);
    expect(new Set(keys).size).toBe(5);
    expect((await listSegments(store)).map((s) => s.key)).toEqual(keys);
    for (const key of keys) {
      expect(key).toMatch(/^wal\/\d{15}-node-a-\d{10}\.wal$/);
      const parsed = parseSegmentKey(key)!;
      expect(parsed.instanceId).toBe('node-a');
      expect(Math.abs(parsed.timestampMs - Date.now())).toBeLessThan(60_000);
    }
    expect(keys.map((k) => parseSegmentKey(k)!.seq)).toEqual([0, 1, 2, 3, 4]);
    await wal.close();
  });

  it('orders segments of different appenders by creation time, not by instance id', async () => {
    const z = new WalAppender(store, { instanceId: 'zz-first' });
    const a = new WalAppender(store, { instanceId: 'aa-second' });
    const fromZ = await z.append([rec('from-z')]);
    await sleep(5);
    const fromA = await a.append([rec('from-a')]);
    await sleep(5);
    const fromZ2 = await z.append([rec('from-z-2')]);
    expect((await listSegments(store)).map((s) => s.key)).toEqual([fromZ.segment, fromA.segment, fromZ2.segment]);
    const ids = (await readAll(store)).flatMap((s) => s.records.map((r) => r.header.id));
    expect(ids).toEqual(['from-z', 'from-a', 'from-z-2']);
    await Promise.all([z.close(), a.close()]);
  });

  it('keeps the records of one append together and in order', async () => {
    const wal = new WalAppender(store, { instanceId: 'multi' });
    const batch = ['m1', 'm2', 'm3', 'm4'].map((id) => rec(id));
    const { segment } = await wal.append(batch);
    expect((await readSegment(store, segment)).map((r) => r.header.id)).toEqual(['m1', 'm2', 'm3', 'm4']);
    await wal.close();
  });

  it('splits a large queue into segments of at most maxBatchBytes, at append boundaries', async () => {
    const maxBatchBytes = 10_000;
    const controlled = new ControlledStore(store);
    const wal = new WalAppender(controlled, { instanceId: 'split', maxBatchBytes });
    controlled.hold();
    const blocker = wal.append([rec('blocker')]);
    await sleep(20);
    const payload = new Uint8Array(900).fill(7);
    const ids = Array.from({ length: 60 }, (_, i) => `s-${i}`);
    const queued = ids.map((id) => wal.append([rec(id, payload), rec(`${id}-b`, payload)]));
    const oversized = wal.append([rec('huge', new Uint8Array(25_000))]);
    controlled.release();
    await Promise.all([blocker, ...queued, oversized]);
    const segments = (await readAll(store)).slice(1); // skip the blocker's segment
    expect(segments.length).toBeGreaterThanOrEqual(12); // 60 appends of ~2 KB into 10 KB segments, plus one
    for (const s of segments) {
      const ids = s.records.map((r) => r.header.id);
      if (ids.includes('huge')) {
        expect(ids).toEqual(['huge']); // a single oversized append gets a segment of its own
      } else {
        expect(s.segment.size).toBeLessThanOrEqual(maxBatchBytes + 12);
        for (let i = 0; i < ids.length; i += 2) expect(ids[i + 1]).toBe(`${ids[i]}-b`);
      }
    }
    const all = segments.flatMap((s) => s.records.map((r) => r.header.id));
    expect(all).toEqual([...ids.flatMap((id) => [id, `${id}-b`]), 'huge']);
    await wal.close();
  });

  it('rejects every append waiting on a failed segment write and keeps working afterwards', async () => {
    const controlled = new ControlledStore(store);
    const wal = new WalAppender(controlled, { instanceId: 'flaky' });
    controlled.failPuts = true;
    controlled.hold();
    const doomed = Array.from({ length: 10 }, (_, i) => wal.append([rec(`doomed-${i}`)]));
    await sleep(20);
    controlled.failPuts = false;
    const next = Array.from({ length: 5 }, (_, i) => wal.append([rec(`next-${i}`)])); // queued behind it
    controlled.release();
    const outcomes = await Promise.allSettled(doomed);
    for (const o of outcomes) {
      expect(o.status).toBe('rejected');
      const reason = (o as PromiseRejectedResult).reason;
      expect(reason).toBeInstanceOf(WalAppendError);
      expect(String(reason.message)).toMatch(/could not be written: simulated store outage/);
    }
    expect(new Set(outcomes.map((o) => (o as PromiseRejectedResult).reason.segment)).size).toBe(1);
    await Promise.all(next);
    const later = await wal.append([rec('later')]);
    const ids = (await readAll(store)).flatMap((s) => s.records.map((r) => r.header.id));
    expect(ids).toEqual(['next-0', 'next-1', 'next-2', 'next-3', 'next-4', 'later']);
    expect(parseSegmentKey(later.segment)?.instanceId).toBe('flaky');
    await wal.close();
  });

  it('close() flushes pending appends, then refuses new ones', async () => {
    const wal = new WalAppender(store, { instanceId: 'closing', lingerMs: 10_000 });
    const pending = Array.from({ length: 10 }, (_, i) => wal.append([rec(`p-${i}`)]));
    const started = Date.now();
    await wal.close();
    expect(Date.now() - started).toBeLessThan(5_000); // did not wait for the linger
    const results = await Promise.all(pending);
    expect(new Set(results.map((r) => r.segment)).size).toBe(1);
    expect((await readAll(store)).flatMap((s) => s.records.map((r) => r.header.id))).toHaveLength(10);
    await expect(wal.append([rec('too-late')])).rejects.toBeInstanceOf(WalClosedError);
    await wal.close(); // idempotent
  });

  it('lingers to gather appends that arrive over a short period', async () => {
    const wal = new WalAppender(store, { instanceId: 'linger', lingerMs: 150 });
    const results = [];
    for (let i = 0; i < 5; i++) {
      results.push(wal.append([rec(`l-${i}`)]));
      await sleep(5);
    }
    expect(new Set((await Promise.all(results)).map((r) => r.segment)).size).toBe(1);
    await wal.close();
  });

  it('rejects invalid appends without disturbing the others', async () => {
    const wal = new WalAppender(store, { instanceId: 'strict' });
    const bad = { header: { ...rec('bad').header, hour: -1 }, payload: enc('x') };
    const [ok, empty, invalid] = await Promise.allSettled([wal.append([rec('good')]), wal.append([]), wal.append([bad])]);
    expect(ok.status).toBe('fulfilled');
    expect((empty as PromiseRejectedResult).reason.message).toMatch(/at least one record/);
    expect((invalid as PromiseRejectedResult).reason.message).toMatch(/hour must be a non-negative integer/);
    expect((await readAll(store)).flatMap((s) => s.records.map((r) => r.header.id))).toEqual(['good']);
    expect(() => new WalAppender(store, { instanceId: 'has/slash' })).toThrow(/instanceId/);
    await wal.close();
  });

  it('lists only segment objects, reads them verified, and deletes them', async () => {
    const wal = new WalAppender(store, { instanceId: 'house', prefix: 'wal/' });
    const a = await wal.append([rec('a')]);
    const b = await wal.append([rec('b')]);
    await store.put('wal/README.txt', enc('not a segment'));
    await store.put('wal/nested/000000000000001-x-0000000001.wal', enc('not directly under the prefix'));
    expect((await listSegments(store)).map((s) => s.key)).toEqual([a.segment, b.segment]);

    const bytes = (await store.get(b.segment))!;
    bytes[bytes.byteLength - 5]! ^= 0xff;
    await store.put(b.segment, bytes);
    await expect(readSegment(store, b.segment)).rejects.toBeInstanceOf(WalCorruptionError);
    await expect(readSegment(store, b.segment)).rejects.toThrow(b.segment);

    await deleteSegments(store, [a.segment, b.segment]);
    expect(await listSegments(store)).toEqual([]);
    await expect(readSegment(store, a.segment)).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect((await store.list('wal/')).map((o) => o.key)).toEqual(['wal/README.txt', 'wal/nested/000000000000001-x-0000000001.wal']);
    await wal.close();
  });
});

describe('WAL on a file system that fails', () => {
  it('rejects appends while the segment directory cannot be created, then recovers', async () => {
    const dir = await tempDir('wal-fail');
    try {
      const store = new FsObjectStore(path.join(dir, 'data'));
      await store.put('other/x', enc('x')); // root exists
      const blocker = path.join(dir, 'data', 'wal');
      await writeFile(blocker, 'a file where the wal directory belongs');
      const wal = new WalAppender(store, { instanceId: 'disk' });
      const failed = await Promise.allSettled([wal.append([rec('f1')]), wal.append([rec('f2')])]);
      for (const o of failed) {
        expect(o.status).toBe('rejected');
        expect((o as PromiseRejectedResult).reason).toBeInstanceOf(WalAppendError);
        expect(String((o as PromiseRejectedResult).reason.message)).toMatch(/EEXIST|ENOTDIR/);
      }
      await unlink(blocker);
      const ok = await wal.append([rec('after')]);
      expect((await readSegment(store, ok.segment)).map((r) => r.header.id)).toEqual(['after']);
      expect(await readdir(path.join(dir, 'data', '.floe-tmp'))).toEqual([]); // failed temps cleaned up
      await wal.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
