import { describe, expect, it } from 'vitest';
import { HOUR_NS, NS_PER_SECOND, RequestParams, parseDirection, parseDurationParam, parseLimit, parseRange, parseStep, parseTime } from './params.ts';

describe('parseTime (Loki rules: ≤10 characters are seconds, longer are nanoseconds)', () => {
  it.each<[string, bigint]>([
    ['1700000000', 1_700_000_000_000_000_000n],
    ['1700000000123456789', 1_700_000_000_123_456_789n],
    ['1700000000.5', 1_700_000_000_500_000_000n],
    ['1700000000.123456789123', 1_700_000_000_123_456_789n],
    ['0', 0n],
    ['2023-11-14T22:13:20Z', 1_700_000_000_000_000_000n],
    ['2023-11-14T22:13:20.000000042Z', 1_700_000_000_000_000_042n],
    ['2023-11-15T00:13:20+02:00', 1_700_000_000_000_000_000n],
    ['2023-11-14T20:13:20.5-02:00', 1_700_000_000_500_000_000n],
  ])('%s', (raw, want) => {
    expect(parseTime('start', raw, 0n)).toBe(want);
  });

  it('falls back when absent and refuses anything else as bad_data naming the parameter', () => {
    expect(parseTime('end', undefined, 42n)).toBe(42n);
    expect(() => parseTime('end', 'yesterday', 0n)).toThrow(/invalid end: cannot parse "yesterday"/);
    expect(() => parseTime('end', '2023-13-45', 0n)).toThrow(/invalid end/);
    for (const rolledOver of ['2026-02-31T00:00:00Z', '2026-01-01T25:00:00Z', '2026-01-01T00:61:00Z', '2026-01-01T00:00:61Z', '2026-13-01T00:00:00Z', '2026-01-01T00:00:00+99:99']) {
      expect(() => parseTime('end', rolledOver, 0n), rolledOver).toThrow(/invalid end: cannot parse/);
    }
    expect(parseTime('end', '2024-02-29T23:59:59+23:59', 0n)).toBe(1_709_164_859_000_000_000n);
    expect(() => parseTime('end', '1'.repeat(25), 0n)).toThrow(/out of range/);
  });
});

describe('durations, direction, limit', () => {
  it.each<[string, bigint]>([
    ['30', 30_000_000_000n],
    ['0.5', 500_000_000n],
    ['5m', 300_000_000_000n],
    ['1h30m', 5_400_000_000_000n],
    ['1m0s', 60_000_000_000n],
    ['1500ms', 1_500_000_000n],
    ['1.5s', 1_500_000_000n],
  ])('duration %s', (raw, want) => {
    expect(parseDurationParam('step', raw)).toBe(want);
  });

  it('bad values are bad_data', () => {
    expect(() => parseDurationParam('step', 'fast')).toThrow(/invalid step/);
    expect(() => parseDirection('sideways')).toThrow(/invalid direction "sideways"/);
    expect(() => parseLimit('-1')).toThrow(/invalid limit/);
    expect(() => parseLimit('0')).toThrow(/invalid limit/);
    expect(() => parseLimit('5001')).toThrow(/max entries limit per query exceeded, limit > max_entries_limit_per_query \(5001 > 5000\)/);
  });

  it('defaults like Loki: backward, 100', () => {
    expect(parseDirection(undefined)).toBe('backward');
    expect(parseDirection('FORWARD')).toBe('forward');
    expect(parseLimit(undefined)).toBe(100);
    expect(parseLimit('5000')).toBe(5000);
  });
});

describe('parseRange', () => {
  const now = 10n * HOUR_NS;
  const range = (qs: string) => parseRange(new RequestParams(`/x?${qs}`), now, HOUR_NS);

  it('end defaults to now, start to an hour (or `since`) before end', () => {
    expect(range('')).toEqual({ startNs: 9n * HOUR_NS, endNs: now });
    expect(range('since=2h')).toEqual({ startNs: 8n * HOUR_NS, endNs: now });
    expect(range('end=3600')).toEqual({ startNs: 0n, endNs: HOUR_NS });
    expect(range('start=1&end=2')).toEqual({ startNs: 1_000_000_000n, endNs: 2_000_000_000n });
  });

  it('refuses an end before the start', () => {
    expect(() => range('start=2&end=1')).toThrow(/end timestamp must not be before start time/);
  });

  it('reads repeated parameters and a form body', () => {
    const p = new RequestParams('/series?match[]=%7Ba%3D%22b%22%7D', new URLSearchParams('match[]={c="d"}&start=5'));
    expect(p.getAll('match[]')).toEqual(['{a="b"}', '{c="d"}']);
    expect(p.get('start')).toBe('5');
    expect(p.get('end')).toBeUndefined();
  });
});

describe('parseStep', () => {
  const range = { startNs: 0n, endNs: HOUR_NS };
  it('a given step, else Loki\'s default (the range over 250 points, whole seconds)', () => {
    expect(parseStep('30s', range)).toBe(30n * NS_PER_SECOND);
    expect(parseStep('0.5', range)).toBe(NS_PER_SECOND / 2n);
    expect(parseStep(undefined, range)).toBe(14n * NS_PER_SECOND);
  });

  it('refuses a zero or unreadable step as bad_data', () => {
    expect(() => parseStep('0', range)).toThrow(expect.objectContaining({ kind: 'bad_data', message: 'invalid step: must be positive' }));
    expect(() => parseStep('0s', range)).toThrow(/invalid step: must be positive/);
    expect(() => parseStep('soon', range)).toThrow(/invalid step: cannot parse "soon"/);
  });
});
