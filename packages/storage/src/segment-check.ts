import { isColumnBatch, readColumnBatch } from './column-batch.ts';
import { WalCorruptionError } from './errors.ts';
import { decodeSegment, type WalRecordHeader } from './wal-format.ts';

/**
 * A WAL segment's records as the writer's encoding thread checks them (ParquetWriter.readSegment):
 * each record's header and where its payload sits in the segment, and for a column batch whether
 * its leaves hold (batchError: why not). On the event loop the CRCs and leaf checks were the
 * writer's largest share of it in `floe all`; on that thread they cost it nothing.
 */
export interface CheckedRecordSpan {
  header: WalRecordHeader;
  offset: number;
  length: number;
  batchError?: string;
}

export type SegmentCheck = { records: CheckedRecordSpan[] } | { corrupt: { offset: number; reason: string } };

/** Verifies `bytes` as the segment `segment` (framing, CRCs, column batch leaves). */
export function checkSegment(bytes: Uint8Array, segment: string): SegmentCheck {
  let records;
  try {
    records = decodeSegment(bytes, segment);
  } catch (err) {
    if (err instanceof WalCorruptionError) return { corrupt: { offset: err.offset, reason: err.reason } };
    throw err;
  }
  return {
    records: records.map(({ header, payload }) => {
      const span: CheckedRecordSpan = { header, offset: payload.byteOffset - bytes.byteOffset, length: payload.byteLength };
      if (isColumnBatch(payload)) {
        try {
          readColumnBatch(payload);
        } catch (err) {
          span.batchError = err instanceof Error ? err.message : String(err);
        }
      }
      return span;
    }),
  };
}
