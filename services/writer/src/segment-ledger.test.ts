import { describe, expect, it } from 'vitest';
import { formatSegmentKey } from '@floe/storage';
import { decodeLedger, encodeLedger, ledgerHas } from './segment-ledger.ts';

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

  it('merges several snapshots and ignores garbage', () => {
    const ledger = decodeLedger(encodeLedger([key('x', 1)]));
    decodeLedger('not json', ledger);
    decodeLedger(encodeLedger([key('x', 5)]), ledger);
    expect(ledgerHas(ledger, key('x', 1))).toBe(true);
    expect(ledgerHas(ledger, key('x', 5))).toBe(true);
  });
});
