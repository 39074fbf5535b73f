import { describe, expect, it } from 'vitest';
import { Field, Float64, List, RecordBatch, Table, Uint32, Utf8, vectorFromArray } from 'apache-arrow';
import { mapLabels, pointListsRows, seriesIdList } from './results.ts';

describe('mapLabels', () => {
  it('keeps every non-empty string entry as a label, __proto__ included', () => {
    const labels = mapLabels(new Map<string, unknown>([['__proto__', 'x'], ['trace_id', 'abc'], ['empty', ''], ['n', 1]]));
    expect(Object.keys(labels).sort()).toEqual(['__proto__', 'trace_id']);
    expect(Object.hasOwn(labels, '__proto__') && labels['__proto__']).toBe('x');
    expect(JSON.parse(JSON.stringify(labels))).toEqual(JSON.parse('{"__proto__":"x","trace_id":"abc"}'));
    expect(mapLabels({ toJSON: () => ({ a: 'b' }) })).toEqual(Object.assign(Object.create(null), { a: 'b' }));
    expect(Object.keys(mapLabels(null))).toEqual([]);
  });
});

/** The id columns of sql/metrics.ts seriesIdHalvesSql: hex ids as halves, others as text. */
function idColumns(ids: string[]) {
  const hex = (id: string) => /^[0-9a-f]{16}$/.test(id);
  return {
    series_hi: vectorFromArray(ids.map((id) => (hex(id) ? Number.parseInt(id.slice(0, 8), 16) : 0)), new Uint32()).data[0]!,
    series_lo: vectorFromArray(ids.map((id) => (hex(id) ? Number.parseInt(id.slice(8), 16) : 0)), new Uint32()).data[0]!,
    series_text: vectorFromArray(ids.map((id) => (hex(id) ? null : id)), new Utf8()).data[0]!,
  };
}

describe('seriesIdList', () => {
  it('puts hex ids together from their halves, from sliced data too, and keeps other ids as text', () => {
    const all = new RecordBatch(idColumns(['e34f44d110a6a364', '0000000100000002', 'x-1', 'ffffffffffffffff']));
    expect(seriesIdList(new Table([all, all.slice(1, 3)]))).toEqual(['e34f44d110a6a364', '0000000100000002', 'x-1', 'ffffffffffffffff', '0000000100000002', 'x-1']);
    const hexOnly = new RecordBatch(idColumns(['0123456789abcdef'])).slice(0, 1);
    expect(seriesIdList(new Table([hexOnly]))).toEqual(['0123456789abcdef']);
  });
});

describe('pointListsRows', () => {
  it('reads ids and DOUBLE lists column-wise, nulls as null, across batches and from sliced data', () => {
    const listType = new List(new Field('item', new Float64(), true));
    const batch = (ids: string[], t: number[][], v: number[][], stale: Array<number[] | null>) =>
      new RecordBatch({
        ...idColumns(ids),
        t: vectorFromArray(t, listType).data[0]!,
        v: vectorFromArray(v, listType).data[0]!,
        stale_t: vectorFromArray(stale, listType).data[0]!,
      });
    const first = batch(['a', '00000000ffffffff', 'c'], [[1, 2], [], [5]], [[10, 20], [], [50]], [null, null, [5]]);
    // A slice starting at row 1: offsets into the shared buffers must be honoured.
    const sliced = batch(['e34f44d110a6a364', 'ffffffff00000001', 'z'], [[7], [8, 9], [10]], [[70], [80, 90], [100]], [[7], null, null]).slice(1, 3);
    const rows = pointListsRows(new Table([first, sliced]));
    expect(rows.map((r) => ({ id: r.series_id, t: Array.from(r.t), v: Array.from(r.v), stale: r.stale_t && Array.from(r.stale_t) }))).toEqual([
      { id: 'a', t: [1, 2], v: [10, 20], stale: null },
      { id: '00000000ffffffff', t: [], v: [], stale: null },
      { id: 'c', t: [5], v: [50], stale: [5] },
      { id: 'ffffffff00000001', t: [8, 9], v: [80, 90], stale: null },
      { id: 'z', t: [10], v: [100], stale: null },
    ]);
    expect(rows[0]!.t).toBeInstanceOf(Float64Array);
  });
});
