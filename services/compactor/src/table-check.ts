import { FloeError } from '@floe/errors';
import { currentSnapshot, decodeManifest, decodeManifestList, floeNamespace, ManifestEntryStatus, metadataVersion, parseTableMetadata, type SqlCatalog, type TableIdentifier, type TableMetadata } from '@floe/iceberg';
import { isTableName, type TableProblemKind } from '@floe/schema';
import { eachAtMost, verifyParquetPages, type ObjectInfo, type ObjectStore, type PageDamage } from '@floe/storage';
import type { Logger } from '@floe/telemetry';
import { inScope, type PassScope } from './compactor.ts';
import { listTableObjects, versionsAhead } from './orphans.ts';

/**
 * Whether a table's metadata version can be read whole: the metadata file is there and parses,
 * and its current snapshot's manifest list, manifests and live data files are all in the store.
 * The writer cannot commit to a table whose current version fails this (it holds the table's WAL
 * segments until it heals), and a query of it fails; `floe ops check-tables` reports it and
 * `floe ops rollback-table` (table-rollback.ts) moves the table back to a version that passes.
 *
 * Existence and size come from ONE listing of the table's data/ and metadata/ areas, never a HEAD
 * or GET per file: a table has thousands of data files. A live data file whose listed size is not
 * the `file_size_in_bytes` its manifest records is truncated (or overwritten) and cannot be read
 * whole; `floe ops drop-damaged-files` (table-drop-damaged.ts) removes such files and missing ones
 * from the table, giving up only their rows. The pointer is read before the listing (the reverse
 * of the orphan sweep): every file of the version it names was uploaded before the pointer
 * moved to it, so it is in a listing taken after, and a commit landing meanwhile cannot make a
 * sound table look damaged.
 *
 * A bit flipped inside a page keeps the file's size, so the listing cannot see it (and DuckDB
 * reads such a page as wrong values without an error). Asked for (`check_pages`), the check also
 * reads every live data file the listing finds whole and walks its pages (verifyParquetPages:
 * page crcs where the writer wrote them, headers and chunk ends everywhere), a few files at a
 * time and a block of each at a time; a file whose pages are damaged is `damaged_pages`, which
 * drop-damaged-files drops as it drops the missing and the truncated. Never by default: it reads
 * the whole table.
 *
 * Delete files (position or equality deletes: Floe deletes rows by rewriting data files, so only
 * another engine committing to the table writes them) are checked alike, Parquet ones' pages
 * included, since an engine that reads a damaged one brings deleted rows back or hides others
 * without an error. They are reported under their own kinds (`delete_files_*`): dropping a delete
 * file would bring back the rows it deletes, so their repair is rollback-table, and
 * drop-damaged-files refuses them.
 */

export type { TableProblemKind };

export interface TableProblem {
  kind: TableProblemKind;
  /** What is wrong, in words (the parse error included). */
  message: string;
  /** How many files the problem covers, and the first few of them (object keys). */
  count?: number;
  keys?: string[];
}

export interface TableCheck {
  /** `<tenant>.<dataset>.<table>`. */
  table: string;
  status: 'ok' | 'damaged';
  /** The catalog's pointer: the version checked. */
  metadata_location: string;
  problems: TableProblem[];
  /** Asked to check pages only: the data and delete files whose pages were read, and their bytes. */
  pages_checked?: PagesChecked;
}

/** The data and delete files a page check read whole (or until their damage), and their sizes. */
export interface PagesChecked {
  files: number;
  bytes: number;
}

/** A page check's options: where its progress goes (a job's progress: maintenance-jobs.ts). */
export interface PagesCheck {
  log?: Logger;
  /** Called as a table's walk begins, after each file, and at its end. */
  onProgress?: (progress: TablePagesProgress) => void;
}

/** How far one table's page walk is: its files and bytes read of those to read, and those found damaged. */
export interface TablePagesProgress {
  /** The table's root key. */
  table: string;
  files_checked: number;
  files: number;
  bytes_checked: number;
  bytes: number;
  damaged: number;
}

/** Files whose pages are read at once: each holds two blocks (2 MiB) of memory, and S3 GETs overlap. */
const PAGE_CHECK_CONCURRENCY = 3;
/** A progress line every this many files of a table's page check. */
const PAGE_CHECK_LOG_EVERY = 100;

export interface CheckReport {
  tables_checked: number;
  ok: number;
  damaged: number;
  tables: TableCheck[];
  /** Asked for a page only: the tables of the scope, all pages together. */
  tables_in_scope?: number;
  /** Asked for a page only: the `after` of the next page, null after the last one. */
  next?: string | null;
}

/** A page of a check: the tables after `after` (a `<tenant>.<dataset>.<table>` of the previous page) in name order, at most `limit` of them. */
export interface CheckPage {
  after?: string;
  limit: number;
  /** A page ends early once it has taken this long (at least one table each), so each call stays well under the router's timeout however large the tables. */
  budgetMs?: number;
}

/** How long a page of a check may take: the router gives the compactor 60 s (compactor-client.ts). */
export const CHECK_PAGE_BUDGET_MS = 15_000;

/** A live data or delete file of the current snapshot that cannot be read whole: gone from the store, not the size its manifest records, or (when pages are checked) with a page or footer that does not read. */
export interface DamagedFile {
  key: string;
  reason: 'missing' | 'wrong_size' | 'damaged_pages';
  /** From the manifest. */
  recordCount: number;
  fileSizeInBytes: number;
  /** The listed size; undefined when missing. */
  sizeInStore?: number;
  /** Its manifest entry's content: 0 a data file, else a delete file. */
  content: number;
  /** damaged_pages: what is wrong, and where. */
  damage?: PageDamage;
}

/** A live file as its manifest records it. */
interface LiveFile {
  key: string;
  recordCount: number;
  fileSizeInBytes: number;
  content: number;
  /** Its manifest entry's file_format: PARQUET, AVRO or ORC. */
  format: string;
}

/** Keys named in a problem: enough to find the others with a listing. */
const SHOWN_KEYS = 5;

const errorText = (err: unknown): string => {
  const e = err as Error & { cause?: unknown };
  const cause = e.cause instanceof Error ? e.cause.message : undefined;
  return cause ? `${e.message} (${cause})` : e.message;
};

const many = (kind: TableProblemKind, what: string, keys: string[]): TableProblem => ({
  kind,
  message: `${keys.length} ${what}, first: ${keys.slice(0, SHOWN_KEYS).join(', ')}`,
  count: keys.length,
  keys: keys.slice(0, SHOWN_KEYS),
});

/** How the problems of one class of files are reported: their kinds by reason, their name, and what to do (delete files only: drop-damaged-files refuses them). */
interface FileClass {
  kinds: Record<DamagedFile['reason'], TableProblemKind>;
  what: string;
  /** Appended to a problem's message, by reason. */
  repair: Record<DamagedFile['reason'], string>;
}

const DATA_FILES: FileClass = {
  kinds: { missing: 'data_files_missing', wrong_size: 'data_files_wrong_size', damaged_pages: 'data_files_damaged_pages' },
  what: 'data files',
  repair: { missing: '', wrong_size: '', damaged_pages: '' },
};

const UNDELETED = '; an engine reading the table brings back the rows they delete or hides others, and dropping them would bring back those rows';

const DELETE_FILES: FileClass = {
  kinds: { missing: 'delete_files_missing', wrong_size: 'delete_files_wrong_size', damaged_pages: 'delete_files_damaged_pages' },
  what: 'delete files',
  repair: {
    missing: `${UNDELETED}: floe ops rollback-table is the repair, not drop-damaged-files`,
    wrong_size: `${UNDELETED}: floe ops rollback-table is the repair, not drop-damaged-files`,
    // Rollback without --to reads no pages, so it would take the current version as sound.
    damaged_pages: `${UNDELETED}: floe ops rollback-table --to a version from before they were added is the repair, not drop-damaged-files`,
  },
};

/** The problem kinds of damaged data files (drop-damaged-files drops them) and of damaged delete files (it refuses them). */
export const DATA_FILE_PROBLEMS: ReadonlySet<TableProblemKind> = new Set(Object.values(DATA_FILES.kinds));
export const DELETE_FILE_PROBLEMS: ReadonlySet<TableProblemKind> = new Set(Object.values(DELETE_FILES.kinds));

/** The problems of damaged files of one class, a problem per reason. */
function fileProblems(files: readonly DamagedFile[], { kinds, what, repair }: FileClass): TableProblem[] {
  const problems: TableProblem[] = [];
  const missing = files.filter((d) => d.reason === 'missing').map((d) => d.key);
  const wrongSize = files.filter((d) => d.reason === 'wrong_size');
  const damagedPages = files.filter((d) => d.reason === 'damaged_pages');
  if (missing.length > 0) {
    const problem = many(kinds.missing, `${what} of the current snapshot are missing`, missing);
    problems.push({ ...problem, message: problem.message + repair.missing });
  }
  if (wrongSize.length > 0) {
    const first = wrongSize[0]!;
    problems.push({
      kind: kinds.wrong_size,
      message: `${wrongSize.length} ${what} of the current snapshot are not the size their manifests record (truncated or overwritten), first: ${first.key} (${first.fileSizeInBytes} bytes in its manifest, ${first.sizeInStore} in the store)${repair.wrong_size}`,
      count: wrongSize.length,
      keys: wrongSize.slice(0, SHOWN_KEYS).map((d) => d.key),
    });
  }
  if (damagedPages.length > 0) {
    problems.push({
      kind: kinds.damaged_pages,
      message: `${damagedPages.length} ${what} of the current snapshot have damaged pages (the size their manifests record, bytes that do not read), first: ${damagedPages[0]!.damage!.message}${repair.damaged_pages}`,
      count: damagedPages.length,
      keys: damagedPages.slice(0, SHOWN_KEYS).map((d) => d.key),
    });
  }
  return problems;
}

/** The object key of a location of this store, or undefined when it is not one. */
export function keyIn(store: ObjectStore, location: string): string | undefined {
  try {
    return store.keyFromUri(location);
  } catch {
    return undefined;
  }
}

/** The table's root key from its pointer (`<root>/metadata/<file>`), or undefined when it is elsewhere. */
export function tableKeyOfPointer(store: ObjectStore, pointer: string): string | undefined {
  const key = keyIn(store, pointer);
  return key === undefined ? undefined : /^(.+)\/metadata\/[^/]+$/.exec(key)?.[1];
}

/** A table a repair works on: its catalog pointer and one listing of its files. */
export interface RepairTarget {
  namespace: string;
  /** `<tenant>.<dataset>.<table>`. */
  table: string;
  pointer: string;
  /** The version the current one was committed on, as the catalog row records it. */
  previousPointer: string | null;
  objects: TableObjects;
}

/**
 * The table a repair names, as its catalog row points now, with one listing of its files. Throws
 * FloeError: 404 no such table, 409 (with `code`) a pointer outside a metadata/ directory of this
 * store, which no repair here can reason about.
 */
export async function repairTarget(catalog: SqlCatalog, store: ObjectStore, req: { tenant: string; dataset: string; table: string }, code: string): Promise<RepairTarget> {
  const namespace = floeNamespace(req.tenant, req.dataset);
  const table = `${namespace}.${req.table}`;
  const row = await catalog.pointerOf(namespace, req.table);
  if (!row) throw new FloeError('not_found', `no table ${table}`, { code: 'FLOE_ERR_OPS_NO_TABLE' });
  const pointer = row.metadataLocation;
  const locationKey = tableKeyOfPointer(store, pointer);
  if (!locationKey) throw new FloeError('conflict', `the catalog points ${table} at ${pointer}, which is not in a metadata/ directory of this store: repair it by hand`, { code });
  return { namespace, table, pointer, previousPointer: row.previousMetadataLocation, objects: await TableObjects.list(store, locationKey) };
}

/** A metadata version as read from the store: parsed, or why it is not. */
export type ReadVersion = { metadata: TableMetadata; problem?: undefined } | { metadata?: undefined; problem: TableProblem };

/**
 * The objects of one table from one listing, with what has been read of them. Manifests and
 * manifest lists are immutable and shared between versions, so each is read once however many
 * versions are inspected.
 */
export class TableObjects {
  readonly store: ObjectStore;
  /** The table's root key (`warehouse/<tenant>/<dataset>/<table>`). */
  readonly locationKey: string;
  readonly metadataFiles: readonly ObjectInfo[];
  readonly #listed: Map<string, ObjectInfo>;
  readonly #reads = new Map<string, Promise<unknown>>();

  private constructor(store: ObjectStore, locationKey: string, data: ObjectInfo[], metadata: ObjectInfo[]) {
    this.store = store;
    this.locationKey = locationKey;
    this.metadataFiles = metadata;
    this.#listed = new Map([...data, ...metadata].map((o) => [o.key, o]));
  }

  static async list(store: ObjectStore, locationKey: string): Promise<TableObjects> {
    const listing = await listTableObjects(store, locationKey);
    return new TableObjects(store, locationKey, listing.data, listing.metadata);
  }

  /** The key's object as listed, or undefined when it is not there; a key outside the table's areas (a file another engine added elsewhere) is asked for on its own. */
  async #info(key: string): Promise<ObjectInfo | undefined> {
    if (key.startsWith(`${this.locationKey}/data/`) || key.startsWith(`${this.locationKey}/metadata/`)) return this.#listed.get(key);
    return this.store.head(key);
  }

  async #exists(key: string): Promise<boolean> {
    return (await this.#info(key)) !== undefined;
  }

  #once<T>(key: string, read: () => Promise<T>): Promise<T> {
    let hit = this.#reads.get(key) as Promise<T> | undefined;
    if (!hit) {
      hit = read();
      this.#reads.set(key, hit);
    }
    return hit;
  }

  /** The metadata file at `location`, parsed, or the problem with it. */
  readVersion(location: string): Promise<ReadVersion> {
    return this.#once(`version:${location}`, async (): Promise<ReadVersion> => {
      let key: string;
      try {
        key = this.store.keyFromUri(location);
      } catch (err) {
        return { problem: { kind: 'metadata_outside_table', message: `metadata ${location} is not in this store: ${errorText(err)}` } };
      }
      const bytes = (await this.#exists(key)) ? await this.store.get(key) : undefined;
      if (!bytes) return { problem: { kind: 'metadata_missing', message: `metadata file ${key} is missing`, keys: [key] } };
      try {
        return { metadata: parseTableMetadata(new TextDecoder().decode(bytes)) };
      } catch (err) {
        return { problem: { kind: 'metadata_unparseable', message: `metadata file ${key} does not parse: ${errorText(err)}`, keys: [key] } };
      }
    });
  }

  /**
   * Everything wrong with the version at `location` (problems empty when it can be read whole),
   * and every live data file of its current snapshot that is missing or of the wrong size; with
   * `pages`, also those whose pages are damaged, and how much was read to find them.
   */
  async inspect(location: string, pages?: PagesCheck): Promise<{ metadata?: TableMetadata; problems: TableProblem[]; damagedFiles: DamagedFile[]; pagesChecked?: PagesChecked }> {
    const read = await this.readVersion(location);
    if (!read.metadata) return { problems: [read.problem], damagedFiles: [] };
    const metadata = read.metadata;
    const snapshot = currentSnapshot(metadata);
    if (!snapshot) return { metadata, problems: [], damagedFiles: [] };
    const listKey = this.store.keyFromUri(snapshot['manifest-list']);
    if (!(await this.#exists(listKey))) return { metadata, problems: [{ kind: 'manifest_list_missing', message: `manifest list ${listKey} of snapshot ${snapshot['snapshot-id']} is missing`, keys: [listKey] }], damagedFiles: [] };
    let manifests: string[];
    try {
      manifests = await this.#once(`list:${listKey}`, async () => {
        const bytes = await this.store.get(listKey);
        if (!bytes) throw new Error('missing since the listing');
        return decodeManifestList(bytes).map((m) => this.store.keyFromUri(m.manifestPath));
      });
    } catch (err) {
      return { metadata, problems: [{ kind: 'manifest_list_unreadable', message: `manifest list ${listKey} cannot be read: ${errorText(err)}`, keys: [listKey] }], damagedFiles: [] };
    }
    const missingManifests: string[] = [];
    const unreadable: Array<{ key: string; error: string }> = [];
    const live = new Map<string, LiveFile>();
    for (const key of manifests) {
      if (!(await this.#exists(key))) {
        missingManifests.push(key);
        continue;
      }
      try {
        for (const file of await this.#liveFiles(key)) live.set(file.key, file);
      } catch (err) {
        unreadable.push({ key, error: errorText(err) });
      }
    }
    const damagedFiles: DamagedFile[] = [];
    const whole: LiveFile[] = [];
    for (const file of live.values()) {
      const listed = await this.#info(file.key);
      if (!listed) damagedFiles.push({ ...file, reason: 'missing' });
      else if (listed.size !== file.fileSizeInBytes) damagedFiles.push({ ...file, reason: 'wrong_size', sizeInStore: listed.size });
      // Only Parquet has pages to walk: a delete file another engine wrote may be Avro or ORC (Floe's data files are all Parquet).
      else if (file.content === 0 || file.format.toUpperCase() === 'PARQUET') whole.push(file);
    }
    const pagesChecked = pages ? await this.#checkPages(whole, damagedFiles, pages) : undefined;
    const problems: TableProblem[] = [];
    if (missingManifests.length > 0) problems.push(many('manifests_missing', 'manifests of the current snapshot are missing', missingManifests));
    if (unreadable.length > 0) {
      problems.push({
        kind: 'manifests_unreadable',
        message: `${unreadable.length} manifests of the current snapshot cannot be read, first: ${unreadable[0]!.key}: ${unreadable[0]!.error}`,
        count: unreadable.length,
        keys: unreadable.slice(0, SHOWN_KEYS).map((u) => u.key),
      });
    }
    problems.push(...fileProblems(damagedFiles.filter((d) => d.content === 0), DATA_FILES));
    problems.push(...fileProblems(damagedFiles.filter((d) => d.content !== 0), DELETE_FILES));
    return { metadata, problems, damagedFiles, ...(pagesChecked ? { pagesChecked } : {}) };
  }

  /** Reads `files` (live, listed whole) a few at a time, adding those whose pages are damaged to `damaged` in key order. */
  async #checkPages(files: readonly LiveFile[], damaged: DamagedFile[], { log, onProgress }: PagesCheck): Promise<PagesChecked> {
    const found: DamagedFile[] = [];
    let done = 0;
    let bytes = 0;
    const total = files.reduce((a, f) => a + f.fileSizeInBytes, 0);
    const progress = (): TablePagesProgress => ({ table: this.locationKey, files_checked: done, files: files.length, bytes_checked: bytes, bytes: total, damaged: found.length });
    log?.info({ table: this.locationKey, files: files.length, bytes: total }, "checking data files' pages");
    onProgress?.(progress());
    await eachAtMost(files, PAGE_CHECK_CONCURRENCY, async (file) => {
      const damage = await verifyParquetPages(this.store, file.key, { sizeBytes: file.fileSizeInBytes });
      // Listed at the size its manifest records: that is why it was read.
      if (damage) found.push({ ...file, reason: 'damaged_pages', sizeInStore: file.fileSizeInBytes, damage });
      done++;
      bytes += file.fileSizeInBytes;
      // A job's progress is an object set in memory, cheap per file; the log gets a line per hundred.
      onProgress?.(progress());
      if (done % PAGE_CHECK_LOG_EVERY === 0 && done < files.length) log?.info(progress(), "checking data files' pages");
    });
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    damaged.push(...found);
    log?.info({ table: this.locationKey, files: done, bytes, damaged: found.length }, "checked data files' pages");
    return { files: done, bytes };
  }

  /** The data and delete files a manifest holds live: ADDED and EXISTING entries. */
  #liveFiles(manifestKey: string): Promise<LiveFile[]> {
    return this.#once(`manifest:${manifestKey}`, async () => {
      const bytes = await this.store.get(manifestKey);
      if (!bytes) throw new Error('missing since the listing');
      return decodeManifest(bytes)
        .entries.filter((e) => e.status !== ManifestEntryStatus.DELETED)
        .map((e) => ({ key: this.store.keyFromUri(e.dataFile.filePath), recordCount: e.dataFile.recordCount, fileSizeInBytes: e.dataFile.fileSizeInBytes, content: e.dataFile.content, format: e.dataFile.fileFormat }));
    });
  }
}

/**
 * The table's metadata files from the listing, newest first: by version number; among equals
 * (a commit attempt that lost its swap shares its number with the one that won) the current
 * pointer, then `parentKey` (the version the current one was committed on, which the catalog
 * row records), then by time written.
 */
export function metadataCandidates(objects: TableObjects, pointerKey: string, parentKey?: string): ObjectInfo[] {
  const time = (o: ObjectInfo) => o.lastModified?.getTime() ?? 0;
  const rank = (o: ObjectInfo) => (o.key === pointerKey ? 2 : o.key === parentKey ? 1 : 0);
  return objects.metadataFiles
    .filter((o) => /^[^/]+\.metadata\.json$/.test(o.key.slice(objects.locationKey.length + '/metadata/'.length)))
    .sort((a, b) => metadataVersion(b.key) - metadataVersion(a.key) || rank(b) - rank(a) || time(b) - time(a));
}

/** Checks one table's current version (with `pages`, its data files' pages too); undefined when the table is gone since the listing. */
export async function checkTable(catalog: SqlCatalog, store: ObjectStore, id: TableIdentifier, pages?: PagesCheck): Promise<TableCheck | undefined> {
  const table = `${id.namespace}.${id.name}`;
  const pointer = (await catalog.pointerOf(id.namespace, id.name))?.metadataLocation;
  if (!pointer) return undefined;
  const locationKey = tableKeyOfPointer(store, pointer);
  if (!locationKey) {
    return { table, status: 'damaged', metadata_location: pointer, problems: [{ kind: 'metadata_outside_table', message: `the catalog points at ${pointer}, which is not in a metadata/ directory of this store` }] };
  }
  const objects = await TableObjects.list(store, locationKey);
  const { problems, pagesChecked } = await objects.inspect(pointer, pages);
  // Against the pointer as it is after the listing: a commit landing meanwhile is no sign of a catalog behind.
  const ahead = versionsAhead(objects.metadataFiles, (await catalog.pointerOf(id.namespace, id.name))?.metadataLocation ?? pointer, store);
  if (ahead.length > 0) {
    const newest = ahead.reduce((a, b) => (metadataVersion(b.key) > metadataVersion(a.key) ? b : a));
    problems.push({
      kind: 'catalog_behind_files',
      message: `${ahead.length} metadata files are numbered beyond the next commit's (newest ${newest.key}): the catalog is behind the table's files, as after a restore of the metadata DB from an older backup; the compactor leaves the table's unreferenced files alone until it is resolved (floe ops rollback-table --to the newest sound one rolls it forward)`,
      count: ahead.length,
      keys: ahead.slice(0, SHOWN_KEYS).map((o) => o.key),
    });
  }
  return { table, status: problems.length > 0 ? 'damaged' : 'ok', metadata_location: pointer, problems, ...(pages ? { pages_checked: pagesChecked ?? { files: 0, bytes: 0 } } : {}) };
}

const fullName = (id: TableIdentifier) => `${id.namespace}.${id.name}`;

/** Name order by code units (not the database's collation), so a page's `after` means the same whatever the catalog. */
const byName = (a: TableIdentifier, b: TableIdentifier) => (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** `<namespace>.<name>` of a page's `after` (a table name holds no dot). */
function afterId(after: string): TableIdentifier {
  const dot = after.lastIndexOf('.');
  return { namespace: after.slice(0, dot), name: after.slice(dot + 1) };
}

/**
 * `POST /tables/check`: every Floe table of the scope, one after another, in name order; with a
 * page, those after `page.after`, until `page.limit` are checked or the page has taken
 * `page.budgetMs`, and the `next` page's `after`; with `pages`, every table's data files' pages
 * too (a table's files are read whole before the budget is looked at again). Read-only.
 */
export async function checkTables(catalog: SqlCatalog, store: ObjectStore, scope?: PassScope, page?: CheckPage, pages?: PagesCheck): Promise<CheckReport> {
  const ids = (await catalog.listTables(scope?.tenant)).filter((id) => isTableName(id.name) && inScope(id, scope)).sort(byName);
  const from = page?.after === undefined ? 0 : ids.findIndex((id) => byName(id, afterId(page.after!)) > 0);
  const todo = from < 0 ? [] : ids.slice(from);
  const began = performance.now();
  const tables: TableCheck[] = [];
  let visited = 0;
  for (const id of todo) {
    if (page && visited > 0 && (visited >= page.limit || performance.now() - began >= (page.budgetMs ?? CHECK_PAGE_BUDGET_MS))) break;
    visited++;
    const checked = await checkTable(catalog, store, id, pages);
    if (checked) tables.push(checked);
  }
  const damaged = tables.filter((t) => t.status === 'damaged').length;
  const report: CheckReport = { tables_checked: tables.length, ok: tables.length - damaged, damaged, tables };
  if (!page) return report;
  return { ...report, tables_in_scope: ids.length, next: visited < todo.length ? fullName(todo[visited - 1]!) : null };
}
