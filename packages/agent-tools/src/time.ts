/**
 * Times and durations as the tools take them. Each query API reads time its own way (Loki
 * nanoseconds, Prometheus float seconds, Tempo whole seconds, Pyroscope milliseconds); an agent
 * should not have to know which, so every tool takes one spelling and converts it per API.
 */

/** Thrown for a tool argument the tools themselves refuse (shown to the agent as a tool error). */
export class ToolInputError extends Error {
  override name = 'ToolInputError';
}

/** What every time argument's description says, so the agent sees one rule. */
export const TIME_HELP = 'RFC 3339 (2025-01-31T12:00:00Z), unix seconds, or relative to now (now, now-15m, now-6h, now-2d)';
export const DURATION_HELP = 'a duration such as 500ms, 30s, 5m, 1h30m, 2d';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** A duration (`1h30m`, `250ms`, `1.5s`, `2d`) in milliseconds, or undefined if it is not one. */
export function parseDurationMs(text: string): number | undefined {
  const t = text.trim();
  if (t === '' || !/^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+$/.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms;
}

/** A duration argument in milliseconds; a ToolInputError names the argument otherwise. */
export function durationArg(name: string, text: string): number {
  const ms = parseDurationMs(text);
  if (ms === undefined) throw new ToolInputError(`invalid ${name} ${JSON.stringify(text.slice(0, 64))}: expected ${DURATION_HELP}`);
  return ms;
}

/** A time argument in unix milliseconds, `fallback` when absent. */
export function timeArg(name: string, text: string | undefined, nowMs: number, fallback: number): number {
  if (text === undefined || text.trim() === '') return fallback;
  const t = text.trim();
  if (t === 'now') return nowMs;
  const rel = /^now\s*([+-])\s*(.+)$/.exec(t);
  if (rel) {
    const ms = parseDurationMs(rel[2]!);
    if (ms !== undefined) return rel[1] === '-' ? nowMs - ms : nowMs + ms;
  } else if (/^\d+(?:\.\d+)?$/.test(t)) {
    // Seconds are what an agent usually writes; 13 digits or more can only be milliseconds.
    return t.length >= 13 && !t.includes('.') ? Number(t) : Math.round(Number(t) * 1000);
  } else if (/^\d{4}-\d{2}-\d{2}T/.test(t)) {
    const ms = Date.parse(t);
    if (Number.isFinite(ms)) return ms;
  }
  throw new ToolInputError(`invalid ${name} ${JSON.stringify(t.slice(0, 64))}: expected ${TIME_HELP}`);
}

export interface Window {
  startMs: number;
  endMs: number;
}

/** The [start, end] window of a tool call: end defaults to now, start to `lookbackMs` before end. */
export function windowArgs(args: { start?: string | undefined; end?: string | undefined }, lookbackMs = 3_600_000, nowMs = Date.now()): Window {
  const endMs = timeArg('end', args.end, nowMs, nowMs);
  const startMs = timeArg('start', args.start, nowMs, endMs - lookbackMs);
  if (endMs < startMs) throw new ToolInputError('invalid window: end is before start');
  return { startMs, endMs };
}

/** Loki's unix nanoseconds. */
export const lokiTime = (ms: number) => (BigInt(Math.round(ms)) * 1_000_000n).toString();
/** Prometheus's float seconds (millisecond precision). */
export const promTime = (ms: number) => (ms / 1000).toFixed(3);
/** Pyroscope's unix milliseconds (13 digits read as milliseconds). */
export const pyroscopeTime = (ms: number) => String(Math.round(ms));
/** Tempo's whole seconds: the window widened to whole seconds, never empty (Tempo wants end > start). */
export function tempoWindow(w: Window): { start: string; end: string } {
  const start = Math.floor(w.startMs / 1000);
  const end = Math.max(Math.ceil(w.endMs / 1000), start + 1);
  return { start: String(start), end: String(end) };
}
/** A step for Prometheus and Loki: decimal seconds, which both read. */
export const stepSeconds = (ms: number) => String(ms / 1000);
