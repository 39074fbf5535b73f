import { parseSegmentKey } from '@floe/storage';

/**
 * The set of WAL segments a commit consumed, recorded in the Iceberg snapshot summary under
 * `floe.wal-segments` so a replay after a crash never appends a segment twice. Segment keys carry
 * (appender instance, sequence number); a commit usually consumes runs of consecutive sequence
 * numbers per appender, so the set is stored as ranges: `{"acc-a": [[3, 57], [60, 60]]}`.
 * Instance ids are unique per process start, so a (instance, seq) pair names one segment forever.
 */
export const LEDGER_KEY = 'floe.wal-segments';

export type Ledger = Map<string, Array<[number, number]>>;

export function segmentId(key: string, prefix?: string): { instance: string; seq: number } | undefined {
  const n = parseSegmentKey(key, prefix);
  return n ? { instance: n.instanceId, seq: n.seq } : undefined;
}

export function encodeLedger(keys: Iterable<string>, prefix?: string): string {
  const byInstance = new Map<string, number[]>();
  for (const key of keys) {
    const id = segmentId(key, prefix);
    if (!id) continue;
    let seqs = byInstance.get(id.instance);
    if (!seqs) byInstance.set(id.instance, (seqs = []));
    seqs.push(id.seq);
  }
  const out: Record<string, Array<[number, number]>> = {};
  for (const [instance, seqs] of byInstance) {
    seqs.sort((a, b) => a - b);
    const ranges: Array<[number, number]> = [];
    for (const s of seqs) {
      const last = ranges[ranges.length - 1];
      if (last && s <= last[1] + 1) last[1] = Math.max(last[1], s);
      else ranges.push([s, s]);
    }
    out[instance] = ranges;
  }
  return JSON.stringify(out);
}

export function decodeLedger(text: string | undefined, into: Ledger = new Map()): Ledger {
  if (!text) return into;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return into;
  }
  if (!parsed || typeof parsed !== 'object') return into;
  for (const [instance, ranges] of Object.entries(parsed as Record<string, unknown>)) {
    if (!Array.isArray(ranges)) continue;
    const list = into.get(instance) ?? [];
    for (const r of ranges) if (Array.isArray(r) && typeof r[0] === 'number' && typeof r[1] === 'number') list.push([r[0], r[1]]);
    into.set(instance, list);
  }
  return into;
}

/** The segments consumed by the snapshots taken at or after `sinceMs` (older markers are retired). */
export function ledgerOfSnapshots(snapshots: Iterable<{ 'timestamp-ms': number; summary: Readonly<Record<string, string>> }>, sinceMs: number): Ledger {
  const ledger: Ledger = new Map();
  for (const s of snapshots) if (s['timestamp-ms'] >= sinceMs) decodeLedger(s.summary[LEDGER_KEY], ledger);
  return ledger;
}

export function ledgerHas(ledger: Ledger, key: string, prefix?: string): boolean {
  const id = segmentId(key, prefix);
  if (!id) return false;
  return (ledger.get(id.instance) ?? []).some(([a, b]) => id.seq >= a && id.seq <= b);
}
