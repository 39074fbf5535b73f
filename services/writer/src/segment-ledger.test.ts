import { describe, expect, it } from 'vitest';
import { formatSegmentKey } from '@floe/storage';
import { decodeLedger, encodeLedger, LEDGER_KEY, ledgerHas, ledgerOfSnapshots } from './segment-ledger.ts';

const key = (instance: string, seq: number) => formatSegmentKey('wal/', { timestampMs: 1_700_000_000_000 + seq, instanceId: instance, seq });

describe('segment ledger', () => {
  it('encodes runs as ranges and answers membership', () => {
    const keys = [1, 2, 3, 5, 9, 10].map((s) => key('acc-a', s)).concat([key('acc-b', 7)]);
    const text = encodeLedger(keys);
    expect(JSON.parse(text)).toEqual({ 'acc-a': [[1, 3], [5, 5], [9, 10]], 'acc-b': [[7, 7]] });
    const ledger = decodeLedger(text);
    expect(ledgerHas(ledger, key('acc-a', 2))).toBe(true);
    expect(ledgerHas(ledger, key('acc-a', 4))).toBe(false);
    expect(ledgerHas(ledger, key('acc-b', 7))).toBe(true);
    expect(ledgerHas(ledger, key('acc-c', 7))).toBe(false);
  });

  it('reads the segments of the snapshots taken since a time, whatever their order', () => {
    const snap = (at: number, keys: string[]) => ({ 'timestamp-ms': at, summary: { operation: 'append', [LEDGER_KEY]: encodeLedger(keys) } });
    const snapshots = [snap(300, [key('a', 5)]), snap(100, [key('a', 1), key('b', 1)]), snap(200, [key('a', 3)]), { 'timestamp-ms': 400, summary: { operation: 'replace' } }];
    const ledger = ledgerOfSnapshots(snapshots, 200);
    expect([1, 3, 5].map((s) => ledgerHas(ledger, key('a', s)))).toEqual([false, true, true]);
    expect(ledgerHas(ledger, key('b', 1))).toBe(false);
    expect(ledgerHas(ledgerOfSnapshots(snapshots, 0), key('b', 1))).toBe(true);
  });

  it('merges several snapshots and ignores garbage', () => {
    const ledger = decodeLedger(encodeLedger([key('x', 1)]));
    decodeLedger('not json', ledger);
    decodeLedger(encodeLedger([key('x', 5)]), ledger);
    expect(ledgerHas(ledger, key('x', 1))).toBe(true);
    expect(ledgerHas(ledger, key('x', 5))).toBe(true);
  });
});
