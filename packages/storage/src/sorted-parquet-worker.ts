import { parentPort } from 'node:worker_threads';
import type { TableDef } from '@floe/schema';
import { attributeKeyCounts } from './attribute-key-counts.ts';
import { readColumnBatch } from './column-batch.ts';
import { partsOf } from './shared-parts.ts';
import { NeedsDuckDbError, sortedParquetPlan, writeSortedBatchParquet } from './sorted-batch-parquet.ts';
import { checkSegment } from './segment-check.ts';
import type { CheckReply, CheckRequest, EncodeReply, EncodeRequest } from './sorted-parquet-encoder.ts';

/**
 * The writer's thread (sorted-parquet-encoder.ts): it checks the WAL segments the committer reads
 * (segment-check.ts), and writes sorted flush files: it reads the batches from the shared buffer
 * it is handed (checked already), sorts, encodes and compresses them, and writes the file. A
 * buffer is not touched after the reply.
 */

// Table definitions by their JSON text: a plan is made once per table and batch schema.
const tables = new Map<string, TableDef>();

parentPort!.on('message', (m: EncodeRequest | CheckRequest) => {
  if (m.kind === 'check') {
    let reply: CheckReply;
    try {
      reply = { id: m.id, check: checkSegment(partsOf(m)[0]!, m.segment) };
    } catch (err) {
      reply = { id: m.id, error: err instanceof Error ? err.message : String(err) };
    }
    parentPort!.postMessage(reply);
    return;
  }
  void (async (): Promise<EncodeReply> => {
    try {
      let table = tables.get(m.tableText);
      if (!table) {
        if (tables.size >= 256) tables.clear();
        tables.set(m.tableText, (table = JSON.parse(m.tableText) as TableDef));
      }
      const payloads = partsOf(m);
      let k = 0;
      const defs = m.defCounts.map((n) => Array.from({ length: n }, () => readColumnBatch(payloads[k++]!, { checked: true })));
      const batches = m.groupOf.map((g) => readColumnBatch(payloads[k++]!, { checked: true, ...(g >= 0 ? { defs: defs[g]! } : {}) }));
      const plan = sortedParquetPlan(table, batches[0]!.schema);
      if (!plan) throw new TypeError(`table ${table.name}: these batches need DuckDB`);
      // Key counts come with the file from its dictionaries, unless a key leaf had none.
      const { attributeTypes, ...result } = await writeSortedBatchParquet(m.path, plan, batches, { attributeTypes: m.attributeTypes });
      return { id: m.id, result, ...(m.attributeTypes ? { attributeTypes: attributeTypes ?? attributeKeyCounts(table, batches) } : {}) };
    } catch (err) {
      return { id: m.id, error: err instanceof Error ? err.message : String(err), ...(err instanceof NeedsDuckDbError ? { needsDuckDb: true } : {}) };
    }
  })().then((reply) => parentPort!.postMessage(reply));
});
