import { describe, expect, it } from 'vitest';
import { RequestParams } from '../request-params.ts';
import { MAX_TIME_NS, parseMaxNodes, parseProfileTime, parseWindow } from './params.ts';

const NOW = 1_700_000_000_123_456_789n;
const S = 1_000_000_000n;

describe('parseProfileTime (spec 1, profile query rule 1)', () => {
  it.each([
    ['now', NOW],
    ['now-1h', NOW - 3600n * S],
    ['now-30m', NOW - 1800n * S],
    ['now-1h30m', NOW - 5400n * S],
    ['now-7d', NOW - 7n * 86_400n * S],
    ['now+5m', NOW + 300n * S],
    ['1700000000', 1_700_000_000n * S],
    ['1700000000123', 1_700_000_000_123_000_000n],
    ['1700000000123456', 1_700_000_000_123_456_000n],
    ['1700000000123456789', 1_700_000_000_123_456_789n],
    ['0', 0n],
  ])('%s', (raw, expected) => {
    expect(parseProfileTime('from', raw, NOW, 0n)).toBe(expected);
  });

  it.each([
    ['9999999999', MAX_TIME_NS],
    ['9999999999999999999', MAX_TIME_NS],
    ['9223372036854775807', MAX_TIME_NS],
    ['now+292y', MAX_TIME_NS],
    ['now-300y', 0n],
  ])('%s beyond the times profiles have (1970 to int64 nanoseconds) is held to them', (raw, expected) => {
    expect(parseProfileTime('until', raw, NOW, 0n)).toBe(expected);
  });

  it('absent: the fallback', () => {
    expect(parseProfileTime('from', undefined, NOW, 42n)).toBe(42n);
  });

  it.each(['yesterday', 'now-', 'now-1x', 'now-h', '-1700000000', '1.5', '17000000001234567890', '2026-01-01T00:00:00Z'])('%s is bad_data naming the parameter', (raw) => {
    expect(() => parseProfileTime('until', raw, NOW, 0n)).toThrow(expect.objectContaining({ kind: 'bad_data', code: 'FLOE_ERR_PROFILE_PARAM', message: expect.stringMatching(/^invalid until/) }));
  });
});

describe('parseWindow', () => {
  const p = (qs: string) => new RequestParams(`/render?${qs}`);

  it('defaults to the hour before now', () => {
    expect(parseWindow(p(''), NOW)).toEqual({ startNs: NOW - 3600n * S, endNs: NOW });
    expect(parseWindow(p('until=now-1h'), NOW)).toEqual({ startNs: NOW - 7200n * S, endNs: NOW - 3600n * S });
  });

  it('reads named parameters, then the shared fallback', () => {
    expect(parseWindow(p('leftFrom=100&from=5'), NOW, { from: 'leftFrom', until: 'leftUntil' }, { from: '5', until: '200' })).toEqual({ startNs: 100n * S, endNs: 200n * S });
  });

  it('refuses an inverted range', () => {
    expect(() => parseWindow(p('from=now&until=now-1h'), NOW)).toThrow(/until must not be before from/);
  });
});

describe('parseMaxNodes', () => {
  it.each([
    ['', 8192],
    ['max-nodes=100', 100],
    ['maxNodes=100', 100],
    ['max-nodes=0', 8192],
    ['max-nodes=10000000', 65_536],
  ])('%s → %i', (qs, expected) => {
    expect(parseMaxNodes(new RequestParams(`/render?${qs}`))).toBe(expected);
  });

  it('refuses what is not a count', () => {
    expect(() => parseMaxNodes(new RequestParams('/render?max-nodes=-1'))).toThrow(/invalid max-nodes/);
  });
});
