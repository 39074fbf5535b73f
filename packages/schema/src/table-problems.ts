/**
 * What `floe ops check-tables` can find wrong with a table's current version, defined once: the
 * compactor reports these kinds (services/compactor/src/table-check.ts) and the router's answer
 * schema lists them, so a kind added to the check is one the router lets through.
 */
export const TABLE_PROBLEM_KINDS = [
  'metadata_missing',
  'metadata_unparseable',
  'metadata_outside_table',
  'manifest_list_missing',
  'manifest_list_unreadable',
  'manifests_missing',
  'manifests_unreadable',
  'data_files_missing',
  'data_files_wrong_size',
  'data_files_damaged_pages',
  // Delete files another engine wrote (Floe deletes rows by rewriting data files): their repair is rollback-table, never a drop.
  'delete_files_missing',
  'delete_files_wrong_size',
  'delete_files_damaged_pages',
  'catalog_behind_files',
] as const;

export type TableProblemKind = (typeof TABLE_PROBLEM_KINDS)[number];

/**
 * How long a page check's call waits for its job (`wait_ms`) when it does not say, and the most it
 * may ask: the compactor bounds the wait with these (services/compactor/src/maintenance-jobs.ts),
 * the router gives the call that wait and a margin, and documents the field with them.
 */
export const OPS_JOB_WAIT_DEFAULT_MS = 20_000;
export const OPS_JOB_WAIT_MAX_MS = 60_000;
