import { describe, expect, it } from 'vitest';
import { newRecordId, recordIdTime } from './record-id.ts';

describe('newRecordId', () => {
  it('is 26 Crockford base-32 characters that encode the time', () => {
    const id = newRecordId(1_700_000_000_123);
    expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(recordIdTime(id)).toBe(1_700_000_000_123);
  });

  it('is strictly increasing within one process, even in one millisecond or when the clock steps back', () => {
    const ids = [
      ...Array.from({ length: 1000 }, () => newRecordId(1_800_000_000_000)),
      newRecordId(1_799_999_999_000), // clock went back
      newRecordId(1_800_000_000_001),
    ];
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    expect(recordIdTime(ids[1000]!)).toBe(1_800_000_000_000);
  });

  it('sorts by time across milliseconds', () => {
    const early = newRecordId(1_900_000_000_000);
    const late = newRecordId(1_900_000_000_001);
    expect(early < late).toBe(true);
  });
});
