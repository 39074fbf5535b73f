// Series references in the WAL: the appender defines each segment's series before the first
// record that references them, once per segment, per tenant, dataset, table and schema; the
// writer's check resolves a segment alone, and refuses references its segment does not define.

import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { metricsTable } from '@floe/schema';
import { ColumnBatchBuilder, isSeriesDefinitions, plainBatch, readColumnBatch, type RowTemplate } from './column-batch.ts';
import { FsObjectStore } from './fs-store.ts';
import { ParquetWriter, type CheckedRecord } from './parquet-writer.ts';
import { newRecordId } from './record-id.ts';
import { checkSegment } from './segment-check.ts';
import { tempDir } from './testing/stores.ts';
import { WalAppender } from './wal-appender.ts';
import { frameRecord, segmentHeader, type WalRecord } from './wal-format.ts';
import { readSegment, segmentBytes } from './wal-segments.ts';

const OWN = new Set(['start_unix_nano', 'time_unix_nano', 'value', 'flags']);
const series = (i: number) => ({
  metric_name: `m_${i % 3}`,
  metric_type: i % 2 ? 'sum' : 'gauge',
  temporality: i % 2 ? 'cumulative' : null,
  is_monotonic: i % 2 ? true : null,
  series_id: `sid-${i}`,
  service_name: 'api',
  point_attr_str: { instance: `host-${i}`, job: 'api' },
  resource_attr_str: { 'service.name': 'api' },
});
const maker = ColumnBatchBuilder.forTable(metricsTable);
const templates = Array.from({ length: 6 }, (_, i) => maker.template(series(i), OWN));

/** A record of samples of the given series (by index), as remote write makes them; `want` gets each row as a plain batch writes it. */
function samples(tenant: string, which: number[], want: ColumnBatchBuilder): WalRecord {
  const b = ColumnBatchBuilder.forTable(metricsTable);
  for (const i of which) {
    b.appendRef(templates[i]!);
    want.appendTemplate(templates[i]!);
    for (const target of [b, want]) {
      for (const c of OWN) {
        const col = target.column(c);
        if (col.kind !== 'primitive') throw new Error('primitive expected');
        if (c === 'value') col.leaf.f64(i + 0.5);
        else col.leaf.long(1_700_000_000_000_000_000 + i);
      }
      target.endRow();
    }
  }
  return { header: { tenant, dataset: 'default', table: 'metrics', hour: 472_222, rows: which.length, id: newRecordId() }, payload: b.finish(), series: b.templates.slice() };
}

const leavesOf = (v: ReturnType<typeof plainBatch>) => v.leaves.map((l) => [l.levels, [...l.defs], [...(l.reps ?? [])], [...l.values]]);
/** A record as the writer reads it, resolved against its segment's definitions, as leavesOf. */
const rowsOf = (r: CheckedRecord) => leavesOf(plainBatch(readColumnBatch(r.payload, { defs: r.batch!.defs!.map((d) => readColumnBatch(d.bytes)) })));

describe('series references in the WAL', () => {
  let dir: string;
  let store: FsObjectStore;
  let writer: ParquetWriter;
  beforeEach(async () => {
    dir = await tempDir('wal-series');
    store = new FsObjectStore(path.join(dir, 'data'));
    writer = new ParquetWriter(path.join(dir, 'work'));
  });
  afterEach(async () => {
    writer.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('an appended segment defines each series once per tenant, before its first reference, and reads back as the rows sent', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-series', segmentMaxAgeMs: 3_600_000 });
    const wants = [0, 1, 2].map(() => ColumnBatchBuilder.forTable(metricsTable));
    const a = await wal.append([samples('acme', [0, 1, 2], wants[0]!)]);
    const b = await wal.append([samples('acme', [2, 3, 1, 4], wants[1]!)]);
    const c = await wal.append([samples('other', [1], wants[2]!)]);
    expect(new Set([a.segment, b.segment, c.segment]).size).toBe(1);
    await wal.close();

    const records = await readSegment(store, a.segment);
    const kinds = records.map((r) => `${r.header.tenant}:${isSeriesDefinitions(r.payload) ? `defs ${r.header.rows}` : `rows ${r.header.rows}`}`);
    // acme's first three series, its two new ones before the second record, other's own definition.
    expect(kinds).toEqual(['acme:defs 3', 'acme:rows 3', 'acme:defs 2', 'acme:rows 4', 'other:defs 1', 'other:rows 1']);

    const checked = checkSegment(await segmentBytes(store, a.segment), a.segment);
    if ('corrupt' in checked) throw new Error(checked.corrupt.reason);
    expect(checked.records.map((r) => [r.batchError, r.defGroup, r.refGroup])).toEqual([
      [undefined, 0, undefined],
      [undefined, undefined, 0],
      [undefined, 0, undefined],
      [undefined, undefined, 0],
      [undefined, 1, undefined],
      [undefined, undefined, 1],
    ]);

    // The writer's records: the rows only, each with its segment's definitions, read as sent.
    const read = await writer.readSegment(store, a.segment);
    expect(read.map((r) => r.header.tenant)).toEqual(['acme', 'acme', 'other']);
    read.forEach((r, i) => expect(rowsOf(r)).toEqual(leavesOf(plainBatch(readColumnBatch(wants[i]!.finish())))));
  });

  it('a segment per group commit defines what its group references, and reads back as the rows sent', async () => {
    const wal = new WalAppender(store, { instanceId: 'acc-puts' });
    const wants = [0, 1].map(() => ColumnBatchBuilder.forTable(metricsTable));
    const a = await wal.append([samples('acme', [0, 1], wants[0]!)]);
    const b = await wal.append([samples('acme', [1, 5], wants[1]!)]);
    expect(a.segment).not.toBe(b.segment);
    for (const [i, key] of [a.segment, b.segment].entries()) {
      const records = await readSegment(store, key);
      expect(records.map((r) => (isSeriesDefinitions(r.payload) ? `defs ${r.header.rows}` : `rows ${r.header.rows}`))).toEqual(['defs 2', 'rows 2']);
      const [read] = await writer.readSegment(store, key);
      expect(rowsOf(read!)).toEqual(leavesOf(plainBatch(readColumnBatch(wants[i]!.finish()))));
    }
    await wal.close();
  });

  it('refuses a reference its segment does not define, and references to definitions that fail their check', () => {
    const want = ColumnBatchBuilder.forTable(metricsTable);
    const refs = samples('acme', [0, 1], want);
    const defs = (ts: RowTemplate[], tenant = 'acme'): WalRecord => ({
      header: { tenant, dataset: 'default', table: 'metrics', hour: 472_222, rows: ts.length, id: newRecordId() },
      payload: ColumnBatchBuilder.seriesDefinitions(ts),
    });
    const segment = (...records: WalRecord[]) => Buffer.concat([segmentHeader(records.length), ...records.flatMap((r) => frameRecord(r))]);
    const errors = (bytes: Uint8Array) => {
      const c = checkSegment(bytes, 'test');
      if ('corrupt' in c) throw new Error(c.corrupt.reason);
      return c.records.map((r) => r.batchError ?? 'ok');
    };
    expect(errors(segment(defs(refs.series!.slice()), refs))).toEqual(['ok', 'ok']);
    // No definitions; one too few; another tenant's; definitions after the reference.
    expect(errors(segment(refs))).toEqual([expect.stringMatching(/does not define/)]);
    expect(errors(segment(defs(refs.series!.slice(0, 1)), refs))).toEqual(['ok', expect.stringMatching(/references series 1, its segment defines 1/)]);
    expect(errors(segment(defs(refs.series!.slice(), 'other'), refs))).toEqual(['ok', expect.stringMatching(/does not define/)]);
    expect(errors(segment(refs, defs(refs.series!.slice())))).toEqual([expect.stringMatching(/does not define/), 'ok']);
    // Broken definitions: they and every reference to them are set aside.
    const broken = defs(refs.series!.slice());
    broken.payload = broken.payload.slice(0, broken.payload.length - 3);
    expect(errors(segment(broken, refs))).toEqual([expect.stringMatching(/./), expect.stringMatching(/series definitions are malformed/)]);
  });
});
