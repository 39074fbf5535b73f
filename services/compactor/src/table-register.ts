import { FloeError } from '@floe/errors';
import { currentSnapshot, FLOE_WAREHOUSE_PREFIX, floeNamespace, metadataVersion, parseTableMetadata, type SqlCatalog, type TableMetadata } from '@floe/iceberg';
import { DEFAULT_DATASET_ID, liveDatasets, type Db } from '@floe/meta';
import { isTableName } from '@floe/schema';
import { eachAtMost, type ObjectInfo, type ObjectStore } from '@floe/storage';
import { CHECK_PAGE_BUDGET_MS, keyIn, metadataCandidates, TableObjects, type CheckPage, type TableProblem } from './table-check.ts';
import { namedVersionKey, parseTableRepairBody } from './table-rollback.ts';

/**
 * Tables the catalog lost: after the metadata DB is restored from a backup older than the bucket,
 * the tables created since have their files under `warehouse/<tenant>/<dataset>/<table>/` and no
 * catalog row. `findUnregistered` walks the warehouse a level at a time with delimiter listings
 * (the store's listPrefixes) down to the table directories, and lists only the metadata/ area of
 * a table that has no row: never a data file. `registerTable` gives such a table a row again:
 * the content of its newest sound metadata file (or the one named) as a new version numbered
 * above every other, as `floe ops rollback-table` writes one (SqlCatalog.registerTable, Iceberg's
 * register_table). The table's snapshot summaries come with it, and with them the writer's
 * ledger of the WAL segments it committed, so a writer started afterwards appends none twice.
 *
 * Creating the tenant or dataset again provisions its tables: each gets a new, empty row (version
 * 0, no snapshot) in the same directory. Such a row counts as lost too ("catalog_row": "empty"),
 * and registering replaces it by the catalog's compare-and-swap; a row holding a snapshot is
 * refused (rollback-table --to is then the repair, giving up what was committed on it).
 */

export interface UnregisteredTable {
  /** `<tenant>.<dataset>.<table>`. */
  table: string;
  /** none: no catalog row; empty: a row created since (the tenant or dataset created again) that holds no snapshot. */
  catalog_row: 'none' | 'empty';
  /** The *.metadata.json files under its metadata/. */
  metadata_files: number;
  /** Its newest metadata file that parses (null when none does), and that version's current snapshot. */
  metadata_location: string | null;
  version: number | null;
  snapshot_id: string | null;
  /** `total-records` of the snapshot's summary; null when absent (or no snapshot). */
  total_records: number | null;
  /** When the snapshot was committed (ISO 8601). */
  committed_at: string | null;
  /** Whether the registry holds its tenant and dataset now: both are needed to register it. */
  tenant_exists: boolean;
  dataset_exists: boolean;
  /** When no metadata file parses: why the newest does not. */
  problem?: string;
}

export interface UnregisteredReport {
  /** The table directories of the scope visited (those of this page). */
  table_directories: number;
  unregistered: number;
  tables: UnregisteredTable[];
  /** Asked for a page only: the table directories of the scope, all pages together. */
  tables_in_scope?: number;
  /** Asked for a page only: the `after` of the next page, null after the last one. */
  next?: string | null;
}

export interface RegisterRequest {
  tenant: string;
  dataset: string;
  table: string;
  /** The version to take (a URI or an object key under the table's metadata/); absent: the newest sound one. */
  metadataLocation?: string;
  dryRun: boolean;
}

export interface RegisterAnswer {
  table: string;
  dry_run: boolean;
  registered: boolean;
  /** The version whose content the table has. */
  metadata_location: string;
  /** The new version written with it, the table's pointer now (null for a dry run). */
  new_metadata_location: string | null;
  chosen: { version: number; snapshot_id: string | null; total_records: number | null; committed_at: string | null; problems: TableProblem[] };
  /** The newer metadata files passed over, and why. */
  passed_over: Array<{ metadata_location: string; version: number; problems: TableProblem[] }>;
  /** The empty row (provisioned since) that the registration replaces; null when there was none. */
  replaced_empty_row: string | null;
  note: string;
}

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_OPS_REGISTER' });

/** The body of `POST /tables/register`: `{tenant, dataset, table, metadata_location?, dry_run?}`. */
export function parseRegisterRequest(body: unknown): RegisterRequest {
  const { body: b, ...named } = parseTableRepairBody(body, ['metadata_location'], bad);
  const req: RegisterRequest = named;
  const to = b.metadata_location;
  if (to !== undefined && to !== null) {
    if (typeof to !== 'string' || to === '' || to.length > 4096) throw bad('metadata_location must be a non-empty string');
    req.metadataLocation = to;
  }
  return req;
}

const tableRoot = (tenant: string, dataset: string, table: string) => `${FLOE_WAREHOUSE_PREFIX}/${tenant}/${dataset}/${table}`;

/** Directory names under a prefix, from its delimiter listing. */
async function childNames(store: ObjectStore, prefix: string): Promise<string[]> {
  return (await store.listPrefixes(prefix)).map((p) => p.slice(prefix.length, -1));
}

/** Listings of directory levels in flight at once: a warehouse of thousands of tenants is walked in seconds, not minutes. */
const LIST_CONCURRENCY = 16;

/** Every table directory of the warehouse (of one tenant), as `[tenant, dataset, table]`, in name order by code units. */
async function tableDirectories(store: ObjectStore, tenant?: string): Promise<Array<[string, string, string]>> {
  const tenants = tenant === undefined ? await childNames(store, `${FLOE_WAREHOUSE_PREFIX}/`) : [tenant];
  const datasets: Array<[string, string]> = [];
  await eachAtMost(tenants, LIST_CONCURRENCY, async (t) => {
    for (const d of await childNames(store, `${FLOE_WAREHOUSE_PREFIX}/${t}/`)) datasets.push([t, d]);
  });
  const out: Array<[string, string, string]> = [];
  await eachAtMost(datasets, LIST_CONCURRENCY, async ([t, d]) => {
    for (const name of await childNames(store, `${FLOE_WAREHOUSE_PREFIX}/${t}/${d}/`)) if (isTableName(name)) out.push([t, d, name]);
  });
  const full = (x: [string, string, string]) => x.join('.');
  return out.sort((a, b) => (full(a) < full(b) ? -1 : full(a) > full(b) ? 1 : 0));
}

const METADATA_FILE = /^[^/]+\.metadata\.json$/;

/** The *.metadata.json files of a table's metadata/ area, newest first (by version, then time written). */
async function metadataFiles(store: ObjectStore, root: string): Promise<ObjectInfo[]> {
  const dir = `${root}/metadata/`;
  const time = (o: ObjectInfo) => o.lastModified?.getTime() ?? 0;
  return (await store.list(dir)).filter((o) => METADATA_FILE.test(o.key.slice(dir.length))).sort((a, b) => metadataVersion(b.key) - metadataVersion(a.key) || time(b) - time(a));
}

async function parsed(store: ObjectStore, key: string): Promise<{ metadata: TableMetadata } | { error: string }> {
  const bytes = await store.get(key);
  if (!bytes) return { error: `metadata file ${key} is missing` };
  try {
    return { metadata: parseTableMetadata(new TextDecoder().decode(bytes)) };
  } catch (err) {
    return { error: `metadata file ${key} does not parse: ${(err as Error).message}` };
  }
}

/** The current snapshot of a version as an answer reports it. */
function snapshotOf(metadata: TableMetadata): { snapshot_id: string | null; total_records: number | null; committed_at: string | null } {
  const s = currentSnapshot(metadata);
  if (!s) return { snapshot_id: null, total_records: null, committed_at: null };
  const total = s.summary['total-records'];
  return { snapshot_id: String(s['snapshot-id']), total_records: total !== undefined && /^\d+$/.test(total) ? Number(total) : null, committed_at: new Date(s['timestamp-ms']).toISOString() };
}

/**
 * Whether the table's row is one provisioned since its files were written: version 0 (a new table)
 * in the table's own directory, holding no snapshot. Undefined: no row.
 */
async function rowState(catalog: SqlCatalog, store: ObjectStore, namespace: string, name: string, root: string): Promise<{ pointer: string; empty: boolean } | undefined> {
  const row = await catalog.pointerOf(namespace, name);
  if (!row) return undefined;
  const pointer = row.metadataLocation;
  const key = keyIn(store, pointer);
  if (key === undefined || !key.startsWith(`${root}/metadata/`) || metadataVersion(key) !== 0) return { pointer, empty: false };
  const read = await parsed(store, key);
  return { pointer, empty: 'metadata' in read && read.metadata.snapshots.length === 0 };
}

/**
 * `POST /tables/unregistered`: every table directory of the warehouse (of `scope.tenant`) with
 * metadata files and no catalog row (or an empty one provisioned since, unless its files hold no
 * data either), in name order; with a page, those after `page.after`, until `page.limit`
 * directories are visited or `page.budgetMs` has passed. Read-only.
 */
export async function findUnregistered(catalog: SqlCatalog, store: ObjectStore, db: Db, scope?: { tenant?: string }, page?: CheckPage): Promise<UnregisteredReport> {
  const dirs = await tableDirectories(store, scope?.tenant);
  const from = page?.after === undefined ? 0 : dirs.findIndex((d) => d.join('.') > page.after!);
  const todo = from < 0 ? [] : dirs.slice(from);
  const began = performance.now();
  const found: Array<Omit<UnregisteredTable, 'tenant_exists' | 'dataset_exists'> & { tenant: string; dataset: string }> = [];
  let visited = 0;
  for (const [tenant, dataset, name] of todo) {
    if (page && visited > 0 && (visited >= page.limit || performance.now() - began >= (page.budgetMs ?? CHECK_PAGE_BUDGET_MS))) break;
    visited++;
    const root = tableRoot(tenant, dataset, name);
    const row = await rowState(catalog, store, floeNamespace(tenant, dataset), name, root);
    if (row && !row.empty) continue;
    const rowKey = row ? keyIn(store, row.pointer) : undefined;
    const files = (await metadataFiles(store, root)).filter((o) => o.key !== rowKey);
    if (files.length === 0) continue;
    let newest: { key: string; metadata: TableMetadata } | undefined;
    let problem: string | undefined;
    for (const o of files) {
      const read = await parsed(store, o.key);
      if ('metadata' in read) {
        newest = { key: o.key, metadata: read.metadata };
        break;
      }
      problem ??= read.error;
    }
    // A table never written, provisioned again: nothing to recover.
    if (row && newest && !currentSnapshot(newest.metadata)) continue;
    found.push({
      table: `${tenant}.${dataset}.${name}`,
      tenant,
      dataset,
      catalog_row: row ? 'empty' : 'none',
      metadata_files: files.length,
      metadata_location: newest ? store.uri(newest.key) : null,
      version: newest ? metadataVersion(newest.key) : null,
      ...(newest ? snapshotOf(newest.metadata) : { snapshot_id: null, total_records: null, committed_at: null }),
      ...(newest ? {} : { problem: problem! }),
    });
  }
  const live = await liveDatasets(db, found.map((f) => ({ tenant: f.tenant, dataset: f.dataset })));
  const tables: UnregisteredTable[] = found.map(({ tenant, dataset, problem, ...t }) => ({
    ...t,
    tenant_exists: live.has(`${tenant}/${DEFAULT_DATASET_ID}`),
    dataset_exists: live.has(`${tenant}/${dataset}`),
    ...(problem === undefined ? {} : { problem }),
  }));
  const report: UnregisteredReport = { table_directories: visited, unregistered: tables.length, tables };
  if (!page) return report;
  return { ...report, tables_in_scope: dirs.length, next: visited < todo.length ? todo[visited - 1]!.join('.') : null };
}

/** `POST /tables/register`. Throws FloeError: 409 tenant or dataset missing from the registry, a row that holds data, nothing sound; 404 no metadata files; 400 a bad metadata_location. */
export async function registerTable(catalog: SqlCatalog, store: ObjectStore, db: Db, req: RegisterRequest): Promise<RegisterAnswer> {
  const namespace = floeNamespace(req.tenant, req.dataset);
  const table = `${namespace}.${req.table}`;
  const root = tableRoot(req.tenant, req.dataset, req.table);
  const live = await liveDatasets(db, [{ tenant: req.tenant, dataset: req.dataset }]);
  if (!live.has(`${req.tenant}/${DEFAULT_DATASET_ID}`)) {
    throw new FloeError('conflict', `tenant ${req.tenant} does not exist in the registry: create it first (floe tenant create ${req.tenant}), then register ${table}`, { code: 'FLOE_ERR_OPS_NO_TENANT' });
  }
  if (!live.has(`${req.tenant}/${req.dataset}`)) {
    throw new FloeError('conflict', `dataset ${req.dataset} of tenant ${req.tenant} does not exist in the registry: create it first (floe dataset create ${req.dataset} --tenant ${req.tenant}), then register ${table}`, { code: 'FLOE_ERR_OPS_NO_DATASET' });
  }
  const row = await rowState(catalog, store, namespace, req.table, root);
  if (row && !row.empty) {
    throw new FloeError('conflict', `${table} has a catalog row already (at ${row.pointer}): to give it the content of a newer metadata file, use floe ops rollback-table ${table} --to <metadata file>`, { code: 'FLOE_ERR_OPS_TABLE_REGISTERED' });
  }
  const objects = await TableObjects.list(store, root);
  const rowKey = row ? keyIn(store, row.pointer) : undefined;
  const history = metadataCandidates(objects, '').filter((o) => o.key !== rowKey);
  if (history.length === 0) throw new FloeError('not_found', `no metadata file of ${table} under ${root}/metadata/: nothing to register`, { code: 'FLOE_ERR_OPS_NO_TABLE_FILES' });

  let chosenKey: string;
  let chosen: { metadata: TableMetadata; problems: TableProblem[] };
  if (req.metadataLocation !== undefined) {
    chosenKey = namedVersionKey(store, root, req.metadataLocation, table, bad);
    if (!history.some((o) => o.key === chosenKey)) throw bad(`metadata_location ${req.metadataLocation} does not exist`);
    const inspected = await objects.inspect(store.uri(chosenKey));
    if (!inspected.metadata) throw bad(`metadata_location ${req.metadataLocation} cannot be used: ${inspected.problems[0]!.message}`);
    chosen = { metadata: inspected.metadata, problems: inspected.problems };
  } else {
    let found: { key: string; metadata: TableMetadata } | undefined;
    let parses: string | undefined;
    for (const o of history) {
      const inspected = await objects.inspect(store.uri(o.key));
      if (inspected.metadata) parses ??= store.uri(o.key);
      if (inspected.metadata && inspected.problems.length === 0) {
        found = { key: o.key, metadata: inspected.metadata };
        break;
      }
    }
    if (!found) {
      throw new FloeError(
        'conflict',
        parses === undefined
          ? `no metadata file of ${table} parses (${history.length} under ${root}/metadata/): there is nothing to register it from`
          : `no metadata file of ${table} is sound (${history.length} under ${root}/metadata/; the newest that parses, ${parses}, lacks files it reads): name one with --to (metadata_location) to register it as it is`,
        { code: parses === undefined ? 'FLOE_ERR_OPS_NOTHING_PARSES' : 'FLOE_ERR_OPS_NO_SOUND_VERSION' },
      );
    }
    chosenKey = found.key;
    chosen = { metadata: found.metadata, problems: [] };
  }
  if (keyIn(store, chosen.metadata.location)?.replace(/\/+$/, '') !== root) {
    throw new FloeError('conflict', `${store.uri(chosenKey)} is the metadata of a table at ${chosen.metadata.location}, not of ${root}: register it by hand`, { code: 'FLOE_ERR_OPS_REGISTER' });
  }

  const at = history.findIndex((o) => o.key === chosenKey);
  const passedOver: RegisterAnswer['passed_over'] = [];
  for (const o of history.slice(0, Math.max(0, at))) {
    passedOver.push({ metadata_location: store.uri(o.key), version: metadataVersion(o.key), problems: (await objects.inspect(store.uri(o.key))).problems });
  }
  const location = store.uri(chosenKey);
  let written: string | null = null;
  if (!req.dryRun) {
    const version = Math.max(...objects.metadataFiles.map((o) => metadataVersion(o.key))) + 1;
    const from = { location, metadata: chosen.metadata };
    written = (row ? await catalog.restoreVersion(namespace, req.table, row.pointer, from, version) : await catalog.registerTable(namespace, req.table, from, version)) ?? null;
    if (written === null) {
      const now = (await catalog.pointerOf(namespace, req.table))?.metadataLocation;
      throw new FloeError('conflict', `${table} got a catalog row meanwhile (at ${now ?? 'nothing'}); nothing was registered: find it again`, { code: 'FLOE_ERR_OPS_REGISTER_CONFLICT' });
    }
  }
  const snapshot = snapshotOf(chosen.metadata);
  const rows = snapshot.total_records === null ? '' : ` (${snapshot.total_records} rows)`;
  return {
    table,
    dry_run: req.dryRun,
    registered: written !== null,
    metadata_location: location,
    new_metadata_location: written,
    chosen: { version: metadataVersion(chosenKey), ...snapshot, problems: chosen.problems },
    passed_over: passedOver,
    replaced_empty_row: row?.pointer ?? null,
    note: req.dryRun
      ? `Dry run: nothing changed. Registered, ${table} would have the content of ${location}${rows}.`
      : `${table} has a catalog row again: the content of ${location}${rows} as its new version ${written}. Check it (floe ops check-tables --tenant ${req.tenant}) before starting writers.`,
  };
}
