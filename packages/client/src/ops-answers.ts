import { optional, type AnswerOf, type Shape } from './answer-shape.ts';

/**
 * What Floe's clients read of the answers of the routes that check and repair tables
 * (/api/v1/ops/tables/check|drop-damaged-files|rollback|unregistered|register), each a shape the
 * answer is checked against and the type it is then read as, defined once. The compactor writes
 * these answers (services/compactor/src/table-*.ts) with more fields than a client reads; only
 * those read are named here, so an answer with more passes.
 */

const TABLE_PROBLEMS = [{ kind: 'string', message: 'string' }] as const satisfies Shape;

/** A problem with a table's version: its kind (@floe/schema TABLE_PROBLEM_KINDS) and what is wrong, in words. */
export type TableProblem = AnswerOf<typeof TABLE_PROBLEMS>[number];

/** With check_pages only: the data and delete files whose pages were read, and their bytes. */
const PAGES_CHECKED = optional({ files: 'number', bytes: 'number' });

const CHECK = {
  tables_checked: 'number',
  ok: 'number',
  damaged: 'number',
  tables: [{ table: 'string', status: 'string', metadata_location: 'string', problems: TABLE_PROBLEMS, pages_checked: PAGES_CHECKED }],
} as const satisfies Shape;

/** POST tables/check with a limit: a page of the tables, and the `after` of the next (null after the last; absent from a router without pages). */
export const OPS_CHECK_PAGE = { ...CHECK, tables_in_scope: optional('number'), next: optional('string') } as const satisfies Shape;

/** Every table of a scope checked: one answer without a limit, or the pages put together. */
export type CheckAnswer = AnswerOf<typeof CHECK>;
export type CheckPageAnswer = AnswerOf<typeof OPS_CHECK_PAGE>;

/** POST tables/drop-damaged-files. */
export const OPS_DROP_DAMAGED = {
  table: 'string',
  dry_run: 'boolean',
  dropped: 'boolean',
  new_metadata_location: optional('string'),
  files: [{ key: 'string', reason: 'string', record_count: 'number', file_size_in_bytes: 'number', size_in_store: optional('number'), damage: optional({ message: 'string' }) }],
  records_given_up: 'number',
  pages_checked: PAGES_CHECKED,
  note: 'string',
} as const satisfies Shape;

export type DropDamagedAnswer = AnswerOf<typeof OPS_DROP_DAMAGED>;

/**
 * A check or drop with check_pages is a job on the compactor: answered as above when it finishes
 * within wait_ms, else 202 with the job, which GET /api/v1/ops/jobs/{id} answers until it is no
 * longer running; `result` is then the status and body the call would have answered.
 */
const JOB_PROGRESS = optional({ files_checked: 'number', files: 'number' });

/** The 202 of POST tables/check|drop-damaged-files with check_pages. */
export const OPS_JOB_STARTED = { status: 'string', job: { id: 'string', kind: 'string', state: 'string', progress: JOB_PROGRESS } } as const satisfies Shape;
export type JobStartedAnswer = AnswerOf<typeof OPS_JOB_STARTED>;

/** GET jobs/{id}. */
export const OPS_JOB = { id: 'string', kind: 'string', state: 'string', progress: JOB_PROGRESS, result: optional({ status: 'number', body: 'any' }) } as const satisfies Shape;
export type JobAnswer = AnswerOf<typeof OPS_JOB>;

/** POST tables/rollback. */
export const OPS_ROLLBACK = {
  table: 'string',
  dry_run: 'boolean',
  rolled_back: 'boolean',
  previous_metadata_location: 'string',
  metadata_location: 'string',
  new_metadata_location: optional('string'),
  chosen: { version: 'number', snapshot_id: optional('string'), problems: TABLE_PROBLEMS },
  given_up: [
    {
      metadata_location: 'string',
      parses: 'boolean',
      problems: TABLE_PROBLEMS,
      snapshots: [{ snapshot_id: 'string', operation: 'string', added_records: optional('number'), deleted_records: optional('number') }],
    },
  ],
  records_given_up: 'number',
  note: 'string',
} as const satisfies Shape;

export type RollbackAnswer = AnswerOf<typeof OPS_ROLLBACK>;

const UNREGISTERED = {
  table_directories: 'number',
  unregistered: 'number',
  tables: [
    {
      table: 'string',
      catalog_row: 'string',
      metadata_files: 'number',
      metadata_location: optional('string'),
      version: optional('number'),
      snapshot_id: optional('string'),
      total_records: optional('number'),
      committed_at: optional('string'),
      tenant_exists: 'boolean',
      dataset_exists: 'boolean',
      problem: optional('string'),
    },
  ],
} as const satisfies Shape;

/** POST tables/unregistered with a limit: a page of the table directories, and the `after` of the next (null after the last). */
export const OPS_UNREGISTERED_PAGE = { ...UNREGISTERED, tables_in_scope: optional('number'), next: optional('string') } as const satisfies Shape;

/** Every table directory of a scope searched: one answer without a limit, or the pages put together. */
export type UnregisteredAnswer = AnswerOf<typeof UNREGISTERED>;
export type UnregisteredPageAnswer = AnswerOf<typeof OPS_UNREGISTERED_PAGE>;
/** A table with files in the warehouse and no catalog row (or an empty one). */
export type UnregisteredTable = UnregisteredAnswer['tables'][number];

/** POST tables/register. */
export const OPS_REGISTER = {
  table: 'string',
  dry_run: 'boolean',
  registered: 'boolean',
  metadata_location: 'string',
  new_metadata_location: optional('string'),
  chosen: { version: 'number', snapshot_id: optional('string'), total_records: optional('number'), committed_at: optional('string'), problems: TABLE_PROBLEMS },
  passed_over: [{ metadata_location: 'string', version: 'number', problems: TABLE_PROBLEMS }],
  replaced_empty_row: optional('string'),
  note: 'string',
} as const satisfies Shape;

export type RegisterAnswer = AnswerOf<typeof OPS_REGISTER>;
