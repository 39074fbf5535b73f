const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000, y: 31_536_000_000 };

/**
 * Parses Go/Prometheus-style durations ("500ms", "5s", "1h30m", "0s", "2w", "1y" of 365 days) into
 * milliseconds.
 * Returns undefined for anything else, so callers can report the offending key.
 */
export function parseDurationMs(text: string): number | undefined {
  const s = text.trim();
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)/y;
  let total = 0;
  let pos = 0;
  while (pos < s.length) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * UNITS[m[2]!]!;
    pos = re.lastIndex;
  }
  return pos === 0 ? undefined : total;
}

export function formatDurationMs(ms: number): string {
  if (ms === 0) return '0s';
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
