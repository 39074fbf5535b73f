import { parentPort } from 'node:worker_threads';
import type { TableDef } from '@floe/schema';
import { attributeKeyCounts } from './attribute-key-counts.ts';
import { readColumnBatch } from './column-batch.ts';
import { partsOf } from './shared-parts.ts';
import { NeedsDuckDbError, sortedParquetPlan, writeSortedBatchParquet } from './sorted-batch-parquet.ts';
import type { EncodeReply, EncodeRequest } from './sorted-parquet-encoder.ts';

/**
 * The thread that writes sorted flush files (sorted-parquet-encoder.ts): it reads the batches
 * from the shared buffer it is handed (checked already by the committer), sorts, encodes and
 * compresses them, and writes the file. The buffer is not touched after the reply.
 */

// Table definitions by their JSON text: a plan is made once per table and batch schema.
const tables = new Map<string, TableDef>();

parentPort!.on('message', (m: EncodeRequest) => {
  void (async (): Promise<EncodeReply> => {
    try {
      let table = tables.get(m.tableText);
      if (!table) {
        if (tables.size >= 256) tables.clear();
        tables.set(m.tableText, (table = JSON.parse(m.tableText) as TableDef));
      }
      const batches = [];
      for (const payload of partsOf(m)) batches.push(readColumnBatch(payload, { checked: true }));
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
