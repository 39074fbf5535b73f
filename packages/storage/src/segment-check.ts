import { checkRefs, isColumnBatch, isSeriesDefinitions, readColumnBatch, readColumnBatchHead, type ColumnBatchHead } from './column-batch.ts';
import { WalCorruptionError } from './errors.ts';
import { decodeSegment, type WalRecordHeader } from './wal-format.ts';

/**
 * A WAL segment's records as the writer's encoding thread checks them (ParquetWriter.readSegment):
 * each record's header and where its payload sits in the segment, and for a column batch whether
 * its leaves hold (batchError: why not). On the event loop the CRCs and leaf checks were the
 * writer's largest share of it in `floe all`; on that thread they cost it nothing.
 *
 * Series definitions ("FCS2", column-batch.ts) are numbered per tenant, dataset, table and
 * schema in segment order (`defGroup`); a batch of series references is checked against the
 * definitions of its group that precede it (`refGroup`), and fails with them when they failed.
 */
export interface CheckedRecordSpan {
  header: WalRecordHeader;
  offset: number;
  length: number;
  batchError?: string;
  /** Series definitions: their group among the segment's. */
  defGroup?: number;
  /** A batch of series references: the group of definitions its references number. */
  refGroup?: number;
}

export type SegmentCheck = { records: CheckedRecordSpan[] } | { corrupt: { offset: number; reason: string } };

interface DefGroup {
  id: number;
  heads: ColumnBatchHead[];
  /** Why a definitions record of the group failed its check: every reference to the group fails. */
  error?: string;
}

const groupKey = (h: WalRecordHeader, schemaText: string) => `${h.tenant}\u0000${h.dataset}\u0000${h.table}\u0000${schemaText}`;

/** Verifies `bytes` as the segment `segment` (framing, CRCs, column batch leaves, series references). */
export function checkSegment(bytes: Uint8Array, segment: string): SegmentCheck {
  let records;
  try {
    records = decodeSegment(bytes, segment);
  } catch (err) {
    if (err instanceof WalCorruptionError) return { corrupt: { offset: err.offset, reason: err.reason } };
    throw err;
  }
  const groups = new Map<string, DefGroup>();
  const groupOf = (header: WalRecordHeader, schemaText: string): DefGroup => {
    const key = groupKey(header, schemaText);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { id: groups.size, heads: [] }));
    return g;
  };
  return {
    records: records.map(({ header, payload }) => {
      const span: CheckedRecordSpan = { header, offset: payload.byteOffset - bytes.byteOffset, length: payload.byteLength };
      if (isSeriesDefinitions(payload)) {
        let g: DefGroup | undefined;
        try {
          g = groupOf(header, readColumnBatchHead(payload).schema.text);
          span.defGroup = g.id;
          if (g.error) throw new TypeError(g.error);
          g.heads.push(readColumnBatch(payload));
        } catch (err) {
          span.batchError = err instanceof Error ? err.message : String(err);
          if (g) g.error ??= `its series definitions are malformed (${span.batchError})`;
        }
      } else if (isColumnBatch(payload)) {
        try {
          const view = readColumnBatch(payload);
          if (view.refs) {
            const g = groups.get(groupKey(header, view.schema.text));
            if (!g) throw new TypeError('column batch references series its segment does not define');
            // Set before the checks: a batch that fails them is set aside with its definitions.
            span.refGroup = g.id;
            if (g.error) throw new TypeError(g.error);
            checkRefs(view.refs, g.heads, view.schema);
          }
        } catch (err) {
          span.batchError = err instanceof Error ? err.message : String(err);
        }
      }
      return span;
    }),
  };
}
