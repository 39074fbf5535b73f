import { createHash } from 'node:crypto';
import { floeTableDef, type TableHandle } from '@floe/iceberg';
import type { RetentionStream } from '@floe/limits';
import { lowerStreamSelector, parseLogQL, planLogDeletion, type LabelMatch, type LogDeletion, type RowFilter, type TimeRange } from '@floe/query';
import { partitionFieldName } from '@floe/schema';
import type { CompactDeps } from './compact.ts';
import { deleteRows } from './deletes.ts';
import { lastExpiredHour } from './retention.ts';

/**
 * Per-stream retention of logs (Loki's retention_stream, limits.retention_stream): each line is
 * kept for the period of the first rule whose selector matches it, the rules tried in their order
 * (the tenant's by priority, then the instance's), and lines no rule matches keep the table's
 * retention. Whole hour partitions go only once they are past every period (a rule may keep its
 * streams longer than the table's retention); before that, each rule's lines, and the unmatched
 * lines, are deleted row by row (deletes.ts) an hour at a time once the whole hour is past their
 * period.
 *
 * So that a pass does not read every old file again, the table remembers per rule (a property
 * `floe.retention-stream.<rule key>` = `<hour>:<sequence number>`) the last hour it has cleared
 * and the table's sequence number then: a pass looks at the hours after it, and at files of
 * earlier hours committed since (late lines, compaction's outputs) once. The key names the rule
 * with every rule before it, so changing the rules starts them over.
 */

export const STREAM_RETENTION_PROPERTY_PREFIX = 'floe.retention-stream.';
/** Snapshot summary key of a stream-retention delete: the period applied, in milliseconds. */
export const STREAM_RETENTION_SUMMARY_KEY = 'floe.retention-stream-ms';

const HOUR_MS = 3_600_000;
const ALL_TIME: TimeRange = { startNs: 0n, endNs: 1n << 62n };

/**
 * The retention of whole hour partitions (0: none go): the table's retention without rules; with
 * rules, the longest of it and their periods, and none while unmatched lines are kept forever.
 */
export function partitionRetentionMs(baseMs: number, rules: readonly RetentionStream[]): number {
  if (rules.length === 0 || baseMs <= 0) return rules.length === 0 ? baseMs : 0;
  return Math.max(baseMs, ...rules.map((r) => r.periodMs));
}

/** One period's lines: a rule's, or (key `rest`) those no rule matches. */
export interface RetentionClass {
  key: string;
  periodMs: number;
  /** Its lines within `range`. */
  deletion(range: TimeRange): LogDeletion;
}

/** The classes of lines with a period, in rule order, the unmatched lines last (when they need rewriting to go). */
export function retentionClasses(baseMs: number, rules: readonly RetentionStream[]): RetentionClass[] {
  const matchers: LabelMatch[][] = rules.map((r) => lowerStreamSelector(parseLogQL(r.selector), r.selector));
  const before = (i: number): RowFilter[] => (i === 0 ? [] : [{ kind: 'exclude', deletions: matchers.slice(0, i).map((streams) => ({ range: ALL_TIME, streams, filters: [] })) }]);
  const keyOf = (i: number, periodMs: number) =>
    createHash('sha256')
      .update(JSON.stringify([rules.slice(0, i + 1).map((r) => r.selector), periodMs]))
      .digest('hex')
      .slice(0, 16);
  const classes: RetentionClass[] = rules.map((r, i) => ({ key: keyOf(i, r.periodMs), periodMs: r.periodMs, deletion: (range) => ({ range, streams: matchers[i]!, filters: before(i) }) }));
  // While no rule outlives the table's retention, whole partitions go at it (partitionRetentionMs)
  // and the unmatched lines need no rewrite of their own.
  if (baseMs > 0 && rules.some((r) => r.periodMs > baseMs)) classes.push({ key: `rest-${keyOf(rules.length, baseMs)}`, periodMs: baseMs, deletion: (range) => ({ range, streams: [], filters: before(rules.length) }) });
  return classes;
}

export interface StreamRetentionStats {
  files: number;
  rows: number;
}

/** Applies the rules to one logs table; after a conflict or a stop the rest waits for the next pass. */
export async function applyStreamRetention(
  deps: CompactDeps,
  handle: TableHandle,
  baseMs: number,
  rules: readonly RetentionStream[],
  nowMs: number,
  signal?: AbortSignal,
): Promise<{ handle: TableHandle; stats: StreamRetentionStats }> {
  const stats: StreamRetentionStats = { files: 0, rows: 0 };
  const def = floeTableDef(handle);
  const field = partitionFieldName(def);
  // Without rules, whole partitions are the table's retention (retention.ts); only old marks go.
  const classes = rules.length === 0 ? [] : retentionClasses(baseMs, rules);
  let current = handle;
  // The marks go in one commit at the end: each class's cleared hour and the sequence number its
  // files were planned at, and the removal of marks of rules that no longer exist.
  const marks: Record<string, string | null> = {};
  for (const c of classes) {
    if (signal?.aborted) break;
    const property = STREAM_RETENTION_PROPERTY_PREFIX + c.key;
    const [doneHour, doneSeq] = (current.metadata.properties[property] ?? '').split(':').map(Number);
    const cutoff = lastExpiredHour(nowMs, c.periodMs);
    const seen = Number.isFinite(doneHour) && Number.isFinite(doneSeq);
    // No new hour to clear and nothing committed since: not even the manifests need reading.
    if (seen && doneHour === cutoff && doneSeq === current.metadata['last-sequence-number']) continue;
    const endMs = (cutoff + 1) * HOUR_MS - 1;
    const range = { startNs: 0n, endNs: BigInt(endMs + 1) * 1_000_000n };
    // The files planned are those committed up to here; anything later (this rewrite's outputs,
    // an append the commit was rebased over) is looked at once more next pass.
    const planned = current.metadata['last-sequence-number'];
    const outcome = await deleteRows(
      deps,
      current,
      {
        condition: planLogDeletion(c.deletion(range), def),
        startMs: 0,
        endMs,
        summary: { [STREAM_RETENTION_SUMMARY_KEY]: String(c.periodMs) },
        // Hours not cleared yet, and files committed since the last clearing.
        files: seen ? (f) => (f.partition[field] as number) > doneHour! || f.sequenceNumber > doneSeq! : undefined,
      },
      signal,
    );
    if (outcome.kind === 'retry') break;
    current = outcome.handle;
    stats.files += outcome.files;
    stats.rows += outcome.rows;
    marks[property] = `${cutoff}:${planned}`;
  }
  const keys = new Set(classes.map((c) => STREAM_RETENTION_PROPERTY_PREFIX + c.key));
  for (const k of Object.keys(current.metadata.properties)) if (k.startsWith(STREAM_RETENTION_PROPERTY_PREFIX) && !keys.has(k)) marks[k] = null;
  const changed = Object.entries(marks).some(([k, v]) => (current.metadata.properties[k] ?? null) !== v);
  if (changed) current = await deps.catalog.setProperties(current, marks);
  return { handle: current, stats };
}

