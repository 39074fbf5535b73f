import { icebergSchema, isTableName, sortOrderJson, tableDef, type TableDef, type TableName } from '@floe/schema';
import type { SqlCatalog } from './catalog.ts';
import { FLOE_METADATA_PRUNING, createFloeTable, floeNamespace, floeTableProperties } from './floe-catalog.ts';
import type { NestedField as Field, SortOrder, TableHandle } from './types.ts';

/**
 * Table provisioning (spec 2, "Provisioning rules"): every enabled table of a dataset is loaded or
 * created; a loaded table is brought to the current definition (new columns added as nullable,
 * Floe's table properties backfilled, the canonical sort order declared where none is); a table
 * still in the legacy attribute layout (one string→string map) is dropped and recreated; the
 * legacy per-type metric tables are dropped.
 * Nothing is fatal: each table's failure is reported and the rest go on.
 */

export type Signal = 'traces' | 'logs' | 'metrics' | 'profiles';
export const SIGNALS: readonly Signal[] = ['traces', 'logs', 'metrics', 'profiles'];

/** The tables each signal stores (spec 2, "Tables provisioned per dataset"). */
const SIGNAL_TABLES: Record<Signal, readonly string[]> = {
  traces: ['traces'],
  logs: ['logs'],
  metrics: ['metrics', 'metric_exemplars'],
  profiles: ['profiles'],
};

/** Dropped without migrating data wherever they are found. */
export const LEGACY_METRIC_TABLES = ['metrics_gauge', 'metrics_sum', 'metrics_histogram', 'metrics_exponential_histogram', 'metrics_summary'] as const;

export interface SignalSchema {
  signal: Signal;
  /** The tables of the signal this build of Floe defines. */
  tables: TableName[];
  /** default_schemas.<signal>_enabled. */
  enabledByDefault: boolean;
  /** The tenant's own schema block turns it off. */
  disabledByTenant: boolean;
  /** Provisioned for the tenant: on by default and not turned off by the tenant. */
  enabled: boolean;
}

/**
 * Each signal's provisioning state for a tenant: the signals enabled by default, narrowed by the
 * tenant's own schema block (`settings.schema.<signal>_enabled: false`); a tenant cannot turn on
 * what the instance turned off.
 */
export function schemaSignals(defaults: Readonly<Record<`${Signal}_enabled`, boolean>>, tenantSettings: Readonly<Record<string, unknown>> = {}): SignalSchema[] {
  const own = tenantSettings.schema;
  const narrowed = own && typeof own === 'object' ? (own as Record<string, unknown>) : {};
  return SIGNALS.map((signal) => {
    const enabledByDefault = defaults[`${signal}_enabled`];
    const disabledByTenant = narrowed[`${signal}_enabled`] === false;
    return { signal, tables: SIGNAL_TABLES[signal].filter(isTableName), enabledByDefault, disabledByTenant, enabled: enabledByDefault && !disabledByTenant };
  });
}

/** The tables to provision for a tenant, limited to the tables this build of Floe defines. */
export function enabledTables(defaults: Readonly<Record<`${Signal}_enabled`, boolean>>, tenantSettings: Readonly<Record<string, unknown>> = {}): TableName[] {
  return schemaSignals(defaults, tenantSettings).flatMap((s) => (s.enabled ? s.tables : []));
}

export interface TableProvisioning {
  table: string;
  outcome: 'created' | 'existing' | 'evolved' | 'recreated' | 'dropped' | 'failed';
  error?: string;
}

export interface DatasetProvisioning {
  tenant: string;
  dataset: string;
  tables: TableProvisioning[];
}

export const provisioningFailed = (p: DatasetProvisioning) => p.tables.some((t) => t.outcome === 'failed');

export interface ProvisionLogger {
  warn(obj: object, msg: string): void;
}

/** Provisions one dataset's tables; one failure never stops the others. */
export async function provisionDataset(catalog: SqlCatalog, tenant: string, dataset: string, tables: readonly TableName[], log: ProvisionLogger): Promise<DatasetProvisioning> {
  const out: TableProvisioning[] = [];
  const ns = floeNamespace(tenant, dataset);
  for (const table of tables) {
    try {
      out.push({ table, outcome: await provisionTable(catalog, tenant, dataset, table) });
    } catch (err) {
      log.warn({ err, tenant, dataset, table }, 'table provisioning failed; retried on the next pass');
      out.push({ table, outcome: 'failed', error: (err as Error).message });
    }
  }
  for (const legacy of LEGACY_METRIC_TABLES) {
    try {
      if (await catalog.dropTable(ns, legacy)) out.push({ table: legacy, outcome: 'dropped' });
    } catch (err) {
      log.warn({ err, tenant, dataset, table: legacy }, 'dropping a legacy metric table failed; retried on the next pass');
      out.push({ table: legacy, outcome: 'failed', error: (err as Error).message });
    }
  }
  return { tenant, dataset, tables: out };
}

async function provisionTable(catalog: SqlCatalog, tenant: string, dataset: string, table: TableName): Promise<TableProvisioning['outcome']> {
  const ns = floeNamespace(tenant, dataset);
  const def = tableDef(table);
  const existing = await catalog.loadTable(ns, table);
  if (!existing) {
    await createFloeTable(catalog, tenant, dataset, table);
    return 'created';
  }
  if (isLegacyAttributeLayout(existing, def)) {
    await catalog.dropTable(ns, table);
    await createFloeTable(catalog, tenant, dataset, table);
    return 'recreated';
  }
  return (await evolveFloeTable(catalog, existing, def)) ? 'evolved' : 'existing';
}

const currentFields = (h: TableHandle): Field[] => {
  const m = h.metadata;
  return m.schemas.find((s) => s['schema-id'] === m['current-schema-id'])?.fields ?? [];
};

const isStringMap = (f: Field) => typeof f.type === 'object' && f.type.type === 'map' && f.type.key === 'string' && f.type.value === 'string';

/**
 * Floe's first layout kept attributes in one string→string map; the typed layout has a map per
 * value type. A table with a string map and none of the definition's map columns is legacy.
 */
export function isLegacyAttributeLayout(h: TableHandle, def: TableDef): boolean {
  const fields = currentFields(h);
  const typedMaps = def.columns.filter((c) => typeof c.type === 'object' && 'map' in c.type).map((c) => c.name);
  if (typedMaps.length === 0) return false;
  return fields.some(isStringMap) && !fields.some((f) => typedMaps.includes(f.name));
}

/**
 * Floe's properties the table lacks or has otherwise. A newer build's schema version is left
 * alone, and so is a metadata-pruning value someone set: only missing ones are backfilled.
 */
function propertyBackfill(props: Readonly<Record<string, string>>, def: TableDef): Record<string, string> {
  const updates: Record<string, string> = {};
  for (const [k, v] of Object.entries(floeTableProperties(def))) {
    if (props[k] === v) continue;
    if (k === 'floe.schema-version' && Number(props[k]) > def.version) continue;
    if (k in FLOE_METADATA_PRUNING && props[k] !== undefined) continue;
    updates[k] = v;
  }
  return updates;
}

/**
 * Brings a loaded table to the current definition: columns the definition has and the table
 * lacks (by field id) are added, nullable, history untouched; Floe's properties are backfilled;
 * a table with no sort order gets the canonical one. Never removes or renames a column, nor
 * replaces a sort order it finds. Returns whether anything changed.
 */
export async function evolveFloeTable(catalog: SqlCatalog, handle: TableHandle, def: TableDef): Promise<boolean> {
  let h = handle;
  let changed = false;
  const fields = currentFields(h);
  const have = new Set(fields.map((f) => f.id));
  const target = icebergSchema(def).fields as unknown as Field[];
  const missing = target.filter((f) => !have.has(f.id)).map((f) => ({ ...f, required: false }));
  if (missing.length > 0) {
    h = await catalog.updateSchema(h, { type: 'struct', fields: [...fields, ...missing] } as never);
    changed = true;
  }
  const updates = propertyBackfill(h.metadata.properties ?? {}, def);
  if (Object.keys(updates).length > 0) {
    h = await catalog.setProperties(h, updates);
    changed = true;
  }
  // After the schema step, so every sort column exists. The files Floe writes are sorted this
  // way and name sort order 1 (publishDataFile), the id this order gets on an unsorted table.
  const current = h.metadata['sort-orders'].find((o) => o['order-id'] === h.metadata['default-sort-order-id']);
  if (!current || current.fields.length === 0) {
    h = await catalog.setDefaultSortOrder(h, sortOrderJson(def) as SortOrder);
    changed = true;
  }
  return changed;
}

export interface ListedTable {
  name: string;
  dataset: string;
  /** `<tenant>.<dataset>.<table>`, the name SQL over Flight accepts. */
  full_name: string;
  /**
   * The Floe table this is, or null for a table this build does not define: a legacy per-type
   * metric table the next reconcile pass drops, or one a newer build created during an upgrade.
   */
  type: TableName | null;
}

/** The tables that exist, flat and per dataset (every dataset listed, empty ones included). */
export async function listTenantTables(catalog: SqlCatalog, tenant: string, datasets: readonly string[]): Promise<{ tables: ListedTable[]; datasets: Array<{ dataset: string; tables: ListedTable[] }> }> {
  const per = await Promise.all(
    datasets.map(async (dataset) => {
      const ns = floeNamespace(tenant, dataset);
      const ids = await catalog.listTables(ns);
      const tables = ids
        .filter((t) => t.namespace === ns)
        .map((t): ListedTable => ({ name: t.name, dataset, full_name: `${ns}.${t.name}`, type: isTableName(t.name) ? t.name : null }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return { dataset, tables };
    }),
  );
  return { tables: per.flatMap((d) => d.tables), datasets: per };
}
