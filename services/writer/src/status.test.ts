import { describe, expect, it } from 'vitest';
import { DEFAULT_WAL_PREFIX, formatSegmentKey } from '@floe/storage';
import { WriterStatus } from './status.ts';

describe('writer status', () => {
  it('reports the backlog listed (its oldest segment by the time in its name), rounds and failures', () => {
    const s = new WriterStatus();
    expect(s.toJSON()).toMatchObject({ backlog: { segments: 0, bytes: 0, oldest_segment_age_ms: null, listed_at: null }, rounds: 0, last_round: null, last_error: null });
    const now = Date.now();
    const key = (ageMs: number, seq: number) => formatSegmentKey(DEFAULT_WAL_PREFIX, { timestampMs: now - ageMs, instanceId: 'acc-a', seq });
    s.backlogListed([
      { key: key(3_000, 2), size: 100 },
      { key: key(9_000, 1), size: 250 },
      { key: `${DEFAULT_WAL_PREFIX}not-a-segment`, size: 7 },
    ]);
    const listed = s.toJSON() as { backlog: { segments: number; bytes: number; oldest_segment_age_ms: number; listed_at: string } };
    expect(listed.backlog).toMatchObject({ segments: 3, bytes: 357 });
    expect(listed.backlog.oldest_segment_age_ms).toBeGreaterThanOrEqual(9_000);
    expect(listed.backlog.oldest_segment_age_ms).toBeLessThan(60_000);
    expect(Date.parse(listed.backlog.listed_at)).toBeGreaterThanOrEqual(now);

    s.roundFailed(new Error('catalog unreachable'));
    s.roundFailed(new Error('catalog still unreachable'));
    expect(s.toJSON()).toMatchObject({ rounds: 0, failures_in_a_row: 2, last_error: { message: 'catalog still unreachable' } });
    s.roundDone(now, { segments: 2, records: 5, rows: 500, files: 1, commits: 1, skippedRecords: 0 });
    expect(s.toJSON()).toMatchObject({
      rounds: 1,
      segments_consumed: 2,
      failures_in_a_row: 0,
      last_round: { started_at: new Date(now).toISOString(), segments: 2, records: 5, rows: 500, files: 1, commits: 1, skipped_records: 0 },
    });
    s.backlogListed([]);
    expect(s.toJSON()).toMatchObject({ backlog: { segments: 0, bytes: 0, oldest_segment_age_ms: null } });
  });
});

describe('writer status with segments held for failing tables', () => {
  it('shows them apart from the backlog, whose oldest segment is then the oldest not held', () => {
    const now = Date.now();
    const key = (ageMs: number, seq: number) => formatSegmentKey(DEFAULT_WAL_PREFIX, { timestampMs: now - ageMs, instanceId: 'acc-a', seq });
    const [old, fresh] = [key(3_600_000, 1), key(2_000, 2)];
    const s = new WriterStatus(undefined, { holds: (k) => k === old, tables: () => [{ tenant: 'acme', dataset: 'default', table: 'logs', segments: 1 }] });
    s.backlogListed([
      { key: old, size: 900 },
      { key: fresh, size: 100 },
    ]);
    const json = s.toJSON() as { backlog: { segments: number; bytes: number; oldest_segment_age_ms: number }; held: { segments: number; bytes: number; oldest_segment_age_ms: number }; held_for_tables: unknown };
    expect(json.backlog).toMatchObject({ segments: 1, bytes: 100 });
    expect(json.backlog.oldest_segment_age_ms).toBeLessThan(60_000);
    expect(s.oldestSegmentAgeSeconds).toBeLessThan(60);
    expect(json.held).toMatchObject({ segments: 1, bytes: 900 });
    expect(json.held.oldest_segment_age_ms).toBeGreaterThanOrEqual(3_600_000);
    expect(s.heldSegments).toBe(1);
    expect(json.held_for_tables).toEqual([{ tenant: 'acme', dataset: 'default', table: 'logs', segments: 1 }]);
  });
});

describe('writer status with writers sharing the WAL', () => {
  it('names this writer and every writer it shares the WAL with', () => {
    const view = { id: 'writer-b', members: ['writer-a', 'writer-b'] };
    expect(new WriterStatus(view).toJSON()).toMatchObject({ writer_id: 'writer-b', writers: ['writer-a', 'writer-b'] });
    view.members = ['writer-b'];
    expect(new WriterStatus(view).toJSON()).toMatchObject({ writers: ['writer-b'] });
    expect(new WriterStatus().toJSON()).not.toHaveProperty('writers');
  });
});
