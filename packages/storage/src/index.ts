/**
 * @floe/storage — where Floe's bytes live.
 *
 * An ObjectStore is a flat namespace of immutable-by-convention objects under '/'-separated keys,
 * backed by a local directory (embedded mode) or an S3 bucket (cluster mode); everything above it
 * runs unchanged on both. The load-bearing rule: a put resolves only once the object is durable
 * (fsync'd file and directory, or an acknowledged PUT) and readers never see a partial object.
 *
 * The write-ahead log sits on top. A WAL record is one ingest request's rows for one
 * (tenant, dataset, table, hour), opaque to the WAL apart from its small header. A record is
 * guaranteed to be stored once append() resolves — that is when the acceptor may ack — and it is
 * stored inside exactly one segment, verified by CRC when read back. Concurrent appends share
 * segments (group commit), and segment keys sort by creation time across processes, so the writer
 * replays them oldest first.
 *
 * LocalFileCache gives path-based readers (DuckDB) local copies of S3 objects.
 */

export type {
  FsObjectStoreConfig,
  ObjectBody,
  AppendableObject,
  AppendableObjects,
  ObjectInfo,
  ObjectStore,
  ObjectStoreConfig,
  S3ObjectStoreConfig,
} from './object-store.ts';
export { createObjectStore } from './create-object-store.ts';
export { fileCacheFromConfig, objectStoreFromConfig } from './from-config.ts';
export { FsObjectStore } from './fs-store.ts';
export { OPEN_DIR } from './fs-appendables.ts';
export { S3ObjectStore } from './s3-store.ts';
export { compareKeys, validateKey, validatePrefix } from './keys.ts';
export {
  InvalidKeyError,
  ObjectNotFoundError,
  ObjectSizeMismatchError,
  WalAppendError,
  WalClosedError,
  WalCorruptionError,
} from './errors.ts';

export { LocalFileCache } from './file-cache.ts';
export type { CacheLease, LocalFileCacheOptions, LocalFileCacheStats } from './file-cache.ts';

export type { WalRecord, WalRecordHeader } from './wal-format.ts';
export { decodeSegment, frameRecord, WAL_VERSION } from './wal-format.ts';
export { WalAppender } from './wal-appender.ts';
export type { WalAppenderOptions, WalAppendResult } from './wal-appender.ts';
export {
  DEFAULT_WAL_PREFIX,
  WAL_CLOCK_SKEW_MS,
  deleteSegments,
  formatSegmentKey,
  listSegments,
  parseSegmentKey,
  readSegment,
  recoverOpenSegments,
  segmentBytes,
  walBacklog,
} from './wal-segments.ts';
export type { SegmentName, WalBacklog } from './wal-segments.ts';
export { WAL_HELD_MAX_AGE_MS, WAL_HELD_REFRESH_MS, WalHeldReader, decodeWalHeld, encodeWalHeld, walHeldKey, walHeldPrefix } from './wal-held.ts';
export type { HeldTable, WalHeld } from './wal-held.ts';
export { newRecordId, recordIdTime } from './record-id.ts';

export { ParquetWriter, writtenLocalFiles } from './parquet-writer.ts';
export { ParquetConcatError, concatParquet, readParquetFooter, rowGroupOffsets } from './parquet-concat.ts';
export type { ConcatenatedFile, ParquetFooter } from './parquet-concat.ts';
export { verifyLocalParquetPages, verifyParquetPages } from './parquet-verify.ts';
export type { PageDamage, VerifyPagesOptions } from './parquet-verify.ts';
export type { CheckedRecord, RowCondition, WriteOptions, WrittenFile } from './parquet-writer.ts';
export { NO_DUCKDB_MEMORY, observeDuckDbMemory, readDuckDbMemory } from './duckdb-memory.ts';
export type { DuckDbMemory } from './duckdb-memory.ts';
export type { AttributeTypeCount } from './attribute-key-counts.ts';
export { IdBloom, idBloomKey } from './id-bloom.ts';
export { IdBlocksIndex, IdBlocksWriter, findIdPayload, idBlocksKey, readIdPayload } from './id-blocks.ts';
export type { IdPayloadRead } from './id-blocks.ts';
export { BytesLru, Lru } from './lru.ts';
export type { BytesHit } from './lru.ts';
export { viewOf } from './byte-ranges.ts';
export { eachAtMost } from './each-at-most.ts';
export { ColumnBatchBuilder, Leaf, REUSE_BYTES, RowTemplate, batchSchema, isColumnBatch, plainBatch, readColumnBatch } from './column-batch.ts';
export { Scratch } from './scratch.ts';
export { BufferPool } from './buffer-pool.ts';
export type { BatchColumn, BatchSchema, BatchSchemaInfo, ColumnBatchHead, ColumnBatchView } from './column-batch.ts';
export { writeColumnBatchParquet } from './column-batch-parquet.ts';
export { columnBatchRows, columnBatchValues } from './column-batch-rows.ts';
export { RequestThread } from './request-thread.ts';
