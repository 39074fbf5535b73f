import type { TableDef } from '@floe/schema';
import type { AttributeTypeCount } from './attribute-key-counts.ts';
import type { ColumnBatchHead } from './column-batch.ts';
import { RequestThread } from './request-thread.ts';
import type { SegmentCheck } from './segment-check.ts';
import { shareParts, type SharedParts } from './shared-parts.ts';
import { NeedsDuckDbError, type SortedParquetResult } from './sorted-batch-parquet.ts';

/**
 * Writes sorted flush files on a thread of their own (sorted-parquet-worker.ts), so the sort,
 * the gathering and the compression of a flush never hold up the event loop that also takes
 * ingest requests and group-commits the WAL (DuckDB's COPY ran on its own threads too). The
 * batches travel in shared memory: where the committer read them (it reads every segment into
 * shared memory kept between rounds), or else (other callers, tests) copied into a new shared
 * buffer. The thread is started on first use and again after a crash (request-thread.ts).
 */

export interface EncodeRequest extends SharedParts {
  id: number;
  kind: 'encode';
  path: string;
  /** The table definition as JSON (the thread keeps parsed definitions by this text). */
  tableText: string;
  attributeTypes: boolean;
  /**
   * The parts begin with series definitions, defCounts[g] of group g in turn (see
   * ColumnBatchHead.defs); the batches follow, batch i referencing group groupOf[i] (-1: none).
   */
  defCounts: number[];
  groupOf: number[];
}

/** A WAL segment to check (segment-check.ts), as one shared part. */
export interface CheckRequest extends SharedParts {
  id: number;
  kind: 'check';
  segment: string;
}

export type CheckReply = { id: number; check: SegmentCheck; error?: undefined } | { id: number; error: string };

export type EncodeReply =
  | { id: number; result: SortedParquetResult; attributeTypes?: AttributeTypeCount[]; error?: undefined }
  | { id: number; error: string; needsDuckDb?: boolean };

const tableTexts = new WeakMap<TableDef, string>();

export class SortedParquetEncoder {
  readonly #thread = new RequestThread<EncodeRequest | CheckRequest, EncodeReply | CheckReply>(new URL('./sorted-parquet-worker.ts', import.meta.url), "the writer's encoding thread");

  /**
   * Writes the batches (payloads or heads, of one schema, checked; with their series definitions) to `path` as
   * `table`'s sorted file. Payloads in shared memory go as they are; the others are copied into
   * a new shared buffer.
   */
  async encode(path: string, table: TableDef, batches: readonly (ColumnBatchHead | Uint8Array)[], attributeTypes: boolean): Promise<{ result: SortedParquetResult; attributeTypes?: AttributeTypeCount[] }> {
    let tableText = tableTexts.get(table);
    if (!tableText) tableTexts.set(table, (tableText = JSON.stringify(table)));
    const payloads: Uint8Array[] = [];
    const groups = new Map<readonly ColumnBatchHead[], number>();
    const defCounts: number[] = [];
    const groupOf = batches.map((b) => {
      if (b instanceof Uint8Array || !b.defs) return -1;
      let g = groups.get(b.defs);
      if (g === undefined) {
        groups.set(b.defs, (g = defCounts.length));
        defCounts.push(b.defs.length);
        for (const d of b.defs) payloads.push(d.bytes);
      }
      return g;
    });
    for (const b of batches) payloads.push(b instanceof Uint8Array ? b : b.bytes);
    const { buffers, spans } = shareParts(payloads);
    const reply = (await this.#thread.request({ kind: 'encode', path, tableText, buffers, spans, attributeTypes, defCounts, groupOf })) as EncodeReply;
    if (reply.error !== undefined) throw reply.needsDuckDb ? new NeedsDuckDbError(reply.error) : new Error(reply.error);
    return { result: reply.result, ...(reply.attributeTypes ? { attributeTypes: reply.attributeTypes } : {}) };
  }

  /**
   * The segment's records checked on the thread (segment-check.ts). Bytes in shared memory go as
   * they are; others are copied into a new shared buffer. Rejects when the thread fails, so a
   * segment is never taken for corrupt because the thread was not there to read it.
   */
  async checkSegment(segment: string, bytes: Uint8Array): Promise<SegmentCheck> {
    const reply = (await this.#thread.request({ kind: 'check', segment, ...shareParts([bytes]) })) as CheckReply;
    if (reply.error !== undefined) throw new Error(`checking WAL segment ${segment}: ${reply.error}`);
    return reply.check;
  }

  close(): void {
    this.#thread.close();
  }
}
