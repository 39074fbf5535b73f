import { describe, expect, it } from 'vitest';
import { Field, Float64, List, RecordBatch, Table, Utf8, vectorFromArray } from 'apache-arrow';
import { mapLabels, pointListsRows } from './results.ts';

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

describe('pointListsRows', () => {
  it('reads ids and DOUBLE lists column-wise, nulls as null, across batches and from sliced data', () => {
    const listType = new List(new Field('item', new Float64(), true));
    const batch = (ids: string[], t: number[][], v: number[][], stale: Array<number[] | null>) =>
      new RecordBatch({
        series_id: vectorFromArray(ids, new Utf8()).data[0]!,
        t: vectorFromArray(t, listType).data[0]!,
        v: vectorFromArray(v, listType).data[0]!,
        stale_t: vectorFromArray(stale, listType).data[0]!,
      });
    const first = batch(['a', 'b', 'c'], [[1, 2], [], [5]], [[10, 20], [], [50]], [null, null, [5]]);
    // A slice starting at row 1: offsets into the shared buffers must be honoured.
    const sliced = batch(['x', 'y', 'z'], [[7], [8, 9], [10]], [[70], [80, 90], [100]], [[7], null, null]).slice(1, 3);
    const rows = pointListsRows(new Table([first, sliced]));
    expect(rows.map((r) => ({ id: r.series_id, t: Array.from(r.t), v: Array.from(r.v), stale: r.stale_t && Array.from(r.stale_t) }))).toEqual([
      { id: 'a', t: [1, 2], v: [10, 20], stale: null },
      { id: 'b', t: [], v: [], stale: null },
      { id: 'c', t: [5], v: [50], stale: [5] },
      { id: 'y', t: [8, 9], v: [80, 90], stale: null },
      { id: 'z', t: [10], v: [100], stale: null },
    ]);
    expect(rows[0]!.t).toBeInstanceOf(Float64Array);
  });
});
