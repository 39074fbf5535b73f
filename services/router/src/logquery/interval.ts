import { LOG_COLUMNS, type LogSelect } from '@floe/query';
import type { Row } from './results.ts';

/**
 * Loki's `interval` on log queries: in the query's direction, across all streams, a line is
 * returned when it is the first or lies at least `interval` past the last line returned (Loki
 * compares with the last returned line, not a fixed grid); `limit` counts returned lines. The
 * planner reads lines a page at a time, and each next page starts at the earliest time a line
 * could still be returned, so the lines skipped between two returned ones are never read.
 * Lines sharing the time of a page's last line cannot be returned after it (interval > 0), so
 * the next page starting past that time loses nothing.
 */

/** Lines a page reads. */
const PAGE = 1000;
/** Lines a page reads once pages yield one line each (an interval wider than a page's span). */
const SPARSE_PAGE = 16;

const timeOf = (row: Row) => BigInt(String(row[LOG_COLUMNS.time]));

/**
 * Every page after the first starts at or past the next returnable time, so each yields a line
 * unless the window is done: `limit + 1` pages at most, none of them wasted.
 */
export async function spacedLines(ir: LogSelect, intervalNs: bigint, read: (page: LogSelect) => Promise<Row[]>): Promise<Row[]> {
  const forward = ir.direction === 'forward';
  const out: Row[] = [];
  let range = ir.range;
  let last: bigint | undefined;
  let pageSize = PAGE;
  while (out.length < ir.limit && range.startNs < range.endNs) {
    const rows = await read({ ...ir, range, limit: pageSize });
    const before = out.length;
    for (const row of rows) {
      const ts = timeOf(row);
      if (last === undefined || (forward ? ts >= last + intervalNs : ts <= last - intervalNs)) {
        out.push(row);
        last = ts;
        if (out.length === ir.limit) return out;
      }
    }
    if (rows.length < pageSize || last === undefined) break;
    if (out.length - before <= 1) pageSize = SPARSE_PAGE;
    const edge = timeOf(rows.at(-1)!);
    // The window is half-open [start, end).
    range = forward
      ? { startNs: maxOf(edge + 1n, last + intervalNs), endNs: range.endNs }
      : { startNs: range.startNs, endNs: minOf(edge, last - intervalNs + 1n) };
  }
  return out;
}

const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);
const minOf = (a: bigint, b: bigint) => (a < b ? a : b);
