import { describe, expect, it } from 'vitest';
import { DEFAULT_WORKFLOWS, statusTimesAfter } from './workflows.ts';

describe('default workflows', () => {
  it('end in complete statuses and start incomplete', () => {
    for (const statuses of Object.values(DEFAULT_WORKFLOWS)) {
      expect(statuses[0]?.complete).toBe(false);
      expect(statuses.some((s) => s.complete)).toBe(true);
      expect(new Set(statuses.map((s) => s.name)).size).toBe(statuses.length);
    }
    expect(DEFAULT_WORKFLOWS.feature.find((s) => s.name === 'Shipped')?.complete).toBe(true);
  });
});

describe('statusTimesAfter', () => {
  const a = { id: '1', name: 'Under consideration' };
  const b = { id: '2', name: 'In development' };

  it('opens the first entry', () => {
    expect(statusTimesAfter([], a, 'T1')).toEqual([{ status_id: '1', status_name: 'Under consideration', started_at: 'T1', ended_at: null }]);
  });

  it('closes the open entry and opens one for the new status', () => {
    const first = statusTimesAfter([], a, 'T1');
    expect(statusTimesAfter(first, b, 'T2')).toEqual([
      { status_id: '1', status_name: 'Under consideration', started_at: 'T1', ended_at: 'T2' },
      { status_id: '2', status_name: 'In development', started_at: 'T2', ended_at: null },
    ]);
  });

  it('changes nothing when the status stays', () => {
    const first = statusTimesAfter([], a, 'T1');
    expect(statusTimesAfter(first, a, 'T2')).toEqual(first);
  });

  it('records a return to an earlier status as a new entry', () => {
    const times = statusTimesAfter(statusTimesAfter(statusTimesAfter([], a, 'T1'), b, 'T2'), a, 'T3');
    expect(times.map((t) => [t.status_name, t.started_at, t.ended_at])).toEqual([
      ['Under consideration', 'T1', 'T2'],
      ['In development', 'T2', 'T3'],
      ['Under consideration', 'T3', null],
    ]);
  });
});
