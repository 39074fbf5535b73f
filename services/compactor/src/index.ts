/**
 * @floe/compactor: keeps each table's hours at a few large files. Every pass visits every Floe
 * table in the Iceberg catalog and (1) merges the small files of each hour partition into files
 * near `compactor.target_file_size_mb`, rewritten by DuckDB in the canonical sort order, each
 * group swapped in by one `replace` commit with the same rows; (2) expires snapshots older than
 * `compactor.snapshot_retention` and deletes the files only they referenced; (3) deletes objects
 * under the table's location that no retained snapshot references and that are old enough that
 * no commit can still be on its way to reference them. It also sets each table's
 * `write.target-file-size-bytes` to its target, and deletes the metadata versions the metadata
 * log dropped where the table asks for that (`write.metadata.delete-after-commit.enabled`).
 * For operators it also checks tables (is each current version readable whole?), rolls a
 * damaged one back to its newest sound metadata version, drops a table's missing or truncated
 * data files, and finds and registers again the tables a metadata DB restored from an older
 * backup lost (`POST /tables/check|rollback|drop-damaged-files|unregistered|register`); a check
 * or drop that reads every data file's pages runs as a job (maintenance-jobs.ts, `GET /jobs/{id}`).
 */
export { start } from './start.ts';
export type { CompactorDeps, CompactorStatus } from './start.ts';
export { Compactor, hasWork, reconcileTargetFileSize } from './compactor.ts';
export type { CompactorOptions, OpenHourStats, PassStats } from './compactor.ts';
export { compactTable, planCompaction, COMPACTION_SUMMARY_KEY, MIN_FILE_AGE_MS } from './compact.ts';
export type { CompactDeps, CompactionGroup, CompactTableResult, CompactTableStats, PlanCompactionOptions } from './compact.ts';
export { droppedMetadataFiles, expireTable, expiryHorizon } from './expire.ts';
export type { ExpireDeps, ExpireStats } from './expire.ts';
export { findOrphans, listTableObjects, ORPHAN_MIN_AGE_MS, ReferenceCache, tableReferences } from './orphans.ts';
export type { OrphanListing, References } from './orphans.ts';
export { CHECK_PAGE_BUDGET_MS, checkTable, checkTables, metadataCandidates, TableObjects, tableKeyOfPointer } from './table-check.ts';
export type { CheckPage, CheckReport, DamagedFile, PagesCheck, TablePagesProgress, TableCheck, TableProblem, TableProblemKind } from './table-check.ts';
export { DROP_DAMAGED_SUMMARY_KEY, dropDamagedFiles, parseDropDamagedRequest } from './table-drop-damaged.ts';
export type { DropDamagedAnswer, DropDamagedRequest, DroppedFile } from './table-drop-damaged.ts';
export { parseRollbackRequest, parseTableRepairBody, rollbackTable } from './table-rollback.ts';
export type { GivenUpSnapshot, GivenUpVersion, RollbackAnswer, RollbackRequest } from './table-rollback.ts';
export { findUnregistered, parseRegisterRequest, registerTable } from './table-register.ts';
export type { JobKind, JobProgress, JobRunning, JobState, JobView } from './maintenance-jobs.ts';
export type { RegisterAnswer, RegisterRequest, UnregisteredReport, UnregisteredTable } from './table-register.ts';
