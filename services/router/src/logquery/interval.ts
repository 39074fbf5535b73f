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
/** Pages one request reads at most: a sparse window may need many; the answer then holds what they found. */
const MAX_PAGES = 50;

export async function spacedLines(ir: LogSelect, intervalNs: bigint, read: (page: LogSelect) => Promise<Row[]>): Promise<Row[]> {
  const forward = ir.direction === 'forward';
  const out: Row[] = [];
  let range = ir.range;
  let last: bigint | undefined;
  for (let page = 0; page < MAX_PAGES && out.length < ir.limit && range.startNs < range.endNs; page++) {
    const rows = await read({ ...ir, range, limit: PAGE });
    for (const row of rows) {
      const ts = BigInt(String(row[LOG_COLUMNS.time]));
      if (last === undefined || (forward ? ts >= last + intervalNs : ts <= last - intervalNs)) {
        out.push(row);
        last = ts;
        if (out.length === ir.limit) return out;
      }
    }
    if (rows.length < PAGE || last === undefined) break;
    const edge = BigInt(String(rows.at(-1)![LOG_COLUMNS.time]));
    // The window is half-open [start, end).
    range = forward
      ? { startNs: maxOf(edge + 1n, last + intervalNs), endNs: range.endNs }
      : { startNs: range.startNs, endNs: minOf(edge, last - intervalNs + 1n) };
  }
  return out;
}

const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);
const minOf = (a: bigint, b: bigint) => (a < b ? a : b);
