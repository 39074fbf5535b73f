import { jobCallTimeoutMs, type CompactorPath } from '../compactor-client.ts';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { authorizeInstance } from '@floe/auth';
import { FloeError } from '@floe/errors';
import { OPS_JOB_WAIT_DEFAULT_MS, OPS_JOB_WAIT_MAX_MS, TABLE_PROBLEM_KINDS, TABLES } from '@floe/schema';
import type { ManagementOptions } from './options.ts';
import { principalOf } from './principal-plugin.ts';
import { ERROR_RESPONSES, datasetIdSchema, ref, tenantIdSchema } from './schemas.ts';

/**
 * Compaction control (spec 2, "Management and operations"; who may: rule 5, admin-authenticated):
 * start an on-demand pass, see what the compactor is doing, or ask what a pass would merge now;
 * and checking and repairing tables: which tables' current metadata cannot be read whole (a page
 * of them at a time on a large catalog), rolling one back to a sound metadata version,
 * dropping a table's missing or truncated data files, and finding and registering again the
 * tables a metadata DB restored from an older backup lost. A check or drop that reads every data
 * file's pages (check_pages) is a job on the compactor: answered when it finishes within wait_ms,
 * else 202 with the job, which GET /ops/jobs/{id} answers until it is done.
 * The router authenticates the operator (break-glass admin key or an instance admin's session)
 * and passes the request to the compactor's admin port (compactor-client.ts), answering with what
 * the compactor answered.
 */

const TAGS = ['ops'];

const scopeBody = {
  type: 'object',
  additionalProperties: false,
  description: 'Which tables: all when empty; a tenant, a tenant and dataset, and/or one table name.',
  properties: { tenant: tenantIdSchema, dataset: datasetIdSchema, table: { type: 'string', enum: Object.keys(TABLES) } },
} as const;

const passSummary = { type: 'object', additionalProperties: true, description: 'What the pass did: tables, partitions and files compacted, bytes before and after, snapshots expired, orphans removed, duration.' } as const;

const request = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'scope', 'requestedAt', 'startedAt', 'finishedAt', 'result'],
  properties: {
    id: { type: 'string' },
    scope: { anyOf: [scopeBody, { type: 'null' }] },
    requestedAt: { type: 'string', format: 'date-time' },
    startedAt: { type: ['string', 'null'], format: 'date-time' },
    finishedAt: { type: ['string', 'null'], format: 'date-time' },
    result: { anyOf: [passSummary, { type: 'null' }] },
  },
} as const;

type Scope = { tenant?: string; dataset?: string; table?: string };

// Checking and repairing tables (services/compactor/src/table-check.ts, table-rollback.ts, table-drop-damaged.ts, table-register.ts).
const tableName = { type: 'string', enum: Object.keys(TABLES) } as const;
const objectKeys = { type: 'array', items: { type: 'string' }, description: 'The first few object keys concerned.' } as const;
const problem = {
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'message'],
  properties: {
    kind: { type: 'string', enum: [...TABLE_PROBLEM_KINDS] },
    message: { type: 'string', description: 'What is wrong, the parse error included.' },
    count: { type: 'integer', description: 'How many files the problem covers.' },
    keys: objectKeys,
  },
} as const;
const problems = { type: 'array', items: problem } as const;

const checkPagesField = {
  type: 'boolean',
  description:
    "Also read every live data file (and Parquet delete file) the listing finds whole and walk its pages (page crcs where the writer wrote them, headers and chunk ends everywhere): a bit flipped inside a page keeps the file's size and DuckDB reads it as wrong values; such files are reported as data_files_damaged_pages (delete files: delete_files_damaged_pages). Reads the whole table, so off by default.",
} as const;
const pagesChecked = {
  type: 'object',
  additionalProperties: false,
  required: ['files', 'bytes'],
  description: 'With check_pages only: the data and delete files whose pages were read, and their bytes.',
  properties: { files: { type: 'integer' }, bytes: { type: 'integer' } },
} as const;

const waitMsField = {
  type: 'integer',
  minimum: 0,
  maximum: OPS_JOB_WAIT_MAX_MS,
  description: `With check_pages: how long to wait for the job reading the pages, in milliseconds (default ${OPS_JOB_WAIT_DEFAULT_MS}). Finished by then: its answer, as without a job; else 202 with the job, which GET /api/v1/ops/jobs/{id} answers. Ignored without check_pages.`,
} as const;

/** The most tables a page of a check may ask for (the compactor's limit too). */
const MAX_CHECK_PAGE = 1000;

const checkBody = {
  ...scopeBody,
  description: `${scopeBody.description} With limit: one page of them, in name order, after the table named in after (the next of the previous page's answer).`,
  properties: {
    ...scopeBody.properties,
    after: { type: 'string', minLength: 5, maxLength: 400, pattern: '^[^.]+\\.[^.]+\\.[^.]+$', description: "The previous page's next: <tenant>.<dataset>.<table>. Needs limit." },
    limit: { type: 'integer', minimum: 1, maximum: MAX_CHECK_PAGE, description: 'Check at most this many tables in this call and answer which page comes next; a page also ends early, after at least one table, once it has taken 15 s. Absent: every table of the scope in one answer.' },
    check_pages: checkPagesField,
    wait_ms: waitMsField,
  },
} as const;

const checkAnswer = {
  type: 'object',
  additionalProperties: false,
  required: ['tables_checked', 'ok', 'damaged', 'tables'],
  properties: {
    tables_checked: { type: 'integer' },
    ok: { type: 'integer' },
    damaged: { type: 'integer' },
    tables_in_scope: { type: 'integer', description: 'With limit only: the tables of the scope, all pages together.' },
    next: { type: ['string', 'null'], description: 'With limit only: the after of the next page; null after the last one.' },
    tables: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['table', 'status', 'metadata_location', 'problems'],
        properties: {
          table: { type: 'string', description: '<tenant>.<dataset>.<table>' },
          status: { type: 'string', enum: ['ok', 'damaged'] },
          metadata_location: { type: 'string', description: 'The version the catalog points at, as checked.' },
          problems,
          pages_checked: pagesChecked,
        },
      },
    },
  },
} as const;

const rollbackBody = {
  type: 'object',
  additionalProperties: false,
  required: ['tenant', 'dataset', 'table'],
  properties: {
    tenant: tenantIdSchema,
    dataset: datasetIdSchema,
    table: tableName,
    metadata_location: { type: 'string', minLength: 1, maxLength: 4096, description: "The version to go back to: a *.metadata.json under the table's metadata/ (its URI or object key). Absent: the newest sound version." },
    dry_run: { type: 'boolean', description: 'Answer what would be chosen and given up, and change nothing.' },
  },
} as const;

const rollbackAnswer = {
  type: 'object',
  additionalProperties: false,
  required: ['table', 'dry_run', 'rolled_back', 'previous_metadata_location', 'metadata_location', 'new_metadata_location', 'chosen', 'given_up', 'records_given_up', 'note'],
  properties: {
    table: { type: 'string', description: '<tenant>.<dataset>.<table>' },
    dry_run: { type: 'boolean' },
    rolled_back: { type: 'boolean', description: 'Whether the pointer moved: false for a dry run or when the chosen version is already current.' },
    previous_metadata_location: { type: 'string', description: 'The version the table pointed at before.' },
    metadata_location: { type: 'string', description: 'The version chosen, whose content the table has after the rollback.' },
    new_metadata_location: { type: ['string', 'null'], description: 'The new version written with that content, numbered above every other, which the table points at now; null for a dry run or when nothing moved.' },
    chosen: {
      type: 'object',
      additionalProperties: false,
      required: ['version', 'snapshot_id', 'problems'],
      properties: {
        version: { type: 'integer', description: 'Its number in the file name (-1 when it has none).' },
        snapshot_id: { type: ['string', 'null'], description: 'Its current snapshot.' },
        problems: { ...problems, description: 'Empty unless a version with problems was named in metadata_location.' },
      },
    },
    given_up: {
      type: 'array',
      description: 'The versions newer than the chosen one, the current one first.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['metadata_location', 'version', 'parses', 'problems', 'snapshots'],
        properties: {
          metadata_location: { type: 'string' },
          version: { type: 'integer' },
          parses: { type: 'boolean' },
          problems,
          snapshots: {
            type: 'array',
            description: 'Its snapshots the chosen version lacks (empty when it does not parse).',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['snapshot_id', 'operation', 'timestamp_ms', 'added_records', 'deleted_records'],
              properties: {
                snapshot_id: { type: 'string' },
                operation: { type: 'string' },
                timestamp_ms: { type: 'integer' },
                added_records: { type: ['integer', 'null'] },
                deleted_records: { type: ['integer', 'null'] },
              },
            },
          },
        },
      },
    },
    records_given_up: { type: 'integer', description: 'Rows added less rows deleted by the distinct given-up snapshots of the versions that parse.' },
    note: { type: 'string', description: "What follows: the given-up rows leave the table, and the orphan sweep deletes the files only the given-up versions referenced once they are an hour old." },
  },
} as const;

type RollbackBody = { tenant: string; dataset: string; table: string; metadata_location?: string; dry_run?: boolean };

const dropDamagedBody = {
  type: 'object',
  additionalProperties: false,
  required: ['tenant', 'dataset', 'table'],
  properties: {
    tenant: tenantIdSchema,
    dataset: datasetIdSchema,
    table: tableName,
    dry_run: { type: 'boolean', description: 'Answer which files would be dropped and their rows, and change nothing.' },
    check_pages: { ...checkPagesField, description: `${checkPagesField.description} Those files are dropped with the others (reason damaged_pages).` },
    wait_ms: waitMsField,
  },
} as const;

const dropDamagedAnswer = {
  type: 'object',
  additionalProperties: false,
  required: ['table', 'dry_run', 'dropped', 'previous_metadata_location', 'new_metadata_location', 'snapshot_id', 'files', 'records_given_up', 'note'],
  properties: {
    table: { type: 'string', description: '<tenant>.<dataset>.<table>' },
    dry_run: { type: 'boolean' },
    dropped: { type: 'boolean', description: 'Whether a snapshot removing the files was committed: false for a dry run or when no file is damaged.' },
    previous_metadata_location: { type: 'string', description: 'The version checked.' },
    new_metadata_location: { type: ['string', 'null'], description: 'The version the commit wrote, which the table points at now; null when nothing was committed.' },
    snapshot_id: { type: ['string', 'null'], description: 'The snapshot that removed the files (operation delete, summary floe.dropped-damaged-files).' },
    files: {
      type: 'array',
      description: "The current snapshot's live data files that are missing from the store, not the size their manifests record, or (check_pages) whose pages are damaged, by key.",
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['key', 'reason', 'record_count', 'file_size_in_bytes', 'size_in_store'],
        properties: {
          key: { type: 'string' },
          reason: { type: 'string', enum: ['missing', 'wrong_size', 'damaged_pages'] },
          record_count: { type: 'integer', description: 'Its rows, from its manifest: given up.' },
          file_size_in_bytes: { type: 'integer', description: 'Its size as its manifest records it.' },
          size_in_store: { type: ['integer', 'null'], description: 'Its size as the store lists it; null when missing.' },
          damage: {
            type: 'object',
            additionalProperties: false,
            required: ['message', 'row_group', 'column', 'offset'],
            description: 'damaged_pages only: what does not read, and where.',
            properties: {
              message: { type: 'string', description: 'The page walk\'s words: the file, the row group, column and byte offset, and what is wrong.' },
              row_group: { type: ['integer', 'null'], description: 'null when the footer itself does not read.' },
              column: { type: ['string', 'null'], description: "The column's path, its parts joined by dots." },
              offset: { type: ['integer', 'null'], description: "The byte offset of the page's header in the file." },
            },
          },
        },
      },
    },
    records_given_up: { type: 'integer', description: 'The rows of those files.' },
    pages_checked: pagesChecked,
    note: { type: 'string', description: 'What follows.' },
  },
} as const;

type DropDamagedBody = { tenant: string; dataset: string; table: string; dry_run?: boolean; check_pages?: boolean; wait_ms?: number };

// Page checks as jobs (services/compactor/src/maintenance-jobs.ts).
const jobKinds = { type: 'string', enum: ['check_tables', 'drop_damaged_files'] } as const;
const jobProgress = {
  type: 'object',
  additionalProperties: false,
  required: ['tables', 'files_checked', 'files', 'bytes_checked', 'bytes', 'damaged'],
  description: 'What the page walks have done so far, all tables together.',
  properties: {
    tables: { type: 'integer', description: 'Tables whose page walk began.' },
    files_checked: { type: 'integer' },
    files: { type: 'integer', description: 'Data files to read of those tables.' },
    bytes_checked: { type: 'integer' },
    bytes: { type: 'integer' },
    damaged: { type: 'integer', description: 'Files found with damaged pages so far.' },
  },
} as const;
const jobId = { type: 'string', format: 'uuid', description: 'The job, until the compactor forgets it (an hour after it finished, or the last 100) or restarts.' } as const;
const jobFields = {
  id: jobId,
  kind: jobKinds,
  state: { type: 'string', enum: ['running', 'done', 'failed'], description: 'failed: its result is an error (the status and envelope the call would have answered).' },
  started_at: { type: 'string', format: 'date-time' },
  progress: jobProgress,
} as const;
const jobRunning = {
  type: 'object',
  additionalProperties: false,
  required: ['status', 'job'],
  description: 'The job reading the pages did not finish within wait_ms: poll GET /api/v1/ops/jobs/{id} (the Location header).',
  properties: {
    status: { type: 'string', enum: ['running'] },
    job: { type: 'object', additionalProperties: false, required: ['id', 'kind', 'state', 'started_at', 'progress'], properties: jobFields },
  },
} as const;

const unregisteredBody = {
  type: 'object',
  additionalProperties: false,
  description: "The whole warehouse, or one tenant's directories. With limit: one page of table directories, in name order, after the one named in after (the next of the previous page's answer).",
  properties: { tenant: tenantIdSchema, after: checkBody.properties.after, limit: { ...checkBody.properties.limit, description: 'Visit at most this many table directories in this call and answer which page comes next; a page also ends early, after at least one, once it has taken 15 s. Absent: every one in one answer.' } },
} as const;

const snapshotFields = {
  snapshot_id: { type: ['string', 'null'], description: "That version's current snapshot." },
  total_records: { type: ['integer', 'null'], description: "total-records of the snapshot's summary; null when absent." },
  committed_at: { type: ['string', 'null'], format: 'date-time', description: 'When the snapshot was committed.' },
} as const;

const unregisteredAnswer = {
  type: 'object',
  additionalProperties: false,
  required: ['table_directories', 'unregistered', 'tables'],
  properties: {
    table_directories: { type: 'integer', description: 'Table directories visited.' },
    unregistered: { type: 'integer' },
    tables_in_scope: { type: 'integer', description: 'With limit only: the table directories of the scope, all pages together.' },
    next: { type: ['string', 'null'], description: 'With limit only: the after of the next page; null after the last one.' },
    tables: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['table', 'catalog_row', 'metadata_files', 'metadata_location', 'version', 'snapshot_id', 'total_records', 'committed_at', 'tenant_exists', 'dataset_exists'],
        properties: {
          table: { type: 'string', description: '<tenant>.<dataset>.<table>' },
          catalog_row: { type: 'string', enum: ['none', 'empty'], description: 'none: no catalog row; empty: a row provisioned since (its tenant or dataset created again) that holds no snapshot, which register_table replaces.' },
          metadata_files: { type: 'integer', description: 'The *.metadata.json files under its metadata/.' },
          metadata_location: { type: ['string', 'null'], description: 'Its newest metadata file that parses; null when none does.' },
          version: { type: ['integer', 'null'] },
          ...snapshotFields,
          tenant_exists: { type: 'boolean', description: 'Whether the registry holds its tenant now (needed to register it).' },
          dataset_exists: { type: 'boolean', description: 'Whether the registry holds its dataset now (needed to register it).' },
          problem: { type: 'string', description: 'When no metadata file parses: why the newest does not.' },
        },
      },
    },
  },
} as const;

const registerBody = {
  ...rollbackBody,
  properties: {
    ...rollbackBody.properties,
    metadata_location: { type: 'string', minLength: 1, maxLength: 4096, description: "The version to register: a *.metadata.json under the table's metadata/ (its URI or object key). Absent: the newest sound one." },
    dry_run: { type: 'boolean', description: 'Answer what would be registered, and change nothing.' },
  },
} as const;

const registerAnswer = {
  type: 'object',
  additionalProperties: false,
  required: ['table', 'dry_run', 'registered', 'metadata_location', 'new_metadata_location', 'chosen', 'passed_over', 'replaced_empty_row', 'note'],
  properties: {
    table: { type: 'string', description: '<tenant>.<dataset>.<table>' },
    dry_run: { type: 'boolean' },
    registered: { type: 'boolean', description: 'Whether the table has a catalog row now: false for a dry run.' },
    metadata_location: { type: 'string', description: 'The version chosen, whose content the table has.' },
    new_metadata_location: { type: ['string', 'null'], description: 'The new version written with that content, numbered above every other, which the row points at; null for a dry run.' },
    chosen: {
      type: 'object',
      additionalProperties: false,
      required: ['version', 'snapshot_id', 'total_records', 'committed_at', 'problems'],
      properties: { version: { type: 'integer' }, ...snapshotFields, problems: { ...problems, description: 'Empty unless a version with problems was named in metadata_location.' } },
    },
    passed_over: {
      type: 'array',
      description: 'The newer metadata files not taken, and why.',
      items: { type: 'object', additionalProperties: false, required: ['metadata_location', 'version', 'problems'], properties: { metadata_location: { type: 'string' }, version: { type: 'integer' }, problems } },
    },
    replaced_empty_row: { type: ['string', 'null'], description: 'The version of the empty row provisioned since that the registration replaces; null when the table had no row.' },
    note: { type: 'string', description: 'What follows.' },
  },
} as const;

export const opsRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  const compactor = () => {
    if (!opts.compactor) throw new FloeError('unavailable', 'no compactor configured (router.compactor_url)', { code: 'FLOE_ERR_NO_COMPACTOR' });
    return opts.compactor;
  };
  const relay = (reply: FastifyReply, answer: { status: number; body: unknown }) => {
    // A job the compactor did not finish within wait_ms: where to ask for it.
    const id = answer.status === 202 ? (answer.body as { job?: { id?: unknown } } | null)?.job?.id : undefined;
    if (typeof id === 'string') reply.header('location', `/api/v1/ops/jobs/${encodeURIComponent(id)}`);
    return reply.code(answer.status).type('application/json').send(answer.body);
  };
  const checkScope = (s: Scope | undefined) => {
    if (s?.dataset !== undefined && s.tenant === undefined) throw new FloeError('bad_data', 'dataset needs tenant', { code: 'FLOE_ERR_OPS_SCOPE' });
    return s ?? {};
  };

  /** A POST the compactor answers: instance admins only; the compactor's status and body are relayed. */
  const compactorPost = <B>(route: string, path: CompactorPath, schema: Record<string, unknown>, body: (b: B) => unknown = (b) => b) =>
    app.post(route, { schema: { ...schema, tags: TAGS } }, async (req, reply) => {
      authorizeInstance(principalOf(req), 'ops.compact');
      // The schema above validated the body's shape.
      const sent = body(req.body as B);
      // A page check is a job the compactor answers for within its wait_ms (compactor-client.ts).
      const b = typeof sent === 'object' && sent !== null ? (sent as { check_pages?: unknown; wait_ms?: unknown }) : {};
      const readsPages = b.check_pages === true;
      return relay(reply, await compactor().call('POST', path, sent, readsPages ? { timeoutMs: jobCallTimeoutMs(typeof b.wait_ms === 'number' ? b.wait_ms : undefined) } : undefined));
    });

  compactorPost<Scope | undefined>(
    '/ops/compact',
    '/compact',
    {
      operationId: 'start_compaction',
      summary: 'Start an on-demand compaction pass over all tables or a tenant, dataset or table (instance admin); it runs after the pass in progress',
      body: scopeBody,
      response: { 202: request, ...ERROR_RESPONSES },
    },
    (b) => checkScope(b),
  );

  compactorPost<(Scope & { after?: string; limit?: number; check_pages?: boolean; wait_ms?: number }) | undefined>(
    '/ops/tables/check',
    '/tables/check',
    {
      operationId: 'check_tables',
      summary:
        "Check every table of the scope (all, a tenant, a dataset and/or one table name), or a page of them (limit, after): whether its current metadata, the current snapshot's manifest list and manifests and its data files are all in the store, readable, and the sizes their manifests record; with check_pages, whether every data and delete file's pages read too, as a job: 202 with it when it is not done within wait_ms, 429 naming the running jobs while the compactor runs as many as it runs at once. Read-only (instance admin)",
      body: checkBody,
      response: { 200: checkAnswer, 202: jobRunning, ...ERROR_RESPONSES },
    },
    (b) => checkScope(b),
  );

  compactorPost<RollbackBody>(
    '/ops/tables/rollback',
    '/tables/rollback',
    {
      operationId: 'rollback_table',
      summary:
        "Give a table the content of another of its metadata versions as a new version (by compare-and-swap): the one named, or the newest sound earlier one; answers what was chosen and what is given up. 404 unknown table, 400 a location that is not the table's or does not parse, 409 when the table moved meanwhile or no version is sound (instance admin)",
      body: rollbackBody,
      response: { 200: rollbackAnswer, ...ERROR_RESPONSES },
    },
  );

  compactorPost<DropDamagedBody>(
    '/ops/tables/drop-damaged-files',
    '/tables/drop-damaged-files',
    {
      operationId: 'drop_damaged_files',
      summary:
        "Commit one snapshot that removes the table's current live data files that are missing from the store or not the size their manifests record (and, with check_pages, those whose pages are damaged), giving up only their rows; answers the files and rows. 404 unknown table, 409 when the table's metadata or manifests are themselves damaged, a delete file of it is damaged (dropping it would bring back deleted rows) or its catalog is behind its files (rollback_table's job), or it moved meanwhile; with check_pages a job: 202 with it when it is not done within wait_ms, 409 while another drop of the table runs, 429 naming the running jobs while the compactor runs as many as it runs at once (instance admin)",
      body: dropDamagedBody,
      response: { 200: dropDamagedAnswer, 202: jobRunning, ...ERROR_RESPONSES },
    },
  );

  compactorPost<{ tenant?: string; after?: string; limit?: number } | undefined>(
    '/ops/tables/unregistered',
    '/tables/unregistered',
    {
      operationId: 'find_unregistered_tables',
      summary:
        'List the table directories of the warehouse (or of a tenant) that have metadata files and no catalog row, as after the metadata DB was restored from an older backup: each with its newest metadata file that parses, its row count and commit time, and whether its tenant and dataset exist now. Read-only; pages like check_tables (instance admin)',
      body: unregisteredBody,
      response: { 200: unregisteredAnswer, ...ERROR_RESPONSES },
    },
    (b) => b ?? {},
  );

  compactorPost<RollbackBody>(
    '/ops/tables/register',
    '/tables/register',
    {
      operationId: 'register_table',
      summary:
        "Give a table whose files are in the store but that has no catalog row a row again: the content of its newest sound metadata file (or the one named) as a new version numbered above every other (Iceberg's register_table). 409 when its tenant or dataset is missing from the registry (create it first), it has a row that holds data (rollback_table's job), or no metadata file parses or is sound; 404 no metadata file (instance admin)",
      body: registerBody,
      response: { 200: registerAnswer, ...ERROR_RESPONSES },
    },
  );

  app.get(
    '/ops/jobs/:id',
    {
      schema: {
        operationId: 'get_ops_job',
        summary:
          "A check_tables or drop_damaged_files job that reads pages (check_pages): its state and progress, and once finished its result: the HTTP status and body the call would have answered. 404 when the compactor does not know it (finished more than an hour ago, or the compactor restarted: run it again) (instance admin)",
        tags: TAGS,
        params: { type: 'object', additionalProperties: false, required: ['id'], properties: { id: { ...jobId, pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' } } },
        response: {
          200: {
            type: 'object',
            additionalProperties: false,
            required: ['id', 'kind', 'state', 'started_at', 'finished_at', 'progress'],
            properties: {
              ...jobFields,
              finished_at: { type: ['string', 'null'], format: 'date-time' },
              result: {
                type: 'object',
                additionalProperties: false,
                required: ['status', 'body'],
                description: 'Once finished: what POST /ops/tables/check or /ops/tables/drop-damaged-files would have answered.',
                properties: { status: { type: 'integer' }, body: { anyOf: [checkAnswer, dropDamagedAnswer, ref('ErrorEnvelope')] } },
              },
            },
          },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req, reply) => {
      authorizeInstance(principalOf(req), 'ops.compact');
      return relay(reply, await compactor().call('GET', `/jobs/${encodeURIComponent((req.params as { id: string }).id.toLowerCase())}`));
    },
  );

  app.get(
    '/ops/compact/status',
    {
      schema: {
        operationId: 'get_compaction_status',
        summary: 'The compactor: whether a pass runs, how many finished, the last one, and the latest on-demand passes (instance admin)',
        tags: TAGS,
        response: {
          200: {
            type: 'object',
            additionalProperties: false,
            required: ['enabled', 'intervalMs', 'passes', 'runningSince', 'lastPass', 'requests'],
            properties: {
              enabled: { type: 'boolean' },
              intervalMs: { type: 'integer' },
              passes: { type: 'integer' },
              runningSince: { type: ['string', 'null'], format: 'date-time' },
              lastPass: { anyOf: [passSummary, { type: 'null' }] },
              requests: { type: 'array', items: request },
              openHours: {
                type: 'object',
                additionalProperties: false,
                description: 'The open-hour concatenation passes between full ones (compactor.open_hour_interval; intervalMs 0: none).',
                required: ['intervalMs', 'passes', 'failedPasses', 'filesMerged', 'lastFinishedAt'],
                properties: {
                  intervalMs: { type: 'integer' },
                  passes: { type: 'integer' },
                  failedPasses: { type: 'integer' },
                  filesMerged: { type: 'integer', description: 'Files of open hours merged away since start.' },
                  lastFinishedAt: { type: ['string', 'null'], format: 'date-time' },
                  last: {
                    anyOf: [
                      {
                        type: 'object',
                        additionalProperties: false,
                        description: 'The last complete pass: tables whose metadata it read, tables it left alone (nothing committed to them and no file come of age since a visit found nothing to do), its duration.',
                        required: ['tablesLoaded', 'tablesIdle', 'durationMs'],
                        properties: { tablesLoaded: { type: 'integer' }, tablesIdle: { type: 'integer' }, durationMs: { type: 'integer' } },
                      },
                      { type: 'null' },
                    ],
                  },
                },
              },
            },
          },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req, reply) => {
      authorizeInstance(principalOf(req), 'ops.compact');
      return relay(reply, await compactor().call('GET', '/status'));
    },
  );

  compactorPost<Scope | undefined>(
    '/ops/compact/dry-run',
    '/compact/dry-run',
    {
      operationId: 'plan_compaction',
      summary: 'What a pass would merge now, per table and hour, without writing anything (instance admin)',
      body: scopeBody,
      response: {
        200: {
          type: 'object',
          additionalProperties: false,
          required: ['tables'],
          properties: {
            tables: {
              type: 'array',
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['table', 'files', 'groups'],
                properties: {
                  table: { type: 'string', description: '<tenant>.<dataset>.<table>' },
                  files: { type: 'integer', description: 'Data files the table has now.' },
                  groups: {
                    type: 'array',
                    items: {
                      type: 'object',
                      additionalProperties: false,
                      required: ['hour', 'method', 'files', 'bytes', 'rows'],
                      properties: {
                        hour: { type: 'string', format: 'date-time' },
                        method: { type: 'string', enum: ['concat', 'sort'], description: 'concat: an hour still being written, its files\' row groups copied into one file; sort: a closed hour, rewritten in the table\'s order.' },
                        files: { type: 'integer' },
                        bytes: { type: 'integer' },
                        rows: { type: 'integer' },
                      },
                    },
                  },
                },
              },
            },
          },
        },
        ...ERROR_RESPONSES,
      },
    },
    (b) => checkScope(b),
  );
};
