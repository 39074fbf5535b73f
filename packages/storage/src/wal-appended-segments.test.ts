// The fs WAL's appended segments: group commits appended to one open file, sealed by age, by
// size or on close; an acceptor's death mid-append (torn tail) and the writer's recovery, which
// takes the file over so that its old owner cannot acknowledge anything more into it.

import { appendFileSync, readdirSync, utimesSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WalAppendError, WalCorruptionError } from './errors.ts';
import { OPEN_DIR } from './fs-appendables.ts';
import { FsObjectStore } from './fs-store.ts';
import { newRecordId } from './record-id.ts';
import { tempDir } from './testing/stores.ts';
import { WalAppender } from './wal-appender.ts';
import { decodeSegment, frameRecord, OPEN_ENDED_COUNT, segmentHeader, segmentPrefixLength, type WalRecord } from './wal-format.ts';
import { listSegments, readSegment, recoverOpenSegments } from './wal-segments.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const rec = (id: string, payload: Uint8Array = enc(`payload of ${id}`)): WalRecord => ({
  header: { tenant: 'acme', dataset: 'default', table: 'logs', hour: 481_234, rows: 1, id },
  payload,
});
const ids = (records: WalRecord[]) => records.map((r) => r.header.id);

describe('WAL appended segments (fs)', () => {
  let dir: string;
  let store: FsObjectStore;
  const openFiles = () => {
    try {
      return readdirSync(path.join(store.root, OPEN_DIR));
    } catch {
      return [];
    }
  };
  const waitListed = async (n: number) => {
    for (let i = 0; i < 1000; i++) {
      const listed = await listSegments(store);
      if (listed.length >= n) return listed;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`fewer than ${n} segments listed after 10 s`);
  };

  beforeEach(async () => {
    dir = await tempDir('wal-appended');
    store = new FsObjectStore(path.join(dir, 'data'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('group commits share one open segment, invisible to the writer until its age is up', async () => {
    // Long enough that four appends (fdatasyncs on a busy CI disk) fit in it.
    const wal = new WalAppender(store, { instanceId: 'acc-age', segmentMaxAgeMs: 2_000 });
    const a = await wal.append([rec('a1'), rec('a2')]);
    const b = await wal.append([rec('b1')]);
    const [c, d] = await Promise.all([wal.append([rec('c1')]), wal.append([rec('d1')])]);
    expect(new Set([a.segment, b.segment, c!.segment, d!.segment]).size).toBe(1);
    // Durable (acknowledged) but not yet sealed: the writer does not see it.
    expect(await listSegments(store)).toEqual([]);
    expect(openFiles()).toHaveLength(1);
    const [sealed] = await waitListed(1);
    expect(sealed!.key).toBe(a.segment);
    expect(ids(await readSegment(store, a.segment))).toEqual(['a1', 'a2', 'b1', 'c1', 'd1']);
    expect(openFiles()).toEqual([]);
    expect(wal.segmentsWritten).toBe(1);
    // The next group starts a new segment.
    const e = await wal.append([rec('e1')]);
    expect(e.segment).not.toBe(a.segment);
    await wal.close();
    expect(ids(await readSegment(store, e.segment))).toEqual(['e1']);
  });

  it('a group that would take the open segment past maxBatchBytes seals it and starts the next', async () => {
    const payload = new Uint8Array(200).fill(7);
    const wal = new WalAppender(store, { instanceId: 'acc-size', segmentMaxAgeMs: 3_600_000, maxBatchBytes: 700 });
    const r1 = await wal.append([rec('s1', payload)]);
    const r2 = await wal.append([rec('s2', payload)]);
    expect(r2.segment).toBe(r1.segment);
    const r3 = await wal.append([rec('s3', payload)]);
    expect(r3.segment).not.toBe(r1.segment);
    expect((await listSegments(store)).map((s) => s.key)).toEqual([r1.segment]);
    expect(ids(await readSegment(store, r1.segment))).toEqual(['s1', 's2']);
    await wal.close();
    expect((await listSegments(store)).map((s) => s.key)).toEqual([r1.segment, r3.segment]);
    expect(ids(await readSegment(store, r3.segment))).toEqual(['s3']);
    expect(openFiles()).toEqual([]);
  });

  it('close() seals the open segment at once', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-close', segmentMaxAgeMs: 3_600_000 });
    const r = await wal.append([rec('x1')]);
    expect(await listSegments(store)).toEqual([]);
    await wal.close();
    expect((await listSegments(store)).map((s) => s.key)).toEqual([r.segment]);
    expect(openFiles()).toEqual([]);
  });

  it('recovery publishes exactly the acknowledged records of a dead acceptor, and its old owner can acknowledge nothing more there', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-dead', segmentMaxAgeMs: 3_600_000 });
    const acked = await wal.append([rec('k1')]);
    await wal.append([rec('k2', enc('second'))]);
    // The crash, in the middle of the next append: a torn frame at the end of the file.
    const [name] = openFiles();
    const torn = frameRecord(rec('torn', enc('never acknowledged')));
    appendFileSync(path.join(store.root, OPEN_DIR, name!), Buffer.concat([torn[0]!, torn[1]!.subarray(0, 5)]));
    // Not idle long enough yet: left alone.
    expect(await recoverOpenSegments(store, 60_000)).toEqual([]);
    const old = new Date(Date.now() - 120_000);
    utimesSync(path.join(store.root, OPEN_DIR, name!), old, old);
    expect(await recoverOpenSegments(store, 60_000)).toEqual([acked.segment]);
    const records = await readSegment(store, acked.segment);
    expect(ids(records)).toEqual(['k1', 'k2']);
    expect(dec(records[1]!.payload)).toBe('second');
    expect(openFiles()).toEqual([]);
    // The "dead" appender wakes up: its append into the taken-over file fails, unacknowledged…
    await expect(wal.append([rec('late')])).rejects.toBeInstanceOf(WalAppendError);
    // …and the recovered segment is not touched by it.
    expect(ids(await readSegment(store, acked.segment))).toEqual(['k1', 'k2']);
    // Later appends go to a new segment.
    const next = await wal.append([rec('after')]);
    expect(next.segment).not.toBe(acked.segment);
    await wal.close();
    expect(ids(await readSegment(store, next.segment))).toEqual(['after']);
  });

  it('recovery with a share takes only the open segments it accepts (writers sharing a WAL)', async () => {
    const first = new WalAppender(store, { instanceId: 'acc-share-1', segmentMaxAgeMs: 3_600_000 });
    const second = new WalAppender(store, { instanceId: 'acc-share-2', segmentMaxAgeMs: 3_600_000 });
    const a = await first.append([rec('m1')]);
    const b = await second.append([rec('o1')]);
    const old = new Date(Date.now() - 120_000);
    for (const name of openFiles()) utimesSync(path.join(store.root, OPEN_DIR, name), old, old);
    const mine = (key: string) => key === a.segment;
    expect(await recoverOpenSegments(store, 60_000, mine)).toEqual([a.segment]);
    // The other share's segment is still open, untouched, and its acceptor still appends to it.
    expect(openFiles()).toHaveLength(1);
    await second.append([rec('o2')]);
    expect((await listSegments(store)).map((s) => s.key)).toEqual([a.segment]);
    await second.close();
    expect(ids(await readSegment(store, b.segment))).toEqual(['o1', 'o2']);
    await expect(first.append([rec('m2')])).rejects.toBeInstanceOf(WalAppendError);
    await first.close();
  });

  it('an open segment without one whole record is deleted by recovery, not published', async () => {
    const partial = frameRecord(rec('p'));
    const object = await store.appendables.open('wal/000000000000001-acc-none-0000000001.wal', [segmentHeader(OPEN_ENDED_COUNT), partial[0]!]);
    expect(object.size).toBeGreaterThan(12);
    // Idle a minute (the file clock may run ahead of Date.now() by a tick: an idle time of 0 is not enough).
    const old = new Date(Date.now() - 60_000);
    utimesSync(path.join(store.root, OPEN_DIR, openFiles()[0]!), old, old);
    expect(await recoverOpenSegments(store, 30_000)).toEqual([]);
    expect(openFiles()).toEqual([]);
    expect(await listSegments(store)).toEqual([]);
  });

  it('a reader refuses an open-ended segment with a torn tail; its valid prefix is what recovery keeps', () => {
    const whole = [segmentHeader(OPEN_ENDED_COUNT), ...frameRecord(rec('w1')), ...frameRecord(rec('w2'))];
    const good = Buffer.concat(whole);
    expect(ids(decodeSegment(good, 'good'))).toEqual(['w1', 'w2']);
    expect(segmentPrefixLength(good)).toEqual({ bytes: good.byteLength, records: 2 });
    const tornFrame = frameRecord(rec('w3'));
    const torn = Buffer.concat([good, tornFrame[0]!, tornFrame[1]!]);
    expect(() => decodeSegment(torn, 'torn')).toThrow(WalCorruptionError);
    expect(segmentPrefixLength(torn)).toEqual({ bytes: good.byteLength, records: 2 });
    // A flipped payload byte in the last record: its CRC fails, the prefix stops before it.
    const flipped = Buffer.from(good);
    flipped[flipped.byteLength - 6]! ^= 0xff;
    expect(segmentPrefixLength(flipped).records).toBe(1);
    // A counted segment is never cut: it was written whole.
    expect(segmentPrefixLength(Buffer.concat([segmentHeader(2), ...whole.slice(1)])).bytes).toBe(0);
  });

  it('with segmentMaxAgeMs 0 every group commit is its own segment, visible at once', async () => {
    const wal = new WalAppender(store, { instanceId: `acc-put-${newRecordId()}` });
    const a = await wal.append([rec('p1')]);
    const b = await wal.append([rec('p2')]);
    expect(a.segment).not.toBe(b.segment);
    expect((await listSegments(store)).map((s) => s.key)).toEqual([a.segment, b.segment]);
    expect(openFiles()).toEqual([]);
    await wal.close();
  });
});
