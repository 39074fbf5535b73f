import { FloeError } from '@floe/errors';
import { metadataVersion, type SqlCatalog, type TableMetadata } from '@floe/iceberg';
import { isTableName } from '@floe/schema';
import { validateKey, type ObjectInfo, type ObjectStore } from '@floe/storage';
import { ORPHAN_MIN_AGE_MS } from './orphans.ts';
import { keyIn, metadataCandidates, repairTarget, type TableProblem } from './table-check.ts';

/**
 * Rolls a table back to an earlier metadata version: the operator's repair when the current one
 * is damaged or missing (a storage incident), which otherwise holds the writer's WAL segments for
 * the table until the acceptors refuse its tenant. The candidates are the metadata files the
 * listing finds under the table's metadata/ area; without a named one, the newest that is sound
 * (table-check.ts) is chosen. Its content becomes a new version numbered above every metadata
 * file of the table (SqlCatalog.restoreVersion), swapped in by the catalog's compare-and-swap
 * from the location read at the start, so a commit landing meanwhile makes it a 409, never a
 * lost commit, and version numbers never go back.
 *
 * Without a named version only those numbered up to the current one are candidates: a file
 * numbered above it is a commit in flight, or the catalog is behind its files (restored from an
 * older backup; table-check.ts reports it). Naming the newest of those rolls the table forward.
 */

export interface RollbackRequest {
  tenant: string;
  dataset: string;
  table: string;
  /** The version to go back to (a URI as the catalog holds it, or an object key); absent: the newest sound one. */
  metadataLocation?: string;
  dryRun: boolean;
}

export interface GivenUpSnapshot {
  snapshot_id: string;
  operation: string;
  timestamp_ms: number;
  /** From the snapshot's summary (absent there: 0); null when it holds no count. */
  added_records: number | null;
  deleted_records: number | null;
}

export interface GivenUpVersion {
  metadata_location: string;
  version: number;
  parses: boolean;
  problems: TableProblem[];
  /** Its snapshots the chosen version lacks (empty when it does not parse). */
  snapshots: GivenUpSnapshot[];
}

export interface RollbackAnswer {
  table: string;
  dry_run: boolean;
  /** Whether the pointer moved (false for a dry run, or when the chosen version is already current). */
  rolled_back: boolean;
  previous_metadata_location: string;
  /** The version chosen, whose content the table now has. */
  metadata_location: string;
  /** The new version written with that content, the table's pointer now (null when nothing moved). */
  new_metadata_location: string | null;
  chosen: { version: number; snapshot_id: string | null; problems: TableProblem[] };
  given_up: GivenUpVersion[];
  /** Rows added less rows deleted by the distinct given-up snapshots of the versions that parse. */
  records_given_up: number;
  note: string;
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_OPS_ROLLBACK' });

/**
 * The body of a repair of one table: `{tenant, dataset, table, dry_run?}` and the `more` fields it
 * may also hold, answered as the table named, whether it is a dry run, and the body.
 */
export function parseTableRepairBody(body: unknown, more: readonly string[], bad: (message: string) => FloeError): { tenant: string; dataset: string; table: string; dryRun: boolean; body: Record<string, unknown> } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('body must be a JSON object');
  const b = body as Record<string, unknown>;
  const fields = ['tenant', 'dataset', 'table', ...more, 'dry_run'];
  for (const key of Object.keys(b)) {
    if (!fields.includes(key)) throw bad(`unknown field ${JSON.stringify(key)}: expected ${fields.join(', ')}`);
  }
  const name = (key: 'tenant' | 'dataset' | 'table'): string => {
    const v = b[key];
    if (typeof v !== 'string' || !NAME.test(v)) throw bad(`${key} is required (a name)`);
    return v;
  };
  const named = { tenant: name('tenant'), dataset: name('dataset'), table: name('table') };
  if (!isTableName(named.table)) throw bad(`no table ${JSON.stringify(named.table)}`);
  if (b.dry_run !== undefined && b.dry_run !== null && typeof b.dry_run !== 'boolean') throw bad('dry_run must be true or false');
  return { ...named, dryRun: b.dry_run === true, body: b };
}

/** The body of `POST /tables/rollback`: `{tenant, dataset, table, metadata_location?, dry_run?}`. */
export function parseRollbackRequest(body: unknown): RollbackRequest {
  const { body: b, ...named } = parseTableRepairBody(body, ['metadata_location'], bad);
  const req: RollbackRequest = named;
  const to = b.metadata_location;
  if (to !== undefined && to !== null) {
    if (typeof to !== 'string' || to === '' || to.length > 4096) throw bad('metadata_location must be a non-empty string');
    req.metadataLocation = to;
  }
  return req;
}

/** The object key of a named version (a URI of this store or a key), if it is a metadata file directly under the table's metadata/ area; `refuse` makes the 400 otherwise. */
export function namedVersionKey(store: ObjectStore, locationKey: string, named: string, table: string, refuse: (message: string) => FloeError = bad): string {
  let key: string;
  try {
    key = /^[a-z][a-z0-9+.-]*:/i.test(named) ? store.keyFromUri(named) : validateKey(named);
  } catch (err) {
    throw refuse(`metadata_location ${named} is not a location in this store: ${(err as Error).message}`);
  }
  const dir = `${locationKey}/metadata/`;
  const file = key.startsWith(dir) ? key.slice(dir.length) : '';
  if (!/^[^/]+\.metadata\.json$/.test(file)) throw refuse(`metadata_location ${named} is not a metadata file of ${table} (a *.metadata.json directly under ${dir})`);
  return key;
}

const givenUpSnapshots = (m: TableMetadata, chosen: TableMetadata): GivenUpSnapshot[] => {
  const kept = new Set(chosen.snapshots.map((s) => s['snapshot-id']));
  // Iceberg summaries leave zero counts out.
  const count = (v: string | undefined) => (v === undefined ? 0 : /^\d+$/.test(v) ? Number(v) : null);
  return m.snapshots
    .filter((s) => !kept.has(s['snapshot-id']))
    .map((s) => ({
      snapshot_id: String(s['snapshot-id']),
      operation: s.summary.operation,
      timestamp_ms: s['timestamp-ms'],
      added_records: count(s.summary['added-records']),
      deleted_records: count(s.summary['deleted-records']),
    }));
};

const minutes = Math.round(ORPHAN_MIN_AGE_MS / 60_000);

/** `POST /tables/rollback`. Throws FloeError: 404 unknown table, 400 bad metadata_location, 409 no sound version or the pointer moved. */
export async function rollbackTable(catalog: SqlCatalog, store: ObjectStore, req: RollbackRequest): Promise<RollbackAnswer> {
  const { namespace, table, pointer, previousPointer, objects } = await repairTarget(catalog, store, req, 'FLOE_ERR_OPS_ROLLBACK');
  const { locationKey } = objects;
  const pointerKey = store.keyFromUri(pointer);
  const currentVersion = metadataVersion(pointerKey);
  // The version the current one was committed on (the catalog row records it) goes first: a
  // commit attempt that lost its swap can share its number, and only the row tells them apart.
  const parentKey = previousPointer ? keyIn(store, previousPointer) : undefined;
  const history = metadataCandidates(objects, pointerKey, parentKey).filter((o) => currentVersion < 0 || metadataVersion(o.key) <= currentVersion);

  let chosenKey: string;
  let chosen: { metadata: TableMetadata; problems: TableProblem[] };
  if (req.metadataLocation !== undefined) {
    chosenKey = namedVersionKey(store, locationKey, req.metadataLocation, table);
    if (!objects.metadataFiles.some((o) => o.key === chosenKey)) throw bad(`metadata_location ${req.metadataLocation} does not exist`);
    const inspected = await objects.inspect(store.uri(chosenKey));
    if (!inspected.metadata) throw bad(`metadata_location ${req.metadataLocation} cannot be used: ${inspected.problems[0]!.message}`);
    chosen = { metadata: inspected.metadata, problems: inspected.problems };
  } else {
    let found: { key: string; metadata: TableMetadata } | undefined;
    for (const o of history) {
      const inspected = await objects.inspect(store.uri(o.key));
      if (inspected.metadata && inspected.problems.length === 0) {
        found = { key: o.key, metadata: inspected.metadata };
        break;
      }
    }
    if (!found) throw new FloeError('conflict', `no metadata version of ${table} is sound (${history.length} under ${locationKey}/metadata/): name one with metadata_location`, { code: 'FLOE_ERR_OPS_NO_SOUND_VERSION' });
    chosenKey = found.key;
    chosen = { metadata: found.metadata, problems: [] };
  }

  // Given up: what ranks above the chosen version, and the current one whatever its rank (also
  // when its file is gone from the listing).
  const at = history.findIndex((o) => o.key === chosenKey);
  const above: ObjectInfo[] = at < 0 ? [] : history.slice(0, at);
  const givenUpKeys = chosenKey === pointerKey ? [] : [...new Set([pointerKey, ...above.map((o) => o.key)])];
  const givenUp: GivenUpVersion[] = [];
  for (const key of givenUpKeys) {
    const inspected = await objects.inspect(store.uri(key));
    givenUp.push({
      metadata_location: store.uri(key),
      version: metadataVersion(key),
      parses: inspected.metadata !== undefined,
      problems: inspected.problems,
      snapshots: inspected.metadata ? givenUpSnapshots(inspected.metadata, chosen.metadata) : [],
    });
  }
  const distinct = new Map(givenUp.flatMap((v) => v.snapshots.map((s) => [s.snapshot_id, s] as const)));
  const recordsGivenUp = [...distinct.values()].reduce((a, s) => a + (s.added_records ?? 0) - (s.deleted_records ?? 0), 0);

  const location = store.uri(chosenKey);
  const current = chosenKey === pointerKey;
  let written: string | null = null;
  if (!req.dryRun && !current) {
    const version = Math.max(currentVersion, ...objects.metadataFiles.map((o) => metadataVersion(o.key))) + 1;
    written = (await catalog.restoreVersion(namespace, req.table, pointer, { location, metadata: chosen.metadata }, version)) ?? null;
    if (written === null) {
      const now = (await catalog.pointerOf(namespace, req.table))?.metadataLocation;
      throw new FloeError('conflict', `${table} moved from ${pointer} to ${now ?? 'nothing'} meanwhile; nothing was changed: check it again`, { code: 'FLOE_ERR_OPS_ROLLBACK_CONFLICT' });
    }
  }
  const snapshotId = chosen.metadata['current-snapshot-id'];
  return {
    table,
    dry_run: req.dryRun,
    rolled_back: !req.dryRun && !current,
    previous_metadata_location: pointer,
    metadata_location: location,
    new_metadata_location: written,
    chosen: { version: metadataVersion(chosenKey), snapshot_id: snapshotId === null ? null : String(snapshotId), problems: chosen.problems },
    given_up: givenUp,
    records_given_up: recordsGivenUp,
    note: current
      ? `${location} is already the current version of ${table}: nothing to do`
      : req.dryRun
        ? `Dry run: nothing changed. Rolled back, ${table} would no longer hold the rows of the given-up snapshots, and the compactor's orphan sweep would delete the files only the given-up versions reference once they are ${minutes} minutes old (those older already at its next pass).`
        : `${table} now has the content of ${location} as its new version ${written}, and no longer holds the rows of the given-up snapshots. The files only the given-up versions reference (their data files, manifests and metadata files) are unreferenced now: the compactor's orphan sweep deletes each once it is ${minutes} minutes old (those older already at its next pass).`,
  };
}
