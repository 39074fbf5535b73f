/**
 * Prometheus-style durations (`1h30m`, `5m`, `250ms`; units y w d h m s ms, each at most once and
 * in that order), which is what LogQL ranges, offsets and duration filters use. Undefined when the
 * text is not one.
 */
const DURATION_RE = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const UNIT_MS = [365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1];
const UNIT_NAMES = ['y', 'w', 'd', 'h', 'm', 's', 'ms'];

export function parseDuration(text: string): number | undefined {
  if (text === '') return undefined;
  const m = DURATION_RE.exec(text);
  if (!m) return undefined;
  let ms = 0;
  for (let i = 0; i < UNIT_MS.length; i++) if (m[i + 1] !== undefined) ms += Number(m[i + 1]) * UNIT_MS[i]!;
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** A non-negative duration in its largest units (`5400000` → `1h30m`), as Prometheus prints one; `0s` for 0. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let out = '';
  let rest = ms;
  for (let i = 0; i < UNIT_MS.length; i++) {
    const n = Math.floor(rest / UNIT_MS[i]!);
    if (n > 0) out += `${n}${UNIT_NAMES[i]!}`;
    rest -= n * UNIT_MS[i]!;
  }
  return out;
}

/** Byte sizes as the grammar's Bytes token spells them (`10KB` = 10,000, `10KiB` = 10,240). */
const BYTES_RE = /^(\d+)(b|kb|kib|mb|mib|gb|gib|tb|tib|pb|pib|eb|eib)$/i;
const BYTE_UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, pb: 1e15, eb: 1e18,
  kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40, pib: 2 ** 50, eib: 2 ** 60,
};

export function parseBytes(text: string): number | undefined {
  const m = BYTES_RE.exec(text);
  if (!m) return undefined;
  return Number(m[1]) * BYTE_UNITS[m[2]!.toLowerCase()]!;
}
