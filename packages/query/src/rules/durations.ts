import { formatDuration, parseDuration } from '../logql/durations.ts';

/**
 * Durations in rule files are Prometheus's model.Duration: units (`1h30m`, `90s`, `250ms`) or the
 * bare `0`. Not parsePromDuration's bare seconds (`30`): that is PromQL-query and HTTP-API syntax,
 * and a rule file with `interval: 30` is refused by Prometheus (`not a valid duration string`).
 */
export function parseRuleDuration(text: string): number | undefined {
  return text === '0' ? 0 : parseDuration(text);
}

/** The duration to write: as it was written when that still says `ms`, else Prometheus's form. */
export function ruleDurationText(ms: number, written: string | undefined): string {
  return written !== undefined && parseRuleDuration(written) === ms ? written : formatDuration(ms);
}
