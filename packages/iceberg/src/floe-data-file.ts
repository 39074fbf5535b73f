import { randomUUID } from 'node:crypto';
import { partitionFieldName, type TableDef } from '@floe/schema';
import { IdBloom, idBlocksKey, idBloomKey, type ObjectStore, type WrittenFile } from '@floe/storage';
import { serializeLong } from './bounds.ts';
import type { DataFileInput } from './types.ts';

/**
 * Publishes a Parquet file written for a Floe table into the table's data area: uploads it to
 * `<location>/data/<partition>=<hour>/<uuid>.parquet`, stores its id filter beside it (the querier
 * skips files whose filter rules a trace id out) and its id blocks (a trace read by id is one
 * range read), and returns the manifest entry with the time bounds that let planners prune by
 * time. The writer, the compactor and benchmarks share it so
 * every file of a table is laid out and described the same way.
 */
export async function publishDataFile(store: ObjectStore, table: TableDef, written: WrittenFile, locationKey: string, hour: number): Promise<DataFileInput> {
  const key = `${locationKey}/data/${partitionFieldName(table)}=${hour}/${randomUUID()}.parquet`;
  await store.putFile(key, written.path);
  if (table.idColumn) {
    await store.put(idBloomKey(key), IdBloom.build(written.ids, written.ids.length).encode());
    if (written.idBlocksPath) await store.putFile(idBlocksKey(key), written.idBlocksPath);
  }
  const byName = (name: string) => table.columns.find((c) => c.name === name)?.id;
  const lower: Record<number, Uint8Array> = {};
  const upper: Record<number, Uint8Array> = {};
  const tsId = byName(table.partitionSource);
  if (tsId !== undefined) {
    lower[tsId] = serializeLong(written.minTimestampUs);
    upper[tsId] = serializeLong(written.maxTimestampUs);
  }
  const startId = byName('start_time_unix_nano');
  if (startId !== undefined) {
    lower[startId] = serializeLong(written.minStartNs);
    upper[startId] = serializeLong(written.maxStartNs);
  }
  return {
    key,
    fileSizeBytes: written.sizeBytes,
    recordCount: written.rowCount,
    partition: { [partitionFieldName(table)]: hour },
    lowerBounds: lower,
    upperBounds: upper,
    // 0 is Iceberg's unsorted order; 1 the table's canonical one (floeTableDef).
    sortOrderId: written.unsorted ? 0 : 1,
    ...(written.rowGroupOffsets ? { splitOffsets: written.rowGroupOffsets } : {}),
  };
}

/** The objects stored beside a data file (its id filter and id blocks). */
export const dataFileSidecars = (key: string): string[] => [idBloomKey(key), idBlocksKey(key)];

/** Deletes a data file and its sidecars (after expiry or a failed commit). */
export async function deleteDataFiles(store: ObjectStore, keys: readonly string[]): Promise<void> {
  await store.deleteMany(keys.flatMap((k) => [k, ...dataFileSidecars(k)]));
}
