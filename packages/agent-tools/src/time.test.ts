import { describe, expect, it } from 'vitest';
import { ToolInputError, lokiTime, parseDurationMs, promTime, pyroscopeTime, tempoWindow, timeArg, windowArgs } from './time.ts';

const NOW = Date.UTC(2025, 0, 31, 12, 0, 0);

describe('tool times', () => {
  it.each([
    ['now', NOW],
    ['now-15m', NOW - 900_000],
    ['now - 2h', NOW - 7_200_000],
    ['now+1d', NOW + 86_400_000],
    ['2025-01-31T11:00:00Z', NOW - 3_600_000],
    ['2025-01-31T13:00:00+02:00', NOW - 3_600_000],
    ['1738324800', NOW],
    ['1738324800.5', NOW + 500],
    ['1738324800000', NOW],
  ])('%s', (text, ms) => {
    expect(timeArg('t', text, NOW, 0)).toBe(ms);
  });

  it.each(['yesterday', 'now-', 'now-5x', '2025-13-45T00:00:00Z', '-5'])('refuses %s, naming the argument', (text) => {
    expect(() => timeArg('start', text, NOW, 0)).toThrow(ToolInputError);
    expect(() => timeArg('start', text, NOW, 0)).toThrow(/^invalid start/);
  });

  it.each([
    ['500ms', 500],
    ['1.5s', 1500],
    ['1h30m', 5_400_000],
    ['2d', 172_800_000],
    ['5', undefined],
    ['m', undefined],
  ])('duration %s', (text, ms) => {
    expect(parseDurationMs(text)).toBe(ms);
  });

  it('windows default to the hour before now and refuse an inverted one', () => {
    expect(windowArgs({}, 3_600_000, NOW)).toEqual({ startMs: NOW - 3_600_000, endMs: NOW });
    expect(windowArgs({ end: 'now-1h' }, 3_600_000, NOW)).toEqual({ startMs: NOW - 7_200_000, endMs: NOW - 3_600_000 });
    expect(() => windowArgs({ start: 'now', end: 'now-1m' }, 3_600_000, NOW)).toThrow(/end is before start/);
  });

  it('speaks each API’s time format', () => {
    expect(lokiTime(NOW + 1)).toBe('1738324800001000000');
    expect(promTime(NOW + 1)).toBe('1738324800.001');
    expect(pyroscopeTime(NOW)).toBe('1738324800000');
    // Tempo: whole seconds, widened, never empty.
    expect(tempoWindow({ startMs: NOW + 400, endMs: NOW + 600 })).toEqual({ start: '1738324800', end: '1738324801' });
    expect(tempoWindow({ startMs: NOW, endMs: NOW })).toEqual({ start: '1738324800', end: '1738324801' });
  });
});
