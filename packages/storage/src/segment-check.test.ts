import { describe, expect, it } from 'vitest';
import { tracesTable } from '@floe/schema';
import { ColumnBatchBuilder } from './column-batch.ts';
import { checkSegment } from './segment-check.ts';
import { frameRecord, segmentHeader } from './wal-format.ts';

const header = (rows: number, id: string) => ({ tenant: 'acme', dataset: 'default', table: 'traces', hour: 490_000, rows, id });

function batch(names: string[]): Uint8Array {
  const b = ColumnBatchBuilder.forTable(tracesTable);
  for (const [i, name] of names.entries()) b.addRow({ trace_id: '0'.repeat(31) + i, span_id: '0'.repeat(15) + i, name, service_name: 'svc', start_time_unix_nano: '1' });
  return b.finish();
}

describe('checkSegment', () => {
  it('gives each record its header and where its payload sits, and says which batches fail their leaf checks', () => {
    const good = batch(['a', 'b']);
    const bad = batch(['c']);
    new DataView(bad.buffer, bad.byteOffset).setUint32(4, 3, true); // claims 3 rows: its leaves hold 1
    const ndjson = Buffer.from('{"name":"x"}\n');
    const records = [
      { header: header(2, 'r1'), payload: good },
      { header: header(3, 'r2'), payload: bad },
      { header: header(1, 'r3'), payload: ndjson },
    ];
    const bytes = Buffer.concat([segmentHeader(records.length), ...records.flatMap(frameRecord)]);
    const check = checkSegment(bytes, 'wal/s1');
    if (!('records' in check)) throw new Error('expected records');
    expect(check.records.map((r) => [r.header.id, r.batchError === undefined])).toEqual([
      ['r1', true],
      ['r2', false],
      ['r3', true],
    ]);
    expect(check.records[1]!.batchError).toMatch(/rows, the batch has 3/);
    for (const [i, r] of check.records.entries()) expect(Buffer.from(bytes.subarray(r.offset, r.offset + r.length)).equals(Buffer.from(records[i]!.payload))).toBe(true);
  });

  it('reports a damaged segment with the offset and reason, not records', () => {
    const bytes = Buffer.concat([segmentHeader(1), ...frameRecord({ header: header(2, 'r1'), payload: batch(['a', 'b']) })]);
    bytes[bytes.length - 10]! ^= 0xff; // inside the payload: its CRC no longer holds
    expect(checkSegment(bytes, 'wal/s2')).toEqual({ corrupt: { offset: 12, reason: expect.stringMatching(/^record 0: CRC mismatch/) } });
    expect(checkSegment(Buffer.from('garbage'), 'wal/s3')).toEqual({ corrupt: { offset: 0, reason: expect.stringMatching(/truncated|bad magic/) } });
  });
});
