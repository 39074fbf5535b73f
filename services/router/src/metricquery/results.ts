import { makePromLabels, mapEntries, seriesIdFromHalves, type PointLists, type PromLabels } from '@floe/query';
import { float64ListAt } from '@floe/flight';
import type { RecordBatch, Table } from 'apache-arrow';

/** A string map value (Arrow MapRow, Map or object) as a label set: its non-empty string entries. */
export function mapLabels(v: unknown): PromLabels {
  return makePromLabels(mapEntries(v).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** Point lists as views on the querier's DOUBLE buffers (`stale_t` null when the series has no marker). */
type DoubleLists = PointLists & { t: Float64Array; v: Float64Array; stale_t: Float64Array | null };

/**
 * The series ids of a batch of planMetricSeriesIds or of planMetricSeriesPoints without labels:
 * the UINTEGER halves as typed arrays, the text column only read when some id needed it.
 */
function seriesIdReader(batch: RecordBatch): (row: number) => string {
  const hi = batch.getChild('series_hi');
  const lo = batch.getChild('series_lo');
  const text = batch.getChild('series_text');
  if (!hi || !lo || !text) throw new Error('series ids without their columns');
  const his = hi.toArray() as Uint32Array;
  const los = lo.toArray() as Uint32Array;
  if (text.nullCount === text.length) return (i) => seriesIdFromHalves(his[i]!, los[i]!, null);
  return (i) => seriesIdFromHalves(his[i]!, los[i]!, text.get(i) as string | null);
}

/** The ids of planMetricSeriesIds, in the order read. */
export function seriesIdList(table: Table): string[] {
  const out: string[] = [];
  for (const batch of table.batches) {
    const id = seriesIdReader(batch);
    for (let i = 0; i < batch.numRows; i++) out.push(id(i));
  }
  return out;
}

/**
 * Rows of sql/metrics.ts planMetricSeriesPoints without labels (the id, `t`, `v`, `stale_t`)
 * read column by column from the Arrow table: the lists as views on the DOUBLE buffers the
 * querier sent. Arrow's row objects (toJSON per row and field) cost more than the evaluation of
 * the points they hold.
 */
export function pointListsRows(table: Table): DoubleLists[] {
  const out: DoubleLists[] = [];
  for (const batch of table.batches) {
    const id = seriesIdReader(batch);
    const t = batch.getChild('t')?.data[0];
    const v = batch.getChild('v')?.data[0];
    const stale = batch.getChild('stale_t')?.data[0];
    if (!t || !v || !stale) throw new Error('point lists without their columns');
    for (let i = 0; i < batch.numRows; i++) {
      out.push({ series_id: id(i), t: float64ListAt(t, i) ?? new Float64Array(0), v: float64ListAt(v, i) ?? new Float64Array(0), stale_t: float64ListAt(stale, i) });
    }
  }
  return out;
}
